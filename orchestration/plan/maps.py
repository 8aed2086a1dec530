"""Map regions and the worst case: what a plan with map nodes can cost at most.

A map node runs its body, every node its ``item`` edges reach, once per item, and at most
``maxItems`` times per run of the map. Freeze and the renderer read the same facts from here:

* :func:`map_bodies`: each map's body, in topological order (nested maps' bodies included in
  their outer body).
* :func:`worst_case`: the most node entries a run can make, counted the way the engine counts
  steps: one per frame entered (the entry, every call, reason, transform, branch, select and
  map frame, one per item of every map, one per join arrival). A node's executions are the sum
  over its incoming edges of its sources' executions (an ``item`` edge multiplies its map's by
  ``maxItems``), a join settles at most as often as its busiest incoming edge delivers, so the
  count is an upper bound for every run, branches taken or not.

The count is a dynamic programme over a topological order: linear in nodes plus edges, never a
path enumeration.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from orchestration.plan.graph import PlanGraph, reachable

__all__ = ["MapRegion", "WorstCase", "map_bodies", "worst_case"]


@dataclass(frozen=True)
class MapRegion:
    """One map's body and what one run of the map can cost.

    Attributes:
        node: The map node's index.
        body: The body's nodes (every node its ``item`` edges reach), in topological order.
        body_steps: The most steps one item's run of the body can make (nested maps counted at
            their own worst case).
        steps: The most steps one run of the map makes: ``maxItems × (1 + body_steps)`` (an
            item's own frame is a step).

    """

    node: int
    body: tuple[int, ...]
    body_steps: int
    steps: int


@dataclass(frozen=True)
class WorstCase:
    """The most steps a run of the plan can make, and each map region's share."""

    steps: int
    regions: tuple[MapRegion, ...]


def map_bodies(graph: PlanGraph, order: Sequence[int]) -> dict[int, tuple[int, ...]]:
    """Each map node's body, in ``order`` (a topological order), by the map's index."""
    position = {node: i for i, node in enumerate(order)}
    bodies: dict[int, tuple[int, ...]] = {}
    for node, kind in enumerate(graph.kinds):
        if kind != "map":
            continue
        roots = [graph.dst[e] for e in graph.out_edges[node] if graph.handles[e] == "item"]
        seen = reachable(graph, roots) if roots else [False] * len(graph)
        seen[node] = False
        bodies[node] = tuple(
            sorted((n for n, inside in enumerate(seen) if inside), key=lambda n: position.get(n, n))
        )
    return bodies


def _multiplier(graph: PlanGraph, edge: int, max_items: Mapping[int, int]) -> int:
    """An ``item`` edge fires once per item of its map; any other edge once."""
    return max_items.get(graph.src[edge], 1) if graph.handles[edge] == "item" else 1


def _counts(
    graph: PlanGraph,
    order: Sequence[int],
    max_items: Mapping[int, int],
    roots: Mapping[int, int],
    within: Sequence[bool] | None,
) -> tuple[list[int], list[int]]:
    """Executions and steps per node from ``roots`` (node → executions), inside ``within``."""
    size = len(graph)
    runs = [0] * size
    steps = [0] * size
    for node, count in roots.items():
        runs[node] = count
    for node in order:
        if within is not None and not within[node]:
            continue
        if node not in roots:
            arrivals = [
                runs[graph.src[e]] * _multiplier(graph, e, max_items)
                for e in graph.in_edges[node]
                if within is None or within[graph.src[e]]
            ]
            if graph.kinds[node] == "join":
                runs[node] = max(arrivals, default=0)
                steps[node] = sum(arrivals)
            else:
                runs[node] = sum(arrivals)
        if graph.kinds[node] != "join" or node in roots:
            steps[node] = runs[node]
        if graph.kinds[node] == "map":
            steps[node] = runs[node] * (1 + max_items.get(node, 1))
    return runs, steps


def worst_case(
    graph: PlanGraph, order: Sequence[int], entry: int, max_items: Mapping[int, int]
) -> WorstCase:
    """The most steps a run can make from ``entry``, and each map region's share.

    Args:
        graph: The plan's graph (acyclic).
        order: A topological order of it.
        entry: The entry node.
        max_items: Each map node's ``maxItems``, by index.

    """
    _, steps = _counts(graph, order, max_items, {entry: 1}, None)
    bodies = map_bodies(graph, order)
    regions: list[MapRegion] = []
    for node, body in bodies.items():
        within = [False] * len(graph)
        for member in body:
            within[member] = True
        within[node] = True
        # One item's run: the map's item edges deliver once.
        _, inner = _counts(graph, order, {**max_items, node: 1}, {node: 1}, within)
        body_steps = sum(inner[m] for m in body)
        items = max_items.get(node, 1)
        regions.append(MapRegion(node, body, body_steps, items * (1 + body_steps)))
    return WorstCase(sum(steps), tuple(regions))
