"""Wire types: the one source of truth for every contract more than one module touches.

These frozen pydantic models are, at once, the Temporal payloads (through the pydantic data
converter), the records the stores persist, the input of the digest, and the exported JSON
Schema. Python attributes are snake_case; the wire form (JSON, and the canonical MessagePack the
digest hashes) uses the contract's camelCase names, so the schema reads like the contract.

Staged values (call arguments, predicates, output fields) are ``Annotated[Any, ValueSchema]``
fields: checked against the encodable subset when a model is built, kept as the caller's objects
in Python, and written in the tagged JSON form of :mod:`orchestration.plan.encoding` on the wire.
Build models from JSON with ``model_validate_json`` (or a ``TypeAdapter``'s ``validate_json``):
only JSON mode reads tags, so a Python dict that looks like ``{"$ref": ...}`` stays a dict.

Fields the contract calls required but whose absence freeze must *report* (a call's
``replaySafe``, ``onIndeterminate`` and ``onMissingValue``) are optional here, so an authoring
model sees every issue of its plan at once instead of a refusal per op.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

from orchestration.plan.encoding import NodeRef, ValueSchema
from orchestration.run.routes import BranchId, EdgeSegment, ItemSegment, JoinSegment, RouteSegment
from orchestration.run.tables import TableSchema

__all__ = [
    "DEFAULT_PLAN_BOUNDS",
    "AddEdgeOp",
    "AddNodeOp",
    "ApprovalRecord",
    "ApprovalSignature",
    "ArgMap",
    "ArgValue",
    "ArtifactHandle",
    "AuthorityClaim",
    "AuthorityVerb",
    "BooleanField",
    "BranchDefinition",
    "BranchId",
    "BranchNode",
    "BudgetExhausted",
    "CallDefinition",
    "CallNode",
    "CloneProvenance",
    "DeclaredField",
    "DeviationAbort",
    "EdgeHandle",
    "EdgeSegment",
    "EdgeTaken",
    "EdgeTakenRecord",
    "EmitRows",
    "EmitValue",
    "EncodableValue",
    "EntryDefinition",
    "EntryNode",
    "EnumField",
    "ErrorInfo",
    "FieldChange",
    "FrameRef",
    "Frontier",
    "FrontierSnapshot",
    "GateTimeout",
    "Instant",
    "InterruptionCause",
    "JoinArrival",
    "JoinDefinition",
    "JoinQuorum",
    "JoinStrategy",
    "JoinNode",
    "JoinSegment",
    "JoinState",
    "JoinUnsatisfiable",
    "ItemSegment",
    "LoopDefinition",
    "LoopEnded",
    "LoopNode",
    "LoopUntil",
    "MapDefinition",
    "MapNode",
    "MAX_LAMPORT",
    "NodeChange",
    "NodeDefinition",
    "NodeEntered",
    "NodeFailed",
    "NodeOutcome",
    "NodeOutput",
    "NodeSettled",
    "NumberField",
    "OperatorStop",
    "OutcomeFailed",
    "OutcomeOk",
    "OutcomeSkipped",
    "OutputItem",
    "OutputSchemaViolation",
    "PendingFrame",
    "PlanBounds",
    "PlanDiff",
    "PlanEdge",
    "PlanIssue",
    "PlanNode",
    "PlanNodeKind",
    "PlanOp",
    "PlanProvenance",
    "PlanState",
    "PlanSummary",
    "PredicateUnevaluatable",
    "ProcessDeath",
    "PromptPart",
    "RawPlanView",
    "ReasonDefinition",
    "ReasonNode",
    "RemoveEdgeOp",
    "RemoveNodeOp",
    "RevisionRef",
    "RouteSegment",
    "RunEvent",
    "RunInterrupted",
    "RunOutcome",
    "RunProjection",
    "RunSettled",
    "RunStarted",
    "RunSummary",
    "SelectDefinition",
    "SelectNode",
    "SetBoundsOp",
    "SetNodeDefinitionOp",
    "SetNodeFieldOp",
    "SetNodePhaseOp",
    "StateDigest",
    "StringField",
    "TemplateArgValue",
    "TemplateProvenance",
    "TextPart",
    "TransformDefinition",
    "TransformNode",
    "TransformStep",
    "TurnAbort",
    "AuthorityRevoked",
    "AttemptEnded",
    "LifecycleStep",
    "LifecycleStepKind",
    "AttemptRecord",
    "AttemptResult",
    "BudgetName",
    "ComparedValue",
    "FrameLiveness",
    "ModelTurn",
    "ModelTurnOutcome",
    "NodeBudget",
    "ObtainedBy",
    "RetryReason",
    "Usage",
    "UsageTotals",
    "ValueOrigin",
    "VerdictCheck",
    "ValueMap",
    "Verdict",
    "WireModel",
    "tuples_as_lists",
    "InputChoice",
    "TextInput",
    "ChoiceInput",
    "FormField",
    "FormInput",
    "FileInput",
    "InputSchema",
    "ApprovalGate",
    "AskPolicy",
    "GateKind",
    "InputDefinition",
    "InputNode",
    "Question",
    "GateDecision",
    "GateOutcome",
    "GateRequest",
    "GateOpened",
    "GateDecided",
    "GateTimedOut",
    "FrameGates",
]


class WireModel(BaseModel):
    """Base of every wire type: frozen, closed, camelCase on the wire."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    )


EncodableValue = Annotated[Any, ValueSchema("none")]
"""A value in the closed encodable subset (see :mod:`orchestration.plan.encoding`)."""

ArgValue = Annotated[Any, ValueSchema("node")]
"""A staged value: an encodable value that may also hold :class:`NodeRef`s."""

TemplateArgValue = Annotated[Any, ValueSchema("template")]
"""A template's staged value: may also hold :class:`~orchestration.plan.encoding.ParamRef` holes."""

ArgMap = Annotated[dict[str, Any], ValueSchema("node", mapping=True)]
"""Named staged values (a call's ``args``), checked in one pass."""

ValueMap = Annotated[dict[str, Any], ValueSchema("none", mapping=True)]
"""Named encodable values (an output item's fields, a step's args)."""

PlanState = Literal["editable", "reviewable", "executable"]
PlanNodeKind = Literal[
    "entry", "call", "reason", "transform", "branch", "select", "join", "input", "map", "loop"
]
AuthorityVerb = Literal["list", "read", "create", "update", "delete"]
EdgeHandle = str
"""``always``, ``match``, ``no_match``, ``default``, ``error``, ``case_<label>``, ``item`` (a map
node's edge into its body, fired once per item) or ``body`` (a loop node's edge into its body,
fired once per round)."""

_FIXED_HANDLES = frozenset({"always", "match", "no_match", "default", "error", "item", "body"})


# --------------------------------------------------------------------------------------------
# Declared fields, authority, bounds
# --------------------------------------------------------------------------------------------


class StringField(WireModel):
    """A string field, optionally capped in UTF-8 bytes."""

    path: str
    type: Literal["string"] = "string"
    max_bytes: int | None = Field(default=None, ge=0)


class NumberField(WireModel):
    """A number field (int or float)."""

    path: str
    type: Literal["number"] = "number"


class BooleanField(WireModel):
    """A boolean field."""

    path: str
    type: Literal["boolean"] = "boolean"


class EnumField(WireModel):
    """A string field restricted to ``values``."""

    path: str
    type: Literal["enum"] = "enum"
    values: tuple[str, ...]


DeclaredField = Annotated[
    StringField | NumberField | BooleanField | EnumField, Field(discriminator="type")
]
"""One field a node promises to produce, or a run's input must supply."""


class AuthorityClaim(WireModel):
    """One unit of authority a call claims: a verb on instances (scope) of a capability."""

    capability: str
    scope: str
    verb: AuthorityVerb


