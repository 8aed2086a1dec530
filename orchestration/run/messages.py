"""Wire contracts of execution: what the ``PlanRun`` workflow and its activities exchange.

They are plain wire models (camelCase JSON through the pydantic data converter), so a service
written against another Temporal SDK can start a run, and so the workflow and its activities
agree on one definition. Nothing here does I/O.
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Literal

from pydantic import Field

from orchestration.run.batching import (
    DEFAULT_BATCH_STEPS,
    DEFAULT_BATCHES_OVER,
    Batching,
    BatchSpec,
)
from orchestration.run.checkpoint import Checkpoint
from orchestration.run.log import AskedRound, LogEntry
from orchestration.types import (
    ApprovalRecord,
    ArtifactHandle,
    AuthorityClaim,
    BranchNode,
    DeclaredField,
    EmitRows,
    EmitValue,
    EncodableValue,
    FrameRef,
    GateRequest,
    InterruptionCause,
    ModelTurn,
    OutputItem,
    OutputTable,
    PlanNodeKind,
    Question,
    RawPlanView,
    SelectNode,
    TransformStep,
    Usage,
    UsageTotals,
    ValueMap,
    WireModel,
)

__all__ = [
    "PlanBatchInput",
    "batch_workflow_id",
    "MAX_READABLE_ID",
    "AttemptUsage",
    "CallRequest",
    "CallResponse",
    "ClaimRequest",
    "ClaimResponse",
    "ContinuedRun",
    "ErrorCode",
    "EvaluateRequest",
    "EvaluateResponse",
    "GateAck",
    "GateAnswer",
    "GateApproval",
    "PendingGateDecision",
    "WaitingGate",
    "LogPage",
    "MirrorRequest",
    "PlanRef",
    "PlanRunInput",
    "PlanRunResult",
    "ReasonRequest",
    "ReasonResponse",
    "ResolveDecision",
    "RetrySettings",
    "RunSettings",
    "RunStatus",
    "TransformRequest",
    "TransformResponse",
    "activity_id_for",
    "usage_of",
    "workflow_id_for",
]

ErrorCode = Literal[
    "unknown_tool",
    "authority_not_approved",
    "authority_missing",
    "arguments_not_approved",
    "output_mismatch",
    "output_too_large",
    "tool_failed",
    "unsupported_result",
    # reason
    "no_reasoner",
    "invalid_output_schema",
    "output_schema_violation",
    "reasoner_unavailable",
    "reasoner_rejected",
    "context_window_exceeded",
    "budget_exhausted",
    # transform
    "E_NO_READER_RESOLVER",
    "unknown_artifact_class",
    "artifact_unreadable",
    "artifact_class_mismatch",
    "transform_unknown_step",
    "transform_step_args",
    "transform_step_failed",
    "transform_emit",
    # cells
    "unwired_evaluator",
    "E_ORCH_CELL_UNAVAILABLE",
    "predicate_unevaluatable",
    "lua_memory_exceeded",
]
"""Stable codes of node-activity failures (the ``type`` of the ``ApplicationError``).

Every one is non-retryable except ``tool_failed`` (when the tool does not say otherwise) and
``reasoner_unavailable`` (an overloaded or unreachable provider may answer later).
"""


MAX_READABLE_ID = 200
"""Frame keys up to this length are used verbatim in activity ids (Temporal caps ids at 1,000)."""


def activity_id_for(frame_key: str, attempt: int) -> str:
    """The activity id of one attempt of one frame: unique per frame, stable across replays.

    The frame key itself while it is short enough to read in the UI; past that (a long route:
    a deep chain), the node id plus a digest of the key, since Temporal refuses ids over 1,000
    characters.
    """
    if len(frame_key) <= MAX_READABLE_ID:
        return f"{frame_key}#{attempt}"
    node_id = frame_key.split(":", 1)[0]
    return f"{node_id}:~{hashlib.sha256(frame_key.encode()).hexdigest()[:24]}#{attempt}"


def workflow_id_for(plan_id: str) -> str:
    """The one workflow id a plan's run may ever have: ``plan/<planId>``."""
    return f"plan/{plan_id}"


class CallRequest(WireModel):
    """One call frame, with its references already resolved by the engine."""

    plan_id: str
    run_id: str
    node_id: str
    frame_key: str
    tool: str
    args: ValueMap
    output: tuple[DeclaredField, ...] = ()
    authority: tuple[AuthorityClaim, ...] = ()
    """The calling node's own claims."""
    approved_authority: tuple[AuthorityClaim, ...] = ()
    """The approval's canonical set; every claim above must be in it."""
    args_digest: str | None = Field(default=None, exclude_if=lambda v: v is None)
    """For a call approved at its gate: the digest of the approved arguments. The call checks
    ``args`` against it before the tool runs, so what was approved is what runs."""

    @property
    def idempotency_key(self) -> str:
        """Stable for every attempt of this frame, distinct for every other frame."""
        return f"{self.plan_id}/{self.frame_key}"


