"""The verdict rules every source-string cell (``cel``, ``lua``) applies the same way.

A cell that cannot evaluate a predicate must not guess: it gives the **safe verdict**, the one
that fires only what the author routed for "nothing matched" (a branch's ``no_match``, a
select's ``default``), and records why as evidence. A select's value names a case only when it
is, exactly, one of the node's case labels: no coercion, so ``1`` never selects case ``"1"``.
"""

from __future__ import annotations

from orchestration.tools.contracts import (
    BranchVerdict,
    Judgement,
    PredicateContext,
    PredicateVerdict,
    SelectVerdict,
)
from orchestration.types import BranchNode, SelectNode

__all__ = ["DecidingCell", "js_truthy", "safe_verdict", "select_verdict"]


class DecidingCell:
    """``judge`` and ``evaluate`` for a cell whose decision is one synchronous ``decide``.

    The evaluate activity runs ``decide`` on a worker thread for a cell that runs there, and
    the workflow calls ``judge`` for one it runs inline; both give the same judgement.
    """

    def decide(self, node: BranchNode | SelectNode, ctx: PredicateContext) -> Judgement:
        """The verdict and its evidence."""
        raise NotImplementedError

    async def judge(self, node: BranchNode | SelectNode, ctx: PredicateContext) -> Judgement:
        """See :meth:`decide` (runs on the calling thread)."""
        return self.decide(node, ctx)

    async def evaluate(
        self, node: BranchNode | SelectNode, ctx: PredicateContext
    ) -> PredicateVerdict:
        """See :meth:`decide` (the verdict only)."""
        return self.decide(node, ctx).verdict


def safe_verdict(node: BranchNode | SelectNode) -> PredicateVerdict:
    """``no_match`` for a branch, no case (so ``default``) for a select."""
    if isinstance(node, BranchNode):
        return BranchVerdict(matched=False)
    return SelectVerdict(case_label=None)


def select_verdict(node: SelectNode, value: object) -> SelectVerdict:
    """The case ``value`` names, or no case when it is not exactly one of ``node``'s labels."""
    label = value if isinstance(value, str) and value in node.definition.cases else None
    return SelectVerdict(case_label=label)


def js_truthy(value: object) -> bool:
    """JavaScript's ``Boolean(value)`` over the value subset, the reference's truthiness.

    Only ``None``, ``False``, zero (and NaN) and ``""`` are false; an empty list or dict is
    true, unlike Python's ``bool``.
    """
    if value is None or value is False:
        return False
    kind = type(value)
    if kind is int or kind is float:
        return bool(value == value and value != 0)
    if kind is str:
        return value != ""
    return True