class PlanBounds(WireModel):
    """The resource envelope. Plan content: digested and approved with the plan.

    ``max_tokens`` and ``max_cost_usd`` are additive to the contract's five members and
    optional: absent, they are left out of the wire form and of the digest, so a plan without
    them digests exactly as before they existed. ``max_tokens`` bounds the input and output
    tokens every model turn of the run spends together; ``max_cost_usd`` bounds what those
    turns cost at the deployment's price table. See :mod:`orchestration.run.budgets` for how a
    run keeps to them.
    """

    max_nodes: int = Field(ge=1)
    max_edges: int = Field(ge=0)
    max_steps: int = Field(ge=1)
    max_concurrent_frames: int = Field(ge=1)
    max_encoded_bytes: int = Field(ge=1)
    max_tokens: int | None = Field(default=None, ge=1, exclude_if=lambda v: v is None)
    max_cost_usd: float | None = Field(
        default=None, gt=0, allow_inf_nan=False, exclude_if=lambda v: v is None
    )


DEFAULT_PLAN_BOUNDS = PlanBounds(
    max_nodes=256,
    max_edges=512,
    max_steps=4096,
    max_concurrent_frames=32,
    max_encoded_bytes=1_048_576,
)
"""The fold's seed: an empty log has these bounds, so revision 0 has a well-defined digest."""


class NodeBudget(WireModel):
    """A node's own budget, per frame (one execution of the node): plan content, digested.

    Attributes:
        max_tokens: Input plus output tokens the frame's model turns may spend, over all its
            attempts (only a ``reason`` node spends tokens).
        max_seconds: Wall time from the frame's first attempt's start; an attempt's timeout is
            cut to what is left of it.

    """

    max_tokens: int | None = Field(default=None, ge=1, exclude_if=lambda v: v is None)
    max_seconds: float | None = Field(
        default=None, gt=0, allow_inf_nan=False, exclude_if=lambda v: v is None
    )


# --------------------------------------------------------------------------------------------
# Gates: where a run pauses for a person (approvals, input requests, a model's questions)
# --------------------------------------------------------------------------------------------


class InputChoice(WireModel):
    """One option of a ``choice`` input, or of a form field of type ``choice``."""

    id: str
    label: str
    description: str | None = None


class TextInput(WireModel):
    """Plain text: the response is one string (the item's field ``text``)."""

    kind: Literal["text"] = "text"
    multiline: bool | None = None


class ChoiceInput(WireModel):
    """A discrete choice: one option's id (field ``choice``), or a list of ids (``choices``)."""

    kind: Literal["choice"] = "choice"
    options: tuple[InputChoice, ...] = ()
    multiple: bool | None = None


class FormField(WireModel):
    """One field of a form: the response item holds it under its ``id``.

    ``text``, ``textarea`` and ``date`` (``YYYY-MM-DD``) are strings, ``number`` a number,
    ``boolean`` a boolean, ``choice`` one option's id, ``file`` a file reference (see
    :class:`FileInput`). A field not ``required`` may be left out of the response.
    """

    id: str
    label: str
    type: Literal["text", "textarea", "number", "choice", "file", "date", "boolean"]
    required: bool | None = None
    options: tuple[InputChoice, ...] | None = None
    accept: tuple[str, ...] | None = None


class FormInput(WireModel):
    """A structured form: one item whose fields are the form's field ids."""

    kind: Literal["form"] = "form"
    fields: tuple[FormField, ...] = ()


class FileInput(WireModel):
    """A file, given by reference (the bytes never enter the run's log).

    The response is ``{name, size, mediaType, uri}`` (with ``multiple``, a list of those under
    ``files``): where the file is, and what it is. ``accept`` lists file extensions
    (``.pdf``) or media types (``image/png``, ``image/*``); ``maxSize`` caps ``size`` in bytes.
    """

    kind: Literal["file"] = "file"
    accept: tuple[str, ...] | None = None
    max_size: int | None = None
    multiple: bool | None = None


InputSchema = Annotated[
    TextInput | ChoiceInput | FormInput | FileInput, Field(discriminator="kind")
]
"""What a person is asked for (seed 001's ``InputSchema``): text, a choice, a form or a file."""


class ApprovalGate(WireModel):
    """A pause for a person's approval: plan content, digested and approved with the plan.

    ``on: arguments`` (a ``call`` only) pauses before the call runs, with its arguments resolved:
    the approver sees exactly what it will send, the decision binds their digest, and the call
    runs with what was approved. Arguments named in ``editable`` may be changed by the approver
    (within the tool's declared input shape); the decision records both versions.

    ``on: result`` pauses after the node produced its output (a ``call``, ``reason`` or
    ``transform``): the output is held until approved; a rejection (with feedback) settles the
    frame ``failed``, so its ``error`` edges apply.

    ``timeout`` (``PT30M``, ``90s``, ``15m``, ``2h``, ``1d``) bounds the wait; ``onTimeout`` says
    what it means: ``reject`` (settle failed) or ``halt`` (the run halts ``gate_timeout``,
    ruling 18; the default). A timeout is recorded as a timeout, never as consent.
    ``autonomous`` lets a run started in autonomous mode approve this gate by itself (recorded
    as automatic); without it, autonomous mode still waits here.
    """

    on: Literal["arguments", "result"]
    summary: str | None = None
    """What the approver is asked, in a line (shown with the request)."""
    editable: tuple[str, ...] | None = None
    timeout: str | None = None
    on_timeout: Literal["reject", "halt"] | None = None
    autonomous: bool | None = None


class AskPolicy(WireModel):
    """A reason node that may ask questions before it answers (seed 002's questionnaires).

    The model may call a second tool, ``ask_questions``, instead of answering; the run then
    waits for a person's answers, and the same conversation goes on with them, at most
    ``maxRounds`` times (after that only an answer is accepted). Questions are never answered
    automatically. ``timeout`` and ``onTimeout`` as for :class:`ApprovalGate`.
    """

    max_rounds: int
    timeout: str | None = None
    on_timeout: Literal["reject", "halt"] | None = None


GateKind = Literal["arguments", "result", "input", "questions"]
"""Which pause: before a call, of a result, an input request, or a model's questions."""



# --------------------------------------------------------------------------------------------
# Node definitions
# --------------------------------------------------------------------------------------------


class EntryDefinition(WireModel):
    """The one place external input enters: the fields a run's input must supply."""

    input: tuple[DeclaredField, ...] = ()


class CallDefinition(WireModel):
    """A staged tool invocation: the node kind the whole approval exists to gate."""

    tool: str
    args: ArgMap = Field(default_factory=dict)
    output: tuple[DeclaredField, ...] = ()
    on_missing_value: Literal["fail", "omit"] | None = None
    authority: tuple[AuthorityClaim, ...] = ()
    replay_safe: bool | None = None
    """A fact about the tool: may it be re-invoked with the same arguments?"""
    on_indeterminate: Literal["retry", "halt", "skip"] | None = None
    """A decision about this call: what to do when it started and its outcome is unknown."""
    declassifies: tuple[str, ...] | None = None
    """Output paths this tool is trusted to sanitise; the only way taint is cleared."""
    budget: NodeBudget | None = Field(default=None, exclude_if=lambda v: v is None)
    """The node's own token and wall-time budget (additive; absent when not declared)."""
    gate: ApprovalGate | None = None
    """Where the run pauses for a person's approval (before the call, or of its result)."""


class TextPart(WireModel):
    """Literal prompt text."""

    text: str


PromptPart = Annotated[TextPart | NodeRef, Field(union_mode="left_to_right")]
"""Literal text or a reference; a prompt is a sequence of these, never a string with a DSL."""


