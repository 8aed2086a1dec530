"""Maps: a closed body, read only through the map, and a worst case inside maxSteps."""

from __future__ import annotations

from typing import Any

from orchestration.plan.authoring import PlanAuthor
from orchestration.plan.encoding import NodeRef
from orchestration.types import DEFAULT_PLAN_BOUNDS, PlanOp

from .helpers import author, call, check, codes, only


def _mapped(a: PlanAuthor, *, max_items: int = 10, **body_args: Any) -> list[PlanOp]:
    """entry → fetch → m (over fetch.files) ⇒item⇒ one → two; m → after."""
    return [
        a.entry(),
        call(a, "fetch"),
        a.map("m", NodeRef("fetch", path="files"), max_items=max_items, concurrency=2),
        call(a, "one", args={"url": NodeRef("m", path="item.url"), **body_args}),
        call(a, "two", args={"url": NodeRef("one", path="body")}),
        call(a, "after", args={"url": NodeRef("m", select="all")}),
        a.edge("entry", "fetch", edge_id="e0"),
        a.edge("fetch", "m", edge_id="e1"),
        a.edge("m", "one", "item", edge_id="e2"),
        a.edge("one", "two", edge_id="e3"),
        a.edge("m", "after", edge_id="e4"),
    ]


def test_a_closed_body_freezes() -> None:
    """A map whose body is entered by its item edges and ends inside itself has no issue."""
    assert [i for i in check(_mapped(author())) if i.severity == "blocking"] == []


def test_a_map_needs_a_body() -> None:
    """Without an item edge there is nothing to run per item."""
    a = author()
    ops = [
        a.entry(),
        call(a, "fetch"),
        a.map("m", NodeRef("fetch", path="files"), max_items=3),
        a.edge("entry", "fetch", edge_id="e0"),
        a.edge("fetch", "m", edge_id="e1"),
    ]
    issue = only(check(ops), "map_without_body")
    assert issue.node_id == "m" and '"item"' in issue.message


def test_a_body_that_leaves_is_refused() -> None:
    """A body edge to a node the map also reaches after its items makes that node run both per
    item and after the map: refused, naming the edge from outside."""
    a = author()
    ops = [*_mapped(a), a.edge("two", "after", edge_id="e5")]
    issue = only(check(ops), "map_body_entered_from_outside")
    assert issue.edge_id == "e4" and issue.node_id == "after"
    assert '"always"' in issue.message


def test_a_body_entered_from_outside_is_refused() -> None:
    """An edge into a body node from outside the body is refused."""
    a = author()
    ops = [*_mapped(a), a.edge("fetch", "two", edge_id="e5")]
    (issue,) = [i for i in check(ops) if i.code == "map_body_entered_from_outside"]
    assert issue.edge_id == "e5" and issue.node_id == "two" and issue.severity == "blocking"


def test_outside_reads_of_the_body_are_refused() -> None:
    """A node after the map that reads a body node directly is refused once, by the map check."""
    a = author()
    ops = _mapped(a)
    ops[5] = call(a, "after", args={"url": NodeRef("two", path="body")})
    issues = check(ops)
    issue = only(issues, "map_body_read_outside")
    assert issue.node_id == "after" and '"m"' in issue.message
    assert "reference_not_upstream" not in codes(issues)


def test_the_item_edge_belongs_to_maps() -> None:
    """Only a map fires an item edge."""
    a = author()
    ops = [*_mapped(a), call(a, "other"), a.edge("fetch", "other", "item", edge_id="e5")]
    issue = only(check(ops), "invalid_handle")
    assert issue.edge_id == "e5"


def test_the_worst_case_over_max_steps_names_the_region() -> None:
    """maxItems × the body's steps above maxSteps is refused, naming the map and its body."""
    a = author()
    bounds = DEFAULT_PLAN_BOUNDS.model_copy(update={"max_steps": 100})
    ops = [*_mapped(a, max_items=40), a.set_bounds(bounds)]
    issue = only(check(ops), "map_worst_case_over_max_steps")
    # entry, fetch, m, after, and 40 items × (the item + one + two).
    assert "worst case is 124 steps" in issue.message
    assert '"m" runs up to 40 items' in issue.message and '"one", "two"' in issue.message
    assert issue.node_id == "m" and issue.severity == "blocking"


