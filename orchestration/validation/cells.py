"""Cell checks: a branch or select names a wired evaluator, and that cell accepts its predicate.

Each cell interprets its own predicate form, so only the cell can say whether a predicate is
usable; asking it at freeze means a refusal precedes approval instead of interrupting a run.
A cell is loaded once per freeze (loading is idempotent, and a failure to load is reported on
every node that names the cell). A cell that type-checks (a
:class:`~orchestration.contracts.TypedEvaluator`, such as the CEL cell) is then given every node
that may run before the branch or select, so a predicate reading what nothing declares is
refused here. Whatever a cell raises becomes an issue: freeze never raises.
"""

from __future__ import annotations

from orchestration.contracts import PredicateEvaluator, TypedEvaluator
from orchestration.types import BranchNode, PlanIssue, PlanNode, SelectNode
from orchestration.validation.context import CheckContext
from orchestration.validation.issues import blocking, quote_list

__all__ = ["check_cells"]


async def check_cells(ctx: CheckContext) -> list[PlanIssue]:
    """Every branch and select node, in node order."""
    issues: list[PlanIssue] = []
    cells: dict[str, PredicateEvaluator] = {}
    for wired in ctx.inputs.evaluators:
        cells[wired.id] = wired
    loaded: dict[str, str | None] = {}
    for node in ctx.view.nodes:
        if not isinstance(node, BranchNode | SelectNode):
            continue
        label = "Branch" if node.kind == "branch" else "Select"
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
        if failure is None and isinstance(cell, TypedEvaluator):
            failure = await _attempt(cell.validate_reads(node, _ancestors(ctx, node.id)))
        if failure is not None:
            issues.append(
                blocking(
                    "evaluator_error",
                    f'Evaluator "{wanted}" failed to load or validate {node.kind} node '
                    f'"{node.id}": {failure}; fix the predicate to the form that cell reads.',
                    node_id=node.id,
                )
            )
    return issues


def _ancestors(ctx: CheckContext, node_id: str) -> list[PlanNode]:
    """Every node with a path to ``node_id``, in plan order."""
    graph = ctx.structure.graph
    start = graph.index.get(node_id)
    if start is None:
        return []
    seen = {start}
    stack = [start]
    while stack:
        for source in graph.predecessors(stack.pop()):
            if source not in seen:
                seen.add(source)
                stack.append(source)
    seen.discard(start)
    return [ctx.by_id[graph.ids[i]] for i in sorted(seen)]


async def _attempt(step: object) -> str | None:
    try:
        await step  # type: ignore[misc]
    except Exception as exc:  # noqa: BLE001 - a cell's failure is a finding, never a crash
        return str(exc) or type(exc).__name__
    return None
