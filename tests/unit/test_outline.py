"""Outline and slices: one flat level, verbatim ids and tools, issue counts, boundaries."""

from __future__ import annotations

import pytest

from orchestration.review.outline import UnknownSliceError, plan_outline, plan_slice

from .validation.helpers import author, call, check, every_kind_ops, fold


def test_outline_lists_phases_in_authoring_order_with_verbatim_ids() -> None:
    """Each phase lists its node ids and call tools verbatim; unphased nodes are grouped too."""
    view, _ = fold(every_kind_ops())
    outline = plan_outline(view, "editable", [])
    assert [p.phase for p in outline.phases] == ["intake", "gather", "decide", "report"]
    gather = outline.phases[1]
    assert gather.node_ids == ("fetch", "upper", "lower", "both")
    assert gather.tools == ("web.fetch", "text.upper", "text.lower")
    assert gather.summary == "gather: 4 node(s) — 3 call, 0 reason, 0 transform"
    assert outline.unphased is not None and outline.unphased.node_ids == ("skip_note", "alert")
    assert outline.node_count == 15 and outline.digest == view.digest


def test_outline_counts_freeze_issues_per_phase() -> None:
    """Issues are counted in the phase of the node they name (or of an edge's source)."""
    a = author()
    ops = [a.entry(phase="in"), call(a, "x", authority=[], phase="work"),
           call(a, "y", tool="nope", phase="work"), a.edge("entry", "x", edge_id="e1"),
           a.edge("x", "y", "match", edge_id="bad")]
    issues = check(ops)
    outline = plan_outline(fold(ops)[0], "editable", issues)
    counts = {p.phase: p.issue_count for p in outline.phases}
    assert counts == {"in": 0, "work": 3}
    assert outline.unphased is None


def test_slice_by_phase_has_its_boundary_and_issues() -> None:
    """A phase slice carries its nodes in full, the ids across its boundary, and its issues."""
    ops = every_kind_ops()
    view, _ = fold(ops)
    sliced = plan_slice(view, phase="decide", issues=check(ops))
    assert [n.id for n in sliced.nodes] == ["summarize", "gate"]
    assert sliced.phase == "decide"
    assert sliced.boundary.incoming == ("both",)
    assert sliced.boundary.outgoing == ("read_doc", "skip_note")


def test_slice_by_node() -> None:
    """A node slice is that node with its predecessors and successors."""
    view, _ = fold(every_kind_ops())
    sliced = plan_slice(view, node="fetch")
    assert [n.id for n in sliced.nodes] == ["fetch"] and sliced.phase is None
    assert sliced.boundary.incoming == ("entry",)
    assert sliced.boundary.outgoing == ("upper", "lower", "alert")


def test_unknown_slice_lists_the_valid_choices() -> None:
    """Slicing an unknown phase or node raises, listing what exists."""
    view, _ = fold(every_kind_ops())
    with pytest.raises(UnknownSliceError, match="valid phases") as err:
        plan_slice(view, phase="nope")
    assert err.value.code == "unknown_phase" and "'gather'" in err.value.message
    with pytest.raises(UnknownSliceError, match="valid node ids: entry, fetch"):
        plan_slice(view, node="nope")
    with pytest.raises(UnknownSliceError):
        plan_slice(view)
