"""Pure graph helpers over a plan's nodes and edges, near-linear so large plans freeze fast.

Freeze asks structural questions of a plan: is every node reachable, is there a cycle, what is
each join's fork, how many distinct routes run from a fork to its join, which nodes lie inside a
diamond, is a referenced node upstream of the reader on every route. Every answer here is
computed without enumerating paths, so the cost stays near-linear in nodes plus edges:

* **Dominators** use the Cooper–Harvey–Kennedy iterative algorithm over reverse postorder (a
  handful of passes over the edges, each step walking the partial dominator tree), not the
  per-node dominator-set fixpoint, whose sets make it quadratic.
* **Dominance queries** (``a`` is upstream of ``b`` on every route) are O(1) through pre/post
  numbers of the dominator tree.
* **Route counts** are a dynamic programme over a topological order: the number of routes into
  a node is the sum over its incoming edges of the routes into their sources. Parallel edges are
  separate routes, as the contract requires.
* **Diamond regions** are found walking backwards from the join and stopping at its fork, which
  is enough because the fork dominates the join.

Everything is iterative (no recursion limits), deterministic (nodes in view order, edges in
view order, never a ``set`` iteration), and total: a malformed graph (cycles, dangling edges,
duplicate ids) gives answers, never exceptions.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from orchestration.types import RawPlanView

__all__ = [
    "DominatorTree",
    "acyclic_immediate_dominators",
    "order_positions",
    "JoinShape",
    "PlanStructure",
    "PlanGraph",
    "analyse_join",
    "count_routes",
    "diamond_region",
    "find_cycle",
    "immediate_dominators",
    "layout_order",
    "reachable",
    "reverse_postorder",
    "topological_order",
]


class PlanGraph:
    """An index over a view: nodes and edges as integers, adjacency in edge order.

    Attributes:
        ids: Node ids in view order (a repeated id keeps every occurrence; edges attach to the
            first).
        kinds: Node kinds, parallel to ``ids``.
        index: Node id to its first position.
        edge_ids: Ids of the edges whose endpoints both exist, in view order.
        edge_positions: Each kept edge's position in ``view.edges``.
        src: Source node of each kept edge.
        dst: Target node of each kept edge.
        handles: Handle of each kept edge.
        out_edges: Per node, its outgoing kept edges in view order.
        in_edges: Per node, its incoming kept edges in view order.
        dangling: Positions in ``view.edges`` of edges with a missing endpoint.

    """

    __slots__ = (
        "dangling",
        "dst",
        "edge_ids",
        "edge_positions",
        "handles",
        "ids",
        "in_edges",
        "index",
        "kinds",
        "out_edges",
        "src",
    )

    def __init__(
        self,
        ids: Sequence[str],
        kinds: Sequence[str],
        edges: Iterable[tuple[str, str, str, str]],
    ) -> None:
        self.ids: list[str] = list(ids)
        self.kinds: list[str] = list(kinds)
        index: dict[str, int] = {}
        for position, node_id in enumerate(self.ids):
            if node_id not in index:
                index[node_id] = position
        self.index = index
        n = len(self.ids)
        out_edges: list[list[int]] = [[] for _ in range(n)]
        in_edges: list[list[int]] = [[] for _ in range(n)]
        edge_ids: list[str] = []
        edge_positions: list[int] = []
        src: list[int] = []
        dst: list[int] = []
        handles: list[str] = []
        dangling: list[int] = []
        lookup = index.get
        for position, (edge_id, source, target, handle) in enumerate(edges):
            s = lookup(source)
            t = lookup(target)
            if s is None or t is None:
                dangling.append(position)
                continue
            e = len(edge_ids)
            edge_ids.append(edge_id)
            edge_positions.append(position)
            src.append(s)
            dst.append(t)
            handles.append(handle)
            out_edges[s].append(e)
            in_edges[t].append(e)
        self.out_edges = out_edges
        self.in_edges = in_edges
        self.edge_ids = edge_ids
        self.edge_positions = edge_positions
        self.src = src
        self.dst = dst
        self.handles = handles
        self.dangling = dangling

    @classmethod
    def from_view(cls, view: RawPlanView) -> PlanGraph:
        """Index a folded (or hand-built) view."""
        return cls(
            [node.id for node in view.nodes],
            [node.kind for node in view.nodes],
            ((e.id, e.from_, e.to, e.handle) for e in view.edges),
        )

    def __len__(self) -> int:
        return len(self.ids)

    def successors(self, node: int) -> list[int]:
        """Targets of ``node``'s outgoing edges, in edge order (repeated for parallel edges)."""
        dst = self.dst
        return [dst[e] for e in self.out_edges[node]]

    def predecessors(self, node: int) -> list[int]:
        """Sources of ``node``'s incoming edges, in edge order (repeated for parallel edges)."""
        src = self.src
        return [src[e] for e in self.in_edges[node]]


