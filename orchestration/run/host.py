"""The in-process host over a plan store: admit, claim, run, log, stop, decide, resume.

The embedded default for library users and tests: a plan's run in this process, with the same
contract as on Temporal (ruling 33). :meth:`InProcessRuns.start` admits the run
(:func:`~orchestration.run.admission.admit`), claims it in the store (its one run, ever), and
drives it with the shared loop (:class:`~orchestration.run.driver.RunDriver`) over a
:class:`~orchestration.run.local.LocalPort` that does each frame's work in this process.

**The log is written ahead.** Every batch of log entries is appended to the store in order,
and a frame's work starts only once the entries before it (its ``enter`` above all) are
stored: if the process dies, the store shows every call that may have started, and a resume
treats it as indeterminate rather than running it again blindly.

**Halts wait for a person.** A call whose outcome is lost and that may not be repeated halts
(``process_death``) until :meth:`LocalRun.resolve` says retry, skip or abort.

**Gates wait for a person too.** A frame waiting at a gate is decided by
:meth:`LocalRun.decide` (checked at once: a refusal raises
:class:`~orchestration.errors.GateRefusedError` and never reaches the run), by an ``on_gate``
callback, or by autonomous mode where the plan allows it; :meth:`LocalRun.waiting` lists what
waits and :meth:`LocalRun.next_gate` waits for the next request to open (a queue). A request's
timeout is an asyncio timer. The rules are the Temporal host's (:mod:`orchestration.run.gates`).

**Resume** (ruling 28) continues a run whose log does not end in a completed settlement, from
its log in the store: frames that never ran run; calls entered and never settled are
indeterminate and follow their policy; a run halted by its budget halts again at once.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from orchestration.errors import RunNotFoundError, RunRefusedError
from orchestration.run.admission import Admitted, admit
from orchestration.run.driver import Decision, Inbox, RunDriver
from orchestration.run.engine.gating import Waiting
from orchestration.run.engine.machine import RunEngine
from orchestration.run.expand import expand_log, project_log
from orchestration.run.gates import check_decision, waiting_gates
from orchestration.run.liveness import liveness_of, with_liveness
from orchestration.run.local import LocalPort, utc_now
from orchestration.run.log import LogEntry
from orchestration.run.messages import (
    GateAck,
    PendingGateDecision,
    RunSettings,
    WaitingGate,
    workflow_id_for,
)
from orchestration.run.work import FrameWork
from orchestration.store.base import ClaimOk, PlanStore
from orchestration.tools.contracts import PredicateEvaluator
from orchestration.types import FrameLiveness, OperatorStop, RunEvent, RunProjection, TurnAbort

__all__ = ["InProcessRuns", "LocalRun", "RunHost"]


@runtime_checkable
class RunHost(Protocol):
    """Where a plan's run happens: in this process, or on Temporal workers.

    :class:`InProcessRuns` and ``workers.runs.TemporalRuns`` both admit, start, resume and
    read runs through this one surface (the facade's ``execute_plan`` calls it).
    """

    async def start(
        self, plan_id: str, run_input: dict[str, Any], *, resume_run_id: str | None = None
    ) -> Any:
        """Admit and start (or resume) the plan's one run; the host's handle."""
        ...

    async def execute(
        self, plan_id: str, run_input: dict[str, Any], *, resume_run_id: str | None = None
    ) -> RunProjection:
        """Start (or resume) the run and wait for its end; its projection."""
        ...

    async def read_events(self, plan_id: str) -> list[RunEvent]:
        """The run's whole log as the contract's ``RunEvent`` list.

        Raises:
            RunNotFoundError: the plan has no run (or, on Temporal, ``RunRefusedError``
                ``run_not_found``).

        """
        ...

    async def projection(self, plan_id: str) -> RunProjection:
        """``fold_run`` of the run's whole log (built without the snapshots it never reads).

        Raises:
            RunNotFoundError: as :meth:`read_events`.

        """
        ...

    async def waiting(self, plan_id: str) -> list[WaitingGate]:
        """What the plan's live run waits for at its gates, oldest request first.

        Raises:
            RunNotFoundError: the plan has no live run on this host.

        """
        ...

    async def decide(self, plan_id: str, decision: PendingGateDecision) -> GateAck:
        """Decide one of the live run's gates; what became of the decision.

        Raises:
            GateRefusedError: the decision is refused (it never reaches the run).
            RunNotFoundError: the plan has no live run on this host.

        """
        ...


class _Writer:
    """Appends log batches to the store in order; :meth:`settled` waits for what was handed."""

    def __init__(self, store: PlanStore, plan_id: str, run_id: str, start: int) -> None:
        self._store = store
        self._plan_id = plan_id
        self._run_id = run_id
        self._next = start
        self._pending: list[LogEntry] = []
        self._lock = asyncio.Lock()

    def add(self, entries: list[LogEntry]) -> None:
        self._pending.extend(entries)

    async def settled(self) -> None:
        async with self._lock:
            while self._pending:
                batch, self._pending = self._pending, []
                await self._store.append_run_log(self._plan_id, self._run_id, self._next, batch)
                self._next += len(batch)


class LocalRun:
    """One run in this process: follow it, stop it, answer its halts, wait for its end."""

    def __init__(
        self,
        admitted: Admitted,
        engine: RunEngine,
        port: LocalPort,
        driver: RunDriver,
        writer: _Writer,
        previous: list[LogEntry],
    ) -> None:
        self.plan_id = admitted.view.plan_id
        self.run_id = admitted.run_id
        self.engine = engine
        self._seen_gates: set[tuple[str, int]] = set()
        self._port = port
        self._driver = driver
        self._writer = writer
        self._previous = previous
        self._decisions = 0
        self._task: asyncio.Task[RunProjection] = asyncio.create_task(self._run())

    async def _run(self) -> RunProjection:
        try:
            await self._driver.run()
        finally:
            await self._writer.settled()
        return self.projection()

    @property
    def log(self) -> list[LogEntry]:
        """The run's whole compact log so far (earlier executions' entries included)."""
        return [*self._previous, *self._port.log]

    def projection(self) -> RunProjection:
        """``fold_run`` of the whole log so far, with the liveness of the frames in flight."""
        projection = project_log(self.log)
        live = self.liveness()
        return with_liveness(projection, live) if live else projection

    def liveness(self, now: str | None = None) -> dict[str, FrameLiveness]:
        """Each attempt in flight's liveness, from this host's own record (never acted on)."""
        at = now or self._port.now()
        timeout = self._port.settings.heartbeat_seconds
        return {
            key: liveness_of(attempt, last, at, timeout, "in_process")
            for key, (attempt, last) in list(self._port.activity.items())
        }

    @property
    def halted(self) -> tuple[str, ...]:
        """Frames waiting for an operator's decision."""
        return self.engine.halted

    def stop(self) -> None:
        """Stop gracefully: nothing new starts, work in flight settles (``operator_stop``)."""
        self._set_stop(OperatorStop())

    def cancel(self) -> None:
        """Cancel the run (``turn_abort``): graceful as a stop, recorded as a cancellation."""
        self._set_stop(TurnAbort())

    def _set_stop(self, cause: Any) -> None:
        inbox = self._driver.inbox
        if inbox.stop is None:
            inbox.stop = cause
        self._port.poke()

    def resolve(self, frame_key: str, decision: Decision) -> None:
        """Answer the halted frame ``frame_key``: ``retry``, ``skip`` or ``abort``.

        Raises:
            RunRefusedError: ``not_halted`` when that frame is not waiting for a decision.

        """
        if frame_key not in self.engine.halted:
            halted = ", ".join(self.engine.halted) or "none"
            raise RunRefusedError(
                "not_halted", f"frame {frame_key!r} is not halted; halted frames: {halted}"
            )
        self._driver.inbox.decide(frame_key, decision)
        self._port.poke()

    @property
    def done(self) -> bool:
        """Whether the run has settled (its task finished)."""
        return self._task.done()

    def waiting(self) -> list[WaitingGate]:
        """The requests the run waits at, oldest first (what each asks, its deadline)."""
        return waiting_gates(self.engine)

    async def decide(self, decision: PendingGateDecision) -> GateAck:
        """Decide a gate: approve, reject (or decline), or answer; what became of it.

        The decision is checked at once, with the same rules as on Temporal; a decision that
        no longer applies comes back ``skipped`` with the reason.

        Raises:
            GateRefusedError: refused (not open, already decided, a response that does not fit,
                an edit the gate does not allow); it never reaches the run.

        """
        inbox = self._driver.inbox
        skipped = check_decision(
            self.engine, decision, pending=inbox.gates, check_args=self._driver.check_args
        )
        if skipped is not None:
            return skipped
        if inbox.closed is not None:
            status = self.engine.gate_status(decision.frame_key)
            return GateAck(
                applied=False,
                frame_key=decision.frame_key,
                request=status.request,
                outcome="skipped",
                reason=inbox.closed,
            )
        self._decisions += 1
        ident = f"local-{self._decisions}"
        inbox.submit_gate(ident, decision)
        self._port.poke()
        while ident not in inbox.acks:
            await asyncio.wait({self._task}, timeout=0.01)
            if self._task.done() and ident not in inbox.acks:
                inbox.close("the run has ended")
        return inbox.acks.pop(ident)

    async def next_gate(self, timeout: float | None = None) -> WaitingGate | None:
        """Wait for a request that is open and not yet returned by this method (a queue).

        ``None`` when the run ends (or ``timeout`` seconds pass) first.
        """
        loop = asyncio.get_running_loop()
        until = None if timeout is None else loop.time() + timeout
        while True:
            for gate in self.waiting():
                mark = (gate.frame_key, gate.request.request)
                if mark not in self._seen_gates:
                    self._seen_gates.add(mark)
                    return gate
            if self._task.done() or (until is not None and loop.time() >= until):
                return None
            await asyncio.wait({self._task}, timeout=0.01)

    async def wait_halted(self) -> tuple[str, ...]:
        """Wait until a frame halts or the run ends; the halted frames (empty: it ended)."""
        while not self.engine.halted and not self._task.done():
            await asyncio.wait({self._task}, timeout=0.01)
        return self.engine.halted

    async def wait(self) -> RunProjection:
        """Wait for the run to settle; its projection."""
        return await self._task


