"""``PlanRun``: one approved plan's one run, as one Temporal workflow.

The workflow is a thin host for the hosts' shared run loop
(:class:`~orchestration.run.driver.RunDriver`) over the sans-IO engine: it supplies the
transport (an activity per ``call``, ``reason`` and ``transform``; ``branch``/``select``
decided inline by the deterministic cells, or by the worker's other cells in the
``plan.evaluate`` local activity), durable timers, and the log; everything a run decides
(retries, lost calls, halts, stops) is the shared loop's, as in the in-process host.

**At most once, whoever starts it** (ruling 30). Before any node is entered the workflow
checks, in order: its input decodes (else the execution fails at once, non-retryable); its
workflow id is ``plan/<planId>``; the plan it runs digests to the approved digest (loaded by
reference from the worker's plan store, or given inline); the approval binds that digest and
the plan's authority set (and, on a worker with approval keys, is validly signed); and the
worker wins the plan store's claim for this execution chain (``plan.claim``, a local
activity). A run that fails a check records ``run_started`` and settles ``aborted`` with
``deviation_abort``; only a claim that succeeds lets a node run, so a second start under any
workflow id or reuse policy runs nothing.

**Resume** (ruling 28) is a new execution of ``plan/<planId>`` with ``resume: true``: the claim
allows it only for a run whose log ended without completing, and the workflow continues that
log from the plan store.

**The log** (:mod:`orchestration.run.log`) is compact, kept in workflow state, paged by the
``events`` query, and mirrored into the plan store (``plan.mirror``, a local activity,
idempotent by position) when the run settles, before it continues as new, while a frame waits
for an operator, and every few thousand entries. Continue-as-new carries only the frontier
(:class:`~orchestration.run.checkpoint.Checkpoint`) and the plan by reference.

**Close statuses tell the truth**: ``completed`` completes; ``halted`` and ``aborted`` fail the
execution with a non-retryable failure whose type names the outcome and whose message names
the interruption; a cancelled run (``turn_abort``) ends Canceled.

Determinism: every activity gets ``activity_id = <frame key>#<attempt>``; frames are dispatched
in the engine's FIFO order; time is ``workflow.now()``; plans and logs read outside history are
content-addressed (see :mod:`workflows.externs`).

**One interpreter per run.** An approval binds the plan's content; pinning binds the code that
walks it. On a versioned worker (Temporal Worker Versioning) ``PlanRun`` is
:data:`VERSIONING_BEHAVIOR` (``PINNED``): every workflow task of a run, and of the executions it
continues as new into, goes to the worker deployment version it started on, so one build walks
an approved plan from start to end and a new build never replays an old build's history. The
run records that version on its ``start`` entry, in the ``status`` query and in the
``PlanBuild`` search attribute (:func:`current_build`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RawValue, RetryPolicy, SearchAttributeKey, VersioningBehavior
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    TimeoutError,
    TimeoutType,
    is_cancelled_exception,
)

with workflow.unsafe.imports_passed_through():
    # The pure core is deterministic by construction and by test; passing it through spares
    # re-importing its models for every run (see workers.worker.PASSED_THROUGH).
    from orchestration.errors import InvalidRunInputError, OrchestrationError, UnrunnablePlanError
    from orchestration.plan.ops import plan_digest
    from orchestration.predicates import CelCell, StructuredCell
    from orchestration.run.admission import approval_problem
    from orchestration.run.driver import (
        Inbox,
        RunDriver,
        call_request,
        decided,
        evaluate_request,
        reason_request,
        transform_request,
    )
    from orchestration.run.engine.machine import Dispatch, Failed, RunEngine, Succeeded
    from orchestration.run.log import LogEdge, LogEnd, LogEnter, LogEntry, LogSettle, LogStart
    from orchestration.run.messages import (
        CallResponse,
        ClaimRequest,
        ClaimResponse,
        ContinuedRun,
        EvaluateResponse,
        LogPage,
        MirrorRequest,
        PlanRunInput,
        PlanRunResult,
        ReasonResponse,
        ResolveDecision,
        RunSettings,
        RunStatus,
        TransformResponse,
        activity_id_for,
        workflow_id_for,
    )
    from orchestration.run.policy import Attempt, Lost
    from orchestration.run.work import WorkFailed, decide_with
    from orchestration.types import (
        ApprovalRecord,
        BranchNode,
        CallNode,
        DeviationAbort,
        InterruptionCause,
        RawPlanView,
        SelectNode,
        TurnAbort,
    )
    from workflows.externs import LOAD_LOG, LOAD_PLAN

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

APPROVAL_SIGNATURES = "orchestration.approval_signatures"
"""Extern function a worker with approval keys registers; its presence turns verification on."""

PLAN_ID = SearchAttributeKey.for_keyword("PlanId")
PLAN_DIGEST = SearchAttributeKey.for_keyword("PlanDigest")
PLAN_OUTCOME = SearchAttributeKey.for_keyword("PlanOutcome")
PLAN_BUILD = SearchAttributeKey.for_keyword("PlanBuild")
"""The worker deployment version a run's execution runs on (upserted on versioned workers only)."""

