"""Topology checks: each minimal plan trips exactly its check, naming the culprit and the fix."""

from __future__ import annotations

from orchestration.plan.authoring import PlanAuthor
from orchestration.types import PlanEdge, PlanOp, RawPlanView

from .helpers import FakeCell, author, call, check, check_view, codes, fold, only


def test_no_entry() -> None:
    """A plan without an entry node is refused and told to add one."""
    a = author()
    issue = only(check([call(a, "work")]), "no_entry")
    assert issue.node_id is None and "add exactly one entry node" in issue.message


def test_multiple_entries() -> None:
    """Two entry nodes are refused, naming both and asking to keep one."""
    a = author()
    issue = only(check([a.entry("entry"), a.entry("second")]), "multiple_entries")
    assert '"second"' in issue.message and "keep exactly one entry node" in issue.message


def test_entry_with_incoming_edge() -> None:
    """An edge into the entry is refused (it is necessarily also a cycle here)."""
    a = author()
    ops = [a.entry(), call(a, "work"), a.edge("entry", "work", edge_id="e1"),
           a.edge("work", "entry", edge_id="back")]
    issues = check(ops)
    assert codes(issues) == ["entry_has_incoming", "cycle"]
    assert issues[0].node_id == "entry" and issues[0].edge_id == "back"
    assert "must have no incoming edges" in issues[0].message


def test_cycle_names_the_closing_edge() -> None:
    """A cycle is refused once, naming the edge that closes it, even over an error edge."""
    a = author()
    ops = [a.entry(), call(a, "a1"), call(a, "b1"),
           a.edge("entry", "a1", edge_id="e1"), a.edge("a1", "b1", edge_id="e2"),
           a.edge("b1", "a1", "error", edge_id="loop")]
    issue = only(check(ops), "cycle")
    assert issue.edge_id == "loop" and "remove the cycle" in issue.message


def test_invalid_node_id() -> None:
    """A node id that is not snake_case is refused and asked to be renamed."""
    a = author()
    ops = [a.entry(), call(a, "Fetch.Data"), a.edge("entry", "Fetch.Data", edge_id="e1")]
    issue = only(check(ops), "invalid_node_id")
    assert issue.node_id == "Fetch.Data" and "rename it" in issue.message


def test_invalid_edge_id() -> None:
    """An edge id outside [A-Za-z0-9_-]{1,64} is refused: it could forge a route key."""
    a = author()
    ops = [a.entry(), call(a, "work"), a.edge("entry", "work", edge_id="a:b(c)")]
    issue = only(check(ops), "invalid_edge_id")
    assert issue.edge_id == "a:b(c)" and "rename it" in issue.message


def test_long_edge_id_is_invalid() -> None:
    """An edge id of 65 characters is refused."""
    a = author()
    ops = [a.entry(), call(a, "work"), a.edge("entry", "work", edge_id="e" * 65)]
    assert only(check(ops), "invalid_edge_id").edge_id == "e" * 65


def test_duplicate_ids_and_dangling_edges_in_a_hand_built_view() -> None:
    """A view not produced by the fold may repeat ids or dangle; each is refused by name."""
    view, _ = fold([author().entry()])
    entry = view.nodes[0]
    edge = PlanEdge.model_validate({"id": "e1", "from": "entry", "to": "ghost", "handle": "always"})
    again = PlanEdge.model_validate(
        {"id": "e1", "from": "entry", "to": "entry", "handle": "always"})
    bad = RawPlanView(plan_id="p", digest="", revision=0, nodes=(entry, entry), edges=(edge, again))
    issues = check_view(bad)
    assert "duplicate_node_id" in codes(issues)
    assert "duplicate_edge_id" in codes(issues)
    dangling = [i for i in issues if i.code == "dangling_edge"]
    assert dangling and dangling[0].edge_id == "e1" and "remove the edge" in dangling[0].message


