"""Taint: run input may not reach a call argument unless that call declassifies."""

from __future__ import annotations

from orchestration.plan.authoring import ref, text
from orchestration.types import StringField

from .helpers import SCHEMA, author, call, check, codes, only


def test_input_into_a_call_argument_is_tainted() -> None:
    """A call reading run input directly is refused, with the route the taint took."""
    a = author()
    ops = [a.entry(input=[StringField(path="q")]),
           call(a, "search", args={"q": ref("entry", path="q")}),
           a.edge("entry", "search", edge_id="e1")]
    issue = only(check(ops), "tainted_call_arg")
    assert issue.node_id == "search"
    assert "run input entry.q → search.args.q" in issue.message
    assert '"declassifies"' in issue.message


def test_taint_route_through_a_reason_node() -> None:
    """Taint through a reason prompt is reported hop by hop at the call it reaches."""
    a = author()
    ops = [a.entry(input=[StringField(path="q")]),
           a.reason("think", prompt=[text("x"), ref("entry", path="q")], output_schema=SCHEMA),
           call(a, "act", args={"v": ref("think", path="verdict")}),
           a.edge("entry", "think", edge_id="e1"), a.edge("think", "act", edge_id="e2")]
    issue = only(check(ops), "tainted_call_arg")
    assert "run input entry.q → think.prompt[1]; think.verdict → act.args.v" in issue.message


def test_declassified_field_is_clean_and_others_stay_tainted() -> None:
    """Declassifying clears only the named output fields."""
    a = author()
    ops = [a.entry(input=[StringField(path="q")]),
           call(a, "clean", args={"q": ref("entry", path="q")},
                output=[StringField(path="safe"), StringField(path="raw")], declassifies=["safe"]),
           call(a, "use_safe", args={"v": ref("clean", path="safe")}),
           call(a, "use_raw", args={"v": ref("clean", path="raw")}),
           a.edge("entry", "clean", edge_id="e1"), a.edge("clean", "use_safe", edge_id="e2"),
           a.edge("use_safe", "use_raw", edge_id="e3")]
    issue = only(check(ops), "tainted_call_arg")
    assert issue.node_id == "use_raw"
    assert "run input entry.q → clean.args.q; clean.raw → use_raw.args.v" in issue.message


def test_whole_item_reference_to_partly_tainted_output_is_tainted() -> None:
    """A reference without a path reads every field, tainted ones included."""
    a = author()
    ops = [a.entry(input=[StringField(path="q")]),
           call(a, "clean", args={"q": ref("entry", path="q")},
                output=[StringField(path="safe"), StringField(path="raw")], declassifies=["safe"]),
           call(a, "use", args={"v": ref("clean")}),
           a.edge("entry", "clean", edge_id="e1"), a.edge("clean", "use", edge_id="e2")]
    assert codes(check(ops)) == ["tainted_call_arg"]


def test_declassifying_an_undeclared_field_is_refused() -> None:
    """Declassifying a field the call does not declare is a typo, not a sanitiser."""
    a = author()
    ops = [a.entry(), call(a, "c", declassifies=["bdy"]), a.edge("entry", "c", edge_id="e1")]
    issue = only(check(ops), "undeclared_declassifies")
    assert issue.node_id == "c" and '"body"' in issue.message


def test_the_fix_names_the_output_fields_to_declassify() -> None:
    """The fix lists the call's own output fields, the names `declassifies` takes."""
    a = author()
    ops = [a.entry(input=[StringField(path="q")]),
           call(a, "search", args={"q": ref("entry", path="q")},
                output=[StringField(path="hits"), StringField(path="query")]),
           a.edge("entry", "search", edge_id="e1")]
    issue = only(check(ops), "tainted_call_arg")
    assert 'out of "hits", "query"' in issue.message
    assert '"declassifies": ["hits", "query"]' in issue.message


def test_the_fix_for_a_call_without_output_says_to_declare_fields_first() -> None:
    """A call declaring no output cannot declassify anything until it declares fields."""
    a = author()
    ops = [a.entry(input=[StringField(path="q")]),
           call(a, "search", args={"q": ref("entry", path="q")}, output=[]),
           a.edge("entry", "search", edge_id="e1")]
    issue = only(check(ops), "tainted_call_arg")
    assert 'declare the output fields of "search"' in issue.message
