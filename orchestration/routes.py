"""Path identities: route segments, ``BranchId`` and the injective ``branch_key``.

A frame is one execution of one node, identified by the *route* that reached it. The route is
kept as a value (not hashed) because join correlation needs its prefix structure: a barrier is
keyed by the arriving route truncated at the join's fork.

``branch_key`` renders a route as a string for map keys and events. It must be injective, since
it keys output tables, orders join contributors and makes repeat arrivals idempotent; a
collision would overwrite one node's output with another's. Delimiter-joining is not
injective (an edge id containing the delimiter forges two segments), so every id is
length-prefixed: ``e<len>:<edgeId>`` for an edge, ``j<len>:<nodeId>(<len-prefixed of...>)``
for a join, concatenated without separators. Freeze also restricts edge ids to
``[A-Za-z0-9_-]``; that is defence in depth, not the guarantee.

Lengths count UTF-16 code units, as the contract's reference does, so keys agree with it for
every id (they only differ from ``len()`` for characters outside the Basic Multilingual Plane).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Discriminator, Tag

__all__ = [
    "BranchId",
    "EdgeSegment",
    "JoinSegment",
    "RouteSegment",
    "branch_key",
    "edge_token",
    "frame_key",
    "segments_key",
]


class _RouteModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class EdgeSegment(_RouteModel):
    """One traversed edge."""

    edge: str


class JoinSegment(_RouteModel):
    """A join barrier that closed: the join's id and the sorted ids of ALL its incoming edges.

    ``of`` is a graph constant (independent of which branches fired), which is what makes a
    reference to a node after the join authorable before the run.
    """

    join: str
    of: tuple[str, ...]


def _segment_tag(value: object) -> str:
    if isinstance(value, dict):
        return "join" if "join" in value else "edge"
    return "join" if isinstance(value, JoinSegment) else "edge"


RouteSegment = Annotated[
    Annotated[EdgeSegment, Tag("edge")] | Annotated[JoinSegment, Tag("join")],
    Discriminator(_segment_tag),
]
"""An edge segment or a join segment, told apart by which key they carry."""


class BranchId(_RouteModel):
    """The route from the entry to a frame, kept as the route itself. Empty for the entry frame."""

    segments: tuple[RouteSegment, ...] = ()

    def extend(self, segment: EdgeSegment | JoinSegment) -> BranchId:
        """The route one segment longer; the receiver is unchanged."""
        return BranchId(segments=(*self.segments, segment))

    @property
    def key(self) -> str:
        """This route's ``branch_key``."""
        return branch_key(self)


def _units(text: str) -> int:
    """Length in UTF-16 code units (astral characters count twice)."""
    n = len(text)
    if text.isascii():
        return n
    return n + sum(1 for ch in text if ord(ch) > 0xFFFF)


def edge_token(edge: str) -> str:
    """One edge segment's rendering in a branch key: ``e<length>:<edge id>``."""
    return f"e{_units(edge)}:{edge}"


def segments_key(segments: Iterable[EdgeSegment | JoinSegment]) -> str:
    """Render segments with length prefixes and no separators (see the module docstring)."""
    parts: list[str] = []
    for seg in segments:
        if isinstance(seg, EdgeSegment):
            parts.append(edge_token(seg.edge))
        else:
            inner = "".join(edge_token(e) for e in seg.of)
            parts.append(f"j{_units(seg.join)}:{seg.join}({inner})")
    return "".join(parts)


def branch_key(branch: BranchId) -> str:
    """The canonical, injective string for a route: ``''`` for the entry route.

    >>> branch_key(BranchId(segments=(EdgeSegment(edge="e0"),)))
    'e2:e0'
    """
    return segments_key(branch.segments)


def frame_key(node_id: str, branch: BranchId) -> str:
    """The output-table key of node ``node_id`` on route ``branch``: ``"<nodeId>:<branchKey>"``."""
    return f"{node_id}:{branch_key(branch)}"
