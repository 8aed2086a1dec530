"""Data checks: every reference names a node whose output is always there, and a declared field.

A reference resolves at run time against the reading frame's branch-local table, so the target
must have run on EVERY route to the reader: it dominates the reader, or it lies inside a diamond
whose join dominates the reader (a join's successor receives the union of every arrival's
table, and the barrier fires only once every route has arrived). Otherwise some frames would find
nothing. The path must name a declared field, which makes the reference checkable now rather
than failing later. And where the target runs on more than one route (at or after a join, or
below an un-joined fan-in) the reference must say which execution it reads: freeze names the
exact ``branchId`` when there is only one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from orchestration.plan.encoding import NodeRef
from orchestration.plan.graph import PlanStructure, count_routes, reachable
from orchestration.plan.references import FieldSpace, field_space
from orchestration.review.validation.context import CheckContext
from orchestration.review.validation.issues import blocking, quote_list
from orchestration.run.routes import BranchId, EdgeSegment, ItemSegment, JoinSegment, RouteSegment
from orchestration.types import PlanIssue

__all__ = ["check_references", "merged_at_joins", "route_of", "runs_first", "valid_route"]


def check_references(ctx: CheckContext) -> list[PlanIssue]:
    """Every reference, in node order then definition order."""
    structure = ctx.structure
    graph = structure.graph
    after_join = reachable(graph, (i for i, k in enumerate(graph.kinds) if k == "join"))
    routes: list[int] | None = None
    if structure.entry is not None and structure.order is not None:
        routes = count_routes(graph, structure.entry, structure.order, cap=2)
    executions: list[int] = []
    spaces: dict[str, FieldSpace] = {}
    edge_index: dict[str, int] = {}
    merged = merged_at_joins(structure)
    issues: list[PlanIssue] = []
    for index, node in enumerate(ctx.view.nodes):
        if graph.index[node.id] != index:
            continue
        for site in ctx.sites[node.id]:
            ref = site.ref
            target = ctx.by_id.get(ref.node)
            target_index = graph.index.get(ref.node)
            if target is None or target_index is None:
                issues.append(
                    blocking(
                        "missing_reference",
                        f'Node "{node.id}" references node "{ref.node}" (at {site.location}), '
                        "which does not exist; fix the reference to name an existing node.",
                        node_id=node.id,
                    )
                )
                continue
            if (
                structure.dominators is not None
                and structure.live[index]
                and not (
                    target_index != index and runs_first(structure, merged, target_index, index)
                )
                # A read into a map's body from outside it is the map check's to name.
                and not ctx.outside_body(target_index, index)
            ):
                issues.append(
                    blocking(
                        "reference_not_upstream",
                        f'Node "{node.id}" references node "{ref.node}" (at {site.location}), '
                        "which does not run before it on every route, so some runs of it would "
                        f'find nothing to read; reference a node that always runs before "'
                        f'{node.id}" (or one inside a diamond whose join it follows), or add '
                        f'edges so every route to "{node.id}" passes "{ref.node}".',
                        node_id=node.id,
                    )
                )
            # A map's list is not a declarable field (fields are scalars): the map checks
            # that it reads a list when it runs (MapItemsError).
            if ref.path is not None and site.location != "over":
                space = spaces.get(ref.node)
                if space is None:
                    space = spaces[ref.node] = field_space(target)
                if not space.declares(ref.path):
                    issues.append(_undeclared(node.id, ref, space, site.location))
            if ref.select in ("first", "last") and after_join[target_index]:
                issues.append(
                    blocking(
                        "first_last_across_join",
                        f'Node "{node.id}" selects "{ref.select}" from node "{ref.node}" (at '
                        f"{site.location}), which is reached across a join; we ship no "
                        "automatic pairing, so a first/last selection across a join is refused: "
                        'select "all" or an item index instead.',
                        node_id=node.id,
                    )
                )
            if ref.branch_id is None:
                if routes is not None and routes[target_index] > 1:
                    if not executions:
                        executions = _executions(structure)
                    issues.append(
                        _ambiguous(ctx.structure, node.id, ref, site.location, executions)
                    )
                continue
            if not edge_index:
                edge_index = {edge_id: e for e, edge_id in enumerate(graph.edge_ids)}
            if structure.entry is not None and not valid_route(
                structure, ref.branch_id, target_index, edge_index
            ):
                issues.append(
                    blocking(
                        "invalid_branch_id",
                        f'Node "{node.id}" references node "{ref.node}" (at {site.location}) '
                        f"with branchId {_route_json(ref.branch_id)}, which is not a route by "
                        f'which "{ref.node}" runs; write the route from the entry: one '
                        '{"edge": id} per edge taken, and where a join closes, the route to its '
                        'fork followed by {"join": id, "of": [sorted incoming edge ids]}.',
                        node_id=node.id,
                    )
                )
    return issues


def merged_at_joins(structure: PlanStructure) -> dict[int, list[int]]:
    """For each node inside a valid diamond, the joins whose barrier merges its output."""
    merged: dict[int, list[int]] = {}
    for join, shape in structure.joins.items():
        if shape.is_diamond:
            for node in shape.region:
                merged.setdefault(node, []).append(join)
    return merged


def runs_first(
    structure: PlanStructure, merged: dict[int, list[int]], target: int, reader: int
) -> bool:
    """Whether every frame of ``reader`` finds ``target``'s output in its table.

    True when ``target`` dominates ``reader`` (it ran on every route), or when ``target`` lies
    inside a diamond whose join dominates ``reader``: a join's successor table is the union of
    every arrival's, and every route through the diamond arrives before the barrier fires.
    """
    dominators = structure.dominators
    assert dominators is not None
    if dominators.dominates(target, reader):
        return True
    return any(dominators.dominates(join, reader) for join in merged.get(target, ()))


def _undeclared(node_id: str, ref: NodeRef, space: FieldSpace, location: str) -> PlanIssue:
    what = "schema property" if space.kind == "schema" else "field"
    if space.paths:
        fix = f"reference one of its declared {what}s ({quote_list(space.paths)})"
    else:
        fix = f'declare "{ref.path}" in the output of "{ref.node}", or read the whole item'
    return blocking(
        "undeclared_field",
        f'Node "{node_id}" references path "{ref.path}" on node "{ref.node}" (at {location}), '
        f"which does not declare that {what}; {fix}.",
        node_id=node_id,
    )


def _ambiguous(
    structure: PlanStructure, node_id: str, ref: NodeRef, location: str, executions: list[int]
) -> PlanIssue:
    target = structure.graph.index[ref.node]
    message = (
        f'Node "{node_id}" references node "{ref.node}" (at {location}) without a branchId, '
        "but more than one path reaches it; name which execution to read"
    )
    if executions[target] == 1:
        route = route_of(structure, target)
        if route is not None:
            message += f" with branchId {_route_json(route)} (its only execution)"
    else:
        message += ' with a branchId: the route from the entry, one {"edge": id} per edge taken'
    return blocking("ambiguous_reference", message + ".", node_id=node_id)


def _executions(structure: PlanStructure) -> list[int]:
    """How many frames each node gets, saturating at 2: a join closes one barrier per fork run."""
    graph = structure.graph
    entry = structure.entry
    assert entry is not None and structure.order is not None
    count = [0] * len(graph)
    count[entry] = 1
    for node in structure.order:
        if node == entry or not structure.live[node]:
            continue
        shape = structure.joins.get(node)
        if shape is not None and shape.is_diamond:
            count[node] = count[shape.fork]
        else:
            count[node] = min(2, sum(count[graph.src[e]] for e in graph.in_edges[node]))
    return count


def route_of(structure: PlanStructure, node: int) -> BranchId | None:
    """The one route of a node that runs once, walking back through edges and joins."""
    graph = structure.graph
    backwards: list[RouteSegment] = []
    current = node
    guard = 0
    while current != structure.entry:
        guard += 1
        if guard > len(graph) + 1:
            return None
        shape = structure.joins.get(current)
        if shape is not None and shape.is_diamond:
            of = tuple(sorted(graph.edge_ids[e] for e in graph.in_edges[current]))
            backwards.append(JoinSegment(join=graph.ids[current], of=of))
            current = shape.fork
            continue
        live_in = [e for e in graph.in_edges[current] if structure.live[graph.src[e]]]
        if len(live_in) != 1:
            return None
        backwards.append(EdgeSegment(edge=graph.edge_ids[live_in[0]]))
        current = graph.src[live_in[0]]
    backwards.reverse()
    return BranchId(segments=tuple(backwards))


def valid_route(
    structure: PlanStructure,
    branch: BranchId,
    target: int,
    edge_index: dict[str, int] | None = None,
) -> bool:
    """Whether ``branch`` is the identity of some execution of ``target``.

    Walking from the entry, an edge segment must leave the current node and must not enter a
    join (a join's frame is named by its join segment, not by an arrival); a join segment must
    name a diamond join whose fork is the current node, with ``of`` the sorted ids of all its
    incoming edges.
    """
    graph = structure.graph
    current = structure.entry
    if current is None:
        return False
    if edge_index is None:
        edge_index = {edge_id: e for e, edge_id in enumerate(graph.edge_ids)}
    for segment in branch.segments:
        if isinstance(segment, EdgeSegment):
            e = edge_index.get(segment.edge)
            if e is None or graph.src[e] != current or graph.kinds[graph.dst[e]] == "join":
                return False
            current = graph.dst[e]
        elif isinstance(segment, ItemSegment):
            # One item of a map: the map's item frame, on the map's own node.
            if segment.map != graph.ids[current] or graph.kinds[current] not in ("map", "loop"):
                return False
        else:
            join = graph.index.get(segment.join)
            shape = structure.joins.get(join) if join is not None else None
            if join is None or shape is None or shape.fork != current:
                return False
            expected = tuple(sorted(graph.edge_ids[e] for e in graph.in_edges[join]))
            if tuple(segment.of) != expected:
                return False
            current = join
    return current == target


def _route_json(branch: BranchId) -> str:
    segments: Sequence[object] = [seg.model_dump() for seg in branch.segments]
    return json.dumps({"segments": segments}, separators=(",", ":"))
