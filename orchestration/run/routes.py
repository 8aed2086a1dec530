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

A map node's items extend the rule with a third segment, ``m<len>:<mapId>[<index>]`` (the
item's index in decimal, closed by ``]``): the tag letter, the length prefix and the closing
bracket keep the concatenation injective, and a route without maps renders exactly as before.
A loop's rounds use the same segment (the loop's id, the round's index), and a round's until
check passes it a second time, after the body frame that ended the round: no other frame's
route repeats a segment of its own, so the keys stay distinct.

Lengths count UTF-16 code units, as the contract's reference does, so keys agree with it for
every id (they only differ from ``len()`` for characters outside the Basic Multilingual Plane).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Discriminator, Tag

__all__ = [
    "ROUTE_KEY_CACHE",
    "BranchId",
    "EdgeSegment",
    "ItemSegment",
    "JoinSegment",
    "Route",
    "RouteSegment",
    "branch_key",
    "edge_token",
    "frame_key",
    "item_token",
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


class ItemSegment(_RouteModel):
    """One item of a map node's run (or one round of a loop's): its id and the index (from 0).

    Every frame of the map's body for that item has a route through this segment, so two
    items of one map never share a frame key.
    """

    map: str
    index: int


AnySegment = EdgeSegment | JoinSegment | ItemSegment


def _segment_tag(value: object) -> str:
    if isinstance(value, dict):
        return "join" if "join" in value else "item" if "map" in value else "edge"
    if isinstance(value, JoinSegment):
        return "join"
    return "item" if isinstance(value, ItemSegment) else "edge"


RouteSegment = Annotated[
    Annotated[EdgeSegment, Tag("edge")]
    | Annotated[JoinSegment, Tag("join")]
    | Annotated[ItemSegment, Tag("item")],
    Discriminator(_segment_tag),
]
"""An edge, join or map-item segment, told apart by which key they carry."""


class BranchId(_RouteModel):
    """The route from the entry to a frame, kept as the route itself. Empty for the entry frame."""

    segments: tuple[RouteSegment, ...] = ()

    def extend(self, segment: AnySegment) -> BranchId:
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


def item_token(map_id: str, index: int) -> str:
    """One map-item segment's rendering in a branch key: ``m<length>:<map id>[<index>]``."""
    return f"m{_units(map_id)}:{map_id}[{index}]"


def segments_key(segments: Iterable[AnySegment]) -> str:
    """Render segments with length prefixes and no separators (see the module docstring)."""
    parts: list[str] = []
    for seg in segments:
        if isinstance(seg, EdgeSegment):
            parts.append(edge_token(seg.edge))
        elif isinstance(seg, ItemSegment):
            parts.append(item_token(seg.map, seg.index))
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


ROUTE_KEY_CACHE = 200
"""Routes whose branch key is at most this long keep it; longer ones render it on demand."""


class Route:
    """An interned route: a parent pointer plus one segment, built in O(1) per step.

    The contract's route is the whole segment list, and its branch key grows by one token per
    edge, so holding either per frame costs O(depth) per step and O(depth²) over a chain. The
    engine instead keeps one ``Route`` per frame, sharing every ancestor: a child is its parent
    plus one segment. What the contract's forms need is derived on demand and cached where it
    stays small: the branch key (kept when at most :data:`ROUTE_KEY_CACHE` characters), the
    segments (:meth:`segments`, :meth:`branch_id`), and a digest chained from the parent's
    (``sha256(parent digest + token)``), which names a frame in O(1) when its key is long.

    Attributes:
        parent: The route one segment shorter (``None`` for the entry's empty route).
        segment: The last segment (``None`` for the empty route).
        token: That segment's rendering in the branch key (``""`` for the empty route).
        node: The node this route reaches: the edge's target, or the join.
        frame: The id of the frame this route identifies (a route belongs to one frame).
        depth: How many segments it has.
        key_length: The length of its branch key.
        model: Whether that frame's output traces back to a model (set when the frame
            settles ``ok``; ``None`` while unknown, which readers take as ``True``: see
            :mod:`orchestration.run.provenance`). Kept here because every table entry holds its
            producer's route, so a reader finds it in O(1) and it dies with the tables.

    """

    __slots__ = (
        "_branch",
        "_digest",
        "_key",
        "depth",
        "frame",
        "key_length",
        "model",
        "node",
        "parent",
        "segment",
        "token",
    )

    def __init__(
        self,
        parent: Route | None,
        segment: AnySegment | None,
        token: str,
        node: str,
        frame: int,
    ) -> None:
        self.parent = parent
        self.segment = segment
        self.token = token
        self.node = node
        self.frame = frame
        if parent is None:
            self.depth = 0
            self.key_length = len(token)
            self._key: str | None = token
        else:
            self.depth = parent.depth + 1
            self.key_length = parent.key_length + len(token)
            parent_key = parent._key
            self._key = (
                parent_key + token
                if parent_key is not None and self.key_length <= ROUTE_KEY_CACHE
                else None
            )
        self._digest: bytes | None = None
        self._branch: BranchId | None = None
        self.model: bool | None = None

    @classmethod
    def root(cls, entry: str, frame: int = 0) -> Route:
        """The entry frame's empty route."""
        return cls(None, None, "", entry, frame)

    def child(self, segment: AnySegment, token: str, node: str, frame: int) -> Route:
        """This route plus one segment, reaching ``node``, for frame ``frame``."""
        return Route(self, segment, token, node, frame)

    def lineage(self) -> list[Route]:
        """This route and its ancestors, root first."""
        out: list[Route] = []
        route: Route | None = self
        while route is not None:
            out.append(route)
            route = route.parent
        out.reverse()
        return out

    @property
    def key(self) -> str:
        """The branch key (``branch_key(self.branch_id())``), rendered once if short."""
        if self._key is not None:
            return self._key
        tokens: list[str] = []
        route: Route | None = self
        while route is not None and route._key is None:
            tokens.append(route.token)
            route = route.parent
        head = "" if route is None else route._key or ""
        key = head + "".join(reversed(tokens))
        if self.key_length <= ROUTE_KEY_CACHE:
            self._key = key
        return key

    def segments(self) -> tuple[AnySegment, ...]:
        """The route's segments, in traversal order."""
        return tuple(r.segment for r in self.lineage() if r.segment is not None)

    def branch_id(self) -> BranchId:
        """The contract's ``BranchId`` (built once)."""
        branch = self._branch
        if branch is None:
            # The segments are validated models already: no second validation per frame.
            branch = self._branch = BranchId.model_construct(segments=self.segments())
        return branch

    @property
    def digest(self) -> bytes:
        """``sha256(parent digest + token)``: equal routes, equal digests, in every process."""
        if self._digest is not None:
            return self._digest
        pending: list[Route] = []
        route: Route | None = self
        while route is not None and route._digest is None:
            pending.append(route)
            route = route.parent
        digest = b"" if route is None else route._digest or b""
        for item in reversed(pending):
            digest = hashlib.sha256(digest + item.token.encode()).digest()
            item._digest = digest
        return digest

    def ident(self, node_id: str) -> str:
        """A frame's short name: its frame key when that is short, else node id and digest.

        ``<node>:<branchKey>`` while that is at most :data:`ROUTE_KEY_CACHE` characters, so
        most frames read as their contract key; past that ``<node>:~<24 hex digits>``, since
        activity ids and operator commands need a bounded name.
        """
        if len(node_id) + 1 + self.key_length <= ROUTE_KEY_CACHE:
            return f"{node_id}:{self.key}"
        return f"{node_id}:~{self.digest.hex()[:24]}"

    def ancestor_at(self, node: str) -> Route | None:
        """The route, this one or an ancestor, that reached ``node``; ``None`` if none did.

        A route passes a node at most once (the graph is acyclic), except a map node, whose item
        route extends its own route: the nearest is returned, so inside a map's body the map
        "is" the item's frame. It is found walking up from here, which for a join's fork costs
        the depth of the diamond.
        """
        route: Route | None = self
        while route is not None:
            if route.node == node:
                return route
            route = route.parent
        return None

    def extends(self, prefix: Route) -> bool:
        """Whether ``prefix`` is this route or one of its ancestors."""
        route: Route | None = self
        steps = self.depth - prefix.depth
        while route is not None and steps > 0:
            route = route.parent
            steps -= 1
        return route is prefix

    def __repr__(self) -> str:
        return f"Route(frame={self.frame}, node={self.node!r}, depth={self.depth})"