class CallResponse(WireModel):
    """What the tool produced, normalised to items (and an artifact handle when there is one)."""

    items: tuple[OutputItem, ...]
    artifact: ArtifactHandle | None = None


class ReasonRequest(WireModel):
    """One reason frame: its joined prompt and its output schema."""

    plan_id: str
    run_id: str
    node_id: str
    frame_key: str
    prompt: str
    output_schema: str
    """The node's JSON Schema, still encoded: the activity decodes and checks it."""
    max_attempts: int = Field(ge=1)
    max_tokens: int | None = Field(default=None, exclude_if=lambda v: v is None)
    """Tokens this attempt may still spend (what is left of its budgets): no model turn starts
    once its turns spent this many (``None``: no token budget bounds it)."""
    max_cost_usd: float | None = Field(default=None, exclude_if=lambda v: v is None)
    """US dollars this attempt may still spend at the worker's prices, likewise."""
    asks_left: int = Field(default=0, ge=0, exclude_if=lambda v: v == 0)
    """How many more rounds of questions the model may ask (0: it must answer)."""
    rounds: tuple[AskedRound, ...] = Field(default=(), exclude_if=lambda v: not v)
    """The rounds of questions answered so far: the conversation goes on from them."""


class AttemptUsage(WireModel):
    """One model attempt's accounting: its outcome and the tokens it cost."""

    attempt: int
    outcome: Literal["accepted", "invalid", "malformed", "no_tool_call", "refused", "asked"]
    input_tokens: int = 0
    output_tokens: int = 0
    problems: tuple[str, ...] = ()
    """Why the attempt was rejected (empty when accepted)."""


class ReasonResponse(WireModel):
    """The accepted answer as the node's one item, and every attempt's token usage.

    Or, for a node that may ask, ``asked``: the questions the model asked instead of answering
    (``items`` then empty), with ``call``, the id of its ``ask_questions`` tool call.
    """

    items: tuple[OutputItem, ...]
    asked: tuple[Question, ...] | None = Field(default=None, exclude_if=lambda v: v is None)
    call: str | None = Field(default=None, exclude_if=lambda v: v is None)
    attempts: tuple[AttemptUsage, ...]
    reasoner: str
    model: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = Field(default=None, exclude_if=lambda v: v is None)
    """The turns' cost at the worker's price table (``None``: no price for the model)."""

    def usage(self) -> Usage:
        """What the attempt spent, as its log entry records it."""
        return usage_of(self.attempts, self.model, self.cost_usd)


def usage_of(turns: tuple[AttemptUsage, ...], model: str, cost_usd: float | None) -> Usage:
    """An attempt's model turns, as the ``Usage`` its log entry records."""
    return Usage(
        input_tokens=sum(t.input_tokens for t in turns),
        output_tokens=sum(t.output_tokens for t in turns),
        cost_usd=cost_usd,
        model=model or None,
        turns=tuple(
            ModelTurn(
                turn=t.attempt,
                outcome=t.outcome,
                input_tokens=t.input_tokens,
                output_tokens=t.output_tokens,
                problems=t.problems,
            )
            for t in turns
        ),
    )


class TransformRequest(WireModel):
    """One transform frame: the source artifact's handle, the steps, the emit, the output."""

    plan_id: str
    run_id: str
    node_id: str
    frame_key: str
    source: ArtifactHandle
    source_tool: str | None = None
    """The tool of the call that produced the source, to check its declared artifact class."""
    steps: tuple[TransformStep, ...]
    emit: Annotated[EmitValue | EmitRows, Field(discriminator="as_")]
    output: tuple[DeclaredField, ...] = ()


class TransformResponse(WireModel):
    """The transform's output items."""

    items: tuple[OutputItem, ...]


class EvaluateRequest(WireModel):
    """A branch or select frame for a cell that runs outside the workflow (a local activity)."""

    node: Annotated[BranchNode | SelectNode, Field(discriminator="kind")]
    frame: FrameRef
    outputs: OutputTable = Field(default_factory=dict)


class EvaluateResponse(WireModel):
    """A cell's verdict and its evidence."""

    kind: Literal["branch", "select"]
    matched: bool = False
    case_label: str | None = None
    evidence: EncodableValue = None


class RetrySettings(WireModel):
    """How a replay-safe call is retried (a non-replay-safe call always gets one attempt)."""

    maximum_attempts: int = Field(default=5, ge=1)
    initial_interval_seconds: float = Field(default=1.0, gt=0)
    backoff_coefficient: float = Field(default=2.0, ge=1)
    maximum_interval_seconds: float = Field(default=30.0, gt=0)