VERSIONING_BEHAVIOR = VersioningBehavior.PINNED
"""``PlanRun``'s versioning behavior, applied by a versioned worker as its default behavior.

It is not declared on ``@workflow.defn``: a behavior declared there is sent with every workflow
task completion, and the server refuses a completion that carries one from a worker without
Worker Versioning ("versioning behavior cannot be specified without deployment options being
set with versioned mode"), so every run on an unversioned worker would stay stuck. The worker
sets it instead (``WorkerDeploymentConfig.default_versioning_behavior``, see
:mod:`workers.versioning`) exactly when it runs with a deployment version.
"""

_INLINE_CELLS = {cell.id: cell for cell in (StructuredCell(), CelCell())}
"""Deterministic predicate cells, evaluated inside the workflow; any other cell id is decided by
the worker's cells in the ``plan.evaluate`` local activity."""

_LOCAL_TIMEOUT = timedelta(seconds=30)
_LOST = (TimeoutType.START_TO_CLOSE, TimeoutType.HEARTBEAT)
_PAGE_LIMIT = 2000
_PAGE_BYTES = 1_000_000
_MIRROR_EVERY = 4000
_MIRROR_CHUNK = 2000
_ONE_ATTEMPT = RetryPolicy(maximum_attempts=1)
_NO_INPUT = RawValue(payload=None)  # type: ignore[arg-type]


def current_build() -> str | None:
    """The worker deployment version running this workflow task, as ``<name>.<buildId>``.

    ``None`` on a worker without a deployment name (an unversioned worker still reports the
    SDK's own build id, which names no deployment and so is not recorded). On replay this is the
    version history recorded for the task, so it is deterministic.
    """
    version = workflow.info().get_current_deployment_version()
    if version is None or not version.deployment_name:
        return None
    return version.to_canonical_string()


def _iso(moment: Any) -> str:
    text: str = moment.isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")


def _refuse_input(message: str) -> ApplicationError:
    return ApplicationError(
        f"{message}; start PlanRun with one PlanRunInput JSON object (see schema/ or run "
        "`orch run input PLAN`)",
        type="invalid_plan_run_input",
        non_retryable=True,
    )


def deviation(view: RawPlanView, approval: ApprovalRecord, digest: str) -> str | None:
    """Why the run's content or approval does not match what was approved, if it does not."""
    actual = plan_digest(view)
    if actual != digest or actual != view.digest:
        return f"the plan's content digests to {actual}, not to the approved digest {digest}"
    return approval_problem(view, approval)


def attempt_from_error(exc: ActivityError) -> Attempt:
    """An activity's failure as an attempt's outcome: a named failure, or a lost attempt."""
    cause = exc.cause
    if isinstance(cause, TimeoutError):
        if cause.type in _LOST:
            workflow.metric_meter().create_counter("plan_indeterminate_frames").add(1)
            return Lost(str(cause))
        # Timed out before it started (schedule-to-start): nothing ran; try again.
        return Failed("ScheduleTimeout", str(cause), transient=True)
    if isinstance(cause, ApplicationError):
        return _failed_from_application(cause, "")
    name = type(cause).__name__ if cause is not None else "ActivityError"
    return Failed(name, str(cause or exc))


