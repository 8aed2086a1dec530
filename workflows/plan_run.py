"""``PlanRun``: one approved plan's one run, as one Temporal workflow.

The workflow is a thin host for the hosts' shared run loop
(:class:`~orchestration.run.driver.RunDriver`) over the sans-IO engine; everything a run decides
(retries, lost calls, halts, stops) is the shared loop's, as in the in-process host. What is
the workflow's own lives in one module per job:

* :mod:`workflows.gate`: the checks before any node runs and the claim that makes this run the
  plan's one (**at most once, whoever starts it**, ruling 30), and resume (ruling 28);
* :mod:`workflows.port`: the transport (an activity per ``call``, ``reason`` and ``transform``,
  a local activity on the fast path; ``branch``/``select`` decided inline by the deterministic
  cells, or by the worker's other cells in the ``plan.evaluate`` local activity) and durable
  timers and waits;
* :mod:`workflows.segment`: **the log** (:mod:`orchestration.run.log`), compact, kept in
  workflow state, paged by the ``events`` query, counted on the worker's metrics and mirrored
  into the plan store (``plan.mirror``, idempotent by position) when the run settles and
  before it continues as new; continue-as-new carries only the frontier
  (:class:`~orchestration.run.checkpoint.Checkpoint`), the counts and the plan by reference;
* :mod:`workflows.attributes`: the search attributes and the build the run shows outside.

This module keeps the workflow definition, its handlers (signal ``stop``, updates ``resolve``,
``decide`` and ``answer``, queries ``events``, ``status`` and ``waiting``) and the flow: gate,
loop, continue as new or finish.

**Gates** (a person's approval or input, in the plan) are decided through the ``decide`` and
``answer`` updates. Their validators check a decision with the hosts' shared rules
(:func:`~orchestration.run.gates.check_decision`: the request must be open, decided once, the
response must fit its schema, an edit must be one the plan allows and the tool takes), so a
refused decision never enters history; an accepted one waits in its handler until the loop
has applied it, and answers what became of it (applied, or skipped when it no longer applies).
A repeated update id is answered by the server from the first, so a client may retry. The
arguments of an update travel through the payload codec like every payload, and nothing here
logs them. Waiting is workflow state and, with a deadline, a durable timer: no worker slot is
held, and a worker's death or a server restart changes nothing.

**Close statuses tell the truth**: ``completed`` completes; ``halted`` and ``aborted`` fail the
execution with a non-retryable failure whose type names the outcome and whose message names
the interruption; a cancelled run (``turn_abort``) ends Canceled.

**One interpreter per run.** An approval binds the plan's content; pinning binds the code that
walks it. On a versioned worker (Temporal Worker Versioning) ``PlanRun`` is
:data:`VERSIONING_BEHAVIOR` (``PINNED``): every workflow task of a run, and of the executions it
continues as new into, goes to the worker deployment version it started on, so one build walks
an approved plan from start to end and a new build never replays an old build's history. The
run records that version on its ``start`` entry, in the ``status`` query and in the
``PlanBuild`` search attribute (:func:`current_build`).

**The sandbox.** The sandbox re-imports this module for every run and refuses any other module
it was not told to share (see :mod:`workers.worker`). So the pure core and this package's other
modules are imported below as passed through: they run outside the sandbox's checks, and stay
deterministic by their own discipline (time is ``workflow.now()``, plans and logs read outside
history are content-addressed, see :mod:`workflows.externs`) and keep no state between runs.
"""

from __future__ import annotations

import asyncio

# Unused here, but kept in this namespace: tests/integration/test_worker_versioning.py makes a
# second build of this module by inserting a timer (``timedelta``) at the top of ``run``.
from datetime import timedelta  # noqa: F401

