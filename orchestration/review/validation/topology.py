"""Topology checks: one entry, acyclic, well-formed ids, applicable handles, reachability, diamonds.

These are what make a plan executable at all: the executor materialises exactly one entry,
walks an acyclic graph (so a route is bounded by the node count), keys outputs by routes built
from edge ids (so an edge id must not be able to forge the route grammar), fires edges by handle
(so a handle its source can never produce is dead code or a typo), and closes barriers whose
correlation is decidable from the first arrival (so every join must be a diamond).
"""

from __future__ import annotations

import re

from orchestration.review.validation.context import CheckContext
from orchestration.review.validation.issues import advisory, blocking, quote_list
from orchestration.types import JoinDefinition, JoinQuorum, PlanIssue, SelectDefinition

__all__ = [
    "check_handles",
    "check_ids",
    "check_joins",
    "check_reachability",
    "check_topology",
    "handle_allowed",
]

NODE_ID = re.compile(r"[a-z0-9_]+")
"""snake_case, so a node id can never be mistaken for a path (no ``/``, no leading ``.``)."""

EDGE_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""No delimiter, colon or parenthesis, so an edge id cannot forge the route-key grammar."""

_ALLOWED: dict[str, frozenset[str]] = {
    "entry": frozenset({"always"}),
    "call": frozenset({"always", "error"}),
    "reason": frozenset({"always", "error"}),
    "transform": frozenset({"always", "error"}),
    "branch": frozenset({"match", "no_match", "default", "error"}),
    "select": frozenset({"default", "error"}),
    "join": frozenset({"always", "error"}),
    "input": frozenset({"always", "error"}),
    "map": frozenset({"item", "always", "error"}),
    "loop": frozenset({"body", "always", "error"}),
}

_PERMITTED_TEXT: dict[str, str] = {
    "entry": '"always"',
    "call": '"always" or "error"',
    "reason": '"always" or "error"',
    "transform": '"always" or "error"',
    "branch": '"match", "no_match", "default" or "error"',
    "select": '"case_<label>" (a label in its cases), "default" or "error"',
    "join": '"always" or "error"',
    "input": '"always" or "error"',
    "map": '"item" (into its body), "always" (after every item ran) or "error"',
    "loop": '"body" (into its body), "always" (after its last round) or "error"',
}


def handle_allowed(kind: str, handle: str) -> bool:
    """Whether a node of ``kind`` can fire an edge with ``handle``."""
    if kind == "select" and handle.startswith("case_"):
        return True
    return handle in _ALLOWED.get(kind, frozenset())


def check_topology(ctx: CheckContext) -> list[PlanIssue]:
    """Entry rules, then the first cycle, in that order."""
    issues: list[PlanIssue] = []
    graph = ctx.structure.graph
    entries = ctx.structure.entries
    if not entries:
        issues.append(
            blocking(
                "no_entry",
                "The plan has no entry node, so nothing can start; add exactly one entry node.",
            )
        )
    elif len(entries) > 1:
        names = quote_list(graph.ids[i] for i in entries)
        issues.append(
            blocking(
                "multiple_entries",
                f"The plan has {len(entries)} entry nodes ({names}), so the executor cannot "
                "tell which to materialise; keep exactly one entry node.",
            )
        )
    for entry in entries:
        incoming = graph.in_edges[entry]
        if incoming:
            edges = quote_list(graph.edge_ids[e] for e in incoming)
            issues.append(
                blocking(
                    "entry_has_incoming",
                    f'Entry node "{graph.ids[entry]}" has incoming edges ({edges}); the entry '
                    "must have no incoming edges: remove them or point them at another node.",
                    node_id=graph.ids[entry],
                    edge_id=graph.edge_ids[incoming[0]],
                )
            )
    cycle = ctx.structure.cycle_edge
    if cycle is not None:
        issues.append(
            blocking(
                "cycle",
                f'The graph contains a cycle closed by edge "{graph.edge_ids[cycle]}" '
                f"({graph.ids[graph.src[cycle]]} → {graph.ids[graph.dst[cycle]]}); remove the "
                "cycle — an error or default edge back to an ancestor is still a cycle.",
                edge_id=graph.edge_ids[cycle],
            )
        )
    return issues


def check_ids(ctx: CheckContext) -> list[PlanIssue]:
    """Node and edge identity: charset, uniqueness, and edges whose endpoints exist."""
    issues: list[PlanIssue] = []
    seen_nodes: set[str] = set()
    for node in ctx.view.nodes:
        if NODE_ID.fullmatch(node.id) is None:
            issues.append(
                blocking(
                    "invalid_node_id",
                    f'Node id "{node.id}" is not a valid snake_case id (lowercase letters, '
                    'digits, underscores, no "/" and no leading "."); rename it so it cannot '
                    "be mistaken for a path.",
                    node_id=node.id,
                )
            )
        if node.id in seen_nodes:
            issues.append(
                blocking(
                    "duplicate_node_id",
                    f'Node id "{node.id}" is used by more than one node; rename one of them — '
                    "node ids are what references cite, so they must be unique.",
                    node_id=node.id,
                )
            )
        seen_nodes.add(node.id)
    dangling = set(ctx.structure.graph.dangling)
    seen_edges: set[str] = set()
    for position, edge in enumerate(ctx.view.edges):
        if EDGE_ID.fullmatch(edge.id) is None:
            issues.append(
                blocking(
                    "invalid_edge_id",
                    f'Edge id "{edge.id}" does not match /^[A-Za-z0-9_-]{{1,64}}$/; rename it '
                    "so the route renderer cannot be forged.",
                    edge_id=edge.id,
                )
            )
        if edge.id in seen_edges:
            issues.append(
                blocking(
                    "duplicate_edge_id",
                    f'Edge id "{edge.id}" is used by more than one edge; rename one of them — '
                    "edge ids are identifiers and must be unique.",
                    edge_id=edge.id,
                )
            )
        seen_edges.add(edge.id)
        if position in dangling:
            issues.append(
                blocking(
                    "dangling_edge",
                    f'Edge "{edge.id}" ({edge.from_} → {edge.to}) references a node that does '
                    "not exist; add the missing node or remove the edge.",
                    edge_id=edge.id,
                )
            )
    return issues


def check_handles(ctx: CheckContext) -> list[PlanIssue]:
    """Each handle applies to its source kind; a select's cases and edges match up."""
    issues: list[PlanIssue] = []
    graph = ctx.structure.graph
    for e, edge_id in enumerate(graph.edge_ids):
        kind = graph.kinds[graph.src[e]]
        handle = graph.handles[e]
        if not handle_allowed(kind, handle):
            issues.append(
                blocking(
                    "invalid_handle",
                    f'Edge "{edge_id}" uses handle "{handle}" from a {kind} node, which does not '
                    f"allow that handle; use a handle the source kind permits: "
                    f"{_PERMITTED_TEXT.get(kind, 'none')}.",
                    edge_id=edge_id,
                )
            )
    for index, node in enumerate(ctx.view.nodes):
        if isinstance(node.definition, SelectDefinition) and graph.index[node.id] == index:
            issues.extend(_check_select(ctx, index, node.id, node.definition))
    return issues