def _failed_from_application(error: ApplicationError, node_kind: str) -> Failed:
    """A node activity's ``ApplicationError`` (see :mod:`activities.frames`) as a failure."""
    facts = error.details[0] if error.details and isinstance(error.details[0], dict) else {}
    kind = facts.get("kind", "predicate" if node_kind in ("branch", "select") else "error")
    return Failed(
        error.type or "ApplicationError",
        error.message,
        kind if kind in ("error", "predicate", "output_schema") else "error",
        bool(facts.get("transient", False)),
    )


class _Port:
    """How ``PlanRun`` carries out the shared loop's requests (see ``HostPort``)."""

    def __init__(self, run: PlanRun, view: RawPlanView, request: PlanRunInput) -> None:
        self.run = run
        self.view = view
        self.approval = request.approval
        self.settings: RunSettings = request.settings
        self.plan_id = view.plan_id
        self.run_id = workflow.info().workflow_id
        self.fast: frozenset[str] = run._fast

    def now(self) -> str:
        return _iso(workflow.now())

    async def pause(self, seconds: float) -> None:
        await workflow.sleep(timedelta(seconds=seconds), summary="retry backoff")

    async def wait_until(self, ready: Callable[[], bool]) -> None:
        try:
            await workflow.wait_condition(ready)
        except BaseException as exc:
            if not is_cancelled_exception(exc):
                raise
            self.run._cancelled = True
            if self.run._inbox.stop is None:
                self.run._inbox.stop = TurnAbort()

    def record(self, entries: list[LogEntry]) -> None:
        self.run._record(entries)

    def checkpoint_due(self) -> bool:
        info = workflow.info()
        limit = self.settings.continue_as_new_after_events
        if limit is not None and info.get_current_history_length() >= limit:
            return True
        return info.is_continue_as_new_suggested()

    def _options(self, d: Dispatch, summary: str) -> dict[str, Any]:
        settings = self.settings
        return {
            "activity_id": activity_id_for(d.key, d.attempt),
            "summary": summary if settings.activity_summaries else None,
            "start_to_close_timeout": timedelta(seconds=settings.start_to_close_seconds),
            "retry_policy": _ONE_ATTEMPT,
        }

    async def attempt(self, d: Dispatch) -> Attempt:
        node = d.node
        try:
            if isinstance(node, BranchNode | SelectNode):
                return await self._decide(d, node)
            if isinstance(node, CallNode):
                return await self._call(d, node)
            if node.kind == "reason":
                reason = reason_request(d, plan_id=self.plan_id, run_id=self.run_id)
                answer = await workflow.execute_activity(
                    "plan.reason",
                    reason,
                    result_type=ReasonResponse,
                    **self._remote(d, f"{node.id} · reason"),
                )
                return Succeeded(items=answer.items)
            if node.kind == "transform":
                transform = transform_request(
                    d, self.view, plan_id=self.plan_id, run_id=self.run_id
                )
                result = await workflow.execute_activity(
                    "plan.transform",
                    transform,
                    result_type=TransformResponse,
                    **self._remote(d, f"{node.id} · transform"),
                )
                return Succeeded(items=result.items)
        except ActivityError as exc:
            return attempt_from_error(exc)
        except ApplicationError as exc:
            # A local activity's failure can surface unwrapped; it is the same failure.
            return _failed_from_application(exc, node.kind)
        return Failed(
            "node_kind_unavailable", f"{node.kind} nodes are not executed by this worker version"
        )

    def _remote(self, d: Dispatch, summary: str) -> dict[str, Any]:
        settings = self.settings
        options = self._options(d, summary)
        options["task_queue"] = settings.task_queue
        options["heartbeat_timeout"] = (
            None
            if settings.heartbeat_seconds is None
            else timedelta(seconds=settings.heartbeat_seconds)
        )
        return options

    async def _call(self, d: Dispatch, node: CallNode) -> Attempt:
        definition = node.definition
        request = call_request(d, plan_id=self.plan_id, run_id=self.run_id, approval=self.approval)
        if definition.replay_safe and definition.tool in self.fast:
            # The fast path: a short, replay-safe tool runs in this worker as a local activity
            # (no task-queue round trip), with the same attempts and outcomes.
            response = await workflow.execute_local_activity(
                "plan.call",
                request,
                result_type=CallResponse,
                **self._options(d, f"{node.id} · {definition.tool} (local)"),
            )
        else:
            response = await workflow.execute_activity(
                "plan.call",
                request,
                result_type=CallResponse,
                **self._remote(d, f"{node.id} · {definition.tool}"),
            )
        return Succeeded(items=response.items, artifact=response.artifact)

    async def _decide(self, d: Dispatch, node: BranchNode | SelectNode) -> Attempt:
        assert d.context is not None
        if node.definition.evaluator in _INLINE_CELLS:
            try:
                answer = await decide_with(_INLINE_CELLS, node, d.context)
            except WorkFailed as error:
                return Failed(error.name, error.message, error.kind, error.transient)
        else:
            answer = await workflow.execute_local_activity(
                "plan.evaluate",
                evaluate_request(d),
                result_type=EvaluateResponse,
                activity_id=activity_id_for(d.key, d.attempt),
                summary=(
                    f"{node.id} · {node.definition.evaluator}"
                    if self.settings.activity_summaries
                    else None
                ),
                start_to_close_timeout=_LOCAL_TIMEOUT,
                retry_policy=_ONE_ATTEMPT,
            )
        return decided(answer.kind, answer.matched, answer.case_label, answer.evidence)


