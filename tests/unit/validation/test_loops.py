"""Loops: a closed body, read only through the loop (its watch excepted), an until predicate
whose reads are checked like a branch's, and a worst case inside maxSteps."""

from __future__ import annotations

from typing import Any

from orchestration.plan.authoring import PlanAuthor
from orchestration.plan.encoding import NodeRef
from orchestration.predicates.structured import StructuredCell
from orchestration.types import DEFAULT_PLAN_BOUNDS, PlanIssue, PlanOp

from .helpers import author, call, codes, only
from .helpers import check as _check_with

UNTIL = {"path": "two.body", "op": "eq", "value": "done"}


def _looped(a: PlanAuthor, *, max_iterations: int = 10, **loop: Any) -> list[PlanOp]:
    """entry → fetch → lp ⇒body⇒ one → two; lp → after."""
    return [
        a.entry(),
        call(a, "fetch"),
        a.loop("lp", max_iterations=max_iterations, until=loop.pop("until", UNTIL), **loop),
        call(a, "one", args={"url": NodeRef("lp", path="index")}),
        call(a, "two", args={"url": NodeRef("one", path="body")}),
        call(a, "after", args={"url": NodeRef("lp", path="result")}),
        a.edge("entry", "fetch", edge_id="e0"),
        a.edge("fetch", "lp", edge_id="e1"),
        a.edge("lp", "one", "body", edge_id="e2"),
        a.edge("one", "two", edge_id="e3"),
        a.edge("lp", "after", edge_id="e4"),
    ]


def check(ops: list[PlanOp]) -> list[PlanIssue]:
    """Freeze's issues with the structured cell wired."""
    return _check_with(ops, cells=[StructuredCell()])


def _blocking(ops: list[PlanOp]) -> list[str]:
    return [i.code for i in check(ops) if i.severity == "blocking"]


def test_a_closed_body_freezes() -> None:
    """A loop whose body is entered by its body edges, with an until reading the body and a
    watch on it, has no issue."""
    ops = _looped(author(), watch=NodeRef("two", path="body"))
    assert _blocking(ops) == []


def test_a_loop_needs_a_body() -> None:
    """Without a body edge there is nothing to repeat."""
    a = author()
    ops = [
        a.entry(),
        a.loop("lp", max_iterations=3, until={"path": "lp.index", "op": "gte", "value": 2}),
        a.edge("entry", "lp", edge_id="e0"),
    ]
    issue = only(check(ops), "loop_without_body")
    assert issue.node_id == "lp" and '"body"' in issue.message


def test_a_body_entered_from_outside_is_refused() -> None:
    """An edge into a body node from outside the body is refused, naming the loop."""
    a = author()
    ops = [*_looped(a), a.edge("fetch", "two", edge_id="e5")]
    (issue,) = [i for i in check(ops) if i.code == "loop_body_entered_from_outside"]
    assert issue.edge_id == "e5" and 'loop "lp"' in issue.message


def test_outside_reads_of_the_body_are_refused() -> None:
    """A node after the loop that reads a body node directly is refused once."""
    a = author()
    ops = _looped(a)
    ops[5] = call(a, "after", args={"url": NodeRef("two", path="body")})
    issues = check(ops)
    issue = only(issues, "loop_body_read_outside")
    assert issue.node_id == "after" and '"lp"' in issue.message
    assert "reference_not_upstream" not in codes(issues)


def test_a_watch_outside_the_body_is_refused() -> None:
    """The watched output must be one of the body's."""
    issue = only(check(_looped(author(), watch=NodeRef("fetch", path="body"))),
                 "loop_watch_outside_body")
    assert issue.node_id == "lp" and '"fetch"' in issue.message


def test_the_body_edge_belongs_to_loops() -> None:
    """Only a loop fires a body edge."""
    a = author()
    ops = [*_looped(a), call(a, "other"), a.edge("fetch", "other", "body", edge_id="e5")]
    assert only(check(ops), "invalid_handle").edge_id == "e5"


