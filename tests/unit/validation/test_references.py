"""Reference checks: existence, availability on every route, declared fields, routes."""

from __future__ import annotations

from orchestration.plan.authoring import ref, text
from orchestration.types import EnumField, StringField

from .helpers import SCHEMA, author, call, check, codes, only, route


def _chain(*extra, reader_args=None):  # type: ignore[no-untyped-def]
    a = author()
    return [a.entry(), call(a, "fetch"),
            call(a, "use", tool="text.upper", args=reader_args or {}),
            a.edge("entry", "fetch", edge_id="e1"), a.edge("fetch", "use", edge_id="e2"), *extra]


def test_missing_reference() -> None:
    """A reference to a node that does not exist is refused, naming both nodes."""
    issue = only(check(_chain(reader_args={"s": ref("ghost")})), "missing_reference")
    assert issue.node_id == "use" and '"ghost"' in issue.message
    assert "fix the reference" in issue.message


def test_reference_to_a_sibling_branch_is_not_upstream() -> None:
    """Reading a node on another branch of a fan-out is refused: it may not have run."""
    a = author()
    ops = [a.entry(), call(a, "left"), call(a, "right", args={"l": ref("left", path="body")}),
           a.edge("entry", "left", edge_id="e1"), a.edge("entry", "right", edge_id="e2")]
    issue = only(check(ops), "reference_not_upstream")
    assert issue.node_id == "right" and '"left"' in issue.message and "add edges" in issue.message


def test_reference_to_a_downstream_node_is_not_upstream() -> None:
    """Reading a node that runs later is refused."""
    a = author()
    ops = [a.entry(), call(a, "first", args={"x": ref("second", path="body")}), call(a, "second"),
           a.edge("entry", "first", edge_id="e1"), a.edge("first", "second", edge_id="e2")]
    assert only(check(ops), "reference_not_upstream").node_id == "first"


def test_self_reference_is_not_upstream() -> None:
    """A node cannot read its own output."""
    a = author()
    ops = [a.entry(), call(a, "me", args={"x": ref("me", path="body")}),
           a.edge("entry", "me", edge_id="e1")]
    assert only(check(ops), "reference_not_upstream").node_id == "me"


def test_undeclared_field() -> None:
    """A path the target does not declare is refused, listing what it declares."""
    issue = only(check(_chain(reader_args={"s": ref("fetch", path="bdy")})), "undeclared_field")
    assert issue.node_id == "use" and '"body"' in issue.message


def test_path_below_a_scalar_field_is_undeclared() -> None:
    """A declared field is a scalar leaf, so a path below it cannot resolve."""
    issue = only(check(_chain(reader_args={"s": ref("fetch", path="body.x")})), "undeclared_field")
    assert "declared fields" in issue.message


def test_undeclared_property_of_a_reason_schema() -> None:
    """A reference into a reason node is checked against its output schema's properties."""
    a = author()
    ops = [a.entry(), a.reason("think", prompt=[text("hi")], output_schema=SCHEMA),
           call(a, "use", args={"v": ref("think", path="confidence")}),
           a.edge("entry", "think", edge_id="e1"), a.edge("think", "use", edge_id="e2")]
    issue = only(check(ops), "undeclared_field")
    assert issue.node_id == "use" and '"verdict"' in issue.message
    assert "schema property" in issue.message


def _diamond_then(*tail_ops, a):  # type: ignore[no-untyped-def]
    return [a.entry(), call(a, "f"), call(a, "l"), call(a, "r"), a.join("j"), call(a, "after"),
            a.edge("entry", "f", edge_id="e0"), a.edge("f", "l", edge_id="e1"),
            a.edge("f", "r", edge_id="e2"), a.edge("l", "j", edge_id="e3"),
            a.edge("r", "j", edge_id="e4"), a.edge("j", "after", edge_id="e5"), *tail_ops]


AFTER = route("e0", ("j", ("e3", "e4")), "e5")


def test_first_across_a_join() -> None:
    """Selecting first/last from a node reached across a join is refused: select an index."""
    a = author()
    ops = _diamond_then(call(a, "reader", args={"x": ref("after", path="body", branch_id=AFTER)}),
                        a.edge("after", "reader", edge_id="e6"), a=a)
    issue = only(check(ops), "first_last_across_join")
    assert issue.node_id == "reader" and "item index" in issue.message


def test_ambiguous_reference_names_the_branch_id() -> None:
    """A reference below a join without a branchId is refused, and the fix names the route."""
    a = author()
    ops = _diamond_then(call(a, "reader", args={"x": ref("after", path="body", select=0)}),
                        a.edge("after", "reader", edge_id="e6"), a=a)
    issue = only(check(ops), "ambiguous_reference")
    assert issue.node_id == "reader"
    route_json = '{"segments":[{"edge":"e0"},{"join":"j","of":["e3","e4"]},{"edge":"e5"}]}'
    assert route_json in issue.message


def test_reference_into_a_diamond_after_its_join_is_available() -> None:
    """After a join every branch has arrived, so a branch node's output may be read."""
    a = author()
    both = {"l": ref("l", path="body"), "r": ref("r", path="body")}
    ops = _diamond_then(call(a, "reader", args=both),
                        a.edge("after", "reader", edge_id="e6"), a=a)
    assert check(ops) == []


def test_invalid_branch_id() -> None:
    """A branchId that is not a route of the target is refused, with how to write one."""
    a = author()
    wrong = route("e0", "e1", "e3", "e5")
    bad = ref("after", path="body", select=0, branch_id=wrong)
    ops = _diamond_then(call(a, "reader", args={"x": bad}),
                        a.edge("after", "reader", edge_id="e6"), a=a)
    issue = only(check(ops), "invalid_branch_id")
    assert issue.node_id == "reader" and '"join"' in issue.message


def test_un_joined_fan_in_needs_a_branch_id() -> None:
    """A node reached by two routes without a join runs twice: a reader must pick one."""
    a = author()
    ops = [a.entry(), call(a, "l"), call(a, "r"), call(a, "both_ran"), call(a, "reader", args={
        "x": ref("both_ran", path="body")}),
        a.edge("entry", "l", edge_id="e1"), a.edge("entry", "r", edge_id="e2"),
        a.edge("l", "both_ran", edge_id="e3"), a.edge("r", "both_ran", edge_id="e4"),
        a.edge("both_ran", "reader", edge_id="e5")]
    issues = check(ops)
    assert codes(issues) == ["ambiguous_reference"]
    assert "one {\"edge\": id} per edge taken" in issues[0].message
    fixed = [*ops, a.set_field("reader", "args.x", ref("both_ran", path="body",
                                                     branch_id=route("e1", "e3")))]
    assert check(fixed) == []


def test_invalid_declared_field() -> None:
    """An enum field with no values is refused."""
    a = author()
    ops = [a.entry(input=[EnumField(path="mode", values=())])]
    issue = only(check(ops), "invalid_declared_field")
    assert issue.node_id == "entry" and "list the allowed values" in issue.message


def test_empty_path_segment_is_invalid() -> None:
    """A dot path with an empty segment is refused."""
    a = author()
    issue = only(check([a.entry(input=[StringField(path="user..name")])]), "invalid_declared_field")
    assert "empty" in issue.message


def test_duplicate_declared_field() -> None:
    """One path declared twice is refused."""
    a = author()
    ops = [a.entry(input=[StringField(path="q"), StringField(path="q")])]
    issue = only(check(ops), "duplicate_declared_field")
    assert issue.node_id == "entry" and "keep one declaration" in issue.message
