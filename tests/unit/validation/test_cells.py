"""Cell checks: a wired evaluator that accepts the predicate."""

from __future__ import annotations

from .helpers import FakeCell, author, call, check, fan_in_ops, only


def _branch(predicate=None, evaluator="fake"):  # type: ignore[no-untyped-def]
    from orchestration.types import BooleanField

    a = author()
    return [a.entry(input=[BooleanField(path="urgent")]),
            a.branch("gate", evaluator=evaluator, predicate=predicate or {"ok": 1}),
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


def _typed(predicate: str, evaluator: str = "cel", kind: str = "branch"):  # type: ignore[no-untyped-def]
    """entry(min: number) → src(count: number, body: string) → gate; a sibling `other` too."""
    from orchestration.types import NumberField, StringField

    a = author()
    gate = (a.branch("gate", evaluator=evaluator, predicate=predicate) if kind == "branch"
            else a.select("gate", evaluator=evaluator, predicate=predicate, cases=["a", "b"]))
    ops = [
        a.entry(input=[NumberField(path="min")]),
        call(a, "src", output=[NumberField(path="count"), StringField(path="body")]),
        call(a, "other"),
        gate,
        call(a, "yes"),
        a.edge("entry", "src", edge_id="e1"),
        a.edge("entry", "other", edge_id="e2"),
        a.edge("src", "gate", edge_id="e3"),
        a.edge("gate", "yes", "match" if kind == "branch" else "default", edge_id="e4"),
    ]
    if kind == "select":
        ops.append(a.edge("gate", "yes", "case_a", edge_id="e5"))
        ops.append(a.edge("gate", "yes", "case_b", edge_id="e6"))
    return ops


def test_cel_predicates_type_check_against_what_ancestors_declare() -> None:
    """The real CEL cell accepts reads of declared fields of nodes that run before it."""
    from orchestration.predicates import CelCell

    assert check(_typed("src.count >= entry.min && src.body.startsWith('ok')"),
                 cells=[CelCell()]) == []
    assert check(_typed("src.count > 1 ? 'a' : 'b'", kind="select"), cells=[CelCell()]) == []


def test_cel_refuses_undeclared_fields_other_routes_and_type_errors() -> None:
    """A field nothing declares, a node not before the branch, or a type error is refused."""
    from orchestration.predicates import CelCell

    for predicate, hint in [
        ("src.cnt > 1", "undeclared reference to 'src.cnt'"),
        ("other.body == 'x'", "undeclared reference"),
        ("src.body > 3", "no matching overload"),
        ("src.body", "needs a bool"),
    ]:
        issue = only(check(_typed(predicate), cells=[CelCell()]), "evaluator_error")
        assert issue.node_id == "gate" and hint in issue.message, (predicate, issue.message)
    select = _typed("src.count > 1", kind="select")
    issue = only(check(select, cells=[CelCell()]), "evaluator_error")
    assert "needs a case label string" in issue.message


def test_lua_predicates_are_syntax_checked_at_freeze() -> None:
    """The real Lua cell accepts source that parses and refuses source that does not."""
    from orchestration.predicates import LuaCell

    assert check(_typed("return outputs.src.count > 1", evaluator="lua"), cells=[LuaCell()]) == []
    issue = only(check(_typed("return (", evaluator="lua"), cells=[LuaCell()]), "evaluator_error")
    assert "not valid Lua" in issue.message


def test_cel_refuses_a_node_that_runs_on_only_some_routes() -> None:
    """A node before the branch on one route of a fan-in is not readable: CEL refuses it."""
    from orchestration.predicates import CelCell

    issues = check(fan_in_ops("cel", "left.n > 1"), cells=[CelCell()])
    assert any(i.code == "evaluator_error" and "undeclared reference to 'left.n'" in i.message
               for i in issues), [i.message for i in issues]
