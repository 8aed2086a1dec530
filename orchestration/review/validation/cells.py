"""Cell checks: a wired evaluator, a predicate it accepts, and reads a frame can always answer.

Each cell interprets its own predicate form, so only the cell can say whether a predicate is
usable; asking it at freeze means a refusal precedes approval instead of interrupting a run.
A cell is loaded once per freeze (loading is idempotent, and a failure to load is reported on
every node that names the cell). Whatever a cell raises becomes an issue: freeze never raises.

A predicate that reads a node which did not run on the frame's route, or a field the node never
produces, does not fail: it silently reads nothing and the branch goes the "no match" way. So
the reads are checked here, like a ``NodeRef``'s (ruling 32):

* A cell that lists its reads (a :class:`~orchestration.tools.contracts.ReadingEvaluator`, such as
  the structured and jexl cells) has each checked: the node exists, runs before the branch or
  select on every route (it dominates it, or lies inside a diamond whose join does), and
  declares the field. A raw table key (``fetch:e1:e2``) must also be the key of the node's one
  route when it runs on one.
* A cell that type-checks (a :class:`~orchestration.tools.contracts.TypedEvaluator`, such as the CEL
  cell) is given exactly the nodes that run before the branch on every route, so a variable or
  field outside them does not type-check.

A loop's ``until`` is checked as a branch's predicate would be, evaluated at the end of each
round: a read of a node of the loop's body (its output in that round), of the loop itself, or
of a node that runs before the loop on every route is sound.
"""

from __future__ import annotations

from orchestration.plan.graph import PlanStructure
from orchestration.plan.references import field_space
from orchestration.review.validation.context import CheckContext
from orchestration.review.validation.dataflow import merged_at_joins, route_of, runs_first
from orchestration.review.validation.issues import blocking, quote_list
from orchestration.run.routes import branch_key
from orchestration.tools.contracts import (
    PredicateEvaluator,
    PredicateRead,
    ReadingEvaluator,
    TypedEvaluator,
)
from orchestration.types import (
    BranchDefinition,
    BranchNode,
    LoopNode,
    PlanIssue,
    PlanNode,
    SelectNode,
)

__all__ = ["check_cells", "readable_before"]


async def check_cells(ctx: CheckContext) -> list[PlanIssue]:
    """Every branch and select node, and every loop's until, in node order."""
    issues: list[PlanIssue] = []
    cells: dict[str, PredicateEvaluator] = {}
    for wired in ctx.inputs.evaluators:
        cells[wired.id] = wired
    loaded: dict[str, str | None] = {}
    merged: dict[int, list[int]] | None = None
    for planned in ctx.view.nodes:
        body: frozenset[int] | None = None
        if isinstance(planned, LoopNode):
            node: BranchNode | SelectNode = _until(planned)
            label = "Loop"
            index = ctx.structure.graph.index.get(planned.id)
            body = frozenset(ctx.map_bodies.get(index, ()) if index is not None else ())
        elif isinstance(planned, BranchNode | SelectNode):
            node = planned
            label = "Branch" if node.kind == "branch" else "Select"
        else:
            continue
        wanted = node.definition.evaluator
        cell = cells.get(wanted)
        if cell is None:
            issues.append(
                blocking(
                    "unwired_evaluator",
                    f'{label} node "{node.id}" names evaluator "{wanted}", which is not wired; '
                    f"supply a cell with that id, or name one of the wired cells: "
                    f"{quote_list(cells, empty='(no cells are wired)')}.",
                    node_id=node.id,
                )
            )
            continue
        if wanted not in loaded:
            loaded[wanted] = await _attempt(cell.load())
        failure = loaded[wanted]
        if failure is None:
            failure = await _attempt(cell.validate(node))
        if merged is None:
            merged = merged_at_joins(ctx.structure)
        if failure is None and isinstance(cell, TypedEvaluator):
            readable = readable_before(ctx, node.id, merged)
            if body is not None:
                graph = ctx.structure.graph
                readable += [planned, *(ctx.by_id[graph.ids[i]] for i in sorted(body))]
            failure = await _attempt(cell.validate_reads(node, readable))
        if failure is not None:
            issues.append(
                blocking(
                    "evaluator_error",
                    f'Evaluator "{wanted}" failed to load or validate {label.lower()} node '
                    f'"{node.id}": {failure}; fix the predicate to the form that cell reads.',
                    node_id=node.id,
                )
            )
            continue
        if isinstance(cell, ReadingEvaluator):
            try:
                reads = list(cell.predicate_reads(node))
            except Exception as exc:  # noqa: BLE001 - a cell's failure is a finding
                issues.append(
                    blocking(
                        "evaluator_error",
                        f'Evaluator "{wanted}" could not list the reads of {label.lower()} '
                        f'node "{node.id}": {exc or type(exc).__name__}; fix the predicate.',
                        node_id=node.id,
                    )
                )
                continue
            for read in reads:
                issue = _check_read(ctx, merged, node, label, read, body)
                if issue is not None:
                    issues.append(issue)
    return issues


