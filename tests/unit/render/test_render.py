"""The operator's prose: golden files for a plan using every node kind, clones, and diffs.

Regenerate the goldens after an intended change with ``UPDATE_GOLDENS=1 pytest tests/unit/render``
and review the diff of ``tests/unit/render/golden/`` like any other change.
"""

from __future__ import annotations

import os
from pathlib import Path

from orchestration.plan.authoring import ref
from orchestration.plan.encoding import NodeRef
from orchestration.plan.ops import plan_digest
from orchestration.plan.raw import diff_views
from orchestration.review.render import describe_ref, format_value, render_diff, render_plan
from orchestration.testing import PlanSketch
from orchestration.types import CloneProvenance, StringField, TemplateProvenance

from ..validation.helpers import author, call, check, every_kind_ops, fold

GOLDEN = Path(__file__).parent / "golden"


def _golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDENS") == "1":
        path.write_text(text)
    assert path.exists(), f"missing golden {path}; run with UPDATE_GOLDENS=1 to create it"
    assert text == path.read_text()


def test_operator_prose_of_every_node_kind() -> None:
    """The operator view of the every-kind plan matches its golden file."""
    ops = every_kind_ops()
    view, _ = fold(ops)
    _golden("every_kind.operator.txt", render_plan(view, "operator", check(ops)))


def test_model_prose_of_every_node_kind() -> None:
    """The model view shows references in their wire form, ready to copy into ops."""
    view, _ = fold(every_kind_ops())
    text = render_plan(view, "model")
    assert '{"$ref": {"node": "fetch", "select": "first", "path": "body"}}' in text
    _golden("every_kind.model.txt", text)


def test_clone_warning_names_what_repeats() -> None:
    """A clone's rendering warns that approving repeats what the parent completed."""
    view, _ = fold(every_kind_ops())
    clone = view.model_copy(update={"provenance": CloneProvenance(
        parent="parent-plan", parent_digest="ab" * 32, parent_revision=30,
        completed_at_clone=("entry", "fetch", "upper", "fetch"))})
    clone = clone.model_copy(update={"digest": plan_digest(clone)})
    text = render_plan(clone)
    assert ("WARNING: the parent already completed entry, fetch, upper; approving this repeats "
            "them.") in text
    _golden("clone.operator.txt", text)


def test_template_lineage_lists_its_arguments() -> None:
    """A plan instantiated from a template shows the template and its arguments."""
    view, _ = fold([author().entry()])
    text = render_plan(view.model_copy(update={"provenance": TemplateProvenance(
        template="daily_report", args={"city": "Paris", "days": 3})}))
    assert "Lineage: instantiated from template daily_report\n  city: \"Paris\"\n  days: 3" in text


def test_invalid_plan_renders_what_is_unset_and_its_issues() -> None:
    """A plan freeze refuses still renders: unset decisions are shown as NOT SET."""
    a = author()
    ops = [a.entry(), a.call("risky", tool="shell.exec", args={"cmd": "rm -rf /tmp/x"},
                             on_missing_value=None),
           call(a, "orphan"), a.edge("entry", "risky", edge_id="e1")]
    view, _ = fold(ops)
    text = render_plan(view, "operator", check(ops))
    assert "NO AUTHORITY CLAIMED" in text and "replay-safe: NOT SET" in text
    assert "(UNREACHABLE: never runs)" in text
    _golden("invalid.operator.txt", text)


def test_cyclic_plan_still_renders_every_node() -> None:
    """Rendering is total: a cyclic plan lists every node once."""
    a = author()
    ops = [a.entry(), call(a, "x"), call(a, "y"), a.edge("entry", "x"), a.edge("x", "y"),
           a.edge("y", "x", "error")]
    view, _ = fold(ops)
    text = render_plan(view)
    assert text.count("CALL `x`") == 1 and text.count("CALL `y`") == 1


