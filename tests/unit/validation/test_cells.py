"""Cell checks: a wired evaluator that accepts the predicate."""

from __future__ import annotations

from .helpers import FakeCell, author, call, check, only


def _branch(predicate=None, evaluator="fake"):  # type: ignore[no-untyped-def]
    a = author()
    return [a.entry(), a.branch("gate", evaluator=evaluator, predicate=predicate or {"ok": 1}),
            call(a, "yes"), a.edge("entry", "gate", edge_id="e1"),
            a.edge("gate", "yes", "match", edge_id="e2")]


def test_unwired_evaluator_names_the_wired_cells() -> None:
    """A branch naming a cell that is not wired is refused, listing the wired ones."""
    issue = only(check(_branch(evaluator="cel"), cells=[FakeCell()]), "unwired_evaluator")
    assert issue.node_id == "gate" and '"cel"' in issue.message and '"fake"' in issue.message


def test_cell_refuses_the_predicate() -> None:
    """What a cell's validate raises is reported as evaluator_error with its message."""
    issue = only(check(_branch(predicate={"bad": True})), "evaluator_error")
    assert issue.node_id == "gate" and "without 'bad'" in issue.message


def test_cell_that_fails_to_load() -> None:
    """A cell whose load fails is reported on each node naming it, loaded only once."""
    cell = FakeCell(fail_load=True)
    a = author()
    ops = [*_branch(), a.branch("again", evaluator="fake", predicate={"ok": 2}),
           a.edge("yes", "again", edge_id="e3")]
    issues = check(ops, cells=[cell])
    assert [i.code for i in issues] == ["evaluator_error", "evaluator_error"]
    assert "not installed" in issues[0].message and cell.loads == 1


def test_structured_cell_accepts_its_grammar_and_refuses_the_rest() -> None:
    """With the structured cell wired, a well-formed predicate passes and a malformed one is
    reported with the cell's own reason."""
    from orchestration.predicates.structured import StructuredCell

    good = _branch(predicate={"path": "entry:.urgent", "op": "truthy"}, evaluator="structured")
    assert check(good, cells=[StructuredCell()]) == []
    bad = _branch(predicate={"path": "entry:.urgent", "op": "like"}, evaluator="structured")
    issue = only(check(bad, cells=[StructuredCell()]), "evaluator_error")
    assert issue.node_id == "gate" and '"structured"' in issue.message