def _until(loop: LoopNode) -> BranchNode:
    """A loop's until as the branch node its check runs (the same node the engine builds)."""
    until = loop.definition.until
    return BranchNode(
        id=loop.id,
        phase=loop.phase,
        definition=BranchDefinition(evaluator=until.evaluator, predicate=until.predicate),
    )


def readable_before(
    ctx: CheckContext, node_id: str, merged: dict[int, list[int]] | None = None
) -> list[PlanNode]:
    """Every node whose output a frame of ``node_id`` always finds, in plan order.

    Those that run before it on every route: they dominate it, or lie inside a diamond whose
    join dominates it. Without a single entry (dominance is then undefined, and freeze already
    refuses the plan) every ancestor is given, so a cell still checks what it can.
    """
    structure = ctx.structure
    graph = structure.graph
    reader = graph.index.get(node_id)
    if reader is None:
        return []
    if structure.dominators is None or not structure.live[reader]:
        return _ancestors(ctx, reader)
    if merged is None:
        merged = merged_at_joins(structure)
    return [
        ctx.by_id[graph.ids[i]]
        for i in range(len(graph))
        if i != reader
        and graph.index[graph.ids[i]] == i
        and runs_first(structure, merged, i, reader)
    ]


def _ancestors(ctx: CheckContext, start: int) -> list[PlanNode]:
    """Every node with a path to ``start``, in plan order."""
    graph = ctx.structure.graph
    seen = {start}
    stack = [start]
    while stack:
        for source in graph.predecessors(stack.pop()):
            if source not in seen:
                seen.add(source)
                stack.append(source)
    seen.discard(start)
    return [ctx.by_id[graph.ids[i]] for i in sorted(seen)]


def _check_read(
    ctx: CheckContext,
    merged: dict[int, list[int]],
    node: BranchNode | SelectNode,
    label: str,
    read: PredicateRead,
    body: frozenset[int] | None = None,
) -> PlanIssue | None:
    """The first problem with one read, as an issue naming the fix; ``None`` when it is sound.

    ``body``: for a loop's until, the loop's body, whose nodes (and the loop itself) it reads
    as they ran in the round.
    """
    structure = ctx.structure
    graph = structure.graph
    where = f"its predicate ({read.location})" if read.location else "its predicate"
    shown = f"{read.table_key or read.node}{'' if read.path is None else '.' + read.path}"
    target = ctx.by_id.get(read.node)
    target_index = graph.index.get(read.node)
    if target is None or target_index is None:
        return blocking(
            "missing_reference",
            f'{label} node "{node.id}" reads "{shown}" in {where}, but there is no node '
            f'"{read.node}"; a path starts with the node it reads: "<nodeId>.<field>" (e.g. '
            f'"fetch.count"), or a table key "<nodeId>:<branchKey>.<field>".',
            node_id=node.id,
        )
    reader = graph.index[node.id]
    in_body = body is not None and (target_index in body or target_index == reader)
    if (
        not in_body
        and structure.dominators is not None
        and structure.live[reader]
        and not (target_index != reader and runs_first(structure, merged, target_index, reader))
    ):
        return blocking(
            "reference_not_upstream",
            f'{label} node "{node.id}" reads "{shown}" in {where}, but "{read.node}" does not '
            f"run before it on every route, so some runs would read nothing and go the "
            f'"no match" way; read a node that always runs before "{node.id}" (or one inside '
            f'a diamond whose join it follows), or add edges so every route to "{node.id}" '
            f'passes "{read.node}".',
            node_id=node.id,
        )
    if read.table_key is not None and not in_body:
        issue = _check_table_key(structure, node, label, read, target_index, where)
        if issue is not None:
            return issue
    if read.path is not None:
        space = field_space(target)
        if not space.declares(read.path):
            what = "schema property" if space.kind == "schema" else "field"
            part = "input" if target.kind == "entry" else "output"
            declare = f'declare "{read.path}" in the {part} of "{read.node}"'
            if space.paths:
                fix = f"read one of its declared {what}s ({quote_list(space.paths)}), or {declare}"
            else:
                fix = declare
            return blocking(
                "undeclared_field",
                f'{label} node "{node.id}" reads "{shown}" in {where}, but node "{read.node}" '
                f'does not declare the {what} "{read.path}", so the path would read nothing; '
                f"{fix}.",
                node_id=node.id,
            )
    return None


def _check_table_key(
    structure: PlanStructure,
    node: BranchNode | SelectNode,
    label: str,
    read: PredicateRead,
    target: int,
    where: str,
) -> PlanIssue | None:
    if structure.entry is None:
        return None
    route = route_of(structure, target)
    if route is None:
        return None
    expected = f"{read.node}:{branch_key(route)}"
    if read.table_key == expected:
        return None
    field = "" if read.path is None else f".{read.path}"
    return blocking(
        "invalid_branch_id",
        f'{label} node "{node.id}" reads table key "{read.table_key}" in {where}, but '
        f'"{read.node}" runs only as "{expected}"; write "{read.node}{field}" (its output on '
        f'this route) or "{expected}{field}".',
        node_id=node.id,
    )


async def _attempt(step: object) -> str | None:
    try:
        await step  # type: ignore[misc]
    except Exception as exc:  # noqa: BLE001 - a cell's failure is a finding, never a crash
        return str(exc) or type(exc).__name__
    return None