class ReasonDefinition(WireModel):
    """A model turn that must answer through one forced tool call whose arguments are the output."""

    prompt: tuple[PromptPart, ...]
    output_schema: str
    """A JSON Schema object, encoded as a string, so the plan stays plain data."""
    max_attempts: int
    budget: NodeBudget | None = Field(default=None, exclude_if=lambda v: v is None)
    """The node's own token and wall-time budget (additive; absent when not declared)."""
    asks: AskPolicy | None = None
    """Whether (and how many times) the model may ask a person questions before answering."""
    gate: ApprovalGate | None = None
    """A pause for a person's approval of the answer (``on: result``)."""


class TransformStep(WireModel):
    """One step: a descriptor's LLM-facing ``name`` and its arguments."""

    name: str
    args: ValueMap | None = None


class EmitValue(WireModel):
    """The final result becomes one item with one field."""

    as_: Literal["value"] = Field(default="value", alias="as")
    field: str


class EmitRows(WireModel):
    """The final result must be a list; each element becomes one item."""

    as_: Literal["rows"] = Field(default="rows", alias="as")


class TransformDefinition(WireModel):
    """Reads a slice of a call's artifact through the artifact class's own methods."""

    source: NodeRef
    steps: tuple[TransformStep, ...]
    emit: Annotated[EmitValue | EmitRows, Field(discriminator="as_")]
    output: tuple[DeclaredField, ...] = ()
    budget: NodeBudget | None = Field(default=None, exclude_if=lambda v: v is None)
    """The node's own token and wall-time budget (additive; absent when not declared)."""
    gate: ApprovalGate | None = None
    """A pause for a person's approval of the result (``on: result``)."""


class BranchDefinition(WireModel):
    """Two-way: the cell's verdict picks ``match`` or ``no_match``."""

    evaluator: str
    predicate: EncodableValue


class SelectDefinition(WireModel):
    """N-way: the verdict names a case label, or falls to the required ``default`` edge."""

    evaluator: str
    predicate: EncodableValue
    cases: tuple[str, ...]


class JoinQuorum(WireModel):
    """``{quorum: N}``: the barrier closes once ``N`` of its fork→join routes have arrived."""

    quorum: int = Field(ge=1)


JoinStrategy = Literal["all", "any"] | JoinQuorum
"""How many of a join's fork→join routes close its barrier: every one (``all``), the first
(``any``), or ``{quorum: N}``. Once the barrier closes, the frames still on its other routes
(queued, in flight or halted) are cancelled and recorded ``skipped`` with reason
``join_cancelled``: the join's output names the routes that arrived."""


class JoinDefinition(WireModel):
    """A diamond barrier; the fork and its routes come from the graph.

    ``strategy`` absent is ``all`` (the contract's barrier), so a plan without one keeps its
    digest.
    """

    kind: Literal["diamond"] | None = None
    strategy: JoinStrategy | None = None

    @property
    def needed(self) -> int | None:
        """Arrivals that close the barrier (``None``: all of its routes)."""
        strategy = self.strategy
        if strategy is None or strategy == "all":
            return None
        return 1 if strategy == "any" else strategy.quorum


class InputDefinition(WireModel):
    """An input request: the run asks a person, and their response is the node's output.

    ``prompt`` is shown with the widget ``schema`` describes (its references are resolved
    when the frame runs, as a reason node's are). The response is checked against ``schema``
    and becomes the node's one output item; its fields are derived from the schema (see
    :mod:`orchestration.plan.gates`), so references to them are checked at freeze. Nothing
    answers an input request automatically. ``timeout`` and ``onTimeout`` bound the wait:
    ``reject`` (settle failed), ``default`` (``default`` is the response, checked against the
    schema at freeze) or ``halt`` (the run halts ``gate_timeout``; the default).
    """

    prompt: tuple[PromptPart, ...] = ()
    schema_: InputSchema = Field(alias="schema")
    timeout: str | None = None
    on_timeout: Literal["reject", "default", "halt"] | None = None
    default: EncodableValue = None


class MapDefinition(WireModel):
    """Runs a body, a region of the plan, once per item of a list an upstream node produced.

    The body is every node reached from the map through its ``item`` edges; it must be closed
    (nothing in it has an edge out of it, and nothing outside it reads its nodes). Inside the
    body, a reference to the map reads the current item, ``{index, item}``. After every item
    ran, the map settles once: ``ok`` with one output item per item in item order,
    ``{index, ok: true, result}`` (``result`` is the first output item of the body frame that
    ended the item, ``None`` if it had none) or ``{index, ok: false, error: {node, name,
    message}}``; or ``failed`` when more items failed than it tolerates. Its ``always`` and
    ``error`` edges then apply as on any node.

    Attributes:
        over: The list to map over (the reference must resolve to a list).
        max_items: The most items a run may bring; more settles the map failed
            (``MapTooManyItemsError``) before any item runs. Required, so the worst case is
            known when the plan is approved.
        concurrency: How many items run at once (``None``: as many as the run's window).
        tolerated_failures: Items that may fail before the map fails (default 0).
        tolerated_failure_percent: The same as a share of the items, in percent. With both
            set, exceeding either fails the map.

    """

    over: NodeRef
    max_items: int = Field(ge=1)
    concurrency: int | None = Field(default=None, ge=1, exclude_if=lambda v: v is None)
    tolerated_failures: int | None = Field(default=None, ge=0, exclude_if=lambda v: v is None)
    tolerated_failure_percent: float | None = Field(
        default=None, ge=0, le=100, allow_inf_nan=False, exclude_if=lambda v: v is None
    )

    def tolerates(self, failed: int, total: int) -> bool:
        """Whether ``failed`` failures out of ``total`` items are within the tolerance."""
        count, percent = self.tolerated_failures, self.tolerated_failure_percent
        if count is None and percent is None:
            return failed == 0
        if count is not None and failed > count:
            return False
        return percent is None or failed * 100 <= percent * total


class LoopUntil(WireModel):
    """A loop's stop condition: a predicate in a cell, as a branch node holds one.

    Evaluated after each round against the round's outputs (the body's outputs on the route
    of the body frame that ended the round, and the loop's own ``{index, previous}``), exactly
    as a branch node's predicate is: a path ``"<nodeId>.<field>"`` reads that node's output
    in this round.
    """

    evaluator: str
    predicate: EncodableValue


LoopEnded = Literal["until", "max_iterations", "stuck"]
"""How a loop ended: its ``until`` held, it ran ``maxIterations`` rounds, or its watched output
was the same two rounds in a row."""


class LoopDefinition(WireModel):
    """Runs a body, a region of the plan, round after round until a predicate holds.

    The body is every node reached from the loop through its ``body`` edges; it is closed as a
    map's is. Inside the body, a reference to the loop reads the round, ``{index, previous}``
    (``previous`` is the result of the round before, ``None`` in round 0). After each round the
    ``until`` predicate is evaluated against the round's outputs; the loop ends when it holds,
    when ``maxIterations`` rounds ran, or (with ``watch``) when the watched output is the same
    two rounds in a row (``stuck``). It then settles once, ``ok`` with one output item
    ``{ended, rounds, result, results}``: how it ended, how many rounds ran, the last round's
    result and every round's result by index (a round's result is the first output item of the
    body frame that ended it, ``None`` if it had none). Ending by ``max_iterations`` or
    ``stuck`` is not a failure unless ``failUnlessMet`` is set: then the loop settles failed
    (``LoopUnmetError``) and its ``error`` edges apply. A round whose body fails with no error
    edge fails the loop (``LoopRoundFailedError``), as does a predicate that cannot be
    evaluated (``LoopUntilError``).

    Attributes:
        max_iterations: The most rounds a run of the loop makes. Required, so the worst case
            is known when the plan is approved.
        until: The stop condition, evaluated after every round.
        watch: An output of the body to fingerprint after every round (optional).
        fail_unless_met: Whether ending without ``until`` holding fails the loop.

    """

    max_iterations: int = Field(ge=1)
    until: LoopUntil
    watch: NodeRef | None = Field(default=None, exclude_if=lambda v: v is None)
    fail_unless_met: bool = Field(default=False, exclude_if=lambda v: not v)


