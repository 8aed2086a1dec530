"""Processes that loaded Temporal's native runtime exit with their status and all their output."""

from __future__ import annotations

import subprocess
import sys

import pytest

SCRIPT = """
import atexit, logging, sys
{preamble}
from orchestration.exiting import exit_process, native_runtime_loaded
logging.basicConfig(filename=sys.argv[1], level=logging.INFO)
logging.getLogger("t").info("logged before exit")
atexit.register(lambda: open(sys.argv[1], "a").write("exit handler ran\\n"))
print("native" if native_runtime_loaded() else "pure", end="")
exit_process(int(sys.argv[2]))
"""


@pytest.mark.parametrize(
    ("preamble", "expected"),
    [("import temporalio.bridge.temporal_sdk_bridge", "native"), ("", "pure")],
)
@pytest.mark.parametrize("status", [0, 3])
def test_exit_keeps_status_stdout_log_and_exit_handlers(
    tmp_path: object, preamble: str, expected: str, status: int
) -> None:
    log = f"{tmp_path}/out.log"
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(preamble=preamble), log, str(status)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == status, done.stderr
    assert done.stdout == expected
    with open(log, encoding="utf-8") as handle:
        written = handle.read()
    assert "logged before exit" in written
    assert "exit handler ran" in written
