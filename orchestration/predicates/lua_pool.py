"""Killable evaluator processes for the Lua cell: a small pool, each process replaced when killed.

Why processes: the instruction hook of Lua only runs between VM instructions, so a predicate
can spend unbounded time inside ONE instruction (a C library loop, or ``..``/``==`` over long
strings), and a thread stuck there cannot be stopped: an in-process evaluation that runs away
keeps a core busy, and holds its thread, for as long as it likes. A process can be killed. Each
evaluation is sent to an idle process of the pool, and when the reply has not come by the
deadline the process is killed (SIGKILL), reaped, and replaced by a fresh one, so nothing the
predicate started outlives its verdict. Measured on the development machine (two shared cores),
the round trip costs 0.2 ms (a trivial predicate) to 1.5 ms (a 50-node table) more than
evaluating in process, medians of 2,000 runs (``bench/bench_lua_cell.py``).

Processes are started ahead of need (``start``), ready once ``lupa`` is imported, so an
evaluation pays neither interpreter start-up nor import. They run
:mod:`orchestration.predicates.lua_sandbox` as a script in their own session (a terminal's
Ctrl-C is not theirs) and exit on their own when the pipe from this process closes, so a worker
that dies takes its evaluators with it. The pool starts no thread.

This module is worker-side only: :class:`~orchestration.predicates.lua.LuaCell` imports it when
it first evaluates, never at import, so the pure core stays free of process machinery.
"""

from __future__ import annotations

import atexit
import os
import select
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import ormsgpack

__all__ = ["EvaluatorDied", "EvaluatorTimedOut", "LuaProcessPool"]

_SCRIPT = str(Path(__file__).with_name("lua_sandbox.py"))
_STARTUP_SECONDS = 30.0
"""How long a fresh process may take to import lupa (a loaded machine can be slow)."""


class EvaluatorTimedOut(Exception):
    """No reply by the deadline: the process was killed."""


class EvaluatorDied(Exception):
    """The process exited or broke its pipe before replying."""


class _Evaluator:
    """One evaluator process and its pipes."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-P", _SCRIPT],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            close_fds=True,
            start_new_session=True,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in = self.proc.stdin.fileno()
        self._out = self.proc.stdout.fileno()
        self.ready = False

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _read(self, size: int, deadline: float) -> bytes:
        data = b""
        while len(data) < size:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise EvaluatorTimedOut()
            readable, _, _ = select.select([self._out], [], [], remaining)
            if not readable:
                raise EvaluatorTimedOut()
            chunk = os.read(self._out, size - len(data))
            if not chunk:
                raise EvaluatorDied(f"exit status {self.proc.poll()}")
            data += chunk
        return data

    def wait_ready(self) -> None:
        if not self.ready:
            try:
                self._read(4, time.monotonic() + _STARTUP_SECONDS)
            except EvaluatorTimedOut as exc:
                raise EvaluatorDied("the evaluator process did not start in time") from exc
            self.ready = True

    def call(self, request: dict[str, Any], deadline: float) -> dict[str, Any]:
        body = ormsgpack.packb(request)
        frame = struct.pack(">I", len(body)) + body
        try:
            view = memoryview(frame)
            while view:
                written = os.write(self._in, view)
                view = view[written:]
        except (BrokenPipeError, OSError) as exc:
            raise EvaluatorDied(str(exc)) from exc
        size = struct.unpack(">I", self._read(4, deadline))[0]
        reply: dict[str, Any] = ormsgpack.unpackb(self._read(size, deadline))
        return reply

    def kill(self) -> None:
        """SIGKILL and reap, so no process (and no zombie) is left."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()


class LuaProcessPool:
    """Up to ``size`` idle evaluator processes, shared by the threads that evaluate.

    An evaluation takes an idle process (or starts one when all are busy), and gives it back
    after a reply; a process that timed out or died is killed and replaced. Thread-safe.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._idle: list[_Evaluator] = []
        self._lock = threading.Lock()
        self._closed = False
        atexit.register(self.close)

    def start(self) -> None:
        """Start processes until ``size`` are idle (they get ready in the background)."""
        with self._lock:
            self._closed = False
            while len(self._idle) < self.size:
                self._idle.append(_Evaluator())

    def pids(self) -> list[int]:
        """The idle processes' ids (for tests and diagnostics)."""
        with self._lock:
            return [e.pid for e in self._idle]

    def run(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send ``request`` to an idle process and wait at most ``timeout`` seconds for its reply.

        Raises:
            EvaluatorTimedOut: no reply in time (the process was killed and replaced).
            EvaluatorDied: the process died before replying (it was replaced).

        """
        evaluator = self._acquire()
        try:
            evaluator.wait_ready()
            reply = evaluator.call(request, time.monotonic() + timeout)
        except BaseException:
            evaluator.kill()
            self._refill()
            raise
        self._release(evaluator)
        return reply

    def close(self) -> None:
        """Kill every idle process; later evaluations start new ones."""
        with self._lock:
            idle, self._idle = self._idle, []
            self._closed = True
        for evaluator in idle:
            evaluator.kill()

    def _acquire(self) -> _Evaluator:
        with self._lock:
            while self._idle:
                evaluator = self._idle.pop()
                if evaluator.proc.poll() is None:
                    return evaluator
                evaluator.kill()
        return _Evaluator()

    def _release(self, evaluator: _Evaluator) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < self.size:
                self._idle.append(evaluator)
                return
        evaluator.kill()

    def _refill(self) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < self.size:
                self._idle.append(_Evaluator())