def reachable(graph: PlanGraph, roots: Iterable[int], *, stop: int | None = None) -> list[bool]:
    """Which nodes some root reaches over every handle; ``stop`` is entered but not left.

    Args:
        graph: The graph.
        roots: Start nodes (each is reachable from itself).
        stop: A node whose outgoing edges are not followed.

    """
    seen = [False] * len(graph)
    stack: list[int] = []
    for root in roots:
        if not seen[root]:
            seen[root] = True
            stack.append(root)
    out_edges, dst = graph.out_edges, graph.dst
    while stack:
        node = stack.pop()
        if node == stop:
            continue
        for e in out_edges[node]:
            target = dst[e]
            if not seen[target]:
                seen[target] = True
                stack.append(target)
    return seen


def find_cycle(graph: PlanGraph) -> int | None:
    """The edge that closes the first cycle found, or ``None`` for an acyclic graph.

    A depth-first search over every handle (``error`` and ``default`` included), roots in node
    order and successors in edge order, so the edge reported is the same on every run.
    """
    white, grey, black = 0, 1, 2
    colour = [white] * len(graph)
    out_edges, dst = graph.out_edges, graph.dst
    for root in range(len(graph)):
        if colour[root] != white:
            continue
        colour[root] = grey
        stack: list[tuple[int, int]] = [(root, 0)]
        while stack:
            node, cursor = stack[-1]
            edges = out_edges[node]
            if cursor == len(edges):
                colour[node] = black
                stack.pop()
                continue
            stack[-1] = (node, cursor + 1)
            e = edges[cursor]
            target = dst[e]
            if colour[target] == grey:
                return e
            if colour[target] == white:
                colour[target] = grey
                stack.append((target, 0))
    return None


def topological_order(graph: PlanGraph) -> list[int] | None:
    """A topological order that keeps view order wherever the edges allow; ``None`` if cyclic.

    Kahn's algorithm with the ready set ordered by node position, so two plans that differ only
    in an unrelated node order their common nodes the same way, and prose reads in the order the
    author wrote it.
    """
    order = _kahn(graph)
    return order if len(order) == len(graph) else None


def layout_order(graph: PlanGraph) -> list[int]:
    """Every node once: a topological order of the acyclic part, then the rest in view order.

    Total on any graph, so a renderer can always lay a plan out, even one freeze refuses.
    """
    order = _kahn(graph)
    if len(order) < len(graph):
        placed = [False] * len(graph)
        for node in order:
            placed[node] = True
        order.extend(node for node in range(len(graph)) if not placed[node])
    return order


def _kahn(graph: PlanGraph) -> list[int]:
    indegree = [len(edges) for edges in graph.in_edges]
    ready = [node for node in range(len(graph)) if indegree[node] == 0]
    heapq.heapify(ready)
    order: list[int] = []
    out_edges, dst = graph.out_edges, graph.dst
    while ready:
        node = heapq.heappop(ready)
        order.append(node)
        for e in out_edges[node]:
            target = dst[e]
            indegree[target] -= 1
            if indegree[target] == 0:
                heapq.heappush(ready, target)
    return order


def reverse_postorder(graph: PlanGraph, root: int) -> list[int]:
    """The nodes reachable from ``root`` in reverse postorder of a depth-first search."""
    visited = [False] * len(graph)
    visited[root] = True
    post: list[int] = []
    stack: list[tuple[int, int]] = [(root, 0)]
    out_edges, dst = graph.out_edges, graph.dst
    while stack:
        node, cursor = stack[-1]
        edges = out_edges[node]
        while cursor < len(edges) and visited[dst[edges[cursor]]]:
            cursor += 1
        if cursor == len(edges):
            post.append(node)
            stack.pop()
            continue
        stack[-1] = (node, cursor + 1)
        target = dst[edges[cursor]]
        visited[target] = True
        stack.append((target, 0))
    post.reverse()
    return post


def immediate_dominators(graph: PlanGraph, root: int) -> list[int]:
    """Each node's immediate dominator from ``root``: ``root`` for itself, ``-1`` if unreachable.

    Cooper, Harvey and Kennedy, "A Simple, Fast Dominance Algorithm": iterate over reverse
    postorder, setting each node's dominator to the meet (nearest common ancestor in the
    current tree) of its already-processed predecessors, until nothing changes. On a DAG in
    reverse postorder a single pass settles it; the second pass confirms.
    """
    rpo = reverse_postorder(graph, root)
    order = [-1] * len(graph)
    for i, node in enumerate(rpo):
        order[node] = i
    idom = [-1] * len(graph)
    idom[root] = root
    in_edges, src = graph.in_edges, graph.src
    changed = True
    while changed:
        changed = False
        for node in rpo[1:]:
            new = _meet(in_edges[node], src, idom, order)
            if idom[node] != new:
                idom[node] = new
                changed = True
    return idom