NodeDefinition = (
    EntryDefinition
    | InputDefinition
    | CallDefinition
    | ReasonDefinition
    | TransformDefinition
    | BranchDefinition
    | SelectDefinition
    | JoinDefinition
    | MapDefinition
    | LoopDefinition
)


# --------------------------------------------------------------------------------------------
# Nodes and edges
# --------------------------------------------------------------------------------------------


class _NodeBase(WireModel):
    id: str
    phase: str | None = None
    """A label for reading and progress; edges alone order execution."""


class EntryNode(_NodeBase):
    """The entry node."""

    kind: Literal["entry"] = "entry"
    definition: EntryDefinition = Field(default_factory=EntryDefinition)


class CallNode(_NodeBase):
    """A call node."""

    kind: Literal["call"] = "call"
    definition: CallDefinition


class ReasonNode(_NodeBase):
    """A reason node."""

    kind: Literal["reason"] = "reason"
    definition: ReasonDefinition


class TransformNode(_NodeBase):
    """A transform node."""

    kind: Literal["transform"] = "transform"
    definition: TransformDefinition


class BranchNode(_NodeBase):
    """A branch node."""

    kind: Literal["branch"] = "branch"
    definition: BranchDefinition


class SelectNode(_NodeBase):
    """A select node."""

    kind: Literal["select"] = "select"
    definition: SelectDefinition


class JoinNode(_NodeBase):
    """A join node."""

    kind: Literal["join"] = "join"
    definition: JoinDefinition = Field(default_factory=JoinDefinition)


class InputNode(_NodeBase):
    """An input node: a request for a person's input, whose response is the output."""

    kind: Literal["input"] = "input"
    definition: InputDefinition


class MapNode(_NodeBase):
    """A map node: its body runs once per item (see :class:`MapDefinition`)."""

    kind: Literal["map"] = "map"
    definition: MapDefinition


class LoopNode(_NodeBase):
    """A loop node: its body runs round after round (see :class:`LoopDefinition`)."""

    kind: Literal["loop"] = "loop"
    definition: LoopDefinition


PlanNode = Annotated[
    EntryNode
    | CallNode
    | ReasonNode
    | TransformNode
    | BranchNode
    | SelectNode
    | JoinNode
    | InputNode
    | MapNode
    | LoopNode,
    Field(discriminator="kind"),
]
"""A node: identity, phase label, and exactly one kind-specific definition."""


class PlanEdge(WireModel):
    """A directed edge; ``handle`` decides when it fires given the source's outcome."""

    id: str
    from_: str = Field(alias="from")
    to: str
    handle: EdgeHandle

    @field_validator("handle")
    @classmethod
    def _known_handle(cls, handle: str) -> str:
        if handle in _FIXED_HANDLES or handle.startswith("case_"):
            return handle
        raise ValueError(
            f"handle {handle!r} is not one of always, match, no_match, default, error, case_<label>"
        )


# --------------------------------------------------------------------------------------------
# Ops
# --------------------------------------------------------------------------------------------


MAX_LAMPORT = 2**63 - 1
"""The largest Lamport time an op may carry: a signed 64-bit integer, so every store's column,
every SDK's JSON parser and the canonical encoding hold it exactly."""

_INSTANT = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?"
    r"(Z|[+-]\d{2}:\d{2})",
    re.ASCII,
)
_INSTANT_FORM = "YYYY-MM-DDTHH:MM[:SS[.fff]] followed by Z or an offset ±HH:MM"


def _instant(text: str) -> str:
    """``text`` unchanged when it is an ISO-8601 instant (a date, a time and an offset)."""
    match = _INSTANT.fullmatch(text)
    if match is None:
        raise ValueError(f"{text!r} is not an ISO-8601 instant; write it as {_INSTANT_FORM}")
    year, month, day, hour, minute, second, offset = match.groups()
    try:
        dt.datetime(int(year), int(month), int(day), int(hour), int(minute), int(second or 0))
        if offset != "Z":
            hours, minutes = int(offset[1:3]), int(offset[4:6])
            if hours > 23 or minutes > 59:
                raise ValueError(f"offset {offset} is out of range")
    except ValueError as exc:
        raise ValueError(
            f"{text!r} is not a real instant ({exc}); write it as {_INSTANT_FORM}"
        ) from None
    return text


Instant = Annotated[
    str,
    AfterValidator(_instant),
    Field(json_schema_extra={"format": "date-time", "pattern": f"^{_INSTANT.pattern}$"}),
]
"""An ISO-8601 instant as text: a calendar date, a time, and ``Z`` or an offset. Kept as
written (never normalised), so an op reads back byte for byte; refused when it names no real
moment (``"yesterday"``, ``"2026-13-45T99:99:99Z"``)."""


class _OpBase(WireModel):
    op_id: str = Field(min_length=1)
    actor_id: str = Field(min_length=1)
    lamport: int = Field(ge=0, le=MAX_LAMPORT)
    at: Instant
    """ISO-8601 instant the op was authored. Not part of the fold order."""

    def order_key(self) -> tuple[int, str, str]:
        """The fold's total order: ``(lamport, actorId, opId)``."""
        return (self.lamport, self.actor_id, self.op_id)


class AddNodeOp(_OpBase):
    """Add a node, or replace the node with that id (keeping its position)."""

    op: Literal["add_node"] = "add_node"
    node: PlanNode


class RemoveNodeOp(_OpBase):
    """Remove a node and the incident edges recorded with the op (so the fold commutes)."""

    op: Literal["remove_node"] = "remove_node"
    node_id: str
    incident_edge_ids: tuple[str, ...] = ()


class SetNodeFieldOp(_OpBase):
    """Set one field inside a node's definition by dot path; the value may hold NodeRefs."""

    op: Literal["set_node_field"] = "set_node_field"
    node_id: str
    path: str = Field(min_length=1)
    value: ArgValue


class SetNodeDefinitionOp(_OpBase):
    """Replace a node's whole definition (its kind stays)."""

    op: Literal["set_node_definition"] = "set_node_definition"
    node_id: str
    definition: ArgMap
    """Validated against the node's kind when folded; an invalid one is reported, not applied."""

    @field_validator("definition", mode="before")
    @classmethod
    def _dump_model(cls, definition: object) -> object:
        if isinstance(definition, BaseModel):
            return tuples_as_lists(definition.model_dump(by_alias=True, exclude_none=True))
        return definition


def tuples_as_lists(value: Any) -> Any:
    """A model dump with its tuple fields as lists, so it passes as staged values.

    Model sequence fields are tuples; staged values admit no tuples (they would decode as
    lists). Staged values never hold tuples themselves, so every tuple met is a model field.
    """
    if type(value) is tuple or type(value) is list:
        return [tuples_as_lists(v) for v in value]
    if type(value) is dict:
        return {k: tuples_as_lists(v) for k, v in value.items()}
    return value


class SetNodePhaseOp(_OpBase):
    """Set or clear (``None``) a node's phase label."""

    op: Literal["set_node_phase"] = "set_node_phase"
    node_id: str
    phase: str | None


class AddEdgeOp(_OpBase):
    """Add an edge; a same-id edge is replaced (last writer wins) and reported."""

    op: Literal["add_edge"] = "add_edge"
    edge: PlanEdge


class RemoveEdgeOp(_OpBase):
    """Remove an edge."""

    op: Literal["remove_edge"] = "remove_edge"
    edge_id: str


class SetBoundsOp(_OpBase):
    """Replace the bounds wholesale (every member required)."""

    op: Literal["set_bounds"] = "set_bounds"
    bounds: PlanBounds