def test_the_worst_case_at_max_steps_freezes() -> None:
    """A worst case exactly at maxSteps is within bounds."""
    a = author()
    bounds = DEFAULT_PLAN_BOUNDS.model_copy(update={"max_steps": 124})
    ops = [*_mapped(a, max_items=40), a.set_bounds(bounds)]
    assert "map_worst_case_over_max_steps" not in codes(check(ops))


def test_nested_maps_multiply() -> None:
    """A map inside a map's body runs its own body maxItems times per outer item."""
    a = author()
    ops = [
        a.entry(),
        call(a, "fetch"),
        a.map("outer", NodeRef("fetch", path="files"), max_items=5),
        call(a, "list", args={"url": NodeRef("outer", path="item")}),
        a.map("inner", NodeRef("list", path="rows"), max_items=10),
        call(a, "leaf", args={"url": NodeRef("inner", path="item")}),
        a.edge("entry", "fetch", edge_id="e0"),
        a.edge("fetch", "outer", edge_id="e1"),
        a.edge("outer", "list", "item", edge_id="e2"),
        a.edge("list", "inner", edge_id="e3"),
        a.edge("inner", "leaf", "item", edge_id="e4"),
    ]
    # entry, fetch, outer; 5 × (item + list + inner + 10 × (item + leaf)) = 5 × 23 = 115.
    bounds = DEFAULT_PLAN_BOUNDS.model_copy(update={"max_steps": 118})
    assert "map_worst_case_over_max_steps" not in codes(check([*ops, a.set_bounds(bounds)]))
    bounds = DEFAULT_PLAN_BOUNDS.model_copy(update={"max_steps": 117})
    issue = only(check([*ops, a.set_bounds(bounds)]), "map_worst_case_over_max_steps")
    assert "worst case is 118 steps" in issue.message
    assert '"outer" runs up to 5 items' in issue.message


def test_plans_without_maps_are_not_counted() -> None:
    """A plan without a map has no worst-case check (its freeze is what it was)."""
    a = author()
    bounds = DEFAULT_PLAN_BOUNDS.model_copy(update={"max_steps": 1})
    ops = [
        a.entry(),
        call(a, "fetch"),
        call(a, "after"),
        a.edge("entry", "fetch", edge_id="e0"),
        a.edge("fetch", "after", edge_id="e1"),
        a.set_bounds(bounds),
    ]
    assert "map_worst_case_over_max_steps" not in codes(check(ops))


def test_taint_flows_through_a_map() -> None:
    """A map over run input hands its items' taint to the body's calls that read them."""
    from orchestration.types import StringField

    a = author()
    ops = [
        a.entry(input=[StringField(path="files")]),
        a.map("m", NodeRef("entry", path="files"), max_items=3),
        call(a, "one", args={"url": NodeRef("m", path="item")}),
        a.edge("entry", "m", edge_id="e0"),
        a.edge("m", "one", "item", edge_id="e1"),
    ]
    issue = only(check(ops), "tainted_call_arg")
    assert issue.node_id == "one" and "entry.files → m.over" in issue.message


def test_the_outline_names_a_map() -> None:
    """A phase holding a map says so, with its maxItems."""
    from orchestration.plan.ops import fold_ops
    from orchestration.review.outline import plan_outline

    view, _ = fold_ops("p", _mapped(author(), max_items=7))
    outline = plan_outline(view, "editable")
    assert outline.unphased is not None
    assert outline.unphased.summary.endswith(", map m (≤ 7 items)")


def test_a_diamond_in_the_body_forked_at_the_map_freezes() -> None:
    """Two item edges meeting at a join inside the body make a valid diamond."""
    a = author()
    ops = [
        a.entry(),
        call(a, "fetch"),
        a.map("m", NodeRef("fetch", path="files"), max_items=3),
        call(a, "left", args={"url": NodeRef("m", path="item")}),
        call(a, "right", args={"url": NodeRef("m", path="item")}),
        a.join("j"),
        call(a, "last", args={"url": NodeRef("left", path="body")}),
        a.edge("entry", "fetch", edge_id="e0"),
        a.edge("fetch", "m", edge_id="e1"),
        a.edge("m", "left", "item", edge_id="e2"),
        a.edge("m", "right", "item", edge_id="e3"),
        a.edge("left", "j", edge_id="e4"),
        a.edge("right", "j", edge_id="e5"),
        a.edge("j", "last", edge_id="e6"),
    ]
    assert [i.code for i in check(ops) if i.severity == "blocking"] == []