def _meet(
    edges: Sequence[int], src: Sequence[int], idom: Sequence[int], order: Sequence[int]
) -> int:
    """The nearest common dominator-tree ancestor of the processed sources of ``edges``.

    The two-finger walk: move whichever finger sits later in ``order`` to its dominator until
    they meet. Sources not yet given a dominator (-1) are skipped; -1 if none has one.
    """
    new = -1
    for e in edges:
        pred = src[e]
        if idom[pred] == -1:
            continue
        if new == -1:
            new = pred
            continue
        a, b = pred, new
        while a != b:
            while order[a] > order[b]:
                a = idom[a]
            while order[b] > order[a]:
                b = idom[b]
        new = a
    return new


def order_positions(order: Sequence[int], size: int) -> list[int]:
    """Each node's index in ``order`` (0 for a node ``order`` leaves out), for ``size`` nodes."""
    position = [0] * size
    for i, node in enumerate(order):
        position[node] = i
    return position


def acyclic_immediate_dominators(graph: PlanGraph, root: int, order: Sequence[int]) -> list[int]:
    """:func:`immediate_dominators` of an acyclic graph, in one pass over a topological ``order``.

    On a DAG every predecessor of a node comes before it in any topological order, and every
    dominator-tree ancestor has a smaller position than its descendants, which is all the
    two-finger meet needs; so one pass settles every node, with no depth-first search and no
    confirming pass. ``-1`` marks a node the root does not reach.
    """
    position = order_positions(order, len(graph))
    idom = [-1] * len(graph)
    idom[root] = root
    in_edges, src = graph.in_edges, graph.src
    for node in order[position[root] + 1 :]:
        idom[node] = _meet(in_edges[node], src, idom, position)
    return idom


class DominatorTree:
    """Dominance from one root, answered in O(1) per query.

    ``a`` dominates ``b`` when every route from the root to ``b`` passes through ``a``: for a
    plan, "``a`` is upstream of ``b`` on every route", which is exactly when ``b`` may read
    ``a``'s output.
    """

    __slots__ = ("_post", "_pre", "idom", "root")

    def __init__(self, graph: PlanGraph, root: int) -> None:
        self.root = root
        self.idom = immediate_dominators(graph, root)
        n = len(graph)
        children: list[list[int]] = [[] for _ in range(n)]
        for node, parent in enumerate(self.idom):
            if parent != -1 and node != root:
                children[parent].append(node)
        self._pre = [-1] * n
        self._post = [-1] * n
        clock = 0
        stack: list[tuple[int, int]] = [(root, 0)]
        self._pre[root] = clock
        clock += 1
        while stack:
            node, cursor = stack[-1]
            if cursor == len(children[node]):
                self._post[node] = clock
                clock += 1
                stack.pop()
                continue
            stack[-1] = (node, cursor + 1)
            child = children[node][cursor]
            self._pre[child] = clock
            clock += 1
            stack.append((child, 0))

    def is_reachable(self, node: int) -> bool:
        """Whether ``node`` is reachable from the root."""
        return self.idom[node] != -1

    def dominates(self, a: int, b: int) -> bool:
        """Whether ``a`` dominates ``b`` (reflexive); false when either is unreachable."""
        pre, post = self._pre, self._post
        if pre[a] == -1 or pre[b] == -1:
            return False
        return pre[a] <= pre[b] and post[b] <= post[a]


def count_routes(
    graph: PlanGraph, source: int, order: Sequence[int], *, cap: int | None = None
) -> list[int]:
    """Routes from ``source`` to every node, counted over a topological ``order``.

    A route is a sequence of edges, so parallel edges count separately. With ``cap`` every count
    saturates at that value (enough to tell "one route" from "several" without big numbers).
    """
    routes = [0] * len(graph)
    routes[source] = 1
    in_edges, src = graph.in_edges, graph.src
    started = False
    for node in order:
        if node == source:
            started = True
            continue
        if not started:
            continue
        total = 0
        for e in in_edges[node]:
            total += routes[src[e]]
        if cap is not None and total > cap:
            total = cap
        routes[node] = total
    return routes


