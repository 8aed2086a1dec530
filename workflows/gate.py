"""Everything ``PlanRun`` checks before any node runs, and the claim that makes the run the one.

**At most once, whoever starts it** (ruling 30). In order: the input decodes (else the
execution fails at once, non-retryable: :func:`decode`); the workflow id is ``plan/<planId>``;
the plan digests to the approved digest (loaded by reference from the worker's plan store, or
given inline: :func:`load_view`); the approval binds that digest and the plan's authority set
(:func:`deviation`) and, on a worker with approval keys, is validly signed; and the worker wins
the plan store's claim for this execution chain (``plan.claim``, a local activity). A run that
fails a check is refused: its log records ``run_started`` and settles ``aborted`` with
``deviation_abort``. Only a claim that succeeds lets a node run, so a second start under any
workflow id or reuse policy runs nothing.

**Resume** (ruling 28) is a new execution of ``plan/<planId>`` with ``resume: true``: the claim
allows it only for a run whose log ended without completing, and the run continues that log,
read from the plan store. An execution continued as new passed the gate in the first one.

This module is passed through the workflow sandbox (see :mod:`workflows.plan_run`): what it
reads outside history is content-addressed (:mod:`workflows.externs`), and its time is
``workflow.now()``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from temporalio import workflow
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError

from orchestration.errors import InvalidRunInputError, OrchestrationError, UnrunnablePlanError
from orchestration.plan.ops import plan_digest
from orchestration.run.admission import approval_problem
from orchestration.run.engine.machine import RunEngine
from orchestration.run.log import LogEntry
from orchestration.run.messages import ClaimRequest, ClaimResponse, PlanRunInput, workflow_id_for
from orchestration.types import ApprovalRecord, DeviationAbort, RawPlanView
from workflows.attributes import PLAN_BUILD, PLAN_DIGEST, PLAN_ID
from workflows.externs import LOAD_LOG, LOAD_PLAN
from workflows.port import LOCAL_TIMEOUT, iso
from workflows.segment import Segment
from workflows.signatures import APPROVAL_SIGNATURES

__all__ = [
    "NO_INPUT",
    "Admission",
    "admit",
    "approved_digest",
    "decode",
    "decode_as",
    "deviation",
    "load_view",
]

Decoded = TypeVar("Decoded")

NO_INPUT = RawValue(payload=None)  # type: ignore[arg-type]
"""``PlanRun``'s input when it was started with none (refused by :func:`decode`)."""


@dataclass(frozen=True, slots=True)
class Admission:
    """What the gate let through: the engine that runs the plan, or that records its refusal.

    Attributes:
        engine: Started, resumed or continued; or refused, and so already settled.
        claimed: Whether this execution holds the plan's claim (only then is its log mirrored
            and its outcome upserted).

    """

    engine: RunEngine
    claimed: bool


def decode(input: RawValue) -> PlanRunInput:
    """The run's input, or a non-retryable failure saying how to start ``PlanRun``.

    Decoded here rather than by the SDK so that bad input fails the execution by name instead
    of failing its workflow task for ever.
    """
    request = decode_as(input, PlanRunInput, "PlanRun", _refuse_input)
    if (request.plan is None) == (request.plan_ref is None):
        raise _refuse_input("PlanRun's input must give exactly one of plan and planRef")
    return request


def decode_as(
    input: RawValue,
    model: type[Decoded],
    workflow_name: str,
    refuse: Callable[[str], ApplicationError],
) -> Decoded:
    """A workflow's one input as ``model``, or ``refuse(why)`` raised (no input, no decoding)."""
    if input is NO_INPUT or input.payload is None:
        raise refuse(f"{workflow_name} was started without input")
    try:
        request = workflow.payload_converter().from_payload(input.payload, model)
    except Exception as exc:  # noqa: BLE001 - any undecodable input is refused by name
        raise refuse(f"{workflow_name}'s input does not decode: {exc}") from None
    if not isinstance(request, model):
        raise refuse(f"{workflow_name}'s input decodes to {type(request).__name__}")
    return request


def _refuse_input(message: str) -> ApplicationError:
    return ApplicationError(
        f"{message}; start PlanRun with one PlanRunInput JSON object (see schema/ or run "
        "`orch run input PLAN`)",
        type="invalid_plan_run_input",
        non_retryable=True,
    )


def load_view(request: PlanRunInput) -> RawPlanView | str:
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


def approved_digest(request: PlanRunInput, view: RawPlanView) -> str:
    """The digest the run was started for: its reference's, or the inline plan's own."""
    return request.plan_ref.digest if request.plan_ref is not None else view.digest


def deviation(view: RawPlanView, approval: ApprovalRecord, digest: str) -> str | None:
    """Why the run's content or approval does not match what was approved, if it does not."""
    actual = plan_digest(view)
    if actual != digest or actual != view.digest:
        return f"the plan's content digests to {actual}, not to the approved digest {digest}"
    return approval_problem(view, approval)


