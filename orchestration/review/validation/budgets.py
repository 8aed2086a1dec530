"""Budget checks: a node's own budget must be one the run can ever let it spend.

Budgets are plan content (see :mod:`orchestration.run.budgets`): the run's ``maxTokens`` and
``maxCostUsd`` in its bounds, and a node's ``budget.maxTokens`` and ``budget.maxSeconds``. Their
values are checked by the wire types (positive, finite); what is checked here is how they fit:

* ``node_budget_exceeds_run`` (blocking): a node's ``budget.maxTokens`` is the most one of its
  attempts may spend, and an attempt that could pass the run's ``maxTokens`` is never started,
  so a node whose own budget is above the run's would halt the run the moment it is reached:
  lower the node's budget, or raise the run's;
* ``budget_spends_no_tokens`` (advisory): only a ``reason`` node spends model tokens, so a
  ``budget.maxTokens`` on a call or transform bounds nothing (its wall time still applies).
"""

from __future__ import annotations

from orchestration.review.validation.context import CheckContext
from orchestration.review.validation.issues import advisory, blocking
from orchestration.run.budgets import node_budget
from orchestration.types import PlanIssue

__all__ = ["check_budgets"]


def check_budgets(ctx: CheckContext) -> list[PlanIssue]:
    """Every node's own budget against the run's, in node order."""
    issues: list[PlanIssue] = []
    run_tokens = ctx.view.bounds.max_tokens
    for node in ctx.view.nodes:
        budget = node_budget(node)
        if budget is None or budget.max_tokens is None:
            continue
        if node.kind != "reason":
            issues.append(
                advisory(
                    "budget_spends_no_tokens",
                    f'Node "{node.id}" is a {node.kind}, which spends no model tokens, so its '
                    "budget.maxTokens bounds nothing; remove it (maxSeconds still applies).",
                    node_id=node.id,
                )
            )
        elif run_tokens is not None and budget.max_tokens > run_tokens:
            issues.append(
                blocking(
                    "node_budget_exceeds_run",
                    f'Node "{node.id}" may spend up to {budget.max_tokens} tokens per attempt '
                    f"(its budget.maxTokens), more than the run's maxTokens {run_tokens}, so the "
                    "run could never start it; lower the node's budget or raise the run's.",
                    node_id=node.id,
                )
            )
    return issues
