"""Trusted construction of the wire models the engine and the run fold emit on every step.

Validating a frozen pydantic model costs a few microseconds even when every field already holds
a validated value, and a settlement emits about ten of them (the settled event, its outcome and
output, one frame reference, route, pending frame and ``edge_taken`` per fired edge, and a
frontier snapshot). These builders skip validation and fill the instance exactly as pydantic's
own ``model_construct`` does (``__dict__`` with every field, the set of fields, no extra, no
private state), only without its per-call bookkeeping.

Each builder is one generated function (the way ``dataclasses`` generates ``__init__``): a
helper shared by all of them would cost a second Python call per model, and building models is
most of what a settlement does.

The invariant they rely on: **every argument is already a valid value of its field**, because it
was built by a validated model, by another builder here, or checked at the engine's boundary
(``settle`` validates a host's items before any of them reaches a builder). A unit test pins
that each builder yields an object equal to, and serialising exactly like, the validated one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

from orchestration.run.routes import AnySegment, BranchId, EdgeSegment, ItemSegment, JoinSegment
from orchestration.types import (
    ComparedValue,
    EdgeTaken,
    EdgeTakenRecord,
    FrameRef,
    FrontierSnapshot,
    JoinArrival,
    JoinState,
    NodeEntered,
    NodeOutput,
    NodeSettled,
    OutcomeOk,
    OutputItem,
    PendingFrame,
    ValueOrigin,
    Verdict,
    VerdictCheck,
)

__all__ = [
    "branch_id",
    "compared_value",
    "log_attempt",
    "log_edge",
    "log_enter",
    "log_settle",
    "log_snapshot",
    "edge_segment",
    "edge_taken",
    "edge_taken_record",
    "frame_ref",
    "frontier_snapshot",
    "join_arrival",
    "item_segment",
    "join_segment",
    "join_state",
    "node_entered",
    "node_output",
    "node_settled",
    "outcome_ok",
    "output_item",
    "pending_frame",
    "value_origin",
    "verdict",
    "verdict_check",
]

M = TypeVar("M", bound=BaseModel)

# The slot setters of pydantic's own instance layout (the four ``BaseModel.__slots__``).
_SLOTS = {
    "_new": object.__new__,
    "_set": object.__setattr__,
    "_set_fields_set": BaseModel.__dict__["__pydantic_fields_set__"].__set__,
    "_set_extra": BaseModel.__dict__["__pydantic_extra__"].__set__,
    "_set_private": BaseModel.__dict__["__pydantic_private__"].__set__,
}


def _builder(cls: type[M], params: str, **renamed: str) -> Any:
    """Compile ``build(params) -> cls``.

    Each field is filled from the parameter of the same name, unless ``renamed`` gives it
    another expression (a differently named parameter, or a constant such as an event's
    ``kind``); every field must end up filled, as ``model_construct`` fills them all.
    """
    names = [name.strip() for name in params.split(",")]
    expressions = {name: renamed.get(name, name) for name in cls.model_fields}
    unfilled = [f for f, e in expressions.items() if f not in renamed and e not in names]
    if unfilled or set(renamed) - set(cls.model_fields):
        raise TypeError(f"a {cls.__name__} builder must fill exactly {list(cls.model_fields)}")
    # In field order, as validation fills ``__dict__`` (``repr`` shows that order).
    values = ", ".join(f"{name!r}: {expression}" for name, expression in expressions.items())
    source = (
        f"def build({params}):\n"
        "    obj = _new(cls)\n"
        f"    _set(obj, '__dict__', {{{values}}})\n"
        "    _set_fields_set(obj, fields_set)\n"
        "    _set_extra(obj, None)\n"
        "    _set_private(obj, None)\n"
        "    return obj\n"
    )
    # One shared set of field names per class: pydantic copies it before any in-place update
    # (model_copy), and a frozen model never updates it, so sharing is safe.
    namespace: dict[str, Any] = {**_SLOTS, "cls": cls, "fields_set": set(cls.model_fields)}
    exec(source, namespace)  # noqa: S102 - fixed source built from this module's own literals
    build = namespace["build"]
    build.__name__ = build.__qualname__ = f"build_{cls.__name__}"
    return build


edge_segment: Callable[[str], EdgeSegment] = _builder(EdgeSegment, "edge")
"""A route segment for one edge id."""

join_segment: Callable[[str, tuple[str, ...]], JoinSegment] = _builder(JoinSegment, "join, of")
"""A route segment for a closed barrier: the join and its sorted incoming edge ids."""

item_segment: Callable[[str, int], ItemSegment] = _builder(ItemSegment, "map, index")
"""A route segment for one item of a map node's run."""

branch_id: Callable[[tuple[AnySegment, ...]], BranchId] = _builder(
    BranchId, "segments"
)
"""A route from segments that are already segment models."""

frame_ref: Callable[[str, str, BranchId, str | None], FrameRef] = _builder(
    FrameRef, "node_id, kind, branch, via_edge_id", branch_id="branch"
)
"""One execution of one node: ``(node_id, kind, branch, via_edge_id)``."""