from temporalio import workflow
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    # The pure core is deterministic by construction and by test; passing it through spares
    # re-importing its models for every run (see workers.worker.PASSED_THROUGH). This
    # package's modules are workflow code that must be shared the same way.
    from orchestration.errors import GateRefusedError
    from orchestration.run.checkpoint import Checkpoint
    from orchestration.run.driver import Inbox, RunDriver
    from orchestration.run.engine.machine import RunEngine
    from orchestration.run.gates import check_decision, waiting_gates
    from orchestration.run.log import LogEntry
    from orchestration.run.messages import (
        GateAck,
        GateAnswer,
        GateApproval,
        LogPage,
        PendingGateDecision,
        PlanRef,
        PlanRunInput,
        PlanRunResult,
        ResolveDecision,
        RunStatus,
        WaitingGate,
    )
    from orchestration.types import InterruptionCause, MapNode, OperatorStop, RawPlanView
    from workflows.attributes import (
        PLAN_BUILD,
        PLAN_DIGEST,
        PLAN_ID,
        PLAN_OUTCOME,
        VERSIONING_BEHAVIOR,
        current_build,
    )
    from workflows.externs import CHECK_ARGS, KEEP_LOG
    from workflows.gate import NO_INPUT, admit, approved_digest, decode, load_view
    from workflows.port import WorkflowPort, fast_tools, iso
    from workflows.segment import PAGE_LIMIT, Segment
    from workflows.signatures import APPROVAL_SIGNATURES

__all__ = [
    "APPROVAL_SIGNATURES",
    "PLAN_BUILD",
    "PLAN_DIGEST",
    "PLAN_ID",
    "PLAN_OUTCOME",
    "VERSIONING_BEHAVIOR",
    "PlanRun",
    "current_build",
]


