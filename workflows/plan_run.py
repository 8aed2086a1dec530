"""``PlanRun``: one approved plan's one run, as one Temporal workflow.

The workflow is a thin host for the sans-IO :class:`~orchestration.engine.RunEngine`: it asks
the engine what may run, starts that work (an activity per ``call``, ``reason`` and
``transform``; ``branch``/``select`` decided inline by the deterministic cells it ships, or by
the worker's other cells in the ``plan.evaluate`` local activity), hands each result back, and
appends the events the engine records to the run's log. The log lives in workflow state, is
served by a paged query, and, because it is a pure function of the workflow's history, is
rebuilt from that history for a closed run (see :mod:`orchestration.runlog`).

Before any node runs, the workflow recomputes the plan's digest and authority set and checks
them against the approval it was given; a mismatch records ``run_started`` and ends the run
``aborted`` with ``deviation_abort``. A service that can start workflows still cannot run
content no operator approved.

Determinism: every activity gets ``activity_id = <frameKey>#<attempt>`` (replay compares ids,
not arguments); frames are dispatched in the engine's FIFO order; time is ``workflow.now()``.

Calls and their failure modes (DESIGN §5): a replay-safe call retries under a bounded policy; a
non-replay-safe call gets exactly one attempt. A start-to-close or heartbeat timeout after the
activity started is the indeterminate case, resolved by the node's ``onIndeterminate``:
``skip`` settles it ``skipped``; ``halt`` records ``run_interrupted{process_death}`` for the
frame and waits for an operator's ``resolve`` update (retry, skip or abort). A tool's own
exception is an ordinary failure. ``stop`` (signal) and cancellation are graceful: nothing new
starts, calls in flight settle and are recorded, then the run settles ``aborted``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy, SearchAttributeKey
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    TimeoutError,
    TimeoutType,
    is_cancelled_exception,
)

with workflow.unsafe.imports_passed_through():
    from orchestration.approval import authority_set
    from orchestration.contracts import BranchVerdict, ExplainingEvaluator, SelectVerdict
    from orchestration.engine import (
        Decided,
        Dispatch,
        Failed,
        RunEngine,
        Skipped,
        Succeeded,
        indeterminate_action,
    )
    from orchestration.engine_types import SettleResult
    from orchestration.errors import InvalidRunInputError, UnrunnablePlanError
    from orchestration.execution import (
        CallRequest,
        CallResponse,
        ContinuedRun,
        EvaluateRequest,
        EvaluateResponse,
        EventPage,
        PlanRunInput,
        PlanRunResult,
        ReasonRequest,
        ReasonResponse,
        ResolveDecision,
        RunSettings,
        RunStatus,
        TransformRequest,
        TransformResponse,
        activity_id_for,
    )
    from orchestration.ops import plan_digest
    from orchestration.predicates import CelCell, StructuredCell
    from orchestration.types import (
        BranchNode,
        CallNode,
        DeviationAbort,
        InterruptionCause,
        NodeEntered,
        NodeSettled,
        OperatorStop,
        ProcessDeath,
        ReasonNode,
        RunEvent,
        RunProjection,
        RunSettled,
        RunStarted,
        SelectNode,
        TransformNode,
        TurnAbort,
    )

__all__ = ["APPROVAL_SIGNATURES", "PLAN_DIGEST", "PLAN_ID", "PLAN_OUTCOME", "PlanRun"]

APPROVAL_SIGNATURES = "orchestration.approval_signatures"
"""Extern function a worker with approval keys registers; its presence turns verification on."""

PLAN_ID = SearchAttributeKey.for_keyword("PlanId")
PLAN_DIGEST = SearchAttributeKey.for_keyword("PlanDigest")
PLAN_OUTCOME = SearchAttributeKey.for_keyword("PlanOutcome")

_CELLS = {cell.id: cell for cell in (StructuredCell(), CelCell())}
"""Deterministic predicate cells, evaluated inside the workflow; any other cell id is decided by
the worker's cells in the ``plan.evaluate`` local activity."""

_EVALUATE_TIMEOUT = timedelta(seconds=30)

_INDETERMINATE_TIMEOUTS = (TimeoutType.START_TO_CLOSE, TimeoutType.HEARTBEAT)
_PAGE_LIMIT = 500
_PAGE_BYTES = 1_000_000


@dataclass(frozen=True)
class _Indeterminate:
    """A call that started and whose outcome is unknown (it timed out after starting)."""

    detail: str


def _iso(moment: Any) -> str:
    text: str = moment.isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")


