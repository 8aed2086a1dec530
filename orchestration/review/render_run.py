"""The operator view's lines for budgets (as planned) and for attempts and provenance (as run).

Budgets are plan content, digested and approved with it, so the view an operator approves
states them: the run's token and cost bounds with the other bounds, and each node's own budget
in its step. As executed, each step also says what its frames did beyond their status: every
attempt that is worth reading (retried, failed, lost, or spent tokens), what the node spent on
models, which of a call's arguments a model's output reached, and for a branch or select
whether its verdict is ``verified`` (no compared value traces back to a model) or ``asserted``
(a model could have steered it), with the values compared and their origins. So an operator
sees, step by step, which decisions a model could have steered.
"""

from __future__ import annotations

from orchestration.run.budgets import seconds_between
from orchestration.types import (
    AttemptRecord,
    BudgetExhausted,
    CallDefinition,
    ComparedValue,
    NodeBudget,
    PlanBounds,
    PlanNode,
    ReasonDefinition,
    RunProjection,
    TransformDefinition,
    Usage,
    UsageTotals,
    ValueOrigin,
)

__all__ = [
    "attempt_lines",
    "budget_bounds",
    "describe_budget",
    "executed_lines",
    "money",
    "node_budget",
]

_INDENT = "     "
_LINE_INDENT = "      "


def _duration(seconds: float) -> str:
    seconds = max(seconds, 0.0)
    return f"{seconds:.2f}s" if seconds < 10 else f"{seconds:.1f}s"


def money(cost: float) -> str:
    """US dollars, to the micro-dollar when under a cent."""
    return f"${cost:.6f}" if cost < 0.01 else f"${cost:.4f}"


def _spent(usage: Usage) -> str:
    said = f"{usage.input_tokens} in + {usage.output_tokens} out tokens"
    if usage.cost_usd is not None:
        said += f", {money(usage.cost_usd)}"
    elif usage.tokens:
        said += f", unpriced ({usage.model or 'unknown model'})"
    return said


def _notable(records: tuple[AttemptRecord, ...]) -> bool:
    return len(records) > 1 or any(a.result != "ok" or a.usage is not None for a in records)


def attempt_lines(records: tuple[AttemptRecord, ...]) -> list[str]:
    """One line per attempt (and one per rejected model turn), when any is worth reading."""
    if not _notable(records):
        return []
    lines: list[str] = []
    for attempt in records:
        took = _duration(seconds_between(attempt.started, attempt.ended))
        line = f"{_LINE_INDENT}#{attempt.number} {attempt.result:<7} {took:>7}"
        if attempt.error is not None:
            line += f"  {attempt.error.name}: {attempt.error.message[:80]}"
        if attempt.reason is not None:
            line += f"  (retry: {attempt.reason})"
        if attempt.usage is not None:
            line += f"  · {_spent(attempt.usage)}"
        lines.append(line)
        if attempt.usage is not None:
            for turn in attempt.usage.turns:
                if turn.outcome == "accepted":
                    continue
                problems = "; ".join(turn.problems)[:120]
                lines.append(f"{_LINE_INDENT}  turn {turn.turn} {turn.outcome}: {problems}")
    return lines




_BUDGETS = {
    "maxTokens": "the run's token budget",
    "maxCostUsd": "the run's cost budget",
    "node.maxTokens": "node {node}'s token budget",
    "node.maxSeconds": "node {node}'s wall time",
}


def describe_budget(cause: BudgetExhausted) -> str:
    """A budget halt in words: which budget, its limit, what was spent, and why."""
    name = _BUDGETS.get(cause.budget or "", "a budget").format(node=cause.node_id)
    said = f"{name} ({cause.budget}) stopped the run"
    if cause.budget == "maxCostUsd" and cause.limit is not None:
        said += f": limit ${cause.limit:g}"
        if cause.spent is not None:
            said += f", spent ${cause.spent:.6f}"
    elif cause.budget == "node.maxSeconds" and cause.limit is not None:
        said += f": limit {cause.limit:g} s from its first attempt"
    elif cause.limit is not None:
        said += f": limit {cause.limit:g} tokens"
        if cause.spent is not None:
            said += f", spent {cause.spent:g}"
    if cause.node_id is not None:
        said += f"; node {cause.node_id}'s next attempt was not started"
    if cause.detail:
        said += f" ({cause.detail})"
    return said + f", after {cause.settled} node entries"


