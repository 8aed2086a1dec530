"""Graph helpers agree with brute force: dominators, route counts, cycles, topological order."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from orchestration.plan.graph import (
    DominatorTree,
    PlanGraph,
    acyclic_immediate_dominators,
    count_routes,
    diamond_region,
    find_cycle,
    immediate_dominators,
    layout_order,
    reachable,
    topological_order,
)


def _graph(n: int, edges: list[tuple[int, int]]) -> PlanGraph:
    return PlanGraph(
        [f"n{i}" for i in range(n)],
        ["entry"] + ["call"] * (n - 1),
        [(f"e{k}", f"n{s}", f"n{t}", "always") for k, (s, t) in enumerate(edges)],
    )


@st.composite
def graphs(draw: Any, acyclic: bool = False) -> tuple[int, list[tuple[int, int]]]:
    n = draw(st.integers(1, 9))
    pairs = st.tuples(st.integers(0, n - 1), st.integers(0, n - 1))
    edges = draw(st.lists(pairs, max_size=3 * n))
    if acyclic:
        edges = [(min(s, t), max(s, t)) for s, t in edges if s != t]
    return n, edges


def _paths(n: int, edges: list[tuple[int, int]], source: int, target: int) -> int:
    """Routes by explicit enumeration (edge sequences), for small acyclic graphs."""
    if source == target:
        return 1
    return sum(_paths(n, edges, t, target) for s, t in edges if s == source)


def _naive_dominators(n: int, edges: list[tuple[int, int]], root: int) -> list[set[int]]:
    live = reachable(_graph(n, edges), [root])
    nodes = [v for v in range(n) if live[v]]
    dom = {v: set(nodes) for v in nodes}
    dom[root] = {root}
    changed = True
    while changed:
        changed = False
        for v in nodes:
            if v == root:
                continue
            preds = [s for s, t in edges if t == v and live[s]]
            new = set.intersection(*(dom[p] for p in preds)) | {v} if preds else {v}
            if new != dom[v]:
                dom[v], changed = new, True
    return [dom.get(v, set()) for v in range(n)]


@given(graphs())
def test_immediate_dominators_match_the_dominator_sets(
    g: tuple[int, list[tuple[int, int]]],
) -> None:
    """CHK's immediate dominator is the closest strict dominator of the set-based fixpoint."""
    n, edges = g
    idom = immediate_dominators(_graph(n, edges), 0)
    naive = _naive_dominators(n, edges, 0)
    tree = DominatorTree(_graph(n, edges), 0)
    for v in range(n):
        if not naive[v]:
            assert idom[v] == -1
            continue
        if v == 0:
            assert idom[v] == 0
            continue
        strict = naive[v] - {v}
        closest = [d for d in strict if naive[d] == strict]
        assert [idom[v]] == closest
        for d in range(n):
            assert tree.dominates(d, v) == (d in naive[v])


@given(graphs(acyclic=True), st.data())
def test_one_pass_dominators_of_a_dag_equal_chk(
    g: tuple[int, list[tuple[int, int]]], data: Any
) -> None:
    """On an acyclic graph, one pass over a topological order gives CHK's dominators, from any
    root (nodes ordered before the root, or out of its reach, get -1)."""
    n, edges = g
    # Relabel, so a topological order is not simply the node numbering.
    relabel = data.draw(st.permutations(range(n)))
    graph = _graph(n, [(relabel[s], relabel[t]) for s, t in edges])
    order = topological_order(graph)
    assert order is not None
    root = data.draw(st.integers(0, n - 1))
    assert acyclic_immediate_dominators(graph, root, order) == immediate_dominators(graph, root)


@given(graphs(acyclic=True))
def test_route_counts_match_enumeration(g: tuple[int, list[tuple[int, int]]]) -> None:
    """Dynamic-programming route counts equal the number of enumerated edge sequences."""
    n, edges = g
    graph = _graph(n, edges)
    order = topological_order(graph)
    assert order is not None
    counts = count_routes(graph, 0, order)
    for v in range(n):
        assert counts[v] == _paths(n, edges, 0, v)
    capped = count_routes(graph, 0, order, cap=2)
    assert capped == [min(c, 2) for c in counts]


@given(graphs())
def test_cycle_detection_and_orders(g: tuple[int, list[tuple[int, int]]]) -> None:
    """A cycle is found exactly when no topological order exists; layout covers every node."""
    n, edges = g
    graph = _graph(n, edges)
    cycle = find_cycle(graph)
    order = topological_order(graph)
    assert (cycle is None) == (order is not None)
    if order is not None:
        position = {v: i for i, v in enumerate(order)}
        assert all(position[s] < position[t] for s, t in edges)
    else:
        assert cycle is not None
        s, t = edges[cycle]
        assert reachable(graph, [t])[s]  # the closing edge really closes a cycle
    assert sorted(layout_order(graph)) == list(range(n))


def test_parallel_edges_are_separate_routes() -> None:
    """Two edges between the same nodes are two routes."""
    graph = _graph(2, [(0, 1), (0, 1)])
    assert count_routes(graph, 0, [0, 1]) == [1, 2]


def test_diamond_region_stops_at_the_fork() -> None:
    """The region of a diamond is exactly the nodes strictly between fork and join."""
    #   0 → 1 → {2, 3} → 4 → 5
    graph = _graph(6, [(0, 1), (1, 2), (1, 3), (2, 4), (3, 4), (4, 5)])
    live = reachable(graph, [0])
    assert sorted(diamond_region(graph, 1, 4, live)) == [2, 3]


def test_dominators_of_a_long_chain_are_iterative() -> None:
    """A 20,000-node chain needs no recursion: every node's dominator is its predecessor."""
    n = 20_000
    graph = _graph(n, [(i, i + 1) for i in range(n - 1)])
    idom = immediate_dominators(graph, 0)
    assert idom[1:] == list(range(n - 1))
    assert find_cycle(graph) is None
