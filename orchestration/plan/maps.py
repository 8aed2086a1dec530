"""Map and loop regions and the worst case: what a plan with map or loop nodes can cost at most.

A map node runs its body, every node its ``item`` edges reach, once per item, and at most
``maxItems`` times per run of the map; a loop node runs its body, every node its ``body`` edges
reach, once per round, at most ``maxIterations`` times. Both are regions repeated a bounded
number of times, so freeze and the renderer read the same facts about both from here:

* :func:`map_bodies`: each map's or loop's body, in topological order (nested regions' bodies
  included in their outer body).
* :func:`worst_case`: the most node entries a run can make, counted the way the engine counts
  steps: one per frame entered (the entry, every call, reason, transform, branch, select, map
  and loop frame, one per item of every map, two per round of every loop (the round's frame
  and its ``until`` check), one per join arrival). A node's executions are the sum over its
  incoming edges of its sources' executions (an ``item`` or ``body`` edge multiplies its
  region's by ``maxItems`` or ``maxIterations``), a join settles at most as often as its
  busiest incoming edge delivers, so the count is an upper bound for every run, branches taken
  or not.

The count is a dynamic programme over a topological order: linear in nodes plus edges, never a
path enumeration.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from orchestration.plan.graph import PlanGraph, reachable
from orchestration.types import LoopDefinition, MapDefinition, PlanNode

__all__ = [
    "BODY_HANDLES",
    "MapRegion",
    "WorstCase",
    "map_bodies",
    "region_repeats",
    "worst_case",
]

BODY_HANDLES = {"map": "item", "loop": "body"}
"""The handle of the edges into a region's body, by the region node's kind."""

_OWN_STEPS = {"map": 1, "loop": 2}
"""Steps a region node takes per repetition: a map's item frame; a loop's round frame and its
``until`` check."""


@dataclass(frozen=True)
class MapRegion:
    """One map's or loop's body and what one run of it can cost.

    Attributes:
        node: The map or loop node's index.
        body: The body's nodes (every node its ``item`` or ``body`` edges reach), in
            topological order.
        body_steps: The most steps one item's (one round's) run of the body can make (nested
            regions counted at their own worst case).
        steps: The most steps one run of the region makes: ``maxItems × (1 + body_steps)``
            for a map (an item's own frame is a step), ``maxIterations × (2 + body_steps)``
            for a loop (a round's frame and its check).

    """

    node: int
    body: tuple[int, ...]
    body_steps: int
    steps: int


@dataclass(frozen=True)
class WorstCase:
    """The most steps a run of the plan can make, and each map or loop region's share."""

    steps: int
    regions: tuple[MapRegion, ...]


def region_repeats(graph: PlanGraph, nodes: Mapping[str, PlanNode]) -> dict[int, int]:
    """Each map node's ``maxItems`` and each loop node's ``maxIterations``, by index.

    What :func:`worst_case` multiplies each body by.
    """
    repeats: dict[int, int] = {}
    for index, kind in enumerate(graph.kinds):
        if kind in BODY_HANDLES:
            definition = nodes[graph.ids[index]].definition
            if isinstance(definition, MapDefinition):
                repeats[index] = definition.max_items
            elif isinstance(definition, LoopDefinition):
                repeats[index] = definition.max_iterations
    return repeats


def map_bodies(graph: PlanGraph, order: Sequence[int]) -> dict[int, tuple[int, ...]]:
    """Each map or loop node's body, in ``order`` (a topological order), by the node's index."""
    position = {node: i for i, node in enumerate(order)}
    bodies: dict[int, tuple[int, ...]] = {}
    for node, kind in enumerate(graph.kinds):
        handle = BODY_HANDLES.get(kind)
        if handle is None:
            continue
        roots = [graph.dst[e] for e in graph.out_edges[node] if graph.handles[e] == handle]
        seen = reachable(graph, roots) if roots else [False] * len(graph)
        seen[node] = False
        bodies[node] = tuple(
            sorted((n for n, inside in enumerate(seen) if inside), key=lambda n: position.get(n, n))
        )
    return bodies


def _multiplier(graph: PlanGraph, edge: int, max_items: Mapping[int, int]) -> int:
    """An ``item`` (``body``) edge fires once per item (round) of its region; any other once."""
    source = graph.src[edge]
    into_body = graph.handles[edge] == BODY_HANDLES.get(graph.kinds[source])
    return max_items.get(source, 1) if into_body else 1


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
        own = _OWN_STEPS.get(graph.kinds[node])
        if own is not None:
            steps[node] = runs[node] * (1 + own * max_items.get(node, 1))
    return runs, steps


def worst_case(
    graph: PlanGraph, order: Sequence[int], entry: int, max_items: Mapping[int, int]
) -> WorstCase:
    """The most steps a run can make from ``entry``, and each map or loop region's share.

    Args:
        graph: The plan's graph (acyclic).
        order: A topological order of it.
        entry: The entry node.
        max_items: Each map node's ``maxItems`` and each loop node's ``maxIterations``, by
            index.

    """
    _, steps = _counts(graph, order, max_items, {entry: 1}, None)
    bodies = map_bodies(graph, order)
    regions: list[MapRegion] = []
    for node, body in bodies.items():
        within = [False] * len(graph)
        for member in body:
            within[member] = True
        within[node] = True
        # One item's run (one round): the region's body edges deliver once.
        _, inner = _counts(graph, order, {**max_items, node: 1}, {node: 1}, within)
        body_steps = sum(inner[m] for m in body)
        items = max_items.get(node, 1)
        own = _OWN_STEPS[graph.kinds[node]]
        regions.append(MapRegion(node, body, body_steps, items * (own + body_steps)))
    return WorstCase(sum(steps), tuple(regions))