def test_diff_prose_for_re_review() -> None:
    """The diff prose lists added/removed nodes, changed fields by path, and edge changes."""
    a = author()
    ops = every_kind_ops(a)
    before, _ = fold(ops)
    edits = [
        a.set_field("fetch", "args.units", "imperial"),
        a.set_field("fetch", "args.city", "Paris"),
        a.set_phase("skip_note", "report"),
        a.remove_node("alert", ["e_alert"]),
        call(a, "page", tool="mail.send", output=[StringField(path="id")]),
        a.edge("fetch", "page", "error", edge_id="e_alert"),
    ]
    after, _ = fold([*ops, *edits])
    text = render_diff(diff_views(before, after))
    assert 'args.units: "metric" ⇒ "imperial"' in text
    assert 'args.city: ← entry.city (first) ⇒ "Paris"' in text
    assert "- e_alert: fetch → alert (error)" in text and "+ e_alert: fetch → page (error)" in text
    _golden("diff.operator.txt", text)


def test_no_change_diff() -> None:
    """A diff of a view with itself says there is nothing to re-review."""
    view, _ = fold(every_kind_ops())
    assert "No changes to nodes or edges." in render_diff(diff_views(view, view))


def test_value_formatting_is_labelled() -> None:
    """Non-JSON staged values are labelled so an operator cannot mistake them for text."""
    import datetime as dt
    import re

    assert format_value(b"\x00\xff") == "bytes(2: 00ff)"
    assert format_value(dt.datetime(2026, 1, 2, 3, 4)) == "datetime(2026-01-02T03:04:00)"
    assert format_value(dt.timedelta(minutes=2)) == "timedelta(120s)"
    assert format_value(re.compile("a+", re.I)) == 'regex("a+", i)'
    assert format_value(re.compile(b"a")) == "regex(bytes(1: 61))"
    assert format_value({1: "x"}) == 'map{1: "x"}'
    assert format_value({"b", "a"}) == 'set{"a", "b"}'
    assert describe_ref(NodeRef("fetch", 3, "body")) == "← fetch.body (item 3)"
    assert describe_ref(ref("j", select="all")) == "← j (all)"


def test_a_short_replay_safe_call_says_it_runs_as_a_local_activity() -> None:
    """The fast path shows in the operator view, only for replay-safe calls of short tools,
    and never changes the digest (the path is the worker's choice, not the plan's)."""
    view = (
        PlanSketch("p-fast")
        .entry()
        .call("quick", "text.upper")
        .call("risky", "text.upper", replay_safe=False, on_indeterminate="halt")
        .call("slow", "files.write")
        .chain("entry", "quick", "risky", "slow")
        .view()
    )
    marker = "runs as: a local activity in the worker"
    assert marker not in render_plan(view, "operator")
    fast = render_plan(view, "operator", short_tools={"text.upper"})
    blocks = {name: fast.split(f"`{name}`", 1)[1].split("\n\n", 1)[0] for name in
              ("quick", "risky", "slow")}
    assert marker in blocks["quick"]
    assert marker not in blocks["risky"]  # not replay-safe: an ordinary activity regardless
    assert marker not in blocks["slow"]
    assert fast.count(marker) == 1


def test_a_join_that_closes_early_says_what_it_cancels() -> None:
    """An ``any`` or quorum join states the arrivals it continues after and the cancellation."""
    from orchestration.types import JoinQuorum

    def plan(strategy: object) -> str:
        sketch = PlanSketch("p-join").entry().call("f", "t.f").join("j", strategy)  # type: ignore[arg-type]
        for arm in ("a", "b", "c"):
            sketch.call(arm, "t.x").edge("f", arm).edge(arm, "j")
        return render_plan(sketch.edge("entry", "f").view(), "operator")

    assert "waits for 3 arrivals from the fork at `f`" in plan(None)
    assert "continues after the first arrival of 3" in plan("any")
    quorum = plan(JoinQuorum(quorum=2))
    assert "continues after the first 2 arrivals of 3" in quorum and "CANCELLED" in quorum