class InProcessRuns:
    """Runs plans held in a store, in this process.

    Args:
        store: Where plans, approvals, claims and run logs live.
        work: The tools, model, artifacts and cells frames run with.
        settings: Timeouts and retries (the in-flight cap included).
        clock: Returns ``at`` for log entries (default: the wall clock).
        pause: Waits before a retry (default: ``asyncio.sleep``).

    """

    def __init__(
        self,
        store: PlanStore,
        work: FrameWork,
        *,
        settings: RunSettings | None = None,
        clock: Callable[[], str] | None = None,
        pause: Callable[[float], Any] | None = None,
    ) -> None:
        self.store = store
        self.work = work
        self.settings = settings or RunSettings()
        self._clock = clock or utc_now
        self._pause = pause
        self._live: dict[str, LocalRun] = {}

    async def start(
        self,
        plan_id: str,
        run_input: Mapping[str, Any] | None = None,
        *,
        resume_run_id: str | None = None,
        cells: Sequence[PredicateEvaluator] = (),
        on_halt: Callable[[Any], Decision | None] | None = None,
        on_gate: Callable[[Waiting], PendingGateDecision | None] | None = None,
    ) -> LocalRun:
        """Admit, claim and start the plan's one run (or resume it); returns at once.

        Args:
            plan_id: The plan.
            run_input: The run's input (ignored by a resume once the entry settled).
            resume_run_id: Resume this run (ruling 28) instead of starting one.
            cells: Per-run predicate cells; they replace the host's cells with the same id.
            on_halt: Decides a halted frame without waiting for :meth:`LocalRun.resolve`.
            on_gate: Decides a request as it opens, without waiting for
                :meth:`LocalRun.decide` (``None`` from it: wait).

        Raises:
            RunRefusedError: admission or the claim refused; nothing ran.
            PlanNotFoundError: no such plan.

        """
        run_id = workflow_id_for(plan_id)
        admitted = await admit(
            self.store,
            plan_id,
            run_input or {},
            run_id=run_id,
            resume_run_id=resume_run_id,
            cells=cells,
        )
        claim = await self.store.claim_run(
            plan_id,
            admitted.view.digest,
            admitted.run_id,
            execution=f"local-{secrets.token_hex(8)}",
            resume=admitted.resume,
        )
        if not isinstance(claim, ClaimOk):
            raise RunRefusedError(
                claim.reason,
                f"the plan store refused the run claim ({claim.reason}); a plan runs at most "
                "once: clone it to run its content again",
                claim.existing_run_id,
            )
        settings = self.settings
        work = self.work
        if cells:
            merged = {**work.cells, **{cell.id: cell for cell in cells}}
            work = FrameWork(
                work.toolbox,
                spool=work.spool,
                reasoner=work.reasoner,
                artifacts=work.artifacts,
                cells=list(merged.values()),
            )
        now = self._clock()
        previous: list[LogEntry] = []
        if admitted.resume:
            previous = await self.store.read_run_log(plan_id, admitted.run_id)
            engine = RunEngine.resume(
                admitted.view,
                previous,
                reopen=True,
                run_input=admitted.run_input,
                at=now,
                max_in_flight=settings.max_in_flight,
            )
        else:
            engine = RunEngine.start(
                admitted.view,
                admitted.run_id,
                admitted.run_input,
                now,
                max_in_flight=settings.max_in_flight,
            )
        engine.use_batches(settings.batching())
        writer = _Writer(self.store, plan_id, admitted.run_id, len(previous))
        port = _WriteAheadPort(
            writer,
            work,
            admitted.view,
            admitted.approval,
            admitted.run_id,
            settings,
            clock=self._clock,
            pause=self._pause,
        )
        port.record(engine.drain())
        driver = RunDriver(
            engine,
            port,
            settings.retry,
            Inbox(),
            on_halt=on_halt,
            on_gate=on_gate,
            autonomous=settings.autonomous,
            check_args=work.check_args,
        )
        run = LocalRun(admitted, engine, port, driver, writer, previous)
        self._live[plan_id] = run
        return run

    def _run_of(self, plan_id: str) -> LocalRun:
        run = self._live.get(plan_id)
        if run is None or run.done:
            raise RunNotFoundError(
                f"plan {plan_id!r} has no live run on this host; its gates can be read from "
                "its log (run_projection), and decided only while it runs"
            )
        return run

    async def waiting(self, plan_id: str) -> list[WaitingGate]:
        """What the plan's live run waits for at its gates (see :meth:`LocalRun.waiting`).

        Raises:
            RunNotFoundError: the plan has no live run on this host.

        """
        return self._run_of(plan_id).waiting()

    async def decide(self, plan_id: str, decision: PendingGateDecision) -> GateAck:
        """Decide a gate of the plan's live run (see :meth:`LocalRun.decide`).

        Raises:
            GateRefusedError: refused; it never reaches the run.
            RunNotFoundError: the plan has no live run on this host.

        """
        return await self._run_of(plan_id).decide(decision)

    async def read_events(self, plan_id: str) -> list[RunEvent]:
        """The run's whole log from the store (written ahead, so always current here)."""
        return expand_log(await self.store.read_run_log(plan_id))

    async def projection(self, plan_id: str) -> RunProjection:
        """``fold_run`` of the run's whole log from the store."""
        return project_log(await self.store.read_run_log(plan_id))

    async def execute(
        self,
        plan_id: str,
        run_input: Mapping[str, Any] | None = None,
        *,
        resume_run_id: str | None = None,
        cells: Sequence[PredicateEvaluator] = (),
        on_halt: Callable[[Any], Decision | None] | None = None,
        on_gate: Callable[[Waiting], PendingGateDecision | None] | None = None,
    ) -> RunProjection:
        """Start (or resume) the run and wait for it to settle; its projection."""
        run = await self.start(
            plan_id,
            run_input,
            resume_run_id=resume_run_id,
            cells=cells,
            on_halt=on_halt,
            on_gate=on_gate,
        )
        return await run.wait()


class _WriteAheadPort(LocalPort):
    """A local port whose log goes to the store before any frame's work starts."""

    def __init__(self, writer: _Writer, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, sink=writer.add, **kwargs)
        self._writer = writer

    async def attempt(self, dispatch: Any, allowance: Any = None) -> Any:
        await self._writer.settled()
        return await super().attempt(dispatch, allowance)
