"""Fold issues come first; a same-id edge collision is advisory and names both edges."""

from __future__ import annotations

from .helpers import author, call, check, codes


def test_duplicate_edge_id_is_an_advisory_naming_both_edges() -> None:
    """Two different edges under one id: LWW keeps one; freeze warns, naming both, and passes."""
    a = author()
    ops = [a.entry(), call(a, "x"), call(a, "y"),
           a.edge("entry", "x", edge_id="e1"), a.edge("x", "y", edge_id="e2"),
           a.edge("entry", "y", edge_id="e2")]
    issues = check(ops)
    assert codes(issues) == ["duplicate_edge_id"]
    first = issues[0]
    assert first.severity == "advisory" and first.edge_id == "e2"
    assert "x→y (always)" in first.message and "entry→y (always)" in first.message
    assert "rename one" in first.message


def test_fold_issues_precede_freeze_issues() -> None:
    """A dangling edge (advisory, from the fold) is listed before the freeze findings."""
    a = author()
    ops = [a.entry(), call(a, "x", authority=[]), a.edge("entry", "x", edge_id="e1"),
           a.edge("x", "gone", edge_id="e2")]
    issues = check(ops)
    assert codes(issues) == ["dangling_edge", "missing_authority"]
    assert issues[0].severity == "advisory"