class RunSettings(WireModel):
    """Per-run execution settings: queues, timeouts, retries, the in-flight cap."""

    task_queue: str | None = None
    """Activity task queue; ``None`` uses the workflow's own queue."""
    start_to_close_seconds: float = Field(default=300.0, gt=0)
    heartbeat_seconds: float | None = Field(default=30.0, gt=0)
    retry: RetrySettings = Field(default_factory=RetrySettings)
    max_in_flight: int = Field(default=1000, ge=1, le=1000)
    """Upper bound on concurrent activities, below the server's 2,000-pending wedge."""
    search_attributes: bool = True
    """Upsert ``PlanId``/``PlanDigest``/``PlanOutcome``, and ``PlanBuild`` on a versioned worker
    (they must be registered on the server: an upsert of an unknown one fails every workflow task
    of the run)."""
    continue_as_new_after_events: int | None = Field(default=None, ge=100)
    """Force continue-as-new after this many history events (default: when suggested)."""
    activity_summaries: bool = True
    """Label each node's activity ``<node> · <tool>`` in the Temporal UI. A summary is one more
    payload per activity for the SDK to convert, which a run of many short calls feels (see the
    README's benchmarks); the activity id names the frame either way."""
    autonomous: bool = Field(default=False, exclude_if=lambda v: v is False)
    """Autonomous mode (seed 001): approve by itself every approval gate whose plan allows it
    (``autonomous: true`` on the gate), recording each decision as automatic. Gates the plan
    does not open to it, input requests and a model's questions still wait for a person."""
    batch_maps_over: int | None = Field(
        default=DEFAULT_BATCHES_OVER, ge=0, exclude_if=lambda v: v == DEFAULT_BATCHES_OVER
    )
    """A map with more items than this runs them in batches: on Temporal each batch is a
    ``PlanBatch`` child workflow, in process a sub-run (see :mod:`orchestration.run.batching`).
    ``None``: every map runs its items in the run itself. Both hosts must be given the same
    value to write the same log."""
    batch_steps: int = Field(
        default=DEFAULT_BATCH_STEPS, ge=1, exclude_if=lambda v: v == DEFAULT_BATCH_STEPS
    )
    """The most steps one batch takes (so its items: this over one item's worst-case steps)."""

    def batching(self) -> Batching | None:
        """When and how maps run in batches, or ``None``."""
        if self.batch_maps_over is None:
            return None
        return Batching(self.batch_maps_over, self.batch_steps)


class PlanBatchInput(WireModel):
    """The input of ``PlanBatch``: one batch of a map's items, run for the plan's one run.

    Started only by the run's own ``PlanRun`` (which the batch checks: its parent must be the
    plan's run, and its workflow id the one :func:`batch_workflow_id` gives).
    """

    plan_ref: PlanRef
    approval: ApprovalRecord
    settings: RunSettings = Field(default_factory=RunSettings)
    spec: BatchSpec


def batch_workflow_id(plan_id: str, key: str) -> str:
    """The workflow id of the ``PlanBatch`` child that runs batch ``key`` of the plan's run."""
    return f"{workflow_id_for(plan_id)}/{key}"


class ContinuedRun(WireModel):
    """What a continued execution carries: the frontier (a checkpoint) and the run's counters.

    Never the plan (the execution loads it by id and digest) and never the log (earlier
    segments are in the plan store): so it stays small however long the run has gone on.
    """

    checkpoint: Checkpoint
    segments: int
    """How many executions came before this one."""
    entries_before: int
    """How many log entries those executions recorded (this segment's first global index)."""
    settled: int = 0
    failed: int = 0
    skipped: int = 0


class PlanRef(WireModel):
    """A frozen plan by reference: the worker loads it from its plan store and checks its digest."""

    plan_id: str
    digest: str


class PlanRunInput(WireModel):
    """The input of ``PlanRun``: the plan (inline or by reference), its approval, input, settings.

    Give exactly one of ``plan`` (the frozen view itself: what a service without access to the
    plan store sends) and ``plan_ref`` (its id and digest: the worker loads it). ``resume``
    continues the plan's run from its log in the plan store (ruling 28) instead of starting it.
    """

    plan: RawPlanView | None = None
    plan_ref: PlanRef | None = None
    approval: ApprovalRecord
    run_input: ValueMap = Field(default_factory=dict)
    settings: RunSettings = Field(default_factory=RunSettings)
    resume: bool = False
    continued: ContinuedRun | None = None
    """What a continued execution needs from the one before; ``None`` on the first."""

    @property
    def plan_id(self) -> str | None:
        """The plan's id, from whichever form the plan was given in."""
        if self.plan is not None:
            return self.plan.plan_id
        return None if self.plan_ref is None else self.plan_ref.plan_id