PlanOp = Annotated[
    AddNodeOp
    | RemoveNodeOp
    | SetNodeFieldOp
    | SetNodeDefinitionOp
    | SetNodePhaseOp
    | AddEdgeOp
    | RemoveEdgeOp
    | SetBoundsOp,
    Field(discriminator="op"),
]
"""One authoring edit, carrying the identity that orders it in the fold."""


# --------------------------------------------------------------------------------------------
# Views, provenance, summaries, issues, diffs, approval
# --------------------------------------------------------------------------------------------


class CloneProvenance(WireModel):
    """A clone's lineage; ``completed_at_clone`` is what the renderer warns would repeat."""

    kind: Literal["clone"] = "clone"
    parent: str
    parent_digest: str
    parent_revision: int
    completed_at_clone: tuple[str, ...] = ()


class TemplateProvenance(WireModel):
    """Instantiation lineage (for the renderer and audit; not a taint mechanism)."""

    kind: Literal["template"] = "template"
    template: str
    args: ValueMap = Field(default_factory=dict)


PlanProvenance = Annotated[CloneProvenance | TemplateProvenance, Field(discriminator="kind")]


class RawPlanView(WireModel):
    """The folded plan content at a revision. No ``state``: that is a property of the plan now."""

    plan_id: str
    digest: str
    revision: int
    nodes: tuple[PlanNode, ...] = ()
    edges: tuple[PlanEdge, ...] = ()
    bounds: PlanBounds = DEFAULT_PLAN_BOUNDS
    provenance: PlanProvenance | None = None

    def node(self, node_id: str) -> PlanNode | None:
        """The node with that id, or ``None``."""
        for node in self.nodes:
            if node.id == node_id:
                return node
        return None


class PlanSummary(WireModel):
    """A plan's headline for listings; carries ``state``, which a view deliberately does not.

    Attributes:
        run_id: The plan's one run, once claimed (an ``executable`` plan that has run or is
            running); ``None`` before.
        run_outcome: How that run ended, as the plan store holds it; ``None`` while it runs
            (or before it was claimed), so a listing can say what an executable plan did.

    """

    plan_id: str
    state: PlanState
    digest: str
    revision: int
    node_count: int
    label: str | None = None
    provenance: PlanProvenance | None = None
    updated_at: str
    run_id: str | None = None
    run_outcome: RunOutcome | None = None


class StateDigest(WireModel):
    """The state and digest a refused transition (or approval) met."""

    state: PlanState
    digest: str


class PlanIssue(WireModel):
    """One validation finding, addressed to a model: ``message`` names the fix."""

    code: str
    message: str
    node_id: str | None = None
    edge_id: str | None = None
    severity: Literal["blocking", "advisory"]


class RevisionRef(WireModel):
    """A revision and its digest."""

    revision: int
    digest: str


class FieldChange(WireModel):
    """One changed field of a node; ``None`` on a side where the field is absent."""

    path: str
    before: ArgValue = None
    after: ArgValue = None


class NodeChange(WireModel):
    """The changed fields of one node present in both revisions."""

    node_id: str
    fields: tuple[FieldChange, ...]


class PlanDiff(WireModel):
    """Structural delta between two folded revisions."""

    from_: RevisionRef = Field(alias="from")
    to: RevisionRef
    nodes_added: tuple[PlanNode, ...] = ()
    nodes_removed: tuple[PlanNode, ...] = ()
    nodes_changed: tuple[NodeChange, ...] = ()
    edges_added: tuple[PlanEdge, ...] = ()
    edges_removed: tuple[PlanEdge, ...] = ()


class ApprovalSignature(WireModel):
    """An Ed25519 signature over an approval record's canonical digest.

    ``key_id`` is the signer's public-key fingerprint (:func:`orchestration.review.signing.key_id`),
    so a worker holding several operators' public keys picks the right one without trusting
    anything else the record says.
    """

    algorithm: Literal["ed25519"] = "ed25519"
    key_id: str
    value: str
    """The signature, base64 (standard alphabet, padded)."""


class ApprovalRecord(WireModel):
    """An operator's decision, bound to exactly the digest and authority set they were shown.

    A denial is not recorded: it is the absence of a record.
    """

    plan_id: str
    digest: str
    authority_set: tuple[AuthorityClaim, ...]
    """Canonical: deduplicated and sorted, so set equality is a byte comparison."""
    decided_by: str
    decided_at: str
    disposition: Literal["approved"] = "approved"
    signature: ApprovalSignature | None = Field(default=None, exclude_if=lambda v: v is None)
    """The operator's Ed25519 signature over the rest of the record (see
    :mod:`orchestration.review.signing`). Optional and left out of the wire form when absent, so an
    unsigned record serialises, digests and validates exactly as before the field existed."""


# --------------------------------------------------------------------------------------------
# Run state: frames, outputs, outcomes, joins
# --------------------------------------------------------------------------------------------


class FrameRef(WireModel):
    """One execution of one node: the node and the route that reached it."""

    node_id: str
    kind: PlanNodeKind
    branch_id: BranchId
    via_edge_id: str | None = None

    @property
    def key(self) -> str:
        """The frame's table key, ``"<nodeId>:<branchKey>"``."""
        return f"{self.node_id}:{self.branch_id.key}"


class OutputItem(WireModel):
    """One unit of a node's output; values are encodable (a datetime or a set is legitimate)."""

    json_: ValueMap = Field(alias="json")


class NodeOutput(WireModel):
    """What a node produced on one route; always a list of items."""

    items: tuple[OutputItem, ...]
    branch_id: BranchId


class ArtifactHandle(WireModel):
    """A persisted pointer to an artifact's bytes: never the bytes themselves.

    ``tag`` names the reader resolver that rebinds it; ``artifact_class`` names the class
    whose methods a transform may call on it.
    """

    tag: str
    locator: str
    artifact_class: str | None = None


OutputTable = Annotated[Mapping[str, NodeOutput], TableSchema()]
"""Keyed ``<nodeId>:<branchKey>``: a dict, or a structurally shared ``Table`` kept as is."""
ArtifactTable = Annotated[Mapping[str, ArtifactHandle], TableSchema()]
"""Keyed like ``OutputTable``: handles of the artifacts the route's calls produced."""


class ErrorInfo(WireModel):
    """A failure's name and message."""

    name: str
    message: str


class OutcomeOk(WireModel):
    """The frame produced its output."""

    status: Literal["ok"] = "ok"
    output: NodeOutput


class OutcomeFailed(WireModel):
    """The frame failed; ``handled`` when an ``error`` edge took it."""

    status: Literal["failed"] = "failed"
    handled: bool
    error: ErrorInfo


class OutcomeSkipped(WireModel):
    """A frame that settled without running to an outcome: see ``reason``."""

    status: Literal["skipped"] = "skipped"
    reason: Literal["indeterminate_skip", "join_cancelled"] = "indeterminate_skip"
    """``indeterminate_skip``: a lost call resolved by ``skip``; ``join_cancelled``: a frame on
    a route its join no longer waits for (an ``any`` or quorum join closed without it)."""


NodeOutcome = Annotated[OutcomeOk | OutcomeFailed | OutcomeSkipped, Field(discriminator="status")]


class PendingFrame(WireModel):
    """A live frame with its branch-local value and artifact tables."""

    frame: FrameRef
    outputs: OutputTable = Field(default_factory=dict)
    artifacts: ArtifactTable = Field(default_factory=dict)


class JoinArrival(WireModel):
    """One arrival at a barrier, with the tables it arrived with."""

    branch: BranchId
    edge_id: str
    outputs: OutputTable = Field(default_factory=dict)
    artifacts: ArtifactTable = Field(default_factory=dict)


class JoinState(WireModel):
    """A partial barrier, keyed by the arriving route truncated at the join's fork."""

    node_id: str
    correlation_key: str
    arrivals: tuple[JoinArrival, ...] = ()
    required: int


