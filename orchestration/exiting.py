"""Leave a process that loaded Temporal's native runtime without interpreter finalisation.

The SDK's Rust runtime keeps native threads that may still touch the interpreter while it
finalises; CPython then aborts with "PyGILState_Release ... finalizing" (exit 134, sdk-python
issue #300), so a command that did all its work and printed its result would still report a
crash. Every entry point that may have loaded the runtime (the ``orch`` console script, the
worker, helper processes) ends through :func:`exit_process`: it runs what a normal exit runs
first (the ``atexit`` handlers, where OpenTelemetry flushes its last spans and logging closes
its handlers), flushes the standard streams, and then ends the process with the intended
status, skipping only the finalisation that can abort. Processes that never loaded the runtime
exit normally.
"""

from __future__ import annotations

import atexit
import logging
import os
import sys
from typing import NoReturn

_NATIVE_RUNTIME = "temporalio.bridge.temporal_sdk_bridge"


def native_runtime_loaded() -> bool:
    """Whether this process imported the Temporal SDK's native bridge."""
    return _NATIVE_RUNTIME in sys.modules


def exit_process(status: int) -> NoReturn:
    """End the process with ``status`` once buffered output is flushed."""
    if not native_runtime_loaded():
        sys.exit(status)
    atexit._run_exitfuncs()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)
