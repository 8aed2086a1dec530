"""The engine's index over a frozen plan view: adjacency in view order, and each join's diamond.

The engine asks a few structural questions on every step (which edges leave this node, in which
order; where does this edge go; what is this join's fork, its route count, its region), so they
are answered once here, in view order (node order and edge order are observable in the event
log, so nothing here ever iterates a set or a hash-ordered map).

A join's facts are derived from the graph, never authored, by the same analysis freeze uses
(:func:`orchestration.graph.analyse_join`), so the engine and the validator cannot disagree on
a diamond:

* its **fork** is its immediate dominator;
* ``required`` is the number of distinct fork→join routes, parallel edges counted separately;
* its **region** is the set of nodes strictly after the fork that can still reach the join,
  plus the join itself: a live frame on one of those nodes, on a route extending the barrier's
  prefix, may still arrive. It is only ever used for membership.

Freeze refuses every plan this index cannot walk; the engine re-checks just enough (one entry,
no dangling edge, no cycle, unique ids) to stay total, and refuses the rest with
:class:`~orchestration.errors.UnrunnablePlanError` before anything is recorded.
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestration.contracts import BranchVerdict, SelectVerdict
from orchestration.engine_events import edge_segment, join_segment
from orchestration.errors import UnrunnablePlanError
from orchestration.graph import (
    DominatorTree,
    PlanGraph,
    analyse_join,
    find_cycle,
    reachable,
    topological_order,
)
from orchestration.routes import EdgeSegment, JoinSegment, segments_key
from orchestration.types import PlanEdge, PlanNode, RawPlanView

__all__ = ["CompiledPlan", "JoinFacts"]


@dataclass(frozen=True, slots=True)
class JoinFacts:
    """What the barrier of one join needs, derived from the graph.

    Attributes:
        node_id: The join.
        fork: Its immediate dominator.
        required: Distinct fork→join routes: the arrivals that close the barrier.
        segment: The merged route's join segment, ``{join, of: sorted(all incoming ids)}``.
        segment_key: ``segments_key`` of that one segment.
        region: Nodes from which a frame can still deliver an arrival (membership only).
        region_nodes: The same nodes, in topological order (for iteration).

    """

    node_id: str
    fork: str
    required: int
    segment: JoinSegment
    segment_key: str
    region: frozenset[str]
    region_nodes: tuple[str, ...]


class CompiledPlan:
    """A frozen view indexed for the engine.

    Built once per run and never mutated after, except for the per-join facts it computes the
    first time a barrier of that join opens.

    Attributes:
        view: The view.
        entry: The entry node.
        nodes: Every node by id, in view order.
        out_edges: Each node's outgoing edges, in view order.
        success_edges: For nodes other than branch/select, the edges a success fires: the
            ``always`` edges, or the ``default`` edges when there is no ``always`` edge.
        error_edges: Each node's ``error`` edges, in view order.
        edge_source: Each edge's source node.
        edge_target: Each edge's target node.
        edge_segment: The route segment each edge adds (shared by every frame it produces).
        edge_segment_key: ``segments_key`` of that segment.
        max_steps: The run's node-entry budget.
        max_concurrent: The plan's cap on frames in flight.

    """

    def __init__(self, view: RawPlanView) -> None:
        self.view = view
        nodes: dict[str, PlanNode] = {}
        for node in view.nodes:
            if node.id in nodes:
                raise UnrunnablePlanError(
                    f'node id "{node.id}" appears twice; give every node a unique id'
                )
            nodes[node.id] = node
        entries = [node for node in view.nodes if node.kind == "entry"]
        if len(entries) != 1:
            raise UnrunnablePlanError(
                f"a plan runs from exactly one entry node, this one has {len(entries)}; "
                "keep one entry node and route everything from it"
            )
        self.entry = entries[0]
        self.nodes = nodes
        out_edges: dict[str, list[PlanEdge]] = {node_id: [] for node_id in nodes}
        has_incoming: set[str] = set()
        always: dict[str, list[PlanEdge]] = {}
        default: dict[str, list[PlanEdge]] = {}
        error: dict[str, list[PlanEdge]] = {}
        by_handle = {"always": always, "default": default, "error": error}
        source: dict[str, str] = {}
        target: dict[str, str] = {}
        segments: dict[str, EdgeSegment] = {}
        tokens: dict[str, str] = {}
        for edge in view.edges:
            edge_id, origin, to = edge.id, edge.from_, edge.to
            if origin not in nodes or to not in nodes:
                raise UnrunnablePlanError(
                    f'edge "{edge_id}" ({origin} → {to}) names a node that does not exist; '
                    "remove the edge or add the node"
                )
            if edge_id in target:
                raise UnrunnablePlanError(
                    f'edge id "{edge_id}" is used twice; give every edge a unique id'
                )
            out_edges[origin].append(edge)
            has_incoming.add(to)
            handled = by_handle.get(edge.handle)
            if handled is not None:
                handled.setdefault(origin, []).append(edge)
            source[edge_id] = origin
            target[edge_id] = to
            segment = segments[edge_id] = edge_segment(edge_id)
            tokens[edge_id] = (
                f"e{len(edge_id)}:{edge_id}" if edge_id.isascii() else segments_key((segment,))
            )
        self.edge_source = source
        self.edge_target = target
        self.edge_segment = segments
        self.edge_segment_key = tokens
        if self.entry.id in has_incoming:
            raise UnrunnablePlanError(
                f'the entry node "{self.entry.id}" has incoming edges; nothing may route back '
                "into the entry"
            )
        self.out_edges = {node_id: tuple(edges) for node_id, edges in out_edges.items()}
        self._graph = graph = PlanGraph.from_view(view)
        order = topological_order(graph)
        if order is None:
            closing = find_cycle(graph)
            stuck = graph.ids[graph.src[closing]] if closing is not None else self.entry.id
            raise UnrunnablePlanError(
                f'the plan has a cycle through node "{stuck}"; a plan must be acyclic over '
                "every handle, error and default included"
            )
        self._position = [0] * len(graph)
        for index, position in enumerate(order):
            self._position[position] = index
        self.success_edges: dict[str, tuple[PlanEdge, ...]] = {
            node_id: tuple(always.get(node_id) or default.get(node_id) or ()) for node_id in nodes
        }
        self.error_edges: dict[str, tuple[PlanEdge, ...]] = {
            node_id: tuple(error.get(node_id, ())) for node_id in nodes
        }
        self.max_steps = view.bounds.max_steps
        self.max_concurrent = view.bounds.max_concurrent_frames
        self._dominators: DominatorTree | None = None
        self._live: list[bool] = []
        self._joins: dict[str, JoinFacts] = {}

    def verdict_edges(self, node: PlanNode, verdict: object) -> tuple[PlanEdge, ...] | None:
        """The edges a branch or select verdict fires, or ``None`` for a verdict of the wrong kind.

        A branch fires its ``match`` or ``no_match`` edges, a select its ``case_<label>``
        edges; when that is none (no such edge, or a select verdict of no case), its ``default``
        edges fire. Duplicates are fan-out; ``always`` never fires from these kinds.
        """
        edges = self.out_edges[node.id]
        if node.kind == "branch" and type(verdict) is BranchVerdict:
            wanted: str | None = "match" if verdict.matched else "no_match"
        elif node.kind == "select" and type(verdict) is SelectVerdict:
            wanted = None if verdict.case_label is None else f"case_{verdict.case_label}"
        else:
            return None
        fired = tuple(e for e in edges if e.handle == wanted)
        return fired or tuple(e for e in edges if e.handle == "default")

    def cut_at_fork(
        self, segments: tuple[EdgeSegment | JoinSegment, ...], bkey: str, fork: str
    ) -> tuple[int, int]:
        """Where a route is truncated at ``fork``: (segments kept, length of their key in ``bkey``).

        The kept prefix runs up to and including the segment that entered the fork. It is found
        walking back from the end, since a route passes a node at most once and the fork of a
        join is near the arrival's end. A fork at the entry keeps the empty route, since no
        segment enters the entry: this is what lets a diamond forked at the entry close.
        """
        target = self.edge_target
        cut = -1
        for index in range(len(segments) - 1, -1, -1):
            segment = segments[index]
            reached = segment.join if isinstance(segment, JoinSegment) else target.get(segment.edge)
            if reached == fork:
                cut = index + 1
                break
        if cut < 0:
            cut = 0 if fork == self.entry.id else len(segments)
        if cut == len(segments):
            return cut, len(bkey)
        suffix = 0
        keys = self.edge_segment_key
        for segment in segments[cut:]:
            if isinstance(segment, EdgeSegment) and segment.edge in keys:
                suffix += len(keys[segment.edge])
            else:
                suffix += len(segments_key((segment,)))
        return cut, len(bkey) - suffix

    def join(self, node_id: str) -> JoinFacts:
        """The facts of join ``node_id``, computed on first use."""
        facts = self._joins.get(node_id)
        if facts is None:
            facts = self._joins[node_id] = self._join_facts(node_id)
        return facts

    def _join_facts(self, node_id: str) -> JoinFacts:
        graph = self._graph
        if self._dominators is None:
            entry = graph.index[self.entry.id]
            self._dominators = DominatorTree(graph, entry)
            self._live = reachable(graph, [entry])
        join = graph.index[node_id]
        shape = analyse_join(graph, join, self._dominators, self._live, self._position)
        # Unreachable from the entry (no shape): no frame ever arrives, no barrier ever opens.
        fork = self.entry.id if shape is None else graph.ids[shape.fork]
        required = 0 if shape is None else shape.routes
        inside = () if shape is None else tuple(graph.ids[node] for node in shape.region)
        region_nodes = (*inside, node_id)
        incoming = tuple(sorted(graph.edge_ids[e] for e in graph.in_edges[join]))
        segment = join_segment(node_id, incoming)
        return JoinFacts(
            node_id=node_id,
            fork=fork,
            required=required,
            segment=segment,
            segment_key=segments_key((segment,)),
            region=frozenset(region_nodes),
            region_nodes=region_nodes,
        )