# --------------------------------------------------------------------------------------------
# Interruption causes
# --------------------------------------------------------------------------------------------


class TurnAbort(WireModel):
    """The run was cancelled."""

    kind: Literal["turn_abort"] = "turn_abort"


class OperatorStop(WireModel):
    """An operator stopped the run."""

    kind: Literal["operator_stop"] = "operator_stop"


class GateTimeout(WireModel):
    """A gate waited past its deadline."""

    kind: Literal["gate_timeout"] = "gate_timeout"


class ProcessDeath(WireModel):
    """A call started and its outcome is unknown; recorded when found, never inferred."""

    kind: Literal["process_death"] = "process_death"


BudgetName = Literal["maxSteps", "maxTokens", "maxCostUsd", "node.maxTokens", "node.maxSeconds"]
"""Which budget a run spent: a bound of the plan, or a node's own (``node_id`` names it)."""


class BudgetExhausted(WireModel):
    """The run reached a budget; ``settled`` is the count of node entries reached.

    The contract's shape is ``{kind, settled}`` (the ``maxSteps`` case). The rest is additive
    and left out of the wire form when absent, so a ``maxSteps`` halt reads exactly as before:
    ``budget`` names the budget that was spent (for every budget but ``maxSteps``), ``node_id``
    the node whose attempt it refused (for a node's own budget, that node), ``limit`` its
    declared value and ``spent`` what had been spent when the run stopped (tokens or US
    dollars; for a wall time the log's own times tell it: the frame's first attempt's start and
    this interruption's), and ``detail`` anything an operator needs besides (an attempt's
    ceiling that would pass the budget, an unpriced model).
    """

    kind: Literal["budget_exhausted"] = "budget_exhausted"
    settled: int
    budget: BudgetName | None = Field(default=None, exclude_if=lambda v: v is None)
    node_id: str | None = Field(default=None, exclude_if=lambda v: v is None)
    limit: float | None = Field(default=None, exclude_if=lambda v: v is None)
    spent: float | None = Field(default=None, exclude_if=lambda v: v is None)
    detail: str | None = Field(default=None, exclude_if=lambda v: v is None)


class DeviationAbort(WireModel):
    """The run's content or approval does not match what was approved."""

    kind: Literal["deviation_abort"] = "deviation_abort"
    detail: str


class NodeFailed(WireModel):
    """A node failed with no ``error`` edge to take it."""

    kind: Literal["node_failed"] = "node_failed"
    node_id: str
    handled: Literal[False] = False


class PredicateUnevaluatable(WireModel):
    """A cell raised while evaluating a branch or select."""

    kind: Literal["predicate_unevaluatable"] = "predicate_unevaluatable"
    node_id: str


class JoinUnsatisfiable(WireModel):
    """No live frame can still reach a partial barrier."""

    kind: Literal["join_unsatisfiable"] = "join_unsatisfiable"
    node_id: str


class OutputSchemaViolation(WireModel):
    """A reason node exhausted its attempts without a valid structured answer."""

    kind: Literal["output_schema_violation"] = "output_schema_violation"
    node_id: str


class AuthorityRevoked(WireModel):
    """A claim the plan relies on was revoked."""

    kind: Literal["authority_revoked"] = "authority_revoked"
    claim: AuthorityClaim


InterruptionCause = Annotated[
    TurnAbort
    | OperatorStop
    | GateTimeout
    | ProcessDeath
    | BudgetExhausted
    | DeviationAbort
    | NodeFailed
    | PredicateUnevaluatable
    | JoinUnsatisfiable
    | OutputSchemaViolation
    | AuthorityRevoked,
    Field(discriminator="kind"),
]
"""Why a run stopped short of completing. Closed, so a caller can handle every case."""


# --------------------------------------------------------------------------------------------
# Attempts, usage and provenance (additive to the contract)
# --------------------------------------------------------------------------------------------

RetryReason = Literal[
    "transient_error",
    "invalid_output",
    "provider_error",
    "timeout",
    "heartbeat_timeout",
    "indeterminate",
    "operator_retry",
]
"""Why a frame was tried again (a closed set).

* ``transient_error``: the attempt before failed with a tool's error that is worth trying
  again (a network or timeout error, or one the tool marks transient; ruling 29);
* ``invalid_output``: a model turn's answer failed the node's output schema; the next turn is
  told the violations (this reason is a model turn's, inside one attempt: :class:`ModelTurn`);
* ``provider_error``: the model provider failed to answer (overloaded, rate limiting,
  unreachable); a context window exceeded is never retried;
* ``timeout`` / ``heartbeat_timeout``: the attempt before ran past its start-to-close timeout, or
  stopped heartbeating, so its outcome is unknown and the frame may be repeated;
* ``indeterminate``: the attempt before was found started and unsettled when the run resumed;
* ``operator_retry``: an operator answered a halted frame with ``retry``.
"""

AttemptResult = Literal["ok", "failed", "lost", "skipped", "asked"]
"""How one attempt ended: a result, a failure, no outcome at all (lost), a scripted skip, or
questions to a person instead of an answer (a reason node that may ask; the frame waits, and
its next attempt goes on from the same conversation)."""

ModelTurnOutcome = Literal["accepted", "invalid", "malformed", "no_tool_call", "refused", "asked"]
"""How a model turn ended; ``asked``: the model asked a person questions instead of answering
(a reason node that may ask)."""


class ModelTurn(WireModel):
    """One model turn of a ``reason`` attempt: how the model answered and what it cost.

    A reason attempt asks the model up to the node's ``maxAttempts`` times, feeding the
    violations of each rejected answer back; each turn after a rejected one is a retry for
    ``invalid_output``, and ``problems`` is the violation text the model was told.
    """

    turn: int
    outcome: ModelTurnOutcome
    input_tokens: int = 0
    output_tokens: int = 0
    problems: tuple[str, ...] = Field(default=(), exclude_if=lambda v: not v)