def test_invalid_handle() -> None:
    """A handle its source kind can never fire is refused, listing the permitted handles."""
    a = author()
    ops = [a.entry(), call(a, "work"), a.edge("entry", "work", "match", edge_id="e1")]
    issue = only(check(ops), "invalid_handle")
    assert issue.edge_id == "e1" and '"always"' in issue.message


def _select(cases: list[str]) -> tuple[list[PlanOp], PlanAuthor]:
    a = author()
    return [a.entry(), a.select("pick", evaluator="fake", predicate={}, cases=cases),
            call(a, "x"), call(a, "y"), call(a, "z"), a.edge("entry", "pick", edge_id="e0")], a


def test_select_missing_default() -> None:
    """A select without a default edge is refused."""
    ops, a = _select(["x"])
    ops += [a.edge("pick", "x", "case_x", edge_id="e1")]
    ops += [a.edge("pick", "y", "error", edge_id="e2"), a.edge("pick", "z", "error", edge_id="e3")]
    issue = only(check(ops), "select_missing_default")
    assert issue.node_id == "pick" and 'carry a default' in issue.message


def test_select_unknown_case() -> None:
    """An edge naming a case the select does not declare is refused, listing its cases."""
    ops, a = _select(["x", "y"])
    ops += [a.edge("pick", "x", "case_x", edge_id="e1"),
            a.edge("pick", "y", "case_y", edge_id="e2"),
            a.edge("pick", "z", "case_zz", edge_id="e3"),
            a.edge("pick", "z", "default", edge_id="e4")]
    issue = only(check(ops), "select_unknown_case")
    assert issue.edge_id == "e3" and issue.node_id == "pick" and '"case_x"' in issue.message


def test_select_case_without_edge() -> None:
    """A declared case that no edge handles is refused: add the edge or drop the case."""
    ops, a = _select(["x", "y", "z"])
    ops += [a.edge("pick", "x", "case_x", edge_id="e1"),
            a.edge("pick", "y", "case_y", edge_id="e2"),
            a.edge("pick", "z", "default", edge_id="e3")]
    issue = only(check(ops), "select_case_unwired")
    assert issue.node_id == "pick" and '"case_z"' in issue.message


def test_select_repeated_cases() -> None:
    """Case labels listed twice are refused."""
    ops, a = _select(["x", "x"])
    ops += [a.edge("pick", "x", "case_x", edge_id="e1"),
            a.edge("pick", "y", "default", edge_id="e2"),
            a.edge("pick", "z", "error", edge_id="e3")]
    issue = only(check(ops), "invalid_select_cases")
    assert issue.node_id == "pick" and "list each case label once" in issue.message


def test_unreachable_node() -> None:
    """A node the entry cannot reach is refused: connect it or remove it."""
    a = author()
    ops = [a.entry(), call(a, "work"), call(a, "orphan"), a.edge("entry", "work", edge_id="e1")]
    issue = only(check(ops)[:1], "unreachable_node")
    assert issue.node_id == "orphan" and "connect it" in issue.message


def test_an_unreachable_call_is_also_unreachable_call() -> None:
    """As in the reference, a call the entry cannot reach gets unreachable_call beside it."""
    a = author()
    ops = [a.entry(), call(a, "work"), call(a, "orphan"), a.branch("lost", evaluator="fake",
           predicate={"ok": 1}), a.edge("entry", "work", edge_id="e1")]
    issues = check(ops)
    assert [(i.code, i.node_id) for i in issues] == [
        ("unreachable_node", "orphan"),
        ("unreachable_call", "orphan"),
        ("unreachable_node", "lost"),
    ]
    assert "can never run" in issues[1].message and "connect it or remove it" in issues[1].message


def test_branch_cell_is_consulted_only_when_wired() -> None:
    """A branch naming the wired cell costs one load and one validate; nothing is reported."""
    a = author()
    cell = FakeCell()
    ops = [a.entry(), a.branch("gate", evaluator="fake", predicate={"ok": 1}),
           a.edge("entry", "gate", edge_id="e1")]
    assert check(ops, cells=[cell]) == []
    assert cell.validated == ["gate"]