def diamond_region(graph: PlanGraph, fork: int, join: int, live: Sequence[bool]) -> list[int]:
    """The nodes strictly inside the fork→join diamond: on some route between them.

    Walks backwards from ``join`` over ``live`` (reachable) predecessors and stops at ``fork``.
    Every node found lies on a fork→join route because the fork dominates the join, so any
    route from the entry to such a node passes the fork first. The order is that of discovery.
    """
    seen = {fork, join}
    region: list[int] = []
    stack = [join]
    in_edges, src = graph.in_edges, graph.src
    while stack:
        node = stack.pop()
        for e in in_edges[node]:
            pred = src[e]
            if pred in seen or not live[pred]:
                continue
            seen.add(pred)
            region.append(pred)
            stack.append(pred)
    return region


@dataclass(frozen=True)
class JoinShape:
    """What freeze and the renderer need to know about one join.

    Attributes:
        join: The join node.
        fork: Its immediate dominator: where the diamond opens.
        routes: Distinct fork→join routes (the barrier's ``required``, when the diamond is valid).
        region: Nodes strictly inside the diamond, in topological order.
        nested_join: The first join found inside the region, if any.
        reconvergence: The first region node with in-degree above one, if any.

    """

    join: int
    fork: int
    routes: int
    region: tuple[int, ...]
    nested_join: int | None
    reconvergence: int | None

    @property
    def is_diamond(self) -> bool:
        """Whether the join closes a real, reconvergence-free, join-free diamond."""
        return self.routes > 1 and self.nested_join is None and self.reconvergence is None


def analyse_join(
    graph: PlanGraph,
    join: int,
    idom: Sequence[int],
    live: Sequence[bool],
    position: Sequence[int],
) -> JoinShape | None:
    """The diamond shape of ``join``, or ``None`` when it is unreachable.

    Args:
        graph: The graph (acyclic: route counting needs a topological order).
        join: The join node.
        idom: Immediate dominators from the entry (:func:`immediate_dominators`).
        live: Which nodes the entry reaches.
        position: Each node's position in a topological order of the graph.

    """
    fork = idom[join]
    if fork == -1 or fork == join:
        return None
    region = diamond_region(graph, fork, join, live)
    region.sort(key=position.__getitem__)
    inside = set(region)
    inside.add(fork)
    routes = {fork: 1}
    in_edges, src = graph.in_edges, graph.src
    nested: int | None = None
    reconverged: int | None = None
    for node in region:
        live_in = [e for e in in_edges[node] if live[src[e]]]
        routes[node] = sum(routes.get(src[e], 0) for e in live_in if src[e] in inside)
        if nested is None and reconverged is None:
            if graph.kinds[node] == "join":
                nested = node
            elif len(live_in) > 1:
                reconverged = node
    total = sum(routes.get(src[e], 0) for e in in_edges[join] if src[e] in inside)
    return JoinShape(
        join=join,
        fork=fork,
        routes=total,
        region=tuple(region),
        nested_join=nested,
        reconvergence=reconverged,
    )


@dataclass(frozen=True)
class PlanStructure:
    """The structural facts freeze and the renderer share, computed once per view.

    Attributes:
        graph: The index.
        entries: Every ``entry`` node, in view order.
        entry: The entry node when there is exactly one, else ``None``.
        live: Which nodes the entry nodes reach (over every handle).
        cycle_edge: The edge closing the first cycle found, or ``None``.
        order: A topological order (``None`` when the graph is cyclic).
        position: Each node's position in ``order`` (empty when cyclic).
        dominators: Dominators from the single entry (``None`` without one).
        joins: The shape of every reachable join, when the graph is acyclic with one entry.

    """

    graph: PlanGraph
    entries: tuple[int, ...]
    entry: int | None
    live: tuple[bool, ...]
    cycle_edge: int | None
    order: tuple[int, ...] | None
    position: tuple[int, ...]
    dominators: DominatorTree | None
    joins: dict[int, JoinShape]

    @classmethod
    def of(cls, view: RawPlanView) -> PlanStructure:
        """Analyse a view. Total: any view gives a structure."""
        graph = PlanGraph.from_view(view)
        entries = tuple(i for i, kind in enumerate(graph.kinds) if kind == "entry")
        entry = entries[0] if len(entries) == 1 else None
        live = reachable(graph, entries)
        cycle_edge = find_cycle(graph)
        order = None if cycle_edge is not None else topological_order(graph)
        position = order_positions(order or (), len(graph))
        dominators = None if entry is None else DominatorTree(graph, entry)
        joins: dict[int, JoinShape] = {}
        if dominators is not None and order is not None:
            for node, kind in enumerate(graph.kinds):
                if kind == "join" and live[node]:
                    shape = analyse_join(graph, node, dominators.idom, live, position)
                    if shape is not None:
                        joins[node] = shape
        return cls(
            graph=graph,
            entries=entries,
            entry=entry,
            live=tuple(live),
            cycle_edge=cycle_edge,
            order=None if order is None else tuple(order),
            position=tuple(position) if order is not None else (),
            dominators=dominators,
            joins=joins,
        )
