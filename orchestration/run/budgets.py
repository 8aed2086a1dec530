"""Token, cost and wall-time budgets: what a run has spent, and whether an attempt may start.

A plan bounds its run (``bounds.maxTokens``, ``bounds.maxCostUsd``) and any call, reason or
transform node may bound each of its frames (``budget.maxTokens``, ``budget.maxSeconds``). All
are plan content: digested, rendered, approved. The run keeps to them with one rule, applied by
the engine before a frame's first attempt and by the hosts' shared run loop before every
retry:

**An attempt starts only if it cannot pass a budget it counts against.** What an attempt will
spend is known only once it ends (a model reports its tokens with its answer), so "cannot
pass" is decided from what is known before it starts:

* a budget already spent (``spent >= limit``) stops every further attempt;
* for a token budget, the most an attempt of a node may spend is the node's own
  ``budget.maxTokens`` (what is left of it for the frame): when the run's spent tokens plus that
  ceiling exceed ``bounds.maxTokens``, the attempt is not started. A node that declares no
  ceiling has none to add, and only the spent rule stops it;
* a cost budget cannot be kept for tokens without a price: once an attempt of a model the
  deployment's price table does not list has spent tokens, ``maxCostUsd`` counts as spent;
* a node's wall time (``budget.maxSeconds``) runs from its frame's first attempt's start; an
  attempt's timeout is cut to what is left of it, and none starts once it is gone.

Inside one ``reason`` attempt the same rule holds between model turns: the attempt is given
what is left of its budgets (:meth:`Budgets.allowance`) and stops before a turn once that is
spent. A run that an attempt is refused for halts ``budget_exhausted``, the cause naming the
budget, its limit and what was spent (ruling 18). The attempt that crosses a budget without a
declared ceiling runs to its end; what it spent is recorded, over the budget.

Everything here is pure: times are the log's ISO-8601 strings, so both hosts decide alike.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from orchestration.types import (
    BudgetExhausted,
    BudgetName,
    CallNode,
    NodeBudget,
    PlanBounds,
    PlanNode,
    ReasonNode,
    TransformNode,
    Usage,
    UsageTotals,
)

__all__ = ["Allowance", "Budgets", "Spend", "node_budget", "seconds_between"]


def seconds_between(start: str, end: str) -> float:
    """Seconds from one ISO-8601 instant to another (``Z`` accepted)."""
    a = dt.datetime.fromisoformat(start.replace("Z", "+00:00"))
    b = dt.datetime.fromisoformat(end.replace("Z", "+00:00"))
    return (b - a).total_seconds()


def node_budget(node: PlanNode) -> NodeBudget | None:
    """The node's own budget, when it declares one (calls, reason and transform nodes)."""
    if isinstance(node, CallNode | ReasonNode | TransformNode):
        return node.definition.budget
    return None


class Spend:
    """Tokens and cost spent (by a run, or by one frame), updated attempt by attempt."""

    __slots__ = ("attempts", "cost_usd", "input_tokens", "output_tokens", "unpriced", "models")

    def __init__(self) -> None:
        self.input_tokens = 0
        self.output_tokens = 0
        self.cost_usd = 0.0
        self.unpriced = 0
        self.attempts = 0
        self.models: dict[str, None] = {}
        """Models whose tokens had no price, in the order first seen."""

    @property
    def tokens(self) -> int:
        """Input and output tokens together."""
        return self.input_tokens + self.output_tokens

    def add(self, usage: Usage | None) -> None:
        """Count one attempt's usage (``None``: an attempt that spent nothing on a model).

        ``attempts`` counts the attempts that spent something.
        """
        if usage is None:
            return
        self.attempts += 1
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        if usage.cost_usd is not None:
            self.cost_usd += usage.cost_usd
        elif usage.tokens:
            self.unpriced += usage.tokens
            self.models[usage.model or "unknown"] = None

    def totals(self) -> UsageTotals:
        """As the projection reports it."""
        return UsageTotals(
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cost_usd=self.cost_usd,
            unpriced_tokens=self.unpriced,
            attempts=self.attempts,
        )

    @classmethod
    def of(cls, totals: UsageTotals | None) -> Spend:
        """Spend restored from carried totals (a continued execution's)."""
        spend = cls()
        if totals is not None:
            spend.input_tokens = totals.input_tokens
            spend.output_tokens = totals.output_tokens
            spend.cost_usd = totals.cost_usd
            spend.unpriced = totals.unpriced_tokens
            spend.attempts = totals.attempts
            if totals.unpriced_tokens:
                spend.models["unknown"] = None
        return spend


@dataclass(frozen=True, slots=True)
class Allowance:
    """What one attempt may still spend, and which budget each figure comes from.

    ``None`` for a figure no budget bounds.
    """

    tokens: int | None = None
    tokens_budget: str | None = None
    cost_usd: float | None = None
    seconds: float | None = None


