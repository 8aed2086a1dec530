"""Real worker processes for the drills: started as `python -m workers` would be, killed hard.

A drill proves what happens when a worker dies mid-run, so the worker runs in its own process
group (``start_new_session``) and :func:`kill` sends SIGKILL to the whole group: nothing it
started survives to settle a call behind the test's back.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DRILL_TOOLS = "tests.integration.drill_tools:TOOLBOX"


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without any ORCH_/TEMPORAL_ setting, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ORCH_", "TEMPORAL_"))}
    env["PYTHONPATH"] = str(ROOT)
    return {**env, **extra}


def worker_process(
    address: str,
    task_queue: str,
    log: Path,
    store: Path | str,
    *,
    toolbox: str = DRILL_TOOLS,
    flags: tuple[str, ...] = (),
    cwd: Path = ROOT,
    env: Mapping[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    """``python -m workers`` on ``task_queue``, claiming runs in ``store`` (a path or a DSN).

    Its output goes to ``log``. ``cwd`` decides which copy of the packages it imports (a drill
    may run a different build from a copied tree); ``env`` is added to an environment cleared
    of every ``ORCH_``/``TEMPORAL_`` setting, so the flags alone configure it.
    """
    with open(log, "ab") as out:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "workers",
                "--toolbox",
                toolbox,
                "--task-queue",
                task_queue,
                "--address",
                address,
                "--store",
                str(store),
                *flags,
            ],
            cwd=cwd,
            env=clean_env(**(env or {})),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def kill(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the worker's whole process group and reap it."""
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


async def wait_for(predicate: Callable[[], bool], timeout: float = 30.0) -> None:
    """Return once ``predicate()`` holds; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.05)
