"""The in-process host: the run loop of :mod:`orchestration.run.driver` on an ordinary event loop.

Each attempt of a frame's work is a direct call into :class:`~orchestration.run.work.FrameWork`
(the same code the Temporal activities run), bounded by the run's start-to-close timeout (cut
to what is left of the node's wall time); a call that exceeds it is *lost* (its outcome
unknown), exactly as an activity that times out after it started. Everything else (retries,
halts, stops, the log) is the shared driver's.

**Liveness.** The port keeps each attempt in flight's last activity (:attr:`LocalPort.activity`):
its start, every heartbeat its tool sends, and, with a heartbeat timeout configured, a
heartbeat of its own every quarter of it while the attempt's coroutine is pending, as the
Temporal activity wrapper does. So a reader sees the same liveness here as on Temporal; the
only way it ages is an event loop blocked by the work itself. This host observes liveness and
never acts on it: a heartbeat timeout is Temporal's to enforce.

:class:`LocalPort` is the transport; :class:`InProcessRuns` (in :mod:`orchestration.run.host`)
adds the plan store: admission, the claim, the log in the store, resume.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Awaitable, Callable

from orchestration.run.batching import BatchDispatch, BatchResult
from orchestration.run.budgets import Allowance
from orchestration.run.driver import (
    Inbox,
    call_request,
    decided,
    reason_attempt,
    reason_request,
    transform_request,
)
from orchestration.run.engine.results import Dispatch, Failed, Succeeded
from orchestration.run.log import LogEntry
from orchestration.run.messages import RunSettings
from orchestration.run.policy import Attempt, Lost
from orchestration.run.work import FrameWork, WorkFailed, decide_with
from orchestration.types import (
    ApprovalRecord,
    BranchNode,
    OperatorStop,
    RawPlanView,
    SelectNode,
)

__all__ = ["Executor", "LocalPort", "utc_now"]

Executor = Callable[[Dispatch], Awaitable[Attempt]]
"""Carries out one attempt of a frame (a test double may script it)."""


def utc_now() -> str:
    """The wall clock, ISO-8601 UTC with milliseconds (the form workflows record)."""
    moment = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
    return moment.replace("+00:00", "Z")


def failed_from(error: WorkFailed) -> Failed:
    """A frame's failed work as the engine's settle result (with what it spent)."""
    return Failed(error.name, error.message, error.kind, error.transient, error.usage)


class LocalPort:
    """A :class:`~orchestration.run.driver.HostPort` that does the work in this process.

    Args:
        work: The tools, model, artifacts and cells (ignored for frames ``executor`` answers).
        view: The plan; ``approval`` its approval (calls re-check their claims against it).
        run_id: The run's id (tools see it in their context).
        settings: Timeouts and retries.
        clock: Returns ``at`` for each log entry (default: the wall clock).
        executor: Answers frames instead of ``work`` (a scripted test double).
        sink: Receives each batch of log entries as it is recorded.
        pause: Waits before a retry (default: ``asyncio.sleep``).

    """

    def __init__(
        self,
        work: FrameWork,
        view: RawPlanView,
        approval: ApprovalRecord,
        run_id: str,
        settings: RunSettings,
        *,
        clock: Callable[[], str] | None = None,
        executor: Executor | None = None,
        sink: Callable[[list[LogEntry]], None] | None = None,
        pause: Callable[[float], Awaitable[None]] | None = None,
    ) -> None:
        self.work = work
        self.view = view
        self.approval = approval
        self.run_id = run_id
        self.settings = settings
        self._clock = clock or utc_now
        self._executor = executor
        self._sink = sink
        self._pause = pause or asyncio.sleep
        self._news = asyncio.Event()
        self.log: list[LogEntry] = []
        self.due = False
        self._batches: dict[str, tuple[LocalPort, Inbox]] = {}
        self.activity: dict[str, tuple[int, str]] = {}
        """Each attempt in flight's ``(attempt, last activity)``, by frame key."""

    def now(self) -> str:
        """The port's clock."""
        return self._clock()

    def poke(self) -> None:
        """Wake the driver: something it may be waiting for happened."""
        self._news.set()

    async def wait_until(self, ready: Callable[[], bool], timeout: float | None = None) -> None:
        """Return once ``ready()`` holds, or ``timeout`` seconds passed.

        :meth:`poke` makes it look again.
        """
        loop = asyncio.get_running_loop()
        until = None if timeout is None else loop.time() + timeout
        while not ready():
            self._news.clear()
            if ready():
                return
            if until is None:
                await self._news.wait()
                continue
            left = until - loop.time()
            if left <= 0:
                return
            try:
                await asyncio.wait_for(self._news.wait(), left)
            except TimeoutError:
                return

    async def pause(self, seconds: float) -> None:
        """Wait before a retry."""
        await self._pause(seconds)

    def record(self, entries: list[LogEntry]) -> None:
        """Keep the entries (and hand them to the sink)."""
        self.log.extend(entries)
        if self._sink is not None:
            self._sink(entries)

    def checkpoint_due(self) -> bool:
        """An in-process run never needs to continue as new (unless asked to, in tests)."""
        return self.due

    async def batch(self, batch: BatchDispatch) -> BatchResult:
        """Run one batch of a map's items here, as a sub-run over the same work and clock."""
        from orchestration.run.batch import run_batch

        sub = LocalPort(
            self.work,
            self.view,
            self.approval,
            self.run_id,
            self.settings,
            clock=self._clock,
            executor=self._executor,
            pause=self._pause,
        )
        inbox = Inbox()
        self._batches[batch.key] = (sub, inbox)
        try:
            return await run_batch(
                self.view,
                batch.spec,
                sub,
                self.settings.retry,
                inbox,
                sub.log,
                max_in_flight=self.settings.max_in_flight,
            )
        finally:
            del self._batches[batch.key]
            self.poke()

    async def breathe(self) -> None:
        """Nothing to let go of in process: yield to the loop once."""
        await asyncio.sleep(0)

    def stop_batch(self, key: str) -> None:
        """Stop the running batch ``key``: it starts nothing more and returns what it did."""
        running = self._batches.get(key)
        if running is not None:
            sub, inbox = running
            if inbox.stop is None:
                inbox.stop = OperatorStop()
            sub.poke()

    async def attempt(self, dispatch: Dispatch, allowance: Allowance | None = None) -> Attempt:
        """One attempt of the frame's work, bounded by the start-to-close timeout."""
        key = dispatch.key
        self._beat(key, dispatch.attempt)
        beating = self._keep_beating(key, dispatch.attempt)
        try:
            if self._executor is not None:
                return await self._executor(dispatch)
            return await self._attempt(dispatch, allowance)
        finally:
            if beating is not None:
                beating.cancel()
            self.activity.pop(key, None)
            self.poke()

    def _beat(self, key: str, attempt: int) -> None:
        self.activity[key] = (attempt, self._clock())

    def _keep_beating(self, key: str, attempt: int) -> asyncio.Task[None] | None:
        every = self.settings.heartbeat_seconds
        if every is None:
            return None

        async def beat() -> None:
            while True:
                await asyncio.sleep(every / 4)
                self._beat(key, attempt)

        return asyncio.ensure_future(beat())

    def _timeout(self, allowance: Allowance | None) -> float:
        timeout = self.settings.start_to_close_seconds
        if allowance is not None and allowance.seconds is not None:
            timeout = max(0.001, min(timeout, allowance.seconds))
        return timeout

    async def _attempt(self, d: Dispatch, allowance: Allowance | None = None) -> Attempt:
        node = d.node
        if isinstance(node, BranchNode | SelectNode):
            assert d.context is not None
            try:
                answer = await decide_with(self.work.cells, node, d.context)
            except WorkFailed as error:
                return failed_from(error)
            return decided(answer.kind, answer.matched, answer.case_label, answer.evidence)
        plan_id, run_id = self.view.plan_id, self.run_id
        timeout = self._timeout(allowance)
        key, attempt = d.key, d.attempt

        def heartbeat(*details: object) -> None:
            self._beat(key, attempt)

        try:
            if node.kind == "call":
                request = call_request(d, plan_id=plan_id, run_id=run_id, approval=self.approval)
                call = await asyncio.wait_for(
                    self.work.call(request, attempt=d.attempt, heartbeat=heartbeat), timeout
                )
                return Succeeded(items=call.items, artifact=call.artifact)
            if node.kind == "reason":
                ask = reason_request(d, plan_id=plan_id, run_id=run_id, allowance=allowance)
                reasoned = await asyncio.wait_for(
                    self.work.reason(ask, on_attempt=lambda _: heartbeat()), timeout
                )
                return reason_attempt(reasoned)
            if node.kind == "transform":
                request_t = transform_request(d, self.view, plan_id=plan_id, run_id=run_id)
                result = await asyncio.wait_for(self.work.transform(request_t), timeout)
                return Succeeded(items=result.items)
        except WorkFailed as error:
            return failed_from(error)
        except TimeoutError:
            return Lost(f"start-to-close timeout after {timeout:g} s", "start_to_close")
        return Failed(
            "node_kind_unavailable", f"{node.kind} nodes are not executed by this host version"
        )