async def admit(
    request: PlanRunInput, loaded: RawPlanView | str, segment: Segment, *, build: str | None
) -> Admission:
    """Every check of ruling 30, then the claim; the engine that runs (or refuses) the run.

    A continued or resumed run's ``segment`` is set to go on from the log before it. ``build``
    is the interpreter's (recorded on ``start`` and in ``PlanBuild``).
    """
    now = iso(workflow.now())
    info = workflow.info()
    run_id = info.workflow_id
    continued = request.continued
    if continued is not None and isinstance(loaded, RawPlanView):
        segment.continue_from(continued)
        engine = RunEngine.continued(
            loaded, continued.checkpoint, at=now, max_in_flight=request.settings.max_in_flight
        )
        return Admission(engine, claimed=True)
    claimed = False
    problem = _problem(request, loaded, run_id)
    view = loaded if isinstance(loaded, RawPlanView) else None
    if problem is None and view is not None:
        problem = await _signature_refusal(request)
    if problem is None and view is not None:
        claim = await _claim(request, view, info.first_execution_run_id)
        if not claim.ok:
            problem = _claim_refusal(claim)
        else:
            claimed = True
            if request.settings.search_attributes:
                # PlanBuild only on a versioned worker: an unversioned run's upsert stays
                # the command it always was, so older histories replay unchanged.
                workflow.upsert_search_attributes(
                    [PLAN_ID.value_set(view.plan_id), PLAN_DIGEST.value_set(view.digest)]
                    + ([] if build is None else [PLAN_BUILD.value_set(build)])
                )
            try:
                engine = _engine_for(request, view, claim, segment, now, build)
                return Admission(engine, claimed=True)
            except (InvalidRunInputError, UnrunnablePlanError) as exc:
                problem = exc.message
    known = view or request.plan
    digest = request.plan_ref.digest if request.plan_ref is not None else ""
    engine = RunEngine.refuse(
        run_id,
        digest or (known.digest if known is not None else ""),
        DeviationAbort(detail=problem or "the run was refused"),
        now,
        entry=_entry_of(known),
        build=build,
    )
    return Admission(engine, claimed=claimed)


def _problem(request: PlanRunInput, loaded: RawPlanView | str, run_id: str) -> str | None:
    plan_id = request.plan_id or ""
    if run_id != workflow_id_for(plan_id):
        return (
            f"this execution's workflow id is {run_id!r}, but plan {plan_id!r} runs only "
            f"as {workflow_id_for(plan_id)!r}; a plan's one run has one id"
        )
    if isinstance(loaded, str):
        return loaded
    return deviation(loaded, request.approval, approved_digest(request, loaded))


async def _signature_refusal(request: PlanRunInput) -> str | None:
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
        start_to_close_timeout=LOCAL_TIMEOUT,
    )
    return refusal or None


async def _claim(request: PlanRunInput, view: RawPlanView, execution: str) -> ClaimResponse:
    claim: ClaimResponse = await workflow.execute_local_activity(
        "plan.claim",
        ClaimRequest(
            plan_id=view.plan_id,
            digest=approved_digest(request, view),
            run_id=workflow.info().workflow_id,
            execution=execution,
            resume=request.resume,
        ),
        result_type=ClaimResponse,
        summary="claim the plan's one run",
        start_to_close_timeout=LOCAL_TIMEOUT,
    )
    return claim


def _claim_refusal(claim: ClaimResponse) -> str:
    if claim.reason == "run_already_claimed":
        return (
            "the plan's one run is already claimed by another execution"
            + (f" ({claim.existing_run_id})" if claim.existing_run_id else "")
            + "; a plan runs at most once: clone it to run its content again"
        )
    return f"the plan store refused the run claim ({claim.reason})"


def _engine_for(
    request: PlanRunInput,
    view: RawPlanView,
    claim: ClaimResponse,
    segment: Segment,
    now: str,
    build: str | None,
) -> RunEngine:
    """The claimed run's engine: started, or resumed from the log the claim says is stored."""
    window = request.settings.max_in_flight
    run_id = workflow.info().workflow_id
    if not request.resume:
        return RunEngine.start(
            view, run_id, request.run_input, now, max_in_flight=window, build=build
        )
    load = workflow.extern_functions().get(LOAD_LOG)
    if load is None:
        raise UnrunnablePlanError(
            "this worker has no plan store to read the run's log from; start it with --store"
        )
    previous: list[LogEntry] = load(view.plan_id, run_id, claim.log_length)
    segment.resume_after(previous)
    return RunEngine.resume(
        view,
        previous,
        reopen=True,
        run_input=request.run_input,
        at=now,
        max_in_flight=window,
    )


def _entry_of(view: RawPlanView | None) -> str:
    if view is None:
        return ""
    return next((node.id for node in view.nodes if node.kind == "entry"), "")