def deviation(run: PlanRunInput) -> str | None:
    """Why the run's content or approval does not match what was approved, if it does not."""
    view, approval = run.plan, run.approval
    if approval.plan_id != view.plan_id:
        return f"the approval is for plan {approval.plan_id!r}, not {view.plan_id!r}"
    actual = plan_digest(view)
    if actual != view.digest:
        return f"the plan's content digests to {actual}, not to the digest it carries"
    if approval.digest != actual:
        return f"the approval binds digest {approval.digest}, but the plan's digest is {actual}"
    if tuple(approval.authority_set) != authority_set(view):
        return "the approval's authority set differs from the plan's canonical authority set"
    return None


async def signature_refusal(run: PlanRunInput) -> str | None:
    """Why the approval's signature is refused, when this worker verifies signatures.

    The check needs key material, which lives on the worker, so it runs in a local activity
    (``plan.verify_approval``), once, at the start of the first segment. A worker without keys
    never calls it, so runs on such workers keep their histories unchanged.
    """
    if run.continued is not None or APPROVAL_SIGNATURES not in workflow.extern_functions():
        return None
    refusal: str = await workflow.execute_local_activity(
        "plan.verify_approval",
        run.approval,
        result_type=str,
        start_to_close_timeout=timedelta(seconds=30),
    )
    return refusal or None


