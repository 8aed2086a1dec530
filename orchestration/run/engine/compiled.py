"""The engine's index over a frozen plan view: adjacency in view order, and each join's diamond.

The engine asks a few structural questions on every step (which edges leave this node, in which
order; where does this edge go; what is this join's fork, its route count, its region), so they
are answered once here, in view order (node order and edge order are observable in the event
log, so nothing here ever iterates a set or a hash-ordered map).

A join's facts are derived from the graph, never authored, by the same analysis freeze uses
(:func:`orchestration.plan.graph.analyse_join`), so the engine and the validator cannot disagree on
a diamond:

* its **fork** is its immediate dominator;
* ``required`` is the number of distinct fork→join routes, parallel edges counted separately;
* its **region** is the set of nodes strictly after the fork that can still reach the join,
  plus the join itself: a live frame on one of those nodes, on a route extending the barrier's
  prefix, may still arrive.

Freeze refuses every plan this index cannot walk; the engine re-checks just enough (one entry,
no dangling edge, no cycle, unique ids) to stay total, and refuses the rest with
:class:`~orchestration.errors.UnrunnablePlanError` before anything is recorded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from orchestration.errors import UnrunnablePlanError
from orchestration.plan.encoding import NodeRef
from orchestration.plan.graph import (
    PlanGraph,
    acyclic_immediate_dominators,
    analyse_join,
    find_cycle,
    order_positions,
    topological_order,
)
from orchestration.run.budgets import Budgets
from orchestration.run.engine.builders import edge_segment, join_segment
from orchestration.run.routes import (
    AnySegment,
    EdgeSegment,
    ItemSegment,
    JoinSegment,
    edge_token,
    segments_key,
)
from orchestration.tools.contracts import BranchVerdict, SelectVerdict
from orchestration.types import JoinDefinition, PlanNode, RawPlanView

__all__ = ["CompiledPlan", "Hop", "JoinFacts"]


class Hop(NamedTuple):
    """One edge as the engine follows it, with everything a spawned frame needs precomputed.

    A settlement that fires an edge builds the successor frame from these alone: plain tuple
    fields, where reading the same facts off the plan's pydantic models (``edge.to``,
    ``node.kind``) would cost an attribute lookup each on the hottest path.

    Attributes:
        edge_id: The edge.
        handle: Its handle.
        source_id: The node it leaves.
        target: The node it enters; ``target_id`` its id.
        segment: The route segment it adds (one object, shared by every frame it produces).
        token: That segment's branch-key token.
        head: ``"<target id>:"``: a successor's frame key is this plus its branch key.

    """

    edge_id: str
    handle: str
    source_id: str
    target: PlanNode
    target_id: str
    segment: EdgeSegment
    token: str
    head: str


@dataclass(frozen=True, slots=True)
class JoinFacts:
    """What the barrier of one join needs, derived from the graph.

    Attributes:
        node_id: The join.
        fork: Its immediate dominator.
        required: Distinct fork→join routes: the arrivals that close the barrier.
        segment: The merged route's join segment, ``{join, of: sorted(all incoming ids)}``.
        segment_key: ``segments_key`` of that one segment.
        region_nodes: The nodes from which a frame can still deliver an arrival, in
            topological order.
        needed: Arrivals that close the barrier: ``required`` for an ``all`` join, 1 for
            ``any``, ``N`` for ``{quorum: N}``.

    """

    node_id: str
    fork: str
    required: int
    segment: JoinSegment
    segment_key: str
    region_nodes: tuple[str, ...]
    needed: int


class CompiledPlan:
    """A frozen view indexed for the engine.

    Built once per run and never mutated after, except for the per-join facts it computes the
    first time a barrier of that join opens.

    Attributes:
        view: The view.
        entry: The entry node.
        nodes: Every node by id, in view order.
        out_hops: Each node's outgoing edges, in view order (nodes with none are absent).
        success_hops: For nodes other than branch/select, the edges a success fires: the
            ``always`` edges, or the ``default`` edges when there is no ``always`` edge
            (nodes with neither are absent).
        error_hops: Each node's ``error`` edges, in view order (nodes with none are absent).
        hops: Every edge as a :class:`Hop`, by edge id (with the route segment it adds,
            shared by every frame it produces, and that segment's key token).
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
        self.entry = entry = entries[0]
        self.nodes = nodes
        out: dict[str, list[Hop]] = {}
        always: dict[str, list[Hop]] = {}
        default: dict[str, list[Hop]] = {}
        error: dict[str, list[Hop]] = {}
        item: dict[str, list[Hop]] = {}
        by_handle = {
            "always": always,
            "default": default,
            "error": error,
            "item": item,
            "body": item,
        }
        hops: dict[str, Hop] = {}
        for edge in view.edges:
            edge_id, origin, to = edge.id, edge.from_, edge.to
            reached = nodes.get(to)
            if origin not in nodes or reached is None:
                raise UnrunnablePlanError(
                    f'edge "{edge_id}" ({origin} → {to}) names a node that does not exist; '
                    "remove the edge or add the node"
                )
            if edge_id in hops:
                raise UnrunnablePlanError(
                    f'edge id "{edge_id}" is used twice; give every edge a unique id'
                )
            if reached is entry:
                raise UnrunnablePlanError(
                    f'the entry node "{entry.id}" has incoming edges; nothing may route back '
                    "into the entry"
                )
            segment = edge_segment(edge_id)
            token = edge_token(edge_id)
            hop = hops[edge_id] = Hop(
                edge_id, edge.handle, origin, reached, to, segment, token, f"{to}:"
            )
            out.setdefault(origin, []).append(hop)
            handled = by_handle.get(edge.handle)
            if handled is not None:
                handled.setdefault(origin, []).append(hop)
        self.hops = hops
        self.out_hops = {node_id: tuple(edges) for node_id, edges in out.items()}
        self._graph = graph = PlanGraph.from_view(view)
        order = topological_order(graph)
        if order is None:
            closing = find_cycle(graph)
            stuck = graph.ids[graph.src[closing]] if closing is not None else self.entry.id
            raise UnrunnablePlanError(
                f'the plan has a cycle through node "{stuck}"; a plan must be acyclic over '
                "every handle, error and default included"
            )
        self._order = order
        self._position = order_positions(order, len(graph))
        # Only nodes with such edges are keys: read these with ``.get(node_id, ())``.
        self.success_hops: dict[str, tuple[Hop, ...]] = {
            origin: tuple(fired) for origin, fired in always.items()
        }
        for origin, fired in default.items():
            if origin not in always:
                self.success_hops[origin] = tuple(fired)
        self.error_hops: dict[str, tuple[Hop, ...]] = {
            origin: tuple(fired) for origin, fired in error.items()
        }
        self.item_hops: dict[str, tuple[Hop, ...]] = {
            origin: tuple(fired) for origin, fired in item.items()
        }
        """Each map node's ``item`` edges and each loop node's ``body`` edges (into the body),
        fired once per item or round."""
        self.plan_id = view.plan_id
        self.max_steps = view.bounds.max_steps
        self.max_concurrent = view.bounds.max_concurrent_frames
        self.budgets = Budgets.of(view.bounds, view.nodes)
        """The plan's token, cost and wall-time budgets; ``None`` when it declares none."""
        self.refs: dict[str, tuple[NodeRef, ...]] = {}
        """Each call node's argument references, by node id (filled as calls first settle)."""
        self.edge_index = {edge.id: i for i, edge in enumerate(view.edges)}
        self.node_index = {node.id: i for i, node in enumerate(view.nodes)}
        self._idom: list[int] | None = None
        self._reached: list[bool] = []
        self._joins: dict[str, JoinFacts] = {}

    @property
    def graph(self) -> PlanGraph:
        """The plan's integer graph (shared with freeze's analyses)."""
        return self._graph

    def verdict_hops(self, node: PlanNode, verdict: object) -> tuple[Hop, ...] | None:
        """The edges a branch or select verdict fires, or ``None`` for a verdict of the wrong kind.

        A branch fires its ``match`` or ``no_match`` edges, a select its ``case_<label>``
        edges; when that is none (no such edge, or a select verdict of no case), its ``default``
        edges fire. Duplicates are fan-out; ``always`` never fires from these kinds.
        """
        edges = self.out_hops.get(node.id, ())
        if node.kind == "branch" and type(verdict) is BranchVerdict:
            wanted: str | None = "match" if verdict.matched else "no_match"
        elif node.kind == "select" and type(verdict) is SelectVerdict:
            wanted = None if verdict.case_label is None else f"case_{verdict.case_label}"
        else:
            return None
        fired = tuple(hop for hop in edges if hop.handle == wanted)
        return fired or tuple(hop for hop in edges if hop.handle == "default")

    @staticmethod
    def verdict_handle(verdict: object) -> str:
        """The handle a verdict names: ``match``/``no_match``, ``case_<label>``/``default``."""
        if type(verdict) is BranchVerdict:
            return "match" if verdict.matched else "no_match"
        label = getattr(verdict, "case_label", None)
        return "default" if label is None else f"case_{label}"

    def source_of(self, edge_id: str) -> str:
        """The node edge ``edge_id`` leaves; ``""`` for an id this plan does not have."""
        hop = self.hops.get(edge_id)
        return "" if hop is None else hop.source_id

    def cut_at_fork(
        self, segments: tuple[AnySegment, ...], bkey: str, fork: str
    ) -> tuple[int, int]:
        """Where a route is truncated at ``fork``: (segments kept, length of their key in ``bkey``).

        The kept prefix runs up to and including the segment that entered the fork. It is found
        walking back from the end, since a route passes a node at most once and the fork of a
        join is near the arrival's end. A fork at the entry keeps the empty route, since no
        segment enters the entry: this is what lets a diamond forked at the entry close.
        """
        hops = self.hops
        cut = -1
        for index in range(len(segments) - 1, -1, -1):
            segment = segments[index]
            if isinstance(segment, JoinSegment):
                reached: str | None = segment.join
            elif isinstance(segment, ItemSegment):
                reached = segment.map
            else:
                hop = hops.get(segment.edge)
                reached = None if hop is None else hop.target_id
            if reached == fork:
                cut = index + 1
                break
        if cut < 0:
            cut = 0 if fork == self.entry.id else len(segments)
        if cut == len(segments):
            return cut, len(bkey)
        suffix = 0
        for segment in segments[cut:]:
            hop = hops.get(segment.edge) if isinstance(segment, EdgeSegment) else None
            if hop is not None:
                suffix += len(hop.token)
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
        if self._idom is None:
            entry = graph.index[self.entry.id]
            self._idom = acyclic_immediate_dominators(graph, entry, self._order)
            # Reached from the entry exactly when dominated by it.
            self._reached = [parent != -1 for parent in self._idom]
        join = graph.index[node_id]
        shape = analyse_join(graph, join, self._idom, self._reached, self._position)
        # Unreachable from the entry (no shape): no frame ever arrives, no barrier ever opens.
        fork = self.entry.id if shape is None else graph.ids[shape.fork]
        required = 0 if shape is None else shape.routes
        inside = () if shape is None else tuple(graph.ids[node] for node in shape.region)
        region_nodes = (*inside, node_id)
        incoming = tuple(sorted(graph.edge_ids[e] for e in graph.in_edges[join]))
        segment = join_segment(node_id, incoming)
        definition = self.nodes[node_id].definition
        needed = definition.needed if isinstance(definition, JoinDefinition) else None
        return JoinFacts(
            node_id=node_id,
            fork=fork,
            required=required,
            segment=segment,
            segment_key=segments_key((segment,)),
            region_nodes=region_nodes,
            needed=required if needed is None else needed,
        )