def _check_select(
    ctx: CheckContext, index: int, node_id: str, definition: SelectDefinition
) -> list[PlanIssue]:
    issues: list[PlanIssue] = []
    graph = ctx.structure.graph
    cases = definition.cases
    labels = set(cases)
    problems: list[str] = []
    if not cases:
        problems.append("it declares no cases (a select with only a default is a plain edge)")
    if any(label == "" for label in cases):
        problems.append("a case label is empty")
    duplicates = sorted({label for label in cases if cases.count(label) > 1})
    if duplicates:
        problems.append(f"case labels repeat ({quote_list(duplicates)})")
    if problems:
        issues.append(
            blocking(
                "invalid_select_cases",
                f'Select node "{node_id}" has unusable cases: {"; ".join(problems)}; list each '
                "case label once, non-empty, and add at least one.",
                node_id=node_id,
            )
        )
    outgoing = graph.out_edges[index]
    wired: set[str] = set()
    has_default = False
    for e in outgoing:
        handle = graph.handles[e]
        if handle == "default":
            has_default = True
        elif handle.startswith("case_"):
            label = handle[len("case_") :]
            wired.add(label)
            if label not in labels or label == "":
                issues.append(
                    blocking(
                        "select_unknown_case",
                        f'Edge "{graph.edge_ids[e]}" uses handle "{handle}", but select node '
                        f'"{node_id}" has no case "{label}"; use one of its cases '
                        f'({quote_list("case_" + c for c in cases)}) or add "{label}" to its '
                        "cases.",
                        node_id=node_id,
                        edge_id=graph.edge_ids[e],
                    )
                )
    if not has_default:
        issues.append(
            blocking(
                "select_missing_default",
                f'Select node "{node_id}" has no "default" edge; a select must carry a default '
                "so an unmatched case has somewhere to go.",
                node_id=node_id,
            )
        )
    for label in dict.fromkeys(cases):
        if label and label not in wired:
            issues.append(
                blocking(
                    "select_case_unwired",
                    f'Select node "{node_id}" declares case "{label}" but no edge uses handle '
                    f'"case_{label}"; add an edge with that handle or remove the case.',
                    node_id=node_id,
                )
            )
    return issues