class Usage(WireModel):
    """What one attempt spent on a model: tokens as the provider reported them, and cost.

    ``cost_usd`` is priced by the deployment's price table for ``model``; ``None`` when the
    table has no price for it (the tokens are then *unpriced*, and a cost budget cannot be
    kept, see :mod:`orchestration.run.budgets`).
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = Field(default=None, exclude_if=lambda v: v is None)
    model: str | None = Field(default=None, exclude_if=lambda v: v is None)
    turns: tuple[ModelTurn, ...] = Field(default=(), exclude_if=lambda v: not v)

    @property
    def tokens(self) -> int:
        """Input and output tokens together."""
        return self.input_tokens + self.output_tokens


class UsageTotals(WireModel):
    """Tokens and cost summed over attempts (a frame's, a node's or the run's).

    ``unpriced_tokens`` counts the tokens of attempts whose model has no price: they are in
    ``input_tokens``/``output_tokens`` but not in ``cost_usd``. ``attempts`` counts the attempts
    that spent anything on a model.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_tokens: int = 0
    attempts: int = 0

    @property
    def tokens(self) -> int:
        """Input and output tokens together."""
        return self.input_tokens + self.output_tokens


ObtainedBy = Literal["model", "runtime"]
"""``model`` when a model's output contributed to a value anywhere upstream, else ``runtime``."""


class ValueOrigin(WireModel):
    """Where one value a node read came from (seed 001's binding origin, in this project's terms).

    * ``literal``: staged in the plan (``path`` is where, in the node's arguments);
    * ``run_input``: the run's input (the entry's output; ``path`` is the field read);
    * ``node_output``: another node's output on the frame's route (``node_id``, ``path``);
    * ``unknown``: the reader cannot tell (a cell that does not report what it read).

    ``obtained_by`` is transitive and fail-closed: a node output is ``model`` when its node is a
    ``reason`` node or any value that node read was (a deterministic node cannot launder a
    model's value by carrying it forward); an output whose provenance is not known (an output
    recorded before provenance was, or an ``unknown`` origin) counts as ``model``.
    """

    source: Literal["literal", "run_input", "node_output", "unknown"]
    path: str = ""
    node_id: str | None = Field(default=None, exclude_if=lambda v: v is None)
    obtained_by: ObtainedBy


class ComparedValue(WireModel):
    """One value a branch or select cell compared, with the origins that produced it."""

    name: str
    """What the cell read: a structured leaf's path, or ``<nodeId>.<field>``."""
    value: EncodableValue = None
    """The value as the cell's evidence shows it (bounded)."""
    origins: tuple[ValueOrigin, ...] = ()
    obtained_by: ObtainedBy
    """``model`` when any of its origins is."""


class VerdictCheck(WireModel):
    """Derived, non-authorable evidence of a verdict: what was compared and who produced it.

    ``provenance`` is ``verified`` when no compared value traces back to a model (transitively,
    see :class:`ValueOrigin`), ``asserted`` when one does (a model could have steered the
    verdict), and absent when nothing was compared (neither label is honest about an empty set).
    ``reads`` is ``exact`` when the cell reported what it read (the structured cell's leaves,
    jexl's reads), and ``route`` when it may have read any output on its route without saying
    which (CEL, Lua, a custom cell): then ``values`` lists the nodes on the route whose output
    a model produced, if any, and the label is ``asserted`` exactly when there is one.
    """

    values: tuple[ComparedValue, ...] = ()
    provenance: Literal["verified", "asserted"] | None = Field(
        default=None, exclude_if=lambda v: v is None
    )
    reads: Literal["exact", "route"] = "exact"


class AttemptRecord(WireModel):
    """One attempt of a ``call``, ``reason`` or ``transform`` frame, as the fold reports it.

    Attributes:
        number: 1-based, as the frame's ``node_entered`` events count them.
        result: How it ended.
        started: When the host started it (after any backoff pause); ``ended`` when the host
            learned its outcome. Both are the host's clock (a workflow's ``workflow.now()``).
        error: For a failed or lost attempt, the error's name and message (ruling 29).
        reason: Why this attempt was made; absent for the first.
        usage: Tokens and cost, for an attempt that spent any (a reason frame's).

    """

    number: int
    result: AttemptResult
    started: str
    ended: str
    error: ErrorInfo | None = Field(default=None, exclude_if=lambda v: v is None)
    reason: RetryReason | None = Field(default=None, exclude_if=lambda v: v is None)
    usage: Usage | None = Field(default=None, exclude_if=lambda v: v is None)


LifecycleStepKind = Literal[
    "entered", "dispatched", "attempt_ended", "waiting", "resumed", "settled"
]


class LifecycleStep(WireModel):
    """One step of a frame's life, with its time (see :mod:`orchestration.run.history`).

    ``entered`` (its ``node_entered``; again, with ``attempt``, for each retry), ``dispatched``
    (an attempt started), ``attempt_ended`` (``detail``: its result, and error), ``waiting``
    (``detail``: what for: an operator's decision on a halted frame, and whatever else a run
    waits on), ``resumed`` (the wait ended), ``settled`` (``detail``: the status).
    """

    step: LifecycleStepKind
    at: str
    attempt: int | None = Field(default=None, exclude_if=lambda v: v is None)
    detail: str | None = Field(default=None, exclude_if=lambda v: v is None)


class FrameLiveness(WireModel):
    """An in-flight frame's liveness, as a reader with a clock observes it (never acted on).

    ``status`` derives from the heartbeat timeout: ``healthy`` until half of it has passed since
    the last activity, ``stalling`` from then, ``stalled`` once all of it has passed; from there
    the host's heartbeat timeout resolves the attempt as lost (its ``onIndeterminate`` rules).
    Without a heartbeat timeout the status is always ``healthy``.

    Attributes:
        attempt: The attempt in flight.
        last_activity: The last heartbeat, or the attempt's start when it has none yet.
        observed_at: When the reader looked.
        heartbeat_timeout_seconds: The attempt's heartbeat timeout, if it has one.
        status: See above.
        source: Who observed it: ``temporal`` (the server's pending activity) or ``in_process``.

    """

    attempt: int
    last_activity: str | None = None
    observed_at: str
    heartbeat_timeout_seconds: float | None = None
    status: Literal["healthy", "stalling", "stalled"]
    source: Literal["temporal", "in_process"]


# --------------------------------------------------------------------------------------------
# Run events
# --------------------------------------------------------------------------------------------

RunOutcome = Literal["completed", "halted", "aborted"]


class RunSummary(WireModel):
    """A plan's one run for listings (``orch run list``), as the plan store holds it.

    The store keeps a run's claim at once and its log as the worker mirrors it (at the end, at
    a wait for an operator, every few thousand entries), so a running run may have no start
    entry yet: ``claimed_at`` is then the only time there is.

    Attributes:
        plan_id: The plan the run belongs to.
        run_id: The id the run was claimed with (on Temporal, ``plan/<planId>``).
        execution: The execution that holds the run, when a worker has bound it.
        outcome: How the run ended; ``None`` while it runs, as far as the store knows.
        claimed_at: When the store first recorded the claim (the store's clock); ``None`` for
            a run claimed before stores kept that time.
        started_at: The time of the log's ``start`` entry, once the store holds it.
        ended_at: The time of the log's last entry, when the run has an outcome (its ``end``).
        log_length: How many log entries the store holds.

    """

    plan_id: str
    run_id: str
    execution: str | None = None
    outcome: RunOutcome | None = None
    claimed_at: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    log_length: int = 0


class RunStarted(WireModel):
    """Opens every run log; carries the run id and the digest the run started against."""

    kind: Literal["run_started"] = "run_started"
    run_id: str
    digest: str
    at: str


class NodeEntered(WireModel):
    """Recorded before the node's side effect, so an unsettled call is visibly indeterminate."""

    kind: Literal["node_entered"] = "node_entered"
    frame: FrameRef
    at: str


class Verdict(WireModel):
    """What a branch or select cell decided, and the evidence it gave (match or not).

    ``handle`` names the verdict: ``match`` or ``no_match`` for a branch, ``case_<label>`` or
    ``default`` for a select, whether or not an edge with that handle exists.
    """

    handle: EdgeHandle
    evidence: EncodableValue = None
    check: VerdictCheck | None = Field(default=None, exclude_if=lambda v: v is None)
    """The values the cell compared, where each came from, and whether a model could have
    steered the verdict (additive; see :class:`VerdictCheck`)."""


class NodeSettled(WireModel):
    """How a frame settled; carries the output, which is what a fold rebuilds from.

    ``verdict`` is additive to the contract: a branch or select frame records its verdict and
    evidence here, so a verdict that fires no edge is recorded too.
    """

    kind: Literal["node_settled"] = "node_settled"
    frame: FrameRef
    outcome: NodeOutcome
    verdict: Verdict | None = None
    at: str


class EdgeTaken(WireModel):
    """An edge fired; carries the produced frame and its branch-local tables."""

    kind: Literal["edge_taken"] = "edge_taken"
    edge_id: str
    handle: EdgeHandle
    from_: FrameRef = Field(alias="from")
    to: FrameRef
    outputs: OutputTable = Field(default_factory=dict)
    artifacts: ArtifactTable = Field(default_factory=dict)
    evidence: EncodableValue = None
    at: str


class FrontierSnapshot(WireModel):
    """The whole frontier (live frames and partial barriers) at a point in the log."""

    kind: Literal["frontier_snapshot"] = "frontier_snapshot"
    frames: tuple[PendingFrame, ...] = ()
    joins: tuple[JoinState, ...] = ()
    at: str


class RunInterrupted(WireModel):
    """Why the run stopped short, optionally naming the frame concerned."""

    kind: Literal["run_interrupted"] = "run_interrupted"
    cause: InterruptionCause
    frame: FrameRef | None = None
    at: str


class RunSettled(WireModel):
    """The run ended."""

    kind: Literal["run_settled"] = "run_settled"
    outcome: RunOutcome
    at: str


class AttemptEnded(WireModel):
    """An attempt of a ``call``, ``reason`` or ``transform`` frame ended (additive).

    Recorded by the host's run loop as each attempt ends, before what it decides (the
    settlement, the next ``node_entered``, or the frame's halt), so a frame's attempts are in
    its log even when the frame never settles. ``origins`` (a call's first attempt) says where
    each resolved argument came from.
    """

    kind: Literal["attempt_ended"] = "attempt_ended"
    frame: FrameRef
    attempt: int
    result: AttemptResult
    started: str
    error: ErrorInfo | None = Field(default=None, exclude_if=lambda v: v is None)
    reason: RetryReason | None = Field(default=None, exclude_if=lambda v: v is None)
    usage: Usage | None = Field(default=None, exclude_if=lambda v: v is None)
    origins: dict[str, tuple[ValueOrigin, ...]] | None = Field(
        default=None, exclude_if=lambda v: v is None
    )
    at: str


class Question(WireModel):
    """One question a reason node's model asked, with the widget its answer needs."""

    id: str
    prompt: str
    schema_: InputSchema = Field(alias="schema")


GateDecision = Literal["approved", "rejected", "answered"]
"""What a person decided at a gate: approved (or edited and approved), rejected, or answered."""

GateOutcome = Literal["approved", "rejected", "answered", "timed_out", "abandoned"]
"""How a request closed: a decision, its timeout, or the run ending while it was open."""


class GateRequest(WireModel):
    """One request a gate made of a person, and what became of it.

    Seed 001's ``Approval`` and ``InputRequest`` in one record: what was asked (the resolved
    ``args`` and their ``digest`` before a call, the held ``items`` of a result, the ``prompt``
    and ``schema`` of an input request, the model's ``questions``) and, once closed, how: who
    decided, when, with what feedback, whether automatically, what was edited. An input
    request's response is the node's output (in ``outputs``), never repeated here; a question
    round's ``answers`` are, since they are part of the conversation and no output.

    Attributes:
        request: Its number among the frame's requests, from 1.
        gate: Which pause it is.
        requested_at: When it opened.
        deadline: When it times out (``None``: never).
        outcome: ``None`` while open.
        edited_args: The arguments as the approver changed them (``args`` keeps what was
            proposed); ``ran_digest`` is the digest of what was approved to run.

    """

    request: int
    gate: GateKind
    requested_at: str
    summary: str | None = None
    args: ValueMap | None = None
    digest: str | None = None
    editable: tuple[str, ...] | None = None
    items: tuple[OutputItem, ...] | None = None
    prompt: str | None = None
    schema_: InputSchema | None = Field(default=None, alias="schema")
    questions: tuple[Question, ...] | None = None
    deadline: str | None = None
    outcome: GateOutcome | None = None
    decided_at: str | None = None
    decided_by: str | None = None
    automatic: bool | None = None
    feedback: str | None = None
    edited_args: ValueMap | None = None
    ran_digest: str | None = None
    answers: ValueMap | None = None
    on_timeout: Literal["reject", "default", "halt"] | None = None


class GateOpened(WireModel):
    """A gate opened a request (additive to the contract): the run waits for a person there."""

    kind: Literal["gate_opened"] = "gate_opened"
    frame: FrameRef
    request: GateRequest
    at: str


class GateDecided(WireModel):
    """A person (or, where the plan allows it, autonomous mode) decided an open request.

    ``args`` are the edited arguments when the approver changed them, ``digest`` the digest of
    the arguments that run; ``answers`` a question round's answers. An input request's response
    is not here: it is the frame's output, in the ``node_settled`` that follows.
    """

    kind: Literal["gate_decided"] = "gate_decided"
    frame: FrameRef
    request: int
    decision: GateDecision
    decided_by: str
    automatic: bool = False
    feedback: str | None = None
    args: ValueMap | None = None
    digest: str | None = None
    answers: ValueMap | None = None
    at: str


class GateTimedOut(WireModel):
    """An open request reached its deadline; ``policy`` is what that meant (never consent)."""

    kind: Literal["gate_timed_out"] = "gate_timed_out"
    frame: FrameRef
    request: int
    policy: Literal["reject", "default", "halt"]
    at: str


RunEvent = Annotated[
    RunStarted
    | NodeEntered
    | NodeSettled
    | EdgeTaken
    | FrontierSnapshot
    | RunInterrupted
    | RunSettled
    | AttemptEnded
    | GateOpened
    | GateDecided
    | GateTimedOut,
    Field(discriminator="kind"),
]
"""The persisted run log's entries; ``fold_run`` derives a projection from these alone."""


class Frontier(WireModel):
    """Live frames and partial barriers."""

    frames: tuple[PendingFrame, ...] = ()
    joins: tuple[JoinState, ...] = ()


class EdgeTakenRecord(WireModel):
    """One fired edge, as a projection lists it."""

    edge_id: str
    handle: EdgeHandle
    evidence: EncodableValue = None


class FrameGates(WireModel):
    """One frame's gates as the fold sees them: whether it waits, and every request in order.

    ``status`` is seed 001's node status while a request is open (``awaiting_approval`` for an
    approval, ``awaiting_input`` for an input request or questions), else ``closed``;
    ``current`` is the open request; ``history`` every request, oldest first, the open one last.
    """

    node_id: str
    status: Literal["awaiting_approval", "awaiting_input", "closed"]
    current: GateRequest | None = None
    history: tuple[GateRequest, ...] = ()


class RunProjection(WireModel):
    """The fold's whole answer to "where did the run stop, and what happened"."""

    run_id: str
    digest: str
    frame_status: dict[str, Literal["running", "done", "failed", "skipped"]] = Field(
        default_factory=dict
    )
    node_status_by_id: dict[str, Literal["pending", "running", "done", "failed", "skipped"]] = (
        Field(default_factory=dict)
    )
    outputs: OutputTable = Field(default_factory=dict)
    frontier: Frontier = Field(default_factory=Frontier)
    indeterminate: tuple[FrameRef, ...] = ()
    edges_taken: tuple[EdgeTakenRecord, ...] = ()
    verdicts: dict[str, Verdict] = Field(default_factory=dict)
    """Every branch and select frame's verdict and evidence, by frame key (additive)."""
    outcome: Literal["running", "completed", "halted", "aborted"] = "running"
    interruption: InterruptionCause | None = None
    attempts: dict[str, tuple[AttemptRecord, ...]] = Field(default_factory=dict)
    """Every recorded attempt of each call, reason and transform frame, by frame key (additive;
    a log written before attempts were recorded folds to none)."""
    arg_origins: dict[str, dict[str, tuple[ValueOrigin, ...]]] = Field(default_factory=dict)
    """Each call frame's resolved arguments' origins, by frame key, then argument (additive)."""
    usage: UsageTotals = Field(default_factory=UsageTotals)
    """Tokens and cost the whole run spent (additive)."""
    node_usage: dict[str, UsageTotals] = Field(default_factory=dict)
    """Tokens and cost per node id, over its frames (additive; nodes that spent nothing are
    absent)."""
    liveness: dict[str, FrameLiveness] = Field(default_factory=dict)
    """Each in-flight frame's liveness, by frame key: filled by a reader that observes the host
    (``fold_run`` reads only history and leaves it empty; additive)."""
    gates: dict[str, FrameGates] = Field(default_factory=dict)
    """Every frame that met a gate, by frame key: its status and its requests (additive)."""