@workflow.defn(name="PlanRun")
class PlanRun:
    """Runs one approved plan once; see the module docstring."""

    def __init__(self) -> None:
        self._events: list[RunEvent] = []
        self._offset = 0
        self._segment = 1
        self._engine: RunEngine | None = None
        self._completions: list[tuple[str, SettleResult | _Indeterminate]] = []
        self._stop: InterruptionCause | None = None
        self._decisions: dict[str, ResolveDecision] = {}
        self._counts = {"ok": 0, "failed": 0, "skipped": 0}
        self._signature_refusal: str | None = None

    # -- the run ----------------------------------------------------------------------------

    @workflow.run
    async def run(self, run: PlanRunInput) -> PlanRunResult:
        """Walk the frozen plan to its end; return the outcome and counts (never the log)."""
        view = run.plan
        if run.settings.search_attributes:
            workflow.upsert_search_attributes(
                [PLAN_ID.value_set(view.plan_id), PLAN_DIGEST.value_set(view.digest)]
            )
        self._signature_refusal = await signature_refusal(run)
        engine = self._begin(run)
        self._engine = engine
        self._absorb()
        cancelled = False
        while not engine.done:
            if self._stop is not None and engine.stopping is None:
                engine.stop(self._stop, self._now())
            self._apply_decisions(run)
            if not self._should_continue_as_new(run):
                for dispatch in engine.ready(self._now()):
                    self._launch(dispatch, run)
            self._absorb()
            if engine.done:
                break
            if self._should_continue_as_new(run) and not engine.in_flight:
                workflow.continue_as_new(self._continuation(run))
            if not engine.in_flight and not engine.halted and self._stop is None:
                raise ApplicationError(
                    "the run can make no progress: nothing is in flight, halted or ready",
                    type="engine_stalled",
                    non_retryable=True,
                )
            try:
                await workflow.wait_condition(self._has_news)
            except BaseException as exc:
                if not is_cancelled_exception(exc):
                    raise
                cancelled = True
                self._stop = self._stop or TurnAbort()
                continue
            self._settle_completions(run)
            self._absorb()
        if run.settings.search_attributes:
            workflow.upsert_search_attributes([PLAN_OUTCOME.value_set(engine.outcome)])
        if cancelled:
            raise asyncio.CancelledError("the run was cancelled; its log records turn_abort")
        assert engine.outcome != "running"
        return PlanRunResult(
            outcome=engine.outcome,
            interruption=engine.interruption,
            events=self._offset + len(self._events),
            settled=self._counts["ok"],
            failed=self._counts["failed"],
            skipped=self._counts["skipped"],
            segments=self._segment,
        )

    def _now(self) -> str:
        return _iso(workflow.now())

    def _begin(self, run: PlanRunInput) -> RunEngine:
        view, at = run.plan, self._now()
        run_id = workflow.info().workflow_id
        window = run.settings.max_in_flight
        if run.continued is not None:
            carried = run.continued
            self._offset = carried.events_before
            self._segment = carried.segments + 1
            self._counts = {
                "ok": carried.settled,
                "failed": carried.failed,
                "skipped": carried.skipped,
            }
            return RunEngine.resume(
                view,
                [carried.run_started, carried.snapshot],
                steps=carried.steps,
                at=at,
                max_in_flight=window,
            )
        problem = deviation(run) or self._signature_refusal
        if problem is not None:
            return RunEngine.refuse(view, run_id, DeviationAbort(detail=problem), at)
        try:
            return RunEngine.start(view, run_id, run.run_input, at, max_in_flight=window)
        except (InvalidRunInputError, UnrunnablePlanError) as exc:
            return RunEngine.refuse(view, run_id, DeviationAbort(detail=exc.message), at)

    def _absorb(self) -> None:
        assert self._engine is not None
        for event in self._engine.drain_events():
            _count(event)
            if isinstance(event, NodeSettled):
                self._counts[event.outcome.status] += 1
            self._events.append(event)

    def _has_news(self) -> bool:
        engine = self._engine
        assert engine is not None
        return bool(
            self._completions
            or (self._stop is not None and engine.stopping is None)
            or any(key in engine.halted for key in self._decisions)
        )

    # -- continue-as-new --------------------------------------------------------------------

    def _should_continue_as_new(self, run: PlanRunInput) -> bool:
        info = workflow.info()
        limit = run.settings.continue_as_new_after_events
        if limit is not None and info.get_current_history_length() >= limit:
            return True
        return info.is_continue_as_new_suggested()

    def _continuation(self, run: PlanRunInput) -> PlanRunInput:
        engine = self._engine
        assert engine is not None
        snapshot = engine.snapshot(self._now())
        self._absorb()
        opening = self._opening(run)
        carried = ContinuedRun(
            run_started=opening,
            snapshot=snapshot,
            steps=engine.steps,
            segments=self._segment,
            events_before=self._offset + len(self._events),
            settled=self._counts["ok"],
            failed=self._counts["failed"],
            skipped=self._counts["skipped"],
        )
        return run.model_copy(update={"continued": carried})

    def _opening(self, run: PlanRunInput) -> RunStarted:
        if run.continued is not None:
            return run.continued.run_started
        first = self._events[0]
        assert isinstance(first, RunStarted)
        return first

    # -- dispatch -----------------------------------------------------------------------------

    def _launch(self, dispatch: Dispatch, run: PlanRunInput) -> None:
        async def execute() -> None:
            result = await self._execute(dispatch, run)
            self._completions.append((dispatch.key, result))

        asyncio.create_task(execute())  # noqa: RUF006 - the engine tracks every frame in flight

    async def _execute(self, d: Dispatch, run: PlanRunInput) -> SettleResult | _Indeterminate:
        node = d.node
        if isinstance(node, CallNode):
            return await self._call(d, node, run)
        if isinstance(node, BranchNode | SelectNode):
            return await self._decide(d, node)
        if isinstance(node, ReasonNode | TransformNode):
            return await self._reason_or_transform(d, node, run)
        return Failed(
            name="node_kind_unavailable",
            message=f"{node.kind} nodes are not executed by this worker version",
        )

    async def _call(
        self, d: Dispatch, node: CallNode, run: PlanRunInput
    ) -> SettleResult | _Indeterminate:
        definition = node.definition
        settings = run.settings
        request = CallRequest(
            plan_id=run.plan.plan_id,
            run_id=workflow.info().workflow_id,
            node_id=node.id,
            frame_key=d.key,
            tool=definition.tool,
            args=dict(d.args or {}),
            output=definition.output,
            authority=definition.authority,
            approved_authority=run.approval.authority_set,
        )
        try:
            response = await workflow.execute_activity(
                "plan.call",
                request,
                result_type=CallResponse,
                **_activity_options(
                    d, settings, f"{node.id} · {definition.tool}", bool(definition.replay_safe)
                ),
            )
        except ActivityError as exc:
            return _call_failure(exc)
        return Succeeded(items=response.items, artifact=response.artifact)

    async def _reason_or_transform(
        self, d: Dispatch, node: ReasonNode | TransformNode, run: PlanRunInput
    ) -> SettleResult:
        settings, plan_id, run_id = run.settings, run.plan.plan_id, workflow.info().workflow_id
        request: ReasonRequest | TransformRequest
        result_type: type[ReasonResponse] | type[TransformResponse]
        if isinstance(node, ReasonNode):
            activity, result_type = "plan.reason", ReasonResponse
            request = ReasonRequest(
                plan_id=plan_id,
                run_id=run_id,
                node_id=node.id,
                frame_key=d.key,
                prompt=d.prompt,
                output_schema=node.definition.output_schema,
                max_attempts=max(1, node.definition.max_attempts),
            )
        else:
            assert d.source is not None
            source = run.plan.node(node.definition.source.node)
            activity, result_type = "plan.transform", TransformResponse
            request = TransformRequest(
                plan_id=plan_id,
                run_id=run_id,
                node_id=node.id,
                frame_key=d.key,
                source=d.source,
                source_tool=source.definition.tool if isinstance(source, CallNode) else None,
                steps=node.definition.steps,
                emit=node.definition.emit,
                output=node.definition.output,
            )
        try:
            response = await workflow.execute_activity(
                activity,
                request,
                result_type=result_type,
                **_activity_options(d, settings, f"{node.id} · {node.kind}", True),
            )
        except ActivityError as exc:
            return _node_failure(exc)
        return Succeeded(items=response.items)

    async def _decide(self, d: Dispatch, node: BranchNode | SelectNode) -> SettleResult:
        assert d.context is not None
        cell = _CELLS.get(node.definition.evaluator)
        if cell is None:
            return await self._decide_locally(d, node)
        try:
            if isinstance(cell, ExplainingEvaluator):
                judgement = await cell.judge(node, d.context)
                return Decided(verdict=judgement.verdict, evidence=judgement.evidence)
            verdict = await cell.evaluate(node, d.context)
        except Exception as exc:  # noqa: BLE001 - a raising cell is a predicate failure
            return Failed.of(exc, kind="predicate")
        return Decided(verdict=verdict)

    async def _decide_locally(self, d: Dispatch, node: BranchNode | SelectNode) -> SettleResult:
        assert d.context is not None
        try:
            response = await workflow.execute_local_activity(
                "plan.evaluate",
                EvaluateRequest(node=node, frame=d.frame, outputs=d.context.outputs),
                result_type=EvaluateResponse,
                activity_id=activity_id_for(d.key, d.attempt),
                summary=f"{node.id} · {node.definition.evaluator}",
                start_to_close_timeout=_EVALUATE_TIMEOUT,
                retry_policy=RetryPolicy(maximum_attempts=3),
            )
        except ActivityError as exc:
            failed = _node_failure(exc)
            return Failed(name=failed.name, message=failed.message, kind="predicate")
        verdict = (
            BranchVerdict(matched=response.matched)
            if response.kind == "branch"
            else SelectVerdict(case_label=response.case_label)
        )
        return Decided(verdict=verdict, evidence=response.evidence)

    # -- settlements and decisions -------------------------------------------------------------

    def _settle_completions(self, run: PlanRunInput) -> None:
        engine = self._engine
        assert engine is not None
        while self._completions:
            key, result = self._completions.pop(0)
            if isinstance(result, _Indeterminate):
                self._indeterminate(key, result, run)
            else:
                engine.settle(key, result, self._now())

    def _indeterminate(self, key: str, result: _Indeterminate, run: PlanRunInput) -> None:
        engine = self._engine
        assert engine is not None
        node = run.plan.node(key.split(":", 1)[0])
        assert node is not None
        _count(result)
        action = indeterminate_action(node)
        if action == "skip":
            engine.settle(key, Skipped(), self._now())
        elif action == "retry":
            # Temporal's retry policy already repeated it; every attempt timed out.
            engine.settle(
                key,
                Failed(name="indeterminate", message=f"every attempt timed out: {result.detail}"),
                self._now(),
            )
        else:
            engine.interrupt_frame(key, ProcessDeath(), self._now())

    def _apply_decisions(self, run: PlanRunInput) -> None:
        engine = self._engine
        assert engine is not None
        for key in list(self._decisions):
            if key not in engine.halted:
                continue
            decision = self._decisions.pop(key)
            at = self._now()
            if decision.decision == "retry":
                self._launch(engine.retry(key, at), run)
            elif decision.decision == "skip":
                engine.settle(key, Skipped(), at)
            else:
                engine.stop(OperatorStop(), at)

    # -- operator surface ----------------------------------------------------------------------

    @workflow.signal
    def stop(self, reason: str = "") -> None:
        """Stop gracefully: nothing new starts, calls in flight settle, the run is aborted."""
        self._stop = self._stop or OperatorStop()

    @workflow.update
    def resolve(self, decision: ResolveDecision) -> str:
        """Answer a halted indeterminate call: ``retry``, ``skip`` or ``abort``."""
        self._decisions[decision.frame_key] = decision
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

    @workflow.query
    def events(self, since: int = 0, limit: int = _PAGE_LIMIT) -> EventPage:
        """Run events from global index ``since`` (this execution's segment), at most ``limit``."""
        start = max(0, since - self._offset)
        limit = max(1, min(limit, _PAGE_LIMIT))
        page: list[RunEvent] = []
        size = 0
        for event in self._events[start : start + limit]:
            # edge_taken carries branch-local tables, so events vary widely in size: cut the
            # page by its encoded size too, well under Temporal's 2 MiB query-result limit.
            size += len(event.model_dump_json())
            if page and size > _PAGE_BYTES:
                break
            page.append(event)
        total = self._offset + len(self._events)
        return EventPage(
            events=tuple(page),
            next=self._offset + start + len(page),
            total=total,
            segment_offset=self._offset,
            done=self._engine is not None and self._engine.done,
        )

    @workflow.query
    def projection(self) -> RunProjection:
        """The engine's projection of the run (its frontier and statuses, live)."""
        assert self._engine is not None
        return self._engine.projection()

    @workflow.query
    def status(self) -> RunStatus:
        """A small headline: outcome, counts, frames in flight and halted."""
        engine = self._engine
        assert engine is not None
        return RunStatus(
            outcome=engine.outcome,
            events=self._offset + len(self._events),
            steps=engine.steps,
            in_flight=engine.in_flight,
            halted=engine.halted,
            stopping=engine.stopping,
            segment=self._segment,
        )