def check_reachability(ctx: CheckContext) -> list[PlanIssue]:
    """Every node is reachable from the single entry (skipped without exactly one entry).

    As in the reference, an unreachable node is ``unreachable_node``; an unreachable call also
    gets ``unreachable_call`` (it can never run, so its claims are never asked for), and an
    unreachable join ``join_no_fork`` (no fork dominates it, so it closes no diamond).
    """
    structure = ctx.structure
    if structure.entry is None:
        return []
    issues: list[PlanIssue] = []
    graph = structure.graph
    for index, node_id in enumerate(graph.ids):
        if structure.live[index] or graph.index[node_id] != index:
            continue
        kind = graph.kinds[index]
        issues.append(
            blocking(
                "unreachable_node",
                f'Node "{node_id}" is not reachable from the entry node; connect it with an '
                "edge from a reachable node or remove it.",
                node_id=node_id,
            )
        )
        if kind == "call":
            issues.append(
                blocking(
                    "unreachable_call",
                    f'Call node "{node_id}" is unreachable from the entry node, so it can never '
                    "run and its authority is not asked for; connect it or remove it.",
                    node_id=node_id,
                )
            )
        elif kind == "join":
            issues.append(
                blocking(
                    "join_no_fork",
                    f'Join "{node_id}" has no immediate dominator from the entry; a join must '
                    "close a fan-out that a single ancestor opened: connect the branches of "
                    "one fork to it, or remove it.",
                    node_id=node_id,
                )
            )
    return issues


def check_joins(ctx: CheckContext) -> list[PlanIssue]:
    """Every reachable join closes a diamond opened by its immediate dominator."""
    issues: list[PlanIssue] = []
    graph = ctx.structure.graph
    for index in sorted(ctx.structure.joins):
        shape = ctx.structure.joins[index]
        join = graph.ids[index]
        fork = graph.ids[shape.fork]
        if shape.routes <= 1:
            issues.append(
                blocking(
                    "join_not_diamond",
                    f'Join "{join}" has only {shape.routes} route(s) from its fork "{fork}"; a '
                    "join must close more than one distinct fork→join route, so this join "
                    "should not exist: remove it, or fan out from one node into separate "
                    "branches that each reach the join without meeting first.",
                    node_id=join,
                )
            )
        elif shape.nested_join is not None:
            inner = graph.ids[shape.nested_join]
            issues.append(
                blocking(
                    "nested_join",
                    f'Join "{join}" contains a nested join "{inner}" inside its fork→join '
                    f'region (fork "{fork}"); a diamond must not contain another barrier: close '
                    "the inner diamond before the outer one forks, or merge the two joins.",
                    node_id=join,
                )
            )
        elif shape.reconvergence is not None:
            meet = graph.ids[shape.reconvergence]
            issues.append(
                blocking(
                    "join_reconvergence",
                    f'Join "{join}" has reconverged inside its diamond at "{meet}" (in-degree > '
                    f'1, fork "{fork}"); the fork→join region must contain no node with '
                    "in-degree > 1 other than the join: give each branch its own path to the "
                    f'join, or make "{meet}" the join.',
                    node_id=join,
                )
            )
        else:
            issues += _strategy_issues(ctx, join, fork, shape.routes)
    return issues


def _strategy_issues(ctx: CheckContext, join: str, fork: str, routes: int) -> list[PlanIssue]:
    """A quorum the join's routes can never meet is refused; so is one that only says ``all``.

    Without this a ``{quorum: N}`` above the number of fork→join routes would freeze and then
    halt every run ``join_unsatisfiable``.
    """
    node = ctx.by_id.get(join)
    definition = node.definition if node is not None else None
    if not isinstance(definition, JoinDefinition) or not isinstance(
        definition.strategy, JoinQuorum
    ):
        return []
    quorum = definition.strategy.quorum
    if quorum > routes:
        return [
            blocking(
                "join_quorum_unreachable",
                f'Join "{join}" waits for a quorum of {quorum} but has only {routes} route(s) '
                f'from its fork "{fork}", so no run could ever pass it: lower the quorum to at '
                f'most {routes}, or use "any" or "all".',
                node_id=join,
            )
        ]
    if quorum == routes:
        return [
            advisory(
                "join_quorum_is_all",
                f'Join "{join}" waits for a quorum of {quorum} of its {routes} routes, which is '
                'every route: drop the strategy (or say "all") so the plan reads as it runs.',
                node_id=join,
            )
        ]
    return []
