"""Trusted construction of the wire models the engine and the run fold emit on every step.

Validating a frozen pydantic model costs a few microseconds even when every field already holds
a validated value, and a settlement emits about ten of them (the settled event, its outcome and
output, one frame reference, route, pending frame and ``edge_taken`` per fired edge, and a
frontier snapshot). These builders skip validation and fill the instance exactly as pydantic's
own ``model_construct`` does (``__dict__`` with every field, the set of fields, no extra, no
private state), only without its per-call bookkeeping.

The invariant they rely on: **every argument is already a valid value of its field**, because it
was built by a validated model, by another builder here, or checked at the engine's boundary
(``settle`` validates a host's items before any of them reaches a builder). A unit test pins
that each builder yields an object equal to, and serialising exactly like, the validated one.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

from orchestration.routes import BranchId, EdgeSegment, JoinSegment
from orchestration.types import (
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
)

__all__ = [
    "branch_id",
    "edge_segment",
    "edge_taken",
    "edge_taken_record",
    "frame_ref",
    "frontier_snapshot",
    "join_arrival",
    "join_segment",
    "join_state",
    "node_entered",
    "node_output",
    "node_settled",
    "outcome_ok",
    "output_item",
    "pending_frame",
]

M = TypeVar("M", bound=BaseModel)

_new = object.__new__
_set = object.__setattr__


def _fields(cls: type[BaseModel]) -> set[str]:
    # One shared set per class: pydantic copies it before any in-place update (model_copy),
    # and a frozen model never updates it, so sharing is safe.
    return set(cls.model_fields)


# The slot setters of pydantic's own instance layout (the four ``BaseModel.__slots__``).
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__


def _make(cls: type[M], values: dict[str, Any], fields_set: set[str]) -> M:
    obj = _new(cls)
    _set(obj, "__dict__", values)
    _set_fields_set(obj, fields_set)
    _set_extra(obj, None)
    _set_private(obj, None)
    return obj


_BRANCH = _fields(BranchId)
_EDGE_SEGMENT = _fields(EdgeSegment)
_JOIN_SEGMENT = _fields(JoinSegment)
_FRAME = _fields(FrameRef)
_PENDING = _fields(PendingFrame)
_OUTPUT = _fields(NodeOutput)
_ITEM = _fields(OutputItem)
_OK = _fields(OutcomeOk)
_ENTERED = _fields(NodeEntered)
_SETTLED = _fields(NodeSettled)
_EDGE = _fields(EdgeTaken)
_SNAPSHOT = _fields(FrontierSnapshot)
_RECORD = _fields(EdgeTakenRecord)
_ARRIVAL = _fields(JoinArrival)
_JOIN = _fields(JoinState)


def edge_segment(edge: str) -> EdgeSegment:
    """A route segment for one edge id."""
    return _make(EdgeSegment, {"edge": edge}, _EDGE_SEGMENT)


def join_segment(join: str, of: tuple[str, ...]) -> JoinSegment:
    """A route segment for a closed barrier: the join and its sorted incoming edge ids."""
    return _make(JoinSegment, {"join": join, "of": of}, _JOIN_SEGMENT)


def branch_id(segments: tuple[EdgeSegment | JoinSegment, ...]) -> BranchId:
    """A route from segments that are already segment models."""
    return _make(BranchId, {"segments": segments}, _BRANCH)


def frame_ref(node_id: str, kind: str, branch: BranchId, via_edge_id: str | None) -> FrameRef:
    """One execution of one node."""
    return _make(
        FrameRef,
        {"node_id": node_id, "kind": kind, "branch_id": branch, "via_edge_id": via_edge_id},
        _FRAME,
    )


def pending_frame(frame: FrameRef, outputs: Any, artifacts: Any) -> PendingFrame:
    """A live frame with its (possibly shared) tables."""
    return _make(
        PendingFrame, {"frame": frame, "outputs": outputs, "artifacts": artifacts}, _PENDING
    )


def output_item(fields: dict[str, Any]) -> OutputItem:
    """An output item whose fields are already known to be encodable."""
    return _make(OutputItem, {"json_": fields}, _ITEM)


def node_output(items: tuple[OutputItem, ...], branch: BranchId) -> NodeOutput:
    """What a node produced on one route; ``items`` are validated ``OutputItem``s."""
    return _make(NodeOutput, {"items": items, "branch_id": branch}, _OUTPUT)


def outcome_ok(output: NodeOutput) -> OutcomeOk:
    """A successful settlement."""
    return _make(OutcomeOk, {"status": "ok", "output": output}, _OK)


def node_entered(frame: FrameRef, at: str) -> NodeEntered:
    """The ``node_entered`` event."""
    return _make(NodeEntered, {"kind": "node_entered", "frame": frame, "at": at}, _ENTERED)


def node_settled(frame: FrameRef, outcome: Any, at: str) -> NodeSettled:
    """The ``node_settled`` event; ``outcome`` is a validated ``NodeOutcome`` member."""
    return _make(
        NodeSettled,
        {"kind": "node_settled", "frame": frame, "outcome": outcome, "at": at},
        _SETTLED,
    )


def edge_taken(
    edge_id: str,
    handle: str,
    source: FrameRef,
    target: FrameRef,
    outputs: Any,
    artifacts: Any,
    evidence: Any,
    at: str,
) -> EdgeTaken:
    """The ``edge_taken`` event; ``evidence`` must already be an encodable value."""
    return _make(
        EdgeTaken,
        {
            "kind": "edge_taken",
            "edge_id": edge_id,
            "handle": handle,
            "from_": source,
            "to": target,
            "outputs": outputs,
            "artifacts": artifacts,
            "evidence": evidence,
            "at": at,
        },
        _EDGE,
    )


def frontier_snapshot(
    frames: tuple[PendingFrame, ...], joins: tuple[JoinState, ...], at: str
) -> FrontierSnapshot:
    """The ``frontier_snapshot`` event."""
    return _make(
        FrontierSnapshot,
        {"kind": "frontier_snapshot", "frames": frames, "joins": joins, "at": at},
        _SNAPSHOT,
    )


def edge_taken_record(edge_id: str, handle: str, evidence: Any) -> EdgeTakenRecord:
    """One fired edge as a projection lists it."""
    return _make(
        EdgeTakenRecord, {"edge_id": edge_id, "handle": handle, "evidence": evidence}, _RECORD
    )


def join_arrival(branch: BranchId, edge_id: str, outputs: Any, artifacts: Any) -> JoinArrival:
    """One arrival at a barrier, with the tables it arrived with."""
    return _make(
        JoinArrival,
        {"branch": branch, "edge_id": edge_id, "outputs": outputs, "artifacts": artifacts},
        _ARRIVAL,
    )


def join_state(
    node_id: str, correlation_key: str, arrivals: tuple[JoinArrival, ...], required: int
) -> JoinState:
    """A partial barrier."""
    return _make(
        JoinState,
        {
            "node_id": node_id,
            "correlation_key": correlation_key,
            "arrivals": arrivals,
            "required": required,
        },
        _JOIN,
    )