@workflow.defn(name="PlanRun")
class PlanRun:
    """Runs one approved plan once; see the module docstring."""

    def __init__(self) -> None:
        self._segment = Segment("")
        self._engine: RunEngine | None = None
        self._inbox = Inbox()
        self._cancelled = False
        self._claimed = False
        self._build: str | None = None
        self._heartbeat_seconds: float | None = None
        self._gate_updates = 0

    # -- the run --------------------------------------------------------------------------------

    @workflow.run
    async def run(self, input: RawValue = NO_INPUT) -> PlanRunResult:
        """Check, claim, then walk the frozen plan to its end; return the outcome and counts.

        Commands, in order: the gate's local activities and upsert, the fast-tools list, the
        loop's activities and timers, the log's mirror, then continue-as-new or the result.
        """
        self._build = current_build()
        request = decode(input)
        self._heartbeat_seconds = request.settings.heartbeat_seconds
        self._segment = Segment(
            request.plan_id or "", keep_all=KEEP_LOG in workflow.extern_functions()
        )
        loaded = load_view(request)
        # A batch loads the plan by reference from the worker's store: a plan given inline
        # (a service without the store) keeps its maps in the run.
        batching = request.settings.batching() if request.plan_ref is not None else None
        if batching is not None and not (
            isinstance(loaded, RawPlanView)
            and _maps_longer(loaded, batching.over)
            # Runs recorded before maps ran in batches replay without them. Asked before any
            # other command, so its marker never lands beside a local activity's.
            and workflow.patched("batched-maps")
        ):
            batching = None
        admission = await admit(request, loaded, self._segment, build=self._build)
        self._claimed = admission.claimed
        engine = self._engine = admission.engine
        self._record(engine.drain())
        if not engine.done:
            assert isinstance(loaded, RawPlanView)
            if batching is not None:
                engine.use_batches(batching)
            fast = await fast_tools(loaded)
            port = WorkflowPort(
                loaded,
                request,
                inbox=self._inbox,
                fast=fast,
                record=self._record,
                on_cancel=self._on_cancel,
                before_wait=self._mirror_while_waiting,
            )
            driver = RunDriver(
                engine,
                port,
                request.settings.retry,
                self._inbox,
                autonomous=request.settings.autonomous,
            )
            if await driver.run() == "checkpoint":
                checkpoint = engine.checkpoint(iso(workflow.now()))
                self._record(engine.drain())
                await self._mirror()
                await self._handlers_finished()
                workflow.continue_as_new(self._continuation(request, loaded, checkpoint))
        await self._mirror()
        await self._handlers_finished()
        return self._finish(request, engine)

    async def _handlers_finished(self) -> None:
        """Let every ``decide``/``answer`` handler answer before the execution closes.

        Only when one ran: a run without gate decisions records nothing new here.
        """
        if self._gate_updates:
            await workflow.wait_condition(workflow.all_handlers_finished)

    def _record(self, entries: list[LogEntry]) -> None:
        """Append to the log; while frames are halted, say so in the run's current details."""
        if not entries:
            return
        self._segment.record(entries)
        engine = self._engine
        if engine is not None and engine.halted:
            workflow.set_current_details(
                f"waiting for an operator: {', '.join(engine.halted)} halted "
                "(`orch run resolve PLAN FRAME retry|skip|abort`)"
            )
        elif engine is not None and engine.waiting:
            workflow.set_current_details(
                f"waiting for a person at a gate: {', '.join(engine.waiting)} (`orch run gates "
                "PLAN`, then `orch run decide` or `orch run answer`)"
            )

    def _on_cancel(self) -> None:
        self._cancelled = True

    async def _mirror(self) -> None:
        """Write the whole log into the plan store: only a claimed run owns the run record."""
        if self._claimed:
            await self._segment.mirror(everything=True)

    async def _mirror_while_waiting(self) -> None:
        """Mirror before the loop waits, so the store's copy keeps up with a live run.

        The whole log when a frame waits for an operator or a person at a gate (a run can wait
        for days, and the store's copy is what a reader sees without a worker: ``orch run
        gates`` reads it), else the tail once it is a few thousand entries long. Histories
        recorded before this mirror existed replay without it.
        """
        engine = self._engine
        if not self._claimed or engine is None or not workflow.patched("mirror-while-waiting"):
            return
        await self._segment.mirror(everything=bool(engine.halted or engine.waiting))

    def _continuation(
        self, request: PlanRunInput, view: RawPlanView, checkpoint: Checkpoint
    ) -> PlanRunInput:
        """The next execution's input: the plan by reference, the frontier and the counts."""
        return PlanRunInput(
            plan_ref=PlanRef(plan_id=view.plan_id, digest=approved_digest(request, view)),
            approval=request.approval,
            run_input=request.run_input,
            settings=request.settings,
            continued=self._segment.carry(checkpoint),
        )

    def _finish(self, request: PlanRunInput, engine: RunEngine) -> PlanRunResult:
        """The result of a completed run; any other outcome fails (or cancels) the execution."""
        if request.settings.search_attributes and self._claimed:
            workflow.upsert_search_attributes([PLAN_OUTCOME.value_set(engine.outcome)])
        assert engine.outcome != "running"
        segment = self._segment
        result = PlanRunResult(
            outcome=engine.outcome,
            interruption=engine.interruption,
            events=segment.total,
            settled=segment.counts["ok"],
            failed=segment.counts["failed"],
            skipped=segment.counts["skipped"],
            segments=segment.number,
        )
        if self._cancelled:
            raise asyncio.CancelledError("the run was cancelled; its log records turn_abort")
        if engine.outcome == "completed":
            return result
        raise ApplicationError(
            f"the run {engine.outcome}: {_describe(engine.interruption)}",
            result.model_dump(mode="json", by_alias=True),
            type=engine.outcome,
            non_retryable=True,
        )

    # -- operator surface ------------------------------------------------------------------

    @workflow.signal(
        description="Stop gracefully: nothing new starts, calls in flight settle, "
        "the run ends aborted with operator_stop."
    )
    def stop(self, reason: str = "") -> None:
        """Stop gracefully: nothing new starts, calls in flight settle, the run is aborted."""
        if self._inbox.stop is None:
            self._inbox.stop = OperatorStop()

    @workflow.update(
        description="Answer a halted call (a lost, non-replay-safe call): retry, skip or abort."
    )
    def resolve(self, decision: ResolveDecision) -> str:
        """Answer a halted indeterminate call: ``retry``, ``skip`` or ``abort``."""
        self._inbox.decide(decision.frame_key, decision.decision)
        return f"{decision.decision} recorded for {decision.frame_key}"

    @resolve.validator
    def _validate_resolve(self, decision: ResolveDecision) -> None:
        engine = self._engine
        if engine is None or decision.frame_key not in engine.halted:
            halted = ", ".join(engine.halted) if engine is not None else ""
            raise ApplicationError(
                f"frame {decision.frame_key!r} is not halted; halted frames: {halted or 'none'}",
                type="not_halted",
            )

    # -- gates -------------------------------------------------------------------------------

    @workflow.update(
        description="Decide a gate: approve (optionally with edited arguments, bound to the "
        "digest shown) or reject with feedback; answers what became of the decision."
    )
    async def decide(self, decision: GateApproval) -> GateAck:
        """Approve or reject an open approval request (or decline an input request)."""
        return await self._submit(decision)

    @decide.validator
    def _validate_decide(self, decision: GateApproval) -> None:
        self._check(decision)

    @workflow.update(
        description="Answer an input request (a response that fits its schema) or a model's "
        "questions ({question id: answer}); answers what became of it, never the response."
    )
    async def answer(self, answer: GateAnswer) -> GateAck:
        """Answer an open input request or a reason node's questions."""
        return await self._submit(answer)

    @answer.validator
    def _validate_answer(self, answer: GateAnswer) -> None:
        self._check(answer)

    def _check(self, decision: PendingGateDecision) -> None:
        """Refuse (before anything enters history) what the shared rules refuse."""
        engine = self._engine
        if engine is None:
            raise ApplicationError(
                "the run has not started yet; nothing waits at a gate", type="gate_not_open"
            )
        check = workflow.extern_functions().get(CHECK_ARGS)
        try:
            check_decision(engine, decision, pending=self._inbox.gates, check_args=check)
        except GateRefusedError as exc:
            raise ApplicationError(exc.message, type=exc.code) from None

    async def _submit(self, decision: PendingGateDecision) -> GateAck:
        """Hand an accepted decision to the loop and answer what became of it."""
        engine = self._engine
        assert engine is not None
        self._gate_updates += 1
        info = workflow.current_update_info()
        ident = info.id if info is not None and info.id else f"gate-{self._gate_updates}"
        inbox = self._inbox
        if inbox.closed is None:
            try:
                skipped = check_decision(engine, decision, pending=inbox.gates)
            except GateRefusedError as exc:
                skipped = GateAck(
                    applied=False,
                    frame_key=decision.frame_key,
                    request=engine.gate_status(decision.frame_key).request,
                    outcome="skipped",
                    reason=exc.message,
                )
            if skipped is not None:
                return skipped
        inbox.submit_gate(ident, decision)
        await workflow.wait_condition(lambda: ident in inbox.acks)
        return inbox.acks.pop(ident)

    @workflow.query(description="The requests the run waits at: what each asks, its deadline.")
    def waiting(self) -> list[WaitingGate]:
        """The open gate requests, oldest first."""
        engine = self._engine
        return [] if engine is None else waiting_gates(engine)

    @workflow.query(
        description="Compact log entries from global index `since` (this "
        "execution's; earlier ones are in the plan store), at most `limit`."
    )
    def events(self, since: int = 0, limit: int = PAGE_LIMIT) -> LogPage:
        """Log entries from global index ``since`` of this execution's segment, page by size."""
        engine = self._engine
        return self._segment.page(since, limit, done=engine is not None and engine.done)

    @workflow.query(description="A small headline: outcome, counts, frames in flight and halted.")
    def status(self) -> RunStatus:
        """A small headline: outcome, counts, frames in flight and halted."""
        engine = self._engine
        if engine is None:
            return RunStatus(outcome="running", events=0, steps=0, build=self._build)
        return RunStatus(
            outcome=engine.outcome,
            events=self._segment.total,
            steps=engine.steps,
            in_flight=engine.in_flight,
            halted=engine.halted,
            waiting=engine.waiting,
            stopping=engine.stopping,
            segment=self._segment.number,
            build=self._build,
            usage=engine.spend.totals() if engine.spend.attempts else None,
            node_usage={node: spend.totals() for node, spend in engine.node_spend.items()},
            heartbeat_seconds=self._heartbeat_seconds,
        )


def _maps_longer(view: RawPlanView, items: int) -> bool:
    """Whether a map of the plan may bring more than ``items`` items."""
    return any(isinstance(n, MapNode) and n.definition.max_items > items for n in view.nodes)


def _describe(cause: InterruptionCause | None) -> str:
    """An interruption as the failure message names it: ``kind (fact=value, ...)``."""
    if cause is None:
        return "no cause recorded"
    facts = cause.model_dump(exclude={"kind"})
    detail = ", ".join(f"{k}={v}" for k, v in facts.items())
    return f"{cause.kind}" + (f" ({detail})" if detail else "")
