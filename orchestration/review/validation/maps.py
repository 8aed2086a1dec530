"""Map and loop nodes: a body that is a closed region, and a worst case inside ``maxSteps``.

A loop is checked as a map is, with its ``body`` edges for the map's ``item`` edges and
``maxIterations`` for ``maxItems`` (each round also counts its ``until`` check); a loop's
``watch`` must name a node of its own body (the one read of a body from outside it allowed).

A map runs its body once per item of a list, so freeze checks what makes that safe to approve:

* the map has a body (at least one ``item`` edge);
* the body is closed: the body is everything the map's ``item`` edges reach, so every edge
  into a body node must come from the body or be one of those ``item`` edges; a node that is
  also reached from outside (the map's own ``always`` or ``error`` edges included) would run
  both per item and outside the map, and is refused;
* nothing outside a body reads a body node: an item's frames are the map's business, and the
  map's own output (one row per item) is what the rest of the plan reads;
* the worst case (``maxItems`` × the body's steps, nested maps multiplied) fits in the plan's
  ``maxSteps``: a plan whose worst case exceeds it is refused, naming the largest map region.

The worst-case check only applies to plans with a map: a plan without one has no region whose
size a run decides, and is checked exactly as before.
"""

from __future__ import annotations

from orchestration.plan.maps import BODY_HANDLES, region_repeats, worst_case
from orchestration.review.validation.context import CheckContext
from orchestration.review.validation.issues import blocking, quote_list
from orchestration.types import PlanIssue

__all__ = ["check_maps"]


def check_maps(ctx: CheckContext) -> list[PlanIssue]:
    """Bodies, what reads them, and the worst case, map by map in view order."""
    structure = ctx.structure
    graph = structure.graph
    if ("map" not in graph.kinds and "loop" not in graph.kinds) or structure.order is None:
        return []
    bodies = ctx.map_bodies
    issues: list[PlanIssue] = []
    inside: dict[int, int] = {}
    for node, body in bodies.items():
        map_id = graph.ids[node]
        kind = graph.kinds[node]
        handle = BODY_HANDLES[kind]
        noun, per = ("Loop", "per round") if kind == "loop" else ("Map", "per item")
        if not body:
            issues.append(
                blocking(
                    f"{kind}_without_body",
                    f'{noun} "{map_id}" has no "{handle}" edge, so it has no body to run {per}; '
                    f'add an edge with handle "{handle}" from "{map_id}" to the first step of '
                    "its body.",
                    node_id=map_id,
                )
            )
            continue
        members = set(body)
        for member in body:
            inside.setdefault(member, node)
        for member in body:
            for e in graph.in_edges[member]:
                source = graph.src[e]
                if source in members or (source == node and graph.handles[e] == handle):
                    continue
                issues.append(
                    blocking(
                        f"{kind}_body_entered_from_outside",
                        f'Edge "{graph.edge_ids[e]}" enters node "{graph.ids[member]}" of the '
                        f'body of {kind} "{map_id}" from "{graph.ids[source]}", outside it; a '
                        f'body is everything the {kind}\'s "{handle}" edges reach, and is '
                        "entered only through them: remove the edge, or end the body before "
                        f'this node (what follows the {kind} hangs off its "always" or "error" '
                        "edges).",
                        node_id=graph.ids[member],
                        edge_id=graph.edge_ids[e],
                    )
                )
    issues += _outside_reads(ctx, bodies)
    issues += _worst_case(ctx, bodies)
    return issues


def _outside_reads(ctx: CheckContext, bodies: dict[int, tuple[int, ...]]) -> list[PlanIssue]:
    graph = ctx.structure.graph
    issues: list[PlanIssue] = []
    for index, node in enumerate(ctx.view.nodes):
        if graph.index.get(node.id) != index:
            continue
        for site in ctx.sites[node.id]:
            target = graph.index.get(site.ref.node)
            if target is None:
                continue
            if site.location == "watch":
                if target not in bodies.get(index, ()):
                    issues.append(
                        blocking(
                            "loop_watch_outside_body",
                            f'Loop "{node.id}" watches node "{site.ref.node}", which is not in '
                            "its body; watch an output of a node its \"body\" edges reach (the "
                            "value compared between two rounds).",
                            node_id=node.id,
                        )
                    )
                continue
            for map_node, body in bodies.items():
                if target in body and index not in body:
                    map_id = graph.ids[map_node]
                    if graph.kinds[map_node] == "loop":
                        issues.append(
                            blocking(
                                "loop_body_read_outside",
                                f'Node "{node.id}" reads node "{site.ref.node}" (at '
                                f"{site.location}), which runs once per round inside the body "
                                f'of loop "{map_id}"; outside the body read the loop\'s own '
                                "output instead (ended, rounds, result, and results by round) "
                                f'from "{map_id}".',
                                node_id=node.id,
                            )
                        )
                        break
                    issues.append(
                        blocking(
                            "map_body_read_outside",
                            f'Node "{node.id}" reads node "{site.ref.node}" (at '
                            f'{site.location}), which runs once per item inside the body of map '
                            f'"{map_id}"; outside the body read the map\'s own output instead '
                            f'(one row per item: index, ok, result or error) from "{map_id}".',
                            node_id=node.id,
                        )
                    )
                    break
    return issues


def _worst_case(ctx: CheckContext, bodies: dict[int, tuple[int, ...]]) -> list[PlanIssue]:
    structure = ctx.structure
    graph = structure.graph
    if structure.entry is None or structure.order is None:
        return []
    max_items = region_repeats(graph, ctx.by_id)
    worst = worst_case(graph, structure.order, structure.entry, max_items)
    limit = ctx.view.bounds.max_steps
    if worst.steps <= limit or not worst.regions:
        return []
    region = max(worst.regions, key=lambda r: r.steps)
    map_id = graph.ids[region.node]
    names = quote_list(graph.ids[n] for n in region.body)
    if graph.kinds[region.node] == "loop":
        return [
            blocking(
                "loop_worst_case_over_max_steps",
                f"The plan's worst case is {worst.steps} steps, more than its maxSteps {limit}: "
                f'loop "{map_id}" runs up to {max_items.get(region.node, 1)} rounds, each a '
                f"round step, a check step and up to {region.body_steps} step(s) of its body "
                f"({names}), {region.steps} steps per run of the loop; lower the maxIterations "
                f'of "{map_id}", shrink its body, or raise maxSteps.',
                node_id=map_id,
            )
        ]
    return [
        blocking(
            "map_worst_case_over_max_steps",
            f"The plan's worst case is {worst.steps} steps, more than its maxSteps {limit}: map "
            f'"{map_id}" runs up to {max_items.get(region.node, 1)} items, each an item step plus '
            f"up to {region.body_steps} step(s) of its body ({names}), {region.steps} steps per "
            f'run of the map; lower the maxItems of "{map_id}", shrink its body, or raise '
            "maxSteps.",
            node_id=map_id,
        )
    ]