def test_until_reads_are_checked_like_a_branch() -> None:
    """An until reading a node that is neither in the body nor before the loop, or a field
    the body does not declare, is refused as a branch's predicate would be."""
    after = {"path": "after.body", "op": "eq", "value": 1}
    assert "reference_not_upstream" in _blocking(_looped(author(), until=after))
    missing = {"path": "two.nothing", "op": "eq", "value": 1}
    assert "undeclared_field" in _blocking(_looped(author(), until=missing))
    before = {"path": "fetch.body", "op": "eq", "value": 1}
    assert _blocking(_looped(author(), until=before)) == []


def test_the_worst_case_over_max_steps_names_the_loop() -> None:
    """maxIterations × (the round, its check and the body) above maxSteps is refused."""
    a = author()
    bounds = DEFAULT_PLAN_BOUNDS.model_copy(update={"max_steps": 100})
    ops = [*_looped(a, max_iterations=25), a.set_bounds(bounds)]
    issue = only(check(ops), "loop_worst_case_over_max_steps")
    # entry, fetch, lp, after, and 25 rounds × (the round + one + two + the check).
    assert "worst case is 104 steps" in issue.message
    assert '"lp" runs up to 25 rounds' in issue.message and '"one", "two"' in issue.message
    assert issue.node_id == "lp" and issue.severity == "blocking"
    bounds = DEFAULT_PLAN_BOUNDS.model_copy(update={"max_steps": 104})
    ops = [*_looped(a, max_iterations=25), a.set_bounds(bounds)]
    assert "loop_worst_case_over_max_steps" not in codes(check(ops))


def test_a_loop_nested_in_a_map_multiplies() -> None:
    """A loop inside a map's body runs its rounds per item: the worst case multiplies, and the
    refusal names the outer region."""
    a = author()
    ops = [
        a.entry(),
        call(a, "fetch"),
        a.map("m", NodeRef("fetch", path="files"), max_items=5),
        a.loop("lp", max_iterations=4, until={"path": "leaf.body", "op": "truthy"}),
        call(a, "leaf", args={"url": NodeRef("m", path="item")}),
        a.edge("entry", "fetch", edge_id="e0"),
        a.edge("fetch", "m", edge_id="e1"),
        a.edge("m", "lp", "item", edge_id="e2"),
        a.edge("lp", "leaf", "body", edge_id="e3"),
    ]
    # entry, fetch, m; 5 × (item + lp + 4 × (round + leaf + check)) = 5 × 14 = 70.
    bounds = DEFAULT_PLAN_BOUNDS.model_copy(update={"max_steps": 73})
    assert _blocking([*ops, a.set_bounds(bounds)]) == []
    bounds = DEFAULT_PLAN_BOUNDS.model_copy(update={"max_steps": 72})
    issue = only(check([*ops, a.set_bounds(bounds)]), "map_worst_case_over_max_steps")
    assert "worst case is 73 steps" in issue.message and '"m" runs up to 5 items' in issue.message


def test_a_map_nested_in_a_loop_multiplies() -> None:
    """A map inside a loop's body runs its items every round."""
    a = author()
    ops = [
        a.entry(),
        a.loop("lp", max_iterations=3, until={"path": "list.body", "op": "truthy"}),
        call(a, "list"),
        a.map("m", NodeRef("list", path="rows"), max_items=4),
        call(a, "leaf", args={"url": NodeRef("m", path="item")}),
        a.edge("entry", "lp", edge_id="e0"),
        a.edge("lp", "list", "body", edge_id="e1"),
        a.edge("list", "m", edge_id="e2"),
        a.edge("m", "leaf", "item", edge_id="e3"),
    ]
    # entry, lp; 3 × (round + list + m + 4 × (item + leaf) + check) = 3 × 12 = 36.
    bounds = DEFAULT_PLAN_BOUNDS.model_copy(update={"max_steps": 38})
    assert _blocking([*ops, a.set_bounds(bounds)]) == []
    bounds = DEFAULT_PLAN_BOUNDS.model_copy(update={"max_steps": 37})
    issue = only(check([*ops, a.set_bounds(bounds)]), "loop_worst_case_over_max_steps")
    assert "worst case is 38 steps" in issue.message and '"lp" runs up to 3 rounds' in issue.message