class LogPage(WireModel):
    """One page of the current execution's compact log (a page stays far below 2 MiB)."""

    entries: tuple[LogEntry, ...]
    next: int
    """Pass as ``since`` to read on; equals ``total`` at the end of what is recorded so far."""
    total: int
    segment_offset: int
    """Global index of this execution's first entry (earlier ones are in the plan store)."""
    done: bool


class ClaimRequest(WireModel):
    """The worker's claim of a plan's one run for this execution chain."""

    plan_id: str
    digest: str
    run_id: str
    execution: str
    resume: bool = False


class ClaimResponse(WireModel):
    """The store's answer: ``ok``, or the refusal's ``reason``; the log length on a resume."""

    ok: bool
    reason: str = ""
    existing_run_id: str | None = None
    log_length: int = 0


class MirrorRequest(WireModel):
    """Log entries to write into the plan store from global index ``start`` (idempotent)."""

    plan_id: str
    run_id: str
    start: int
    entries: tuple[LogEntry, ...]


class RunStatus(WireModel):
    """A live run's headline, for ``orch run watch``."""

    outcome: Literal["running", "completed", "halted", "aborted"]
    events: int
    steps: int
    in_flight: tuple[str, ...] = ()
    halted: tuple[str, ...] = ()
    waiting: tuple[str, ...] = Field(default=(), exclude_if=lambda v: not v)
    """Frames waiting for a person at a gate (see the ``waiting`` query for what they ask)."""
    stopping: InterruptionCause | None = None
    segment: int = 1
    build: str | None = None
    """The worker deployment version (``<deploymentName>.<buildId>``) this execution started on
    (a pinned run stays there unless an operator moves it); ``None`` on an unversioned worker."""
    usage: UsageTotals | None = Field(default=None, exclude_if=lambda v: v is None)
    """Tokens and cost the run's attempts spent on models so far (additive)."""
    node_usage: dict[str, UsageTotals] = Field(default_factory=dict, exclude_if=lambda v: not v)
    """The same per node id (additive)."""
    heartbeat_seconds: float | None = Field(default=None, exclude_if=lambda v: v is None)
    """The heartbeat timeout of the run's activities, which liveness is judged by (additive)."""


class ResolveDecision(WireModel):
    """An operator's answer for a halted indeterminate call."""

    frame_key: str
    decision: Literal["retry", "skip", "abort"]
    decided_by: str = "operator"


class GateApproval(WireModel):
    """A person's decision on an approval request (seed 001's ``PendingGateDecision``).

    ``rejected`` also declines an input request or a model's questions. ``args`` (before a
    call whose gate names them ``editable``) are the arguments to change, merged over the
    proposed ones; ``digest`` is the digest of the arguments the approver was shown, refused
    when it is not the open request's. ``request`` names the request it answers (``None``:
    the open one).
    """

    kind: Literal["approval"] = "approval"
    frame_key: str
    request: int | None = None
    decision: Literal["approved", "rejected"]
    decided_by: str = "operator"
    feedback: str | None = None
    args: ValueMap | None = None
    digest: str | None = None


class GateAnswer(WireModel):
    """A person's answer to an input request or a model's questions.

    ``response`` is checked against the request's schema (for questions, an object of
    question id to answer) and never logged or echoed back.
    """

    kind: Literal["input"] = "input"
    frame_key: str
    request: int | None = None
    response: EncodableValue = None
    provided_by: str = "operator"


PendingGateDecision = Annotated[GateApproval | GateAnswer, Field(discriminator="kind")]
"""A decision on a gate, as both hosts take it (Temporal: the ``decide`` and ``answer``
updates)."""


class GateAck(WireModel):
    """What became of a decision: applied (approved, rejected, answered), or ``skipped``.

    A decision that no longer applies (its request timed out or was superseded, the run ended
    or is ending, or continues in a new execution) is skipped, with ``reason``; a refused one
    (not open, already decided, a response that does not fit) is an error instead and never
    reaches the run. The response is never echoed here.
    """

    applied: bool
    frame_key: str
    request: int
    outcome: Literal["approved", "rejected", "answered", "skipped"]
    reason: str | None = None


class WaitingGate(WireModel):
    """One open request of a live run: which frame waits, and what it asks (``waiting``)."""

    frame_key: str
    node_id: str
    node_kind: PlanNodeKind
    request: GateRequest
    autonomous: bool = False
    """Whether autonomous mode may approve it (the plan allows it)."""


class PlanRunResult(WireModel):
    """The workflow's small result: the outcome and counts, never the log."""

    outcome: Literal["completed", "halted", "aborted"]
    interruption: InterruptionCause | None = None
    events: int
    settled: int
    failed: int
    skipped: int
    segments: int = 1