class Budgets:
    """A plan's token, cost and wall-time budgets (see the module docstring).

    Build it with :meth:`of`, which returns ``None`` for a plan that declares none: then no run
    of it pays for a check.
    """

    __slots__ = ("max_cost", "max_tokens", "nodes")

    def __init__(
        self,
        max_tokens: int | None,
        max_cost: float | None,
        nodes: Mapping[str, NodeBudget],
    ) -> None:
        self.max_tokens = max_tokens
        self.max_cost = max_cost
        self.nodes = dict(nodes)

    @classmethod
    def of(cls, bounds: PlanBounds, nodes: Iterable[PlanNode]) -> Budgets | None:
        """The budgets a plan declares, or ``None`` when it declares none."""
        declared = {n.id: b for n in nodes if (b := node_budget(n)) is not None}
        if bounds.max_tokens is None and bounds.max_cost_usd is None and not declared:
            return None
        return cls(bounds.max_tokens, bounds.max_cost_usd, declared)

    # -- the rule ---------------------------------------------------------------------------

    def refusal(
        self,
        node_id: str,
        run: Spend,
        frame: Spend | None,
        first_started: str | None,
        now: str,
        steps: int,
        delay: float = 0.0,
    ) -> BudgetExhausted | None:
        """Why an attempt of ``node_id`` may not start now, or ``None`` when it may.

        Args:
            node_id: The frame's node.
            run: What the run has spent.
            frame: What the frame has spent (``None`` before its first attempt).
            first_started: When the frame's first attempt started (``None``: not yet).
            now: The time the decision is taken.
            steps: Node entries so far (the cause's ``settled``).
            delay: Seconds after ``now`` the attempt would start (a retry's backoff pause).

        """
        own = self.nodes.get(node_id)
        frame_tokens = frame.tokens if frame is not None else 0
        if own is not None and own.max_tokens is not None and frame_tokens >= own.max_tokens:
            return _exhausted(steps, "node.maxTokens", own.max_tokens, frame_tokens, node_id)
        if own is not None and own.max_seconds is not None and first_started is not None:
            elapsed = seconds_between(first_started, now) + delay
            if elapsed >= own.max_seconds:
                # The elapsed time is the hosts' clocks' (the log has both ends): not recorded
                # here, so the cause reads the same on every host.
                return _exhausted(steps, "node.maxSeconds", own.max_seconds, None, node_id)
        if self.max_tokens is not None:
            ceiling = 0
            if own is not None and own.max_tokens is not None:
                ceiling = own.max_tokens - frame_tokens
            if run.tokens >= self.max_tokens or run.tokens + ceiling > self.max_tokens:
                detail = (
                    None
                    if run.tokens >= self.max_tokens
                    else f"an attempt of node {node_id} may spend up to {ceiling} more tokens "
                    "(its own budget), which would pass the run's"
                )
                return _exhausted(
                    steps, "maxTokens", self.max_tokens, run.tokens, node_id, detail
                )
        if self.max_cost is not None:
            if run.unpriced:
                models = ", ".join(run.models)
                return _exhausted(
                    steps,
                    "maxCostUsd",
                    self.max_cost,
                    run.cost_usd,
                    node_id,
                    f"{run.unpriced} tokens of model(s) {models} have no price in the "
                    "deployment's price table, so the cost budget cannot be kept",
                )
            if run.cost_usd >= self.max_cost:
                return _exhausted(steps, "maxCostUsd", self.max_cost, run.cost_usd, node_id)
        return None

    def allowance(
        self,
        node_id: str,
        run: Spend,
        frame: Spend | None,
        first_started: str | None,
        now: str,
        delay: float = 0.0,
    ) -> Allowance:
        """What an attempt of ``node_id`` starting ``delay`` seconds after ``now`` may spend."""
        own = self.nodes.get(node_id)
        tokens: int | None = None
        which: str | None = None
        if self.max_tokens is not None:
            tokens, which = self.max_tokens - run.tokens, "maxTokens"
        if own is not None and own.max_tokens is not None:
            left = own.max_tokens - (frame.tokens if frame is not None else 0)
            if tokens is None or left < tokens:
                tokens, which = left, "node.maxTokens"
        cost = None if self.max_cost is None else self.max_cost - run.cost_usd
        seconds: float | None = None
        if own is not None and own.max_seconds is not None:
            used = 0.0 if first_started is None else seconds_between(first_started, now) + delay
            seconds = own.max_seconds - used
        return Allowance(tokens=tokens, tokens_budget=which, cost_usd=cost, seconds=seconds)


def _exhausted(
    steps: int,
    budget: BudgetName,
    limit: float,
    spent: float | None,
    node_id: str | None,
    detail: str | None = None,
) -> BudgetExhausted:
    return BudgetExhausted(
        settled=steps,
        budget=budget,
        node_id=node_id,
        limit=limit,
        spent=spent,
        detail=detail,
    )