def budget_bounds(bounds: PlanBounds) -> list[str]:
    """The run's token and cost budgets, when the plan declares any."""
    parts = []
    if bounds.max_tokens is not None:
        parts.append(f"at most {bounds.max_tokens} model tokens (input and output)")
    if bounds.max_cost_usd is not None:
        parts.append(
            f"at most ${bounds.max_cost_usd:g} of model cost at the deployment's prices "
            "(a model without a price halts the run)"
        )
    if not parts:
        return []
    return [
        "Budgets: " + "; ".join(parts) + ". An attempt that could pass one is not started; "
        "the run halts budget_exhausted naming it."
    ]


def _node_budget(budget: NodeBudget) -> str | None:
    parts = []
    if budget.max_tokens is not None:
        parts.append(f"at most {budget.max_tokens} model tokens")
    if budget.max_seconds is not None:
        parts.append(f"at most {budget.max_seconds:g} s of wall time from its first attempt")
    return None if not parts else "budget: " + ", ".join(parts) + " per execution"


def node_budget(node: PlanNode) -> list[str]:
    """A node's own budget line, when it declares one."""
    definition = node.definition
    if isinstance(definition, CallDefinition | ReasonDefinition | TransformDefinition):
        budget = definition.budget
        said = None if budget is None else _node_budget(budget)
        if said is not None:
            return [f"{_INDENT}{said}"]
    return []


def _origin(origin: ValueOrigin) -> str:
    if origin.source == "literal":
        return "a literal"
    if origin.source == "run_input":
        return f"run input {origin.path}".rstrip()
    if origin.source == "node_output":
        where = f"{origin.node_id}.{origin.path}" if origin.path else str(origin.node_id)
        return f"{where} ({'a model' if origin.obtained_by == 'model' else 'runtime'})"
    return "unknown (counted as a model's)"


def _value(value: ComparedValue) -> str:
    origins = ", ".join(_origin(o) for o in value.origins) or "nothing"
    return f"{value.name} = {value.value!r} ← {origins}"


def _spent_in_all(totals: UsageTotals) -> str:
    said = f"{totals.input_tokens} input + {totals.output_tokens} output tokens"
    if totals.tokens - totals.unpriced_tokens:
        said += f", ${totals.cost_usd:.6f}"
    if totals.unpriced_tokens:
        said += f", {totals.unpriced_tokens} tokens unpriced"
    return said


def executed_lines(run: RunProjection, node: PlanNode) -> list[str]:
    """What the node's frames did, beyond their status (often nothing)."""
    prefix = f"{node.id}:"
    keys = [key for key in run.frame_status if key.startswith(prefix)]
    several = len(keys) > 1
    lines: list[str] = []
    for key in keys:
        frame = f" ({key})" if several else ""
        records = run.attempts.get(key, ())
        shown = attempt_lines(records)
        if shown:
            lines.append(f"{_INDENT}attempts{frame}:")
            lines += [f"{_INDENT}  {line.strip()}" for line in shown]
        for name, origins in sorted(run.arg_origins.get(key, {}).items()):
            steered = [o for o in origins if o.obtained_by == "model"]
            if steered:
                lines.append(
                    f"{_INDENT}MODEL-STEERED ARGUMENT{frame}: {name} ← "
                    + ", ".join(_origin(o) for o in steered)
                )
        verdict = run.verdicts.get(key)
        check = verdict.check if verdict is not None else None
        if verdict is not None and check is not None:
            if check.provenance == "asserted":
                said = "ASSERTED: a model could have steered this verdict"
            elif check.provenance == "verified":
                said = "verified: no compared value traces back to a model"
            else:
                said = "no provenance: nothing was compared"
            if check.reads == "route":
                said += " (the cell may read any output on its route)"
            lines.append(f"{_INDENT}verdict {verdict.handle}{frame}: {said}")
            lines += [f"{_INDENT}  compared {_value(v)}" for v in check.values]
    spent = run.node_usage.get(node.id)
    if spent is not None:
        lines.append(f"{_INDENT}spent: {_spent_in_all(spent)}")
    return lines
