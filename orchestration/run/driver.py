"""The run loop both hosts drive: dispatch, attempt, decide, settle, record, repeat.

:class:`RunDriver` owns everything a host decides about a run (ruling 33): which frames start
(the engine's FIFO window), what each attempt's outcome means (:mod:`orchestration.run.policy`:
settle, retry after a pause, or halt for an operator), how a stop, a cancellation or an
operator's decision on a halted frame is applied, and when the log is recorded. A host supplies
only transport, through :class:`HostPort`: how one attempt of a frame's work is carried out
(an activity, or a direct call), how to pause and wait, and where the log goes.

The loop is deterministic given the order in which attempts complete: it uses only asyncio
tasks and the port's clock and waits, so the ``PlanRun`` workflow runs this very code inside
its deterministic event loop, and the in-process host runs it in an ordinary one.

**Every attempt is recorded as it ends.** When an attempt of a call, reason or transform frame
comes back, the loop records it (``attempt``: its number, start and end, result, error, what it
spent on a model, why it was made) before deciding what follows, so both hosts write the same
history. Why an attempt was made is the loop's own knowledge: the first has no reason; a retry
is for the previous attempt's transient error, provider error or lost outcome
(:func:`~orchestration.run.policy.retry_reason`); an operator's retry of a halted frame is
``operator_retry``. On Temporal each attempt is one activity execution allowed one attempt by
its retry policy, so no retry happens where the log cannot see it.

**Budgets.** Before every retry the loop asks the engine whether a token, cost or wall-time
budget refuses it (:meth:`~orchestration.run.engine.machine.RunEngine.refusal`); if so the run
halts ``budget_exhausted`` as a stop would end it (the failure stands, a lost call halts). Every
attempt is given what is left of its budgets (:class:`~orchestration.run.budgets.Allowance`):
its timeout is cut to the frame's remaining wall time, and a reason attempt stops between
model turns once its tokens or cost are spent.

**Gates.** A frame that waits for a person holds no slot of the window and no worker: the loop
waits for the inbox (decisions arrive there from updates or calls, already checked by
:func:`~orchestration.run.gates.check_decision`) or for the earliest request's deadline (the
port's timed wait: a durable timer on Temporal, an asyncio timer in process). Each turn it
applies decisions first, then timeouts that are due, so a decision accepted before its
deadline is never lost to it; autonomous mode approves what the plan opens to it as soon as a
request opens. What each of these means is :mod:`orchestration.run.gates`' (both hosts call it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from orchestration.errors import EngineStateError
from orchestration.plan.gates import seconds_until
from orchestration.run.batching import BatchDispatch, BatchResult
from orchestration.run.budgets import Allowance
from orchestration.run.engine.gating import Waiting
from orchestration.run.engine.machine import RunEngine
from orchestration.run.engine.results import (
    Asked,
    Decided,
    Dispatch,
    Failed,
    Skipped,
    Succeeded,
)
from orchestration.run.gates import (
    ArgsCheck,
    apply_decision,
    autonomous_approves,
    check_decision,
)
from orchestration.run.log import LogEntry
from orchestration.run.messages import (
    CallRequest,
    EvaluateRequest,
    GateAck,
    PendingGateDecision,
    ReasonRequest,
    ReasonResponse,
    RetrySettings,
    TransformRequest,
)
from orchestration.run.policy import (
    Attempt,
    Halt,
    Lost,
    Retry,
    Settle,
    after_attempt,
    lost_error,
    retry_reason,
)
from orchestration.types import (
    ApprovalRecord,
    AttemptResult,
    BranchNode,
    BudgetExhausted,
    CallNode,
    ErrorInfo,
    InterruptionCause,
    OperatorStop,
    ProcessDeath,
    RawPlanView,
    ReasonNode,
    RetryReason,
    SelectNode,
    TransformNode,
)

__all__ = [
    "AUTONOMOUS",
    "Decision",
    "DriverEnd",
    "HostPort",
    "Inbox",
    "RunDriver",
    "call_request",
    "decided",
    "evaluate_request",
    "reason_attempt",
    "reason_request",
    "transform_request",
]

DriverEnd = Literal["settled", "checkpoint"]
Decision = Literal["retry", "skip", "abort"]

AUTONOMOUS = "autonomous"
"""Who decided, for a decision autonomous mode made (recorded as automatic too)."""

_SPLICE_PER_TURN = 4000
"""Most batch log entries spliced in one workflow task (see ``RunDriver._take_batches``)."""

_EARLY = 0.001
"""A deadline this close (seconds) counts as come: timers fire at, not after, the instant."""


class HostPort(Protocol):
    """What a host provides the driver: transport, time, waiting, and where the log goes."""

    def now(self) -> str:
        """The current time, ISO-8601 (a workflow's ``workflow.now()``)."""
        ...

    async def attempt(self, dispatch: Dispatch, allowance: Allowance | None = None) -> Attempt:
        """Carry out one attempt of a frame's work and report what it came to.

        ``allowance`` (``None``: no budget bounds it) is what the attempt may spend: its
        timeout is at most ``allowance.seconds``, and a reason attempt stops between model
        turns once ``allowance.tokens`` or ``allowance.cost_usd`` is spent.
        """
        ...

    async def pause(self, seconds: float) -> None:
        """Wait before a retry (a durable timer in a workflow)."""
        ...

    async def wait_until(self, ready: Callable[[], bool], timeout: float | None = None) -> None:
        """Return once ``ready()`` holds (re-checked whenever something happens).

        With ``timeout`` (seconds), return when it passes even if ``ready()`` does not hold:
        a gate's deadline (a durable timer on Temporal). Without one, no timer is made.

        A host that is cancelled while waiting records the cancellation in the driver's
        :class:`Inbox` (``stop = TurnAbort()``) and returns instead of raising.
        """
        ...

    def record(self, entries: list[LogEntry]) -> None:
        """Append entries to the run's log."""
        ...

    async def batch(self, batch: BatchDispatch) -> BatchResult:
        """Run one batch of a map's items to its end (a child workflow on Temporal).

        Each host runs it with :func:`orchestration.run.batch.run_batch`, over its own
        transport; an exception counts as the batch's failure (each of its items fails).
        """
        ...

    def stop_batch(self, key: str) -> None:
        """Ask the running batch ``key`` to stop: it starts nothing more and returns."""
        ...

    async def breathe(self) -> None:
        """Let the current workflow task go and go on in the next.

        A 1 ms durable timer on Temporal, nothing in process: so one task's work stays bounded.
        """
        ...

    def checkpoint_due(self) -> bool:
        """Whether the run should carry its frontier to a new execution now."""
        ...


@dataclass
class Inbox:
    """What arrives from outside a running run: a stop, decisions on halted frames and gates.

    A gate decision is submitted once it passed :func:`~orchestration.run.gates.check_decision`
    (at most one per frame at a time), under an id (an update id); the loop applies it and
    leaves its :class:`~orchestration.run.messages.GateAck` in :attr:`acks` under that id.
    Once the loop has returned (:attr:`closed` says why), what comes later is acknowledged as
    skipped at once.
    """

    stop: InterruptionCause | None = None
    decisions: dict[str, Decision] = field(default_factory=dict)
    gates: dict[str, tuple[str, PendingGateDecision]] = field(default_factory=dict)
    acks: dict[str, GateAck] = field(default_factory=dict)
    closed: str | None = None

    def decide(self, key: str, decision: Decision) -> None:
        """Record an operator's decision for the halted frame ``key``."""
        self.decisions[key] = decision

    def submit_gate(self, ident: str, decision: PendingGateDecision) -> None:
        """Hand the loop a checked decision on a gate (acknowledged under ``ident``)."""
        if self.closed is not None:
            self.acks[ident] = GateAck(
                applied=False,
                frame_key=decision.frame_key,
                request=decision.request or 0,
                outcome="skipped",
                reason=self.closed,
            )
            return
        self.gates[decision.frame_key] = (ident, decision)

    def close(self, reason: str) -> None:
        """The loop takes no more decisions: skip what waits, and whatever comes later."""
        self.closed = reason
        pending, self.gates = self.gates, {}
        for ident, decision in pending.values():
            self.submit_gate(ident, decision)


@dataclass(frozen=True, slots=True)
class _Completed:
    dispatch: Dispatch
    outcome: Attempt
    started: str
    reason: RetryReason | None


_ACTIVITY_KINDS = frozenset({"call", "reason", "transform"})


class RunDriver:
    """Drives one engine to its end (or to a checkpoint) through a host's port.

    Args:
        engine: The run, started or resumed.
        port: The host's transport, clock, waits and log.
        retry: How transient failures and lost attempts are retried.
        inbox: Stops and operator decisions (the host fills it from signals, updates or calls).
        on_halt: Asked once for each frame that halts; a decision it returns is applied as an
            operator's would be (``None``: wait for one in the inbox).
        on_gate: Asked once for each request a gate opens; a decision it returns is checked
            and applied as a person's would be (``None``: wait for one in the inbox).
        autonomous: Autonomous mode: approve by itself what the plan opens to it.
        check_args: Checks an approver's edited arguments against the tool's input shape.

    """

    def __init__(
        self,
        engine: RunEngine,
        port: HostPort,
        retry: RetrySettings,
        inbox: Inbox | None = None,
        *,
        on_halt: Callable[[Dispatch], Decision | None] | None = None,
        on_gate: Callable[[Waiting], PendingGateDecision | None] | None = None,
        autonomous: bool = False,
        check_args: ArgsCheck | None = None,
    ) -> None:
        self.engine = engine
        self.port = port
        self.retry = retry
        self.inbox = inbox or Inbox()
        self.on_halt = on_halt
        self.on_gate = on_gate
        self.autonomous = autonomous
        self.check_args = check_args
        self._offered: set[tuple[str, int]] = set()
        self._completed: list[_Completed] = []
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._checkpointing = False
        self._batches_done: list[tuple[str, BatchResult]] = []
        self._batches_stopped: set[str] = set()

    @property
    def checkpointing(self) -> bool:
        """Whether the driver stopped starting work to carry the run to a new execution."""
        return self._checkpointing

    def _flush(self) -> None:
        entries = self.engine.drain()
        if entries:
            self.port.record(entries)
        # Frames a join stopped waiting for are settled already; stop their work.
        for key in self.engine.drain_cancelled():
            task = self._tasks.pop(key, None)
            if task is not None:
                task.cancel()

    def _launch(
        self,
        dispatch: Dispatch,
        delay: float = 0.0,
        reason: RetryReason | None = None,
        allowance: Allowance | None = None,
    ) -> None:
        async def attempt() -> None:
            if delay > 0:
                await self.port.pause(delay)
            started = self.port.now()
            try:
                if allowance is None:
                    outcome = await self.port.attempt(dispatch)
                else:
                    outcome = await self.port.attempt(dispatch, allowance)
            except Exception as exc:  # noqa: BLE001 - a frame must settle, never hang the run
                predicate = dispatch.kind in ("branch", "select")
                outcome = Failed(
                    type(exc).__name__, str(exc), "predicate" if predicate else "error"
                )
            self._completed.append(_Completed(dispatch, outcome, started, reason))

        self._track(dispatch.key, attempt())

    def _track(self, key: str, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` as the task of ``key`` (cancelled if ``key``'s frame is cancelled)."""
        task = asyncio.create_task(work)
        self._tasks[key] = task

        def forget(done: asyncio.Task[None]) -> None:
            if self._tasks.get(key) is done:
                del self._tasks[key]

        task.add_done_callback(forget)

    def _launch_batch(self, batch: BatchDispatch) -> None:
        async def run() -> None:
            try:
                result = await self.port.batch(batch)
            except Exception as exc:  # noqa: BLE001 - a batch that fails fails its items
                result = BatchResult(
                    rows=(),
                    log=(),
                    next_frame=batch.spec.base,
                    steps=0,
                    ended=f"the batch failed: {type(exc).__name__}: {exc}",
                )
            self._batches_done.append((batch.key, result))

        self._track(batch.key, run())

    def _stop_batches(self) -> None:
        """A run that is ending starts nothing more: its running batches stop too."""
        engine = self.engine
        if engine.stopping is None:
            return
        for key in engine.batches_running:
            if key not in self._batches_stopped:
                self._batches_stopped.add(key)
                self.port.stop_batch(key)

    def _has_news(self) -> bool:
        engine, inbox = self.engine, self.inbox
        return bool(
            self._completed
            or self._batches_done
            or (inbox.stop is not None and engine.stopping is None and not engine.done)
            or any(key in engine.halted for key in inbox.decisions)
            or bool(inbox.gates)
            or (not self._checkpointing and self._checkpoint_due())
        )

    def _checkpoint_due(self) -> bool:
        # A map's run is engine state a checkpoint does not carry: continue after it settles.
        return not self.engine.maps_running and self.port.checkpoint_due()

    async def run(self) -> DriverEnd:
        """Drive the run until it settles, or until it should continue as new.

        Returns ``checkpoint`` when the port asked for one and nothing is in flight (take
        ``engine.checkpoint(at)`` and continue elsewhere); ``settled`` when the run ended.

        Raises:
            EngineStateError: the run can make no progress (a defect, never a plan's content).

        """
        engine, now = self.engine, self.port.now
        self._recover()
        self._flush()
        while not engine.done:
            stop = self.inbox.stop
            if stop is not None and engine.stopping is None:
                engine.stop(stop, now())
            self._apply_decisions()
            self._apply_gate_decisions()
            self._apply_timeouts()
            if not self._checkpointing and self._checkpoint_due():
                self._checkpointing = True
            if not self._checkpointing:
                while True:
                    at = now()
                    for dispatch in engine.ready(at):
                        self._launch(dispatch, allowance=engine.allowance(dispatch.key, at))
                    for batch in engine.ready_batches():
                        self._launch_batch(batch)
                    if not self._offer_gates():
                        break
            self._flush()
            self._stop_batches()
            if engine.done:
                break
            if self._checkpointing and not engine.in_flight and engine.stopping is None:
                self.inbox.close("the run continues in a new execution; send the decision again")
                return "checkpoint"
            if (
                not engine.in_flight
                and not engine.batches_running
                and not engine.halted
                and not engine.waiting
                and self.inbox.stop is None
            ):
                raise EngineStateError(
                    "the run can make no progress: nothing is in flight, halted, waiting or ready"
                )
            await self.port.wait_until(self._has_news, self._next_deadline())
            self._settle_completed()
            while self._take_batches():
                self._flush()
                await self.port.breathe()
                self._settle_completed()
            self._flush()
        self._flush()
        self.inbox.close("the run has ended")
        return "settled"

    # -- outcomes ---------------------------------------------------------------------------

    def _settle_completed(self) -> None:
        while self._completed:
            done = self._completed.pop(0)
            self._decide(done.dispatch, done.outcome, done.started, done.reason)
        while self._batches_done:
            key, result = self._batches_done.pop(0)
            if not self.engine.done:
                self.engine.batch_ended(key, result)

    def _take_batches(self) -> bool:
        """Take the batches whose turn has come, up to a few thousand log entries a turn.

        Returns whether more wait: the host then lets its workflow task go
        (:meth:`HostPort.breathe`) before taking them, so no workflow task splices so many
        entries that it passes Temporal's deadlock limit (50 batches finishing together
        would splice some 55,000).
        """
        engine, now = self.engine, self.port.now
        spliced = 0
        while spliced < _SPLICE_PER_TURN:
            taken = engine.take_batch(now())
            if taken is None:
                return False
            spliced += taken + 1
        return engine.batch_waiting

    def _record_attempt(
        self, dispatch: Dispatch, outcome: Attempt, started: str, reason: RetryReason | None
    ) -> None:
        """Record the attempt's end (calls, reason and transform frames: the ones with work)."""
        if dispatch.kind not in _ACTIVITY_KINDS:
            return
        engine = self.engine
        key = dispatch.key
        result: AttemptResult
        error: ErrorInfo | None = None
        usage = None
        if isinstance(outcome, Succeeded):
            result, usage = "ok", outcome.usage
        elif isinstance(outcome, Failed):
            result, usage = "failed", outcome.usage
            error = ErrorInfo(name=outcome.name, message=outcome.message)
        elif isinstance(outcome, Lost):
            result, error = "lost", lost_error(outcome)
        elif isinstance(outcome, Asked):
            result, usage = "asked", outcome.usage
        else:
            result = "skipped"
        origins = (engine.origins_of(key) or None) if dispatch.attempt == 1 else None
        engine.attempt_ended(
            key,
            result,
            started,
            self.port.now(),
            error=error,
            reason=reason,
            usage=usage,
            origins=origins,
        )

    def _decide(
        self,
        dispatch: Dispatch,
        outcome: Attempt,
        started: str,
        reason: RetryReason | None,
    ) -> None:
        engine, now = self.engine, self.port.now
        key = dispatch.key
        if engine.done or key not in engine.in_flight:
            return
        self._record_attempt(dispatch, outcome, started, reason)
        if isinstance(outcome, Asked):
            engine.ask(key, outcome, now())
            return
        if isinstance(outcome, Failed) and outcome.kind == "budget":
            # The attempt stopped between model turns: its budget is spent.
            engine.stop(self._budget_cause(key, outcome), now())
            engine.settle(key, outcome, now())
            return
        verdict = after_attempt(dispatch.node, dispatch.tries, outcome, self.retry)
        if isinstance(verdict, Settle):
            engine.settle(key, verdict.result, now())
        elif isinstance(verdict, Retry):
            refused = None
            if engine.stopping is None:
                refused = engine.refusal(key, now(), delay=verdict.delay)
                if refused is not None:
                    engine.stop(refused, now())
            if engine.stopping is not None or self._checkpointing:
                # Nothing new starts once the run is ending: a lost call stays indeterminate
                # (halted), a failure stands.
                if isinstance(outcome, Failed):
                    engine.settle(key, outcome, now())
                elif engine.stopping is not None:
                    self._halt(dispatch)
                else:
                    self._retry(key, verdict.delay, retry_reason(outcome))
            else:
                self._retry(key, verdict.delay, retry_reason(outcome))
        else:
            assert isinstance(verdict, Halt)
            self._halt(dispatch)

    def _retry(self, key: str, delay: float, reason: RetryReason) -> None:
        engine = self.engine
        at = self.port.now()
        allowance = engine.allowance(key, at, delay=delay)
        self._launch(engine.retry(key, at), delay, reason, allowance)

    def _budget_cause(self, key: str, failure: Failed) -> InterruptionCause:
        """The budget a reason attempt stopped for, as the engine counts it."""
        engine = self.engine
        refused = engine.refusal(key, self.port.now())
        if refused is not None:
            return refused
        # What the attempt spent reached what it was allowed, though the run's own sums (added
        # in another order) fall a hair short: name the budget the attempt was bounded by.
        return BudgetExhausted(settled=engine.steps, detail=failure.message)

    def _halt(self, dispatch: Dispatch) -> None:
        self.engine.interrupt_frame(dispatch.key, ProcessDeath(), self.port.now())
        if self.on_halt is not None and self.engine.stopping is None:
            decision = self.on_halt(dispatch)
            if decision is not None:
                self.inbox.decide(dispatch.key, decision)

    def _recover(self) -> None:
        """Calls a resumed log shows entered and unsettled: their outcome is unknown.

        Each lost attempt is recorded as started when it was entered (its reason, if it was a
        retry, was never recorded: the attempt did not end).
        """
        engine = self.engine
        for dispatch in engine.recovered:
            started = engine.started_of(dispatch.key) or self.port.now()
            lost = Lost("found entered and unsettled when the run resumed", "unknown")
            self._decide(dispatch, lost, started, None)

    # -- gates ------------------------------------------------------------------------------

    def _apply_gate_decisions(self) -> None:
        """Apply the decisions the inbox holds, in the order they arrived."""
        inbox = self.inbox
        if not inbox.gates:
            return
        pending, inbox.gates = inbox.gates, {}
        for ident, decision in pending.values():
            inbox.acks[ident] = apply_decision(
                self.engine, decision, self.port.now(), check_args=self.check_args
            )

    def _apply_timeouts(self) -> None:
        """Time out every open request whose deadline has come (in the order they opened)."""
        engine = self.engine
        gates = engine.open_gates()
        if not gates:
            return
        now = self.port.now()
        for waiting in gates:
            deadline = waiting.deadline
            if deadline is not None and seconds_until(deadline, now) <= _EARLY:
                engine.time_out(waiting.key, now)

    def _next_deadline(self) -> float | None:
        """Seconds until the earliest open request times out (``None``: none will)."""
        deadlines = [w.deadline for w in self.engine.open_gates() if w.deadline is not None]
        if not deadlines:
            return None
        now = self.port.now()
        return max(0.0, min(seconds_until(d, now) for d in deadlines))

    def _offer_gates(self) -> bool:
        """Offer each newly opened request to autonomous mode, then to ``on_gate``.

        Returns whether a decision was applied (the loop then hands out what it released).
        """
        engine = self.engine
        changed = False
        for waiting in engine.open_gates():
            mark = (waiting.key, waiting.request.request)
            if mark in self._offered:
                continue
            self._offered.add(mark)
            if autonomous_approves(waiting, self.autonomous):
                engine.approve(waiting.key, AUTONOMOUS, self.port.now(), automatic=True)
                changed = True
                continue
            if self.on_gate is None:
                continue
            decision = self.on_gate(waiting)
            if decision is None:
                continue
            check_decision(engine, decision, check_args=self.check_args)
            apply_decision(engine, decision, self.port.now(), check_args=self.check_args)
            changed = True
        return changed

    def _apply_decisions(self) -> None:
        engine, now, inbox = self.engine, self.port.now, self.inbox
        for key in list(inbox.decisions):
            if key not in engine.halted:
                continue
            decision = inbox.decisions.pop(key)
            if decision == "retry":
                refused = engine.refusal(key, now())
                if refused is not None:
                    engine.stop(refused, now())
                else:
                    self._retry(key, 0.0, "operator_retry")
            elif decision == "skip":
                engine.settle(key, Skipped(), now())
            else:
                engine.stop(OperatorStop(), now())


# -- what each kind of frame sends ---------------------------------------------------------------


def call_request(
    dispatch: Dispatch, *, plan_id: str, run_id: str, approval: ApprovalRecord
) -> CallRequest:
    """The request of a call frame: its resolved arguments and its claims."""
    node = dispatch.node
    assert isinstance(node, CallNode)
    definition = node.definition
    return CallRequest(
        plan_id=plan_id,
        run_id=run_id,
        node_id=node.id,
        frame_key=dispatch.key,
        tool=definition.tool,
        args=dict(dispatch.args or {}),
        output=definition.output,
        authority=definition.authority,
        approved_authority=approval.authority_set,
        args_digest=dispatch.args_digest,
    )


def reason_request(
    dispatch: Dispatch, *, plan_id: str, run_id: str, allowance: Allowance | None = None
) -> ReasonRequest:
    """The request of a reason frame: its joined prompt and output schema (and its budgets).

    A node that may ask carries how many rounds of questions are left and the rounds answered
    so far, so the model goes on from the same conversation.
    """
    node = dispatch.node
    assert isinstance(node, ReasonNode)
    asks = node.definition.asks
    rounds_left = 0 if asks is None else max(0, asks.max_rounds - len(dispatch.rounds))
    return ReasonRequest(
        plan_id=plan_id,
        run_id=run_id,
        node_id=node.id,
        frame_key=dispatch.key,
        prompt=dispatch.prompt,
        output_schema=node.definition.output_schema,
        max_attempts=max(1, node.definition.max_attempts),
        max_tokens=None if allowance is None else allowance.tokens,
        max_cost_usd=None if allowance is None else allowance.cost_usd,
        asks_left=rounds_left,
        rounds=dispatch.rounds,
    )


def reason_attempt(response: ReasonResponse) -> Succeeded | Asked:
    """A reason activity's response as the attempt's outcome: an answer, or questions."""
    if response.asked is not None:
        return Asked(questions=response.asked, call=response.call, usage=response.usage())
    return Succeeded(items=response.items, usage=response.usage())


def transform_request(
    dispatch: Dispatch, view: RawPlanView, *, plan_id: str, run_id: str
) -> TransformRequest:
    """The request of a transform frame: its source handle, steps, emit and output."""
    node = dispatch.node
    assert isinstance(node, TransformNode) and dispatch.source is not None
    source = view.node(node.definition.source.node)
    return TransformRequest(
        plan_id=plan_id,
        run_id=run_id,
        node_id=node.id,
        frame_key=dispatch.key,
        source=dispatch.source,
        source_tool=source.definition.tool if isinstance(source, CallNode) else None,
        steps=node.definition.steps,
        emit=node.definition.emit,
        output=node.definition.output,
    )


def evaluate_request(dispatch: Dispatch) -> EvaluateRequest:
    """A branch or select frame sent by value to a cell outside the host's own code."""
    node = dispatch.node
    assert isinstance(node, BranchNode | SelectNode) and dispatch.context is not None
    return EvaluateRequest(
        node=node, frame=dispatch.frame, outputs=dict(dispatch.context.outputs.items())
    )


def decided(kind: str, matched: bool, case_label: str | None, evidence: object) -> Decided:
    """A cell's answer as the engine's settle result."""
    from orchestration.tools.contracts import BranchVerdict, SelectVerdict

    verdict = (
        BranchVerdict(matched=matched) if kind == "branch" else SelectVerdict(case_label=case_label)
    )
    return Decided(verdict=verdict, evidence=evidence)