def _count(fact: RunEvent | _Indeterminate) -> None:
    """Count a log event or an indeterminate frame on the worker's metrics.

    ``workflow.metric_meter()`` records nothing while a workflow task replays, so each fact is
    counted once however often history is replayed: ``plan_nodes_started`` (by ``kind``),
    ``plan_nodes_settled`` (by ``kind`` and ``status``), ``plan_runs_settled`` (by
    ``outcome``) and ``plan_indeterminate_frames``.
    """
    meter = workflow.metric_meter()
    if isinstance(fact, NodeEntered):
        meter.create_counter("plan_nodes_started").add(1, {"kind": fact.frame.kind})
    elif isinstance(fact, NodeSettled):
        attributes = {"kind": fact.frame.kind, "status": fact.outcome.status}
        meter.create_counter("plan_nodes_settled").add(1, attributes)
    elif isinstance(fact, RunSettled):
        meter.create_counter("plan_runs_settled").add(1, {"outcome": fact.outcome})
    elif isinstance(fact, _Indeterminate):
        meter.create_counter("plan_indeterminate_frames").add(1)


def _node_failure(exc: ActivityError) -> Failed:
    """A reason, transform or cell activity's failure.

    A timeout is a plain failure here: these activities have no side effect, so an unknown
    outcome is simply no outcome.
    """
    cause = exc.cause
    if isinstance(cause, ApplicationError):
        name = cause.type or "ApplicationError"
        if name == "output_schema_violation":
            return Failed(name=name, message=cause.message, kind="output_schema")
        return Failed(name=name, message=cause.message)
    name = type(cause).__name__ if cause else "ActivityError"
    return Failed(name=name, message=str(cause or exc))