pending_frame: Callable[[FrameRef, Any, Any], PendingFrame] = _builder(
    PendingFrame, "frame, outputs, artifacts"
)
"""A live frame with its (possibly shared) tables."""

output_item: Callable[[dict[str, Any]], OutputItem] = _builder(OutputItem, "fields", json_="fields")
"""An output item whose fields are already known to be encodable."""

node_output: Callable[[tuple[OutputItem, ...], BranchId], NodeOutput] = _builder(
    NodeOutput, "items, branch", branch_id="branch"
)
"""What a node produced on one route; ``items`` are validated ``OutputItem``s."""

outcome_ok: Callable[[NodeOutput], OutcomeOk] = _builder(OutcomeOk, "output", status="'ok'")
"""A successful settlement."""

node_entered: Callable[[FrameRef, str], NodeEntered] = _builder(
    NodeEntered, "frame, at", kind="'node_entered'"
)
"""The ``node_entered`` event: ``(frame, at)``."""

node_settled: Callable[[FrameRef, Any, Any, str], NodeSettled] = _builder(
    NodeSettled, "frame, outcome, verdict, at", kind="'node_settled'"
)
"""The ``node_settled`` event; ``outcome`` is a validated ``NodeOutcome`` member."""

edge_taken: Callable[[str, str, FrameRef, FrameRef, Any, Any, Any, str], EdgeTaken] = _builder(
    EdgeTaken,
    "edge_id, handle, source, target, outputs, artifacts, evidence, at",
    kind="'edge_taken'",
    from_="source",
    to="target",
)
"""The ``edge_taken`` event: ``(edge_id, handle, source, target, outputs, artifacts, evidence,
at)``; ``evidence`` must already be an encodable value."""

frontier_snapshot: Callable[
    [tuple[PendingFrame, ...], tuple[JoinState, ...], str], FrontierSnapshot
] = _builder(FrontierSnapshot, "frames, joins, at", kind="'frontier_snapshot'")
"""The ``frontier_snapshot`` event."""

edge_taken_record: Callable[[str, str, Any], EdgeTakenRecord] = _builder(
    EdgeTakenRecord, "edge_id, handle, evidence"
)
"""One fired edge as a projection lists it."""

join_arrival: Callable[[BranchId, str, Any, Any], JoinArrival] = _builder(
    JoinArrival, "branch, edge_id, outputs, artifacts"
)
"""One arrival at a barrier, with the tables it arrived with."""

join_state: Callable[[str, str, tuple[JoinArrival, ...], int], JoinState] = _builder(
    JoinState, "node_id, correlation_key, arrivals, required"
)
"""A partial barrier."""


value_origin: Callable[[str, str, str | None, str], ValueOrigin] = _builder(
    ValueOrigin, "source, path, node_id, obtained_by"
)
"""``(source, path, node_id, obtained_by)``: where one value came from."""

compared_value: Callable[[str, Any, tuple[ValueOrigin, ...], str], ComparedValue] = _builder(
    ComparedValue, "name, value, origins, obtained_by"
)
"""``(name, value, origins, obtained_by)``; ``value`` must already be an encodable value."""

verdict_check: Callable[[tuple[ComparedValue, ...], Any, str], VerdictCheck] = _builder(
    VerdictCheck, "values, provenance, reads"
)
"""``(values, provenance, reads)``."""

verdict: Callable[[str, Any, Any], Verdict] = _builder(Verdict, "handle, evidence, check")
"""``(handle, evidence, check)``; ``evidence`` must already be an encodable value."""


# -- compact log entries (the engine's own log) -----------------------------------------------

from orchestration.run.log import (  # noqa: E402 - builders below need the models above first
    LogAttempt,
    LogEdge,
    LogEnter,
    LogSettle,
    LogSnapshot,
)

log_enter: Callable[[int, int, str], LogEnter] = _builder(
    LogEnter, "frame, attempt, at", kind="'enter'"
)
"""``(frame, attempt, at)``."""

log_edge: Callable[[str, str, int, int, str, str, Any, str], LogEdge] = _builder(
    LogEdge, "edge, handle, source, frame, node, node_kind, evidence, at", kind="'edge'"
)
"""``(edge, handle, source, frame, node, node_kind, evidence, at)``."""

log_settle: Callable[[int, str, Any, Any, bool, Any, int, Any, str], LogSettle] = _builder(
    LogSettle,
    "frame, status, items, artifact, handled, error, attempt, verdict, at",
    kind="'settle'",
)
"""``(frame, status, items, artifact, handled, error, attempt, verdict, at)``."""

log_snapshot: Callable[[tuple[int, ...], tuple[Any, ...], str], LogSnapshot] = _builder(
    LogSnapshot, "frames, joins, at", kind="'snapshot'"
)
"""``(frames, joins, at)``."""

log_attempt: Callable[..., LogAttempt] = _builder(
    LogAttempt,
    "frame, attempt, result, started, error, reason, usage, origins, at",
    kind="'attempt'",
)
"""``(frame, attempt, result, started, error, reason, usage, origins, at)``; ``error``,
``usage`` and ``origins`` are validated models (or ``None``)."""
