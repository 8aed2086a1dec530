"""Valid plans of every node kind freeze with no issue at all."""

from __future__ import annotations

from orchestration.plan.authoring import ref, text
from orchestration.types import StringField

from .helpers import (
    SCHEMA,
    FakeCell,
    author,
    call,
    check,
    every_kind_ops,
    route,
)


def test_entry_alone_is_valid() -> None:
    """A plan that is only its entry node has nothing wrong with it."""
    a = author()
    assert check([a.entry(input=[StringField(path="q")])]) == []


def test_every_node_kind_in_one_plan_is_valid() -> None:
    """Entry, calls, a diamond join, reason, branch, transform and a select validate cleanly."""
    assert check(every_kind_ops()) == []


def test_call_reading_declared_field_of_an_upstream_call() -> None:
    """A call may read a declared field of a call that always runs before it."""
    a = author()
    ops = [
        a.entry(),
        call(a, "fetch"),
        call(a, "upper", tool="text.upper", args={"s": ref("fetch", path="body")}),
        a.edge("entry", "fetch"),
        a.edge("fetch", "upper"),
    ]
    assert check(ops) == []


def test_reason_reading_tainted_input() -> None:
    """A reason prompt may read run input directly; taint only stops at call arguments."""
    a = author()
    ops = [
        a.entry(input=[StringField(path="q")]),
        a.reason("think", prompt=[text("Answer: "), ref("entry", path="q")], output_schema=SCHEMA),
        call(a, "use", args={"verdict": ref("think", path="verdict")}, declassifies=["body"]),
        a.edge("entry", "think"),
        a.edge("think", "use"),
    ]
    assert check(ops) == []


def test_transform_over_inherited_method() -> None:
    """A step may name a method declared on an ancestor of the source's artifact class."""
    a = author()
    ops = [
        a.entry(),
        call(a, "doc", tool="files.read_json", output=[]),
        a.transform("head", source=ref("doc"), steps=[("artifact_head", {"n": 3})],
                    emit_field="text", output=[StringField(path="text")]),
        a.edge("entry", "doc"),
        a.edge("doc", "head"),
    ]
    assert check(ops) == []


def test_branch_with_both_outcomes() -> None:
    """A branch wired to a cell, with match and no_match edges, is valid."""
    a = author()
    cell = FakeCell()
    ops = [
        a.entry(),
        a.branch("gate", evaluator="fake", predicate={"path": "x", "op": "truthy"}),
        call(a, "yes"),
        call(a, "no"),
        a.edge("entry", "gate"),
        a.edge("gate", "yes", "match"),
        a.edge("gate", "no", "no_match"),
    ]
    assert check(ops, cells=[cell]) == []
    assert cell.loads == 1 and cell.validated == ["gate"]


def test_select_with_several_cases() -> None:
    """A select whose every case has an edge, plus the required default, is valid."""
    a = author()
    ops = [
        a.entry(),
        a.select("pick", evaluator="fake", predicate={"path": "x"}, cases=["red", "green", "blue"]),
        *[call(a, name) for name in ("on_red", "on_green", "on_blue", "fallback")],
        a.edge("entry", "pick"),
        a.edge("pick", "on_red", "case_red"),
        a.edge("pick", "on_green", "case_green"),
        a.edge("pick", "on_blue", "case_blue"),
        a.edge("pick", "fallback", "default"),
        a.edge("pick", "fallback", "error", edge_id="pick-fallback-err"),
    ]
    assert check(ops) == []


def test_diamond_forked_at_the_entry() -> None:
    """A diamond whose fork is the entry node itself is valid."""
    a = author()
    ops = [
        a.entry(),
        call(a, "left"),
        call(a, "right"),
        a.join("both"),
        call(a, "after", args={"l": ref("left", path="body"), "r": ref("right", path="body")}),
        a.edge("entry", "left", edge_id="e1"),
        a.edge("entry", "right", edge_id="e2"),
        a.edge("left", "both", edge_id="e3"),
        a.edge("right", "both", edge_id="e4"),
        a.edge("both", "after", edge_id="e5"),
    ]
    assert check(ops) == []


def test_nested_diamonds_in_sequence() -> None:
    """Two diamonds one after the other (the second forks at the first join) are valid."""
    a = author()
    after_first = (("j1", ("e3", "e4")),)
    ops = [
        a.entry(),
        call(a, "l1"), call(a, "r1"), a.join("j1"),
        call(a, "l2"), call(a, "r2"), a.join("j2"),
        call(a, "tail", args={"first": ref("l2", path="body", select=0),
                              "joined": ref("j2", select="all", path="via", branch_id=route(
                                  *after_first, ("j2", ("e7", "e8"))))}),
        a.edge("entry", "l1", edge_id="e1"), a.edge("entry", "r1", edge_id="e2"),
        a.edge("l1", "j1", edge_id="e3"), a.edge("r1", "j1", edge_id="e4"),
        a.edge("j1", "l2", edge_id="e5"), a.edge("j1", "r2", edge_id="e6"),
        a.edge("l2", "j2", edge_id="e7"), a.edge("r2", "j2", edge_id="e8"),
        a.edge("j2", "tail", edge_id="e9"),
    ]
    issues = check(ops)
    assert [i.code for i in issues] == ["ambiguous_reference"]
    # l2 runs once but below a join, so it needs its route; the message names it exactly (and
    # an index, not first/last, selects across a join).
    assert '{"segments":[{"join":"j1","of":["e3","e4"]},{"edge":"e5"}]}' in issues[0].message
    fixed = [*ops, a.set_field("tail", "args.first", ref(
        "l2", path="body", select=0, branch_id=route(*after_first, "e5")))]
    assert check(fixed) == []


def test_parallel_edges_count_as_routes() -> None:
    """Two parallel edges from the fork to the join are two routes: a (degenerate) diamond."""
    a = author()
    ops = [
        a.entry(), call(a, "fork"), a.join("j"),
        a.edge("entry", "fork", edge_id="e0"),
        a.edge("fork", "j", edge_id="e1"), a.edge("fork", "j", edge_id="e2"),
    ]
    assert check(ops) == []