@workflow.defn(name="PlanRun")
class PlanRun:
    """Runs one approved plan once; see the module docstring."""

    def __init__(self) -> None:
        self._log: list[LogEntry] = []
        self._offset = 0
        self._mirrored = 0
        self._segment = 1
        self._engine: RunEngine | None = None
        self._inbox = Inbox()
        self._cancelled = False
        self._claimed = False
        self._plan_id = ""
        self._counts = {"ok": 0, "failed": 0, "skipped": 0}
        self._fast: frozenset[str] = frozenset()
        self._kinds: dict[int, str] = {}
        self._build: str | None = None

    # -- the run --------------------------------------------------------------------------------

    @workflow.run
    async def run(self, input: RawValue = _NO_INPUT) -> PlanRunResult:
        """Check, claim, then walk the frozen plan to its end; return the outcome and counts."""
        self._build = current_build()
        request = self._decode(input)
        self._plan_id = request.plan_id or ""
        loaded = self._load_view(request)
        engine = await self._begin(request, loaded)
        self._engine = engine
        self._record(engine.drain())
        if not engine.done:
            assert isinstance(loaded, RawPlanView)
            self._fast = await self._fast_tools(loaded)
            port = _Port(self, loaded, request)
            driver = RunDriver(engine, port, request.settings.retry, self._inbox)
            if await driver.run() == "checkpoint":
                checkpoint = engine.checkpoint(_iso(workflow.now()))
                self._record(engine.drain())
                await self._mirror(everything=True)
                workflow.continue_as_new(self._continuation(request, loaded, checkpoint))
        await self._mirror(everything=True)
        return self._finish(request, engine)

    async def _fast_tools(self, view: RawPlanView) -> frozenset[str]:
        """The tools this worker runs on the fast path (asked once per execution, recorded)."""
        if not any(isinstance(n, CallNode) and n.definition.replay_safe for n in view.nodes):
            return frozenset()
        names: list[str] = await workflow.execute_local_activity(
            "plan.fast_tools",
            result_type=list[str],
            summary="which tools run as local activities",
            start_to_close_timeout=_LOCAL_TIMEOUT,
        )
        return frozenset(names)

    def _decode(self, input: RawValue) -> PlanRunInput:
        if input is _NO_INPUT or input.payload is None:
            raise _refuse_input("PlanRun was started without input")
        try:
            request = workflow.payload_converter().from_payload(input.payload, PlanRunInput)
        except Exception as exc:  # noqa: BLE001 - any undecodable input is refused by name
            raise _refuse_input(f"PlanRun's input does not decode: {exc}") from None
        if not isinstance(request, PlanRunInput):
            raise _refuse_input(f"PlanRun's input decodes to {type(request).__name__}")
        if (request.plan is None) == (request.plan_ref is None):
            raise _refuse_input("PlanRun's input must give exactly one of plan and planRef")
        return request

    def _load_view(self, request: PlanRunInput) -> RawPlanView | str:
        """The plan to run, or why it cannot be had (a deviation)."""
        if request.plan is not None:
            return request.plan
        assert request.plan_ref is not None
        load = workflow.extern_functions().get(LOAD_PLAN)
        if load is None:
            return "this worker has no plan store to load the plan from; start it with --store"
        try:
            view: RawPlanView = load(request.plan_ref.plan_id)
        except OrchestrationError as exc:
            return f"the plan cannot be loaded: {exc.message}"
        return view

    def _digest(self, request: PlanRunInput, view: RawPlanView) -> str:
        return request.plan_ref.digest if request.plan_ref is not None else view.digest

    async def _begin(self, request: PlanRunInput, loaded: RawPlanView | str) -> RunEngine:
        """Every check of ruling 30, then the claim; the engine that runs (or refuses) it."""
        now = _iso(workflow.now())
        info = workflow.info()
        run_id = info.workflow_id
        continued = request.continued
        if continued is not None and isinstance(loaded, RawPlanView):
            self._offset = continued.entries_before
            self._mirrored = continued.entries_before
            self._segment = continued.segments + 1
            self._counts = {
                "ok": continued.settled,
                "failed": continued.failed,
                "skipped": continued.skipped,
            }
            self._claimed = True
            return RunEngine.continued(
                loaded, continued.checkpoint, at=now, max_in_flight=request.settings.max_in_flight
            )
        problem = self._problem(request, loaded, run_id)
        view = loaded if isinstance(loaded, RawPlanView) else None
        if problem is None and view is not None:
            problem = await self._signature_refusal(request)
        if problem is None and view is not None:
            claim = await self._claim(request, view, info.first_execution_run_id)
            if not claim.ok:
                problem = self._claim_refusal(claim)
            else:
                self._claimed = True
                if request.settings.search_attributes:
                    # PlanBuild only on a versioned worker: an unversioned run's upsert stays
                    # the command it always was, so older histories replay unchanged.
                    workflow.upsert_search_attributes(
                        [PLAN_ID.value_set(view.plan_id), PLAN_DIGEST.value_set(view.digest)]
                        + ([] if self._build is None else [PLAN_BUILD.value_set(self._build)])
                    )
                try:
                    return self._engine_for(request, view, claim, now)
                except (InvalidRunInputError, UnrunnablePlanError) as exc:
                    problem = exc.message
        known = view or request.plan
        digest = request.plan_ref.digest if request.plan_ref is not None else ""
        return RunEngine.refuse(
            run_id,
            digest or (known.digest if known is not None else ""),
            DeviationAbort(detail=problem or "the run was refused"),
            now,
            entry=_entry_of(known),
            build=self._build,
        )

    def _problem(self, request: PlanRunInput, loaded: RawPlanView | str, run_id: str) -> str | None:
        plan_id = request.plan_id or ""
        if run_id != workflow_id_for(plan_id):
            return (
                f"this execution's workflow id is {run_id!r}, but plan {plan_id!r} runs only "
                f"as {workflow_id_for(plan_id)!r}; a plan's one run has one id"
            )
        if isinstance(loaded, str):
            return loaded
        return deviation(loaded, request.approval, self._digest(request, loaded))

    async def _signature_refusal(self, request: PlanRunInput) -> str | None:
        """Why the approval's signature is refused, when this worker verifies signatures.

        The check needs key material, which lives on the worker, so it runs in a local
        activity (``plan.verify_approval``), once, at the start of the first segment.
        """
        if APPROVAL_SIGNATURES not in workflow.extern_functions():
            return None
        refusal: str = await workflow.execute_local_activity(
            "plan.verify_approval",
            request.approval,
            result_type=str,
            start_to_close_timeout=_LOCAL_TIMEOUT,
        )
        return refusal or None

    async def _claim(
        self, request: PlanRunInput, view: RawPlanView, execution: str
    ) -> ClaimResponse:
        claim: ClaimResponse = await workflow.execute_local_activity(
            "plan.claim",
            ClaimRequest(
                plan_id=view.plan_id,
                digest=self._digest(request, view),
                run_id=workflow.info().workflow_id,
                execution=execution,
                resume=request.resume,
            ),
            result_type=ClaimResponse,
            summary="claim the plan's one run",
            start_to_close_timeout=_LOCAL_TIMEOUT,
        )
        return claim

    @staticmethod
    def _claim_refusal(claim: ClaimResponse) -> str:
        if claim.reason == "run_already_claimed":
            return (
                "the plan's one run is already claimed by another execution"
                + (f" ({claim.existing_run_id})" if claim.existing_run_id else "")
                + "; a plan runs at most once: clone it to run its content again"
            )
        return f"the plan store refused the run claim ({claim.reason})"

    def _engine_for(
        self, request: PlanRunInput, view: RawPlanView, claim: ClaimResponse, now: str
    ) -> RunEngine:
        window = request.settings.max_in_flight
        run_id = workflow.info().workflow_id
        if not request.resume:
            return RunEngine.start(
                view, run_id, request.run_input, now, max_in_flight=window, build=self._build
            )
        load = workflow.extern_functions().get(LOAD_LOG)
        if load is None:
            raise UnrunnablePlanError(
                "this worker has no plan store to read the run's log from; start it with --store"
            )
        previous: list[LogEntry] = load(view.plan_id, run_id, claim.log_length)
        self._offset = self._mirrored = len(previous)
        self._counts = _counts(previous)
        return RunEngine.resume(
            view,
            previous,
            reopen=True,
            run_input=request.run_input,
            at=now,
            max_in_flight=window,
        )

    def _continuation(
        self, request: PlanRunInput, view: RawPlanView, checkpoint: Any
    ) -> PlanRunInput:
        from orchestration.run.messages import PlanRef

        return PlanRunInput(
            plan_ref=PlanRef(plan_id=view.plan_id, digest=self._digest(request, view)),
            approval=request.approval,
            run_input=request.run_input,
            settings=request.settings,
            continued=ContinuedRun(
                checkpoint=checkpoint,
                segments=self._segment,
                entries_before=self._offset + len(self._log),
                settled=self._counts["ok"],
                failed=self._counts["failed"],
                skipped=self._counts["skipped"],
            ),
        )

    def _finish(self, request: PlanRunInput, engine: RunEngine) -> PlanRunResult:
        if request.settings.search_attributes and self._claimed:
            workflow.upsert_search_attributes([PLAN_OUTCOME.value_set(engine.outcome)])
        assert engine.outcome != "running"
        result = PlanRunResult(
            outcome=engine.outcome,
            interruption=engine.interruption,
            events=self._offset + len(self._log),
            settled=self._counts["ok"],
            failed=self._counts["failed"],
            skipped=self._counts["skipped"],
            segments=self._segment,
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

    # -- the log -------------------------------------------------------------------------------

    def _record(self, entries: list[LogEntry]) -> None:
        if not entries:
            return
        _count(entries, self._kinds)
        for entry in entries:
            if type(entry) is LogSettle:
                self._counts[entry.status] += 1
        self._log.extend(entries)
        engine = self._engine
        if engine is not None and engine.halted:
            workflow.set_current_details(
                f"waiting for an operator: {', '.join(engine.halted)} halted "
                "(`orch run resolve PLAN FRAME retry|skip|abort`)"
            )

    async def _mirror(self, *, everything: bool = False) -> None:
        """Write the log's unmirrored tail into the plan store (only a claimed run's)."""
        if not self._claimed:
            return
        total = self._offset + len(self._log)
        if not everything and total - self._mirrored < _MIRROR_EVERY:
            return
        while self._mirrored < total:
            start = self._mirrored
            chunk = self._log[start - self._offset : start - self._offset + _MIRROR_CHUNK]
            await workflow.execute_local_activity(
                "plan.mirror",
                MirrorRequest(
                    plan_id=self._plan_id,
                    run_id=workflow.info().workflow_id,
                    start=start,
                    entries=tuple(chunk),
                ),
                summary=f"log entries {start}–{start + len(chunk) - 1} to the plan store",
                start_to_close_timeout=_LOCAL_TIMEOUT,
            )
            self._mirrored = start + len(chunk)

    # -- operator surface ------------------------------------------------------------------

    @workflow.signal(
        description="Stop gracefully: nothing new starts, calls in flight settle, "
        "the run ends aborted with operator_stop."
    )
    def stop(self, reason: str = "") -> None:
        """Stop gracefully: nothing new starts, calls in flight settle, the run is aborted."""
        from orchestration.types import OperatorStop

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

    @workflow.query(
        description="Compact log entries from global index `since` (this "
        "execution's; earlier ones are in the plan store), at most `limit`."
    )
    def events(self, since: int = 0, limit: int = _PAGE_LIMIT) -> LogPage:
        """Log entries from global index ``since`` of this execution's segment, page by size."""
        start = max(0, since - self._offset)
        limit = max(1, min(limit, _PAGE_LIMIT))
        page: list[LogEntry] = []
        size = 0
        for entry in self._log[start : start + limit]:
            size += len(entry.model_dump_json())
            if page and size > _PAGE_BYTES:
                break
            page.append(entry)
        return LogPage(
            entries=tuple(page),
            next=self._offset + start + len(page),
            total=self._offset + len(self._log),
            segment_offset=self._offset,
            done=self._engine is not None and self._engine.done,
        )

    @workflow.query(description="A small headline: outcome, counts, frames in flight and halted.")
    def status(self) -> RunStatus:
        """A small headline: outcome, counts, frames in flight and halted."""
        engine = self._engine
        if engine is None:
            return RunStatus(outcome="running", events=0, steps=0, build=self._build)
        return RunStatus(
            outcome=engine.outcome,
            events=self._offset + len(self._log),
            steps=engine.steps,
            in_flight=engine.in_flight,
            halted=engine.halted,
            stopping=engine.stopping,
            segment=self._segment,
            build=self._build,
        )


def _count(entries: list[LogEntry], kinds: dict[int, str]) -> None:
    """Count log entries on the worker's metrics (kinds: each frame's node kind, kept here).

    ``workflow.metric_meter()`` records nothing while a workflow task replays, so each fact is
    counted once however often history is replayed: ``plan_nodes_started`` (by ``kind``),
    ``plan_nodes_settled`` (by ``kind`` and ``status``), ``plan_runs_settled`` (by ``outcome``)
    and ``plan_indeterminate_frames`` (a frame halted or retried because its outcome was lost).
    """
    meter = workflow.metric_meter()
    for entry in entries:
        if isinstance(entry, LogEdge):
            kinds[entry.frame] = entry.node_kind
        elif isinstance(entry, LogStart):
            kinds[0] = "entry"
        elif isinstance(entry, LogEnter):
            if entry.attempt == 1:
                frame_kind = kinds.get(entry.frame, "join")
                meter.create_counter("plan_nodes_started").add(1, {"kind": frame_kind})
        elif isinstance(entry, LogSettle):
            attributes = {"kind": kinds.get(entry.frame, "join"), "status": entry.status}
            meter.create_counter("plan_nodes_settled").add(1, attributes)
        elif isinstance(entry, LogEnd):
            meter.create_counter("plan_runs_settled").add(1, {"outcome": entry.outcome})


def _describe(cause: InterruptionCause | None) -> str:
    if cause is None:
        return "no cause recorded"
    facts = cause.model_dump(exclude={"kind"})
    detail = ", ".join(f"{k}={v}" for k, v in facts.items())
    return f"{cause.kind}" + (f" ({detail})" if detail else "")


def _counts(log: list[LogEntry]) -> dict[str, int]:
    counts = {"ok": 0, "failed": 0, "skipped": 0}
    for entry in log:
        if type(entry) is LogSettle:
            counts[entry.status] += 1
    return counts


def _entry_of(view: RawPlanView | None) -> str:
    if view is None:
        return ""
    return next((node.id for node in view.nodes if node.kind == "entry"), "")