def _activity_options(
    d: Dispatch, settings: RunSettings, summary: str, retryable: bool
) -> dict[str, Any]:
    """Options of a node's activity: a frame-derived id, its summary, timeouts and retries.

    Only replay-safe work is retried; anything else gets one attempt, so a timeout after it
    started is the indeterminate case rather than a silent repeat.
    """
    retry = settings.retry
    return {
        "activity_id": activity_id_for(d.key, d.attempt),
        "summary": summary,
        "task_queue": settings.task_queue,
        "start_to_close_timeout": timedelta(seconds=settings.start_to_close_seconds),
        "heartbeat_timeout": (
            None
            if settings.heartbeat_seconds is None
            else timedelta(seconds=settings.heartbeat_seconds)
        ),
        "retry_policy": RetryPolicy(
            maximum_attempts=retry.maximum_attempts if retryable else 1,
            initial_interval=timedelta(seconds=retry.initial_interval_seconds),
            backoff_coefficient=retry.backoff_coefficient,
            maximum_interval=timedelta(seconds=retry.maximum_interval_seconds),
            non_retryable_error_types=["PayloadsTooLarge"],
        ),
    }


def _call_failure(exc: ActivityError) -> SettleResult | _Indeterminate:
    cause = exc.cause
    if isinstance(cause, TimeoutError) and cause.type in _INDETERMINATE_TIMEOUTS:
        return _Indeterminate(detail=str(cause))
    if isinstance(cause, ApplicationError):
        return Failed(name=cause.type or "ApplicationError", message=cause.message)
    return Failed(
        name=type(cause).__name__ if cause else "ActivityError", message=str(cause or exc)
    )
