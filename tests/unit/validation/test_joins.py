"""Joins must be diamonds: each malformed join trips exactly its check."""

from __future__ import annotations

from .helpers import author, call, check, only


def test_single_route_join_is_not_a_diamond() -> None:
    """A join reached by one route is a pass-through and is refused."""
    a = author()
    ops = [a.entry(), call(a, "work"), a.join("j"), a.edge("entry", "work", edge_id="e1"),
           a.edge("work", "j", edge_id="e2")]
    issue = only(check(ops), "join_not_diamond")
    assert issue.node_id == "j" and "should not exist" in issue.message
    assert '"work"' in issue.message


def test_reconverged_before_the_join_slides_the_fork() -> None:
    """Branches meeting before the join make its fork the meeting node: one route, refused."""
    a = author()
    ops = [a.entry(), call(a, "f"), call(a, "l"), call(a, "r"), call(a, "shared"), a.join("j"),
           a.edge("entry", "f", edge_id="e0"), a.edge("f", "l", edge_id="e1"),
           a.edge("f", "r", edge_id="e2"), a.edge("l", "shared", edge_id="e3"),
           a.edge("r", "shared", edge_id="e4"), a.edge("shared", "j", edge_id="e5")]
    issue = only(check(ops), "join_not_diamond")
    assert issue.node_id == "j" and 'fork "shared"' in issue.message


def test_reconvergence_inside_the_diamond() -> None:
    """A node with in-degree above one inside the fork→join region is refused."""
    a = author()
    ops = [a.entry(), call(a, "f"), call(a, "l"), call(a, "r"), call(a, "meet"), a.join("j"),
           a.edge("entry", "f", edge_id="e0"), a.edge("f", "l", edge_id="e1"),
           a.edge("f", "r", edge_id="e2"), a.edge("l", "meet", edge_id="e3"),
           a.edge("r", "meet", edge_id="e4"), a.edge("meet", "j", edge_id="e5"),
           a.edge("l", "j", edge_id="e6")]
    issue = only(check(ops), "join_reconvergence")
    assert issue.node_id == "j" and '"meet"' in issue.message and "make" in issue.message


def test_nested_join() -> None:
    """A join inside another diamond's region is refused on the outer join."""
    a = author()
    ops = [a.entry(), call(a, "f"), call(a, "a1"), call(a, "b1"), call(a, "x"), call(a, "y"),
           a.join("inner"), a.join("outer"),
           a.edge("entry", "f", edge_id="e0"), a.edge("f", "a1", edge_id="e1"),
           a.edge("f", "b1", edge_id="e2"), a.edge("a1", "x", edge_id="e3"),
           a.edge("a1", "y", edge_id="e4"), a.edge("x", "inner", edge_id="e5"),
           a.edge("y", "inner", edge_id="e6"), a.edge("inner", "outer", edge_id="e7"),
           a.edge("b1", "outer", edge_id="e8")]
    issue = only(check(ops), "nested_join")
    assert issue.node_id == "outer" and '"inner"' in issue.message


def test_unreachable_join_has_no_fork() -> None:
    """An unreachable join gets unreachable_node and the reference's join_no_fork, no more."""
    a = author()
    ops = [a.entry(), a.join("j")]
    issues = check(ops)
    assert [(i.code, i.node_id, i.severity) for i in issues] == [
        ("unreachable_node", "j", "blocking"),
        ("join_no_fork", "j", "blocking"),
    ]
    assert "single ancestor opened" in issues[1].message


def _three_arms(strategy: str | int | None) -> list:  # type: ignore[type-arg]
    a = author()
    ops = [a.entry(), call(a, "f"), a.join("j", strategy=strategy)]
    for i in range(3):
        ops += [call(a, f"arm{i}"), a.edge("f", f"arm{i}", edge_id=f"e{i}1"),
                a.edge(f"arm{i}", "j", edge_id=f"e{i}2")]
    return [*ops, a.edge("entry", "f", edge_id="e0")]


def test_any_and_a_reachable_quorum_freeze() -> None:
    """``any`` and a quorum below the route count raise no join issue."""
    for strategy in ("any", "all", 2):
        assert [i for i in check(_three_arms(strategy)) if i.code.startswith("join")] == []


def test_a_quorum_above_the_route_count_is_refused_naming_the_limit() -> None:
    """Four of three routes can never arrive: blocking, with the largest quorum that works."""
    issue = only(check(_three_arms(4)), "join_quorum_unreachable")
    assert issue.severity == "blocking" and issue.node_id == "j"
    assert "only 3 route(s)" in issue.message and "at most 3" in issue.message


def test_a_quorum_of_every_route_is_advised_to_say_all() -> None:
    """A quorum equal to the routes is the default barrier: advisory, so the plan reads true."""
    issue = only(check(_three_arms(3)), "join_quorum_is_all")
    assert issue.severity == "advisory"
