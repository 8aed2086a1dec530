"""The op-log fold: convergence, last-writer-wins, cascades, and the issues it reports."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import textwrap

from hypothesis import given
from hypothesis import strategies as st

from orchestration.plan.authoring import ref
from orchestration.plan.encoding import NodeRef
from orchestration.plan.ops import fold_ops, plan_digest
from orchestration.types import (
    DEFAULT_PLAN_BOUNDS,
    AddNodeOp,
    CallDefinition,
    CallNode,
    PlanBounds,
    PlanOp,
    SetNodeFieldOp,
)

from .plans import diamond_ops, fixed_author

BASE = diamond_ops()


def test_empty_log_folds_to_the_seed() -> None:
    """Revision 0 has the default bounds and a well-defined digest."""
    view, issues = fold_ops("p", [])
    assert view.revision == 0 and view.nodes == () and view.edges == ()
    assert view.bounds == DEFAULT_PLAN_BOUNDS
    assert DEFAULT_PLAN_BOUNDS.max_nodes == 256 and DEFAULT_PLAN_BOUNDS.max_edges == 512
    assert DEFAULT_PLAN_BOUNDS.max_steps == 4096
    assert DEFAULT_PLAN_BOUNDS.max_concurrent_frames == 32
    assert DEFAULT_PLAN_BOUNDS.max_encoded_bytes == 1_048_576
    assert len(view.digest) == 64 and issues == []


@given(st.permutations(BASE), st.lists(st.sampled_from(BASE), max_size=6))
def test_any_order_and_any_duplication_converge(order: list[PlanOp], repeats: list[PlanOp]) -> None:
    """Every permutation of a log, with any ops delivered again, folds to one view and digest."""
    reference = fold_ops("p", BASE).view
    view = fold_ops("p", [*order, *repeats]).view
    assert view == reference
    assert view.digest == reference.digest


def test_fold_does_not_mutate_its_input() -> None:
    """Field edits copy what they touch; the ops and their values are left as they were."""
    a = fixed_author(start=100)
    nested = {"headers": {"accept": "json"}}
    ops = [
        *BASE,
        a.set_field("fetch", "args.opts", nested),
        a.set_field("fetch", "args.opts.headers.accept", "xml"),
    ]
    before = copy.deepcopy([op.model_dump() for op in ops])
    view = fold_ops("p", ops).view
    assert [op.model_dump() for op in ops] == before
    fetch = view.node("fetch")
    assert isinstance(fetch, CallNode)
    assert fetch.definition.args["opts"] == {"headers": {"accept": "xml"}}
    assert nested == {"headers": {"accept": "json"}}


def test_last_writer_wins_by_lamport_then_actor() -> None:
    """Concurrent edits resolve by (lamport, actorId, opId), not by arrival."""
    alice, bob = fixed_author("alice", 50), fixed_author("bob", 50)
    a_edit = alice.set_field("fetch", "args.city", "Paris")
    b_edit = bob.set_field("fetch", "args.city", "Oslo")
    for ops in ([*BASE, a_edit, b_edit], [*BASE, b_edit, a_edit]):
        fetch = fold_ops("p", ops).view.node("fetch")
        assert isinstance(fetch, CallNode)
        assert fetch.definition.args["city"] == "Oslo"  # same lamport: "bob" > "alice"


def test_set_field_can_point_an_argument_at_a_node() -> None:
    """set_node_field takes NodeRef values at dot paths."""
    a = fixed_author(start=100)
    view = fold_ops(
        "p", [*BASE, a.set_field("report", "args.body", ref("left", path="value"))]
    ).view
    report = view.node("report")
    assert isinstance(report, CallNode)
    assert report.definition.args["body"] == NodeRef("left", "first", "value")


def test_set_field_on_typed_fields_is_validated() -> None:
    """An edit that would make a definition invalid is not applied and blocks freeze."""
    a = fixed_author(start=100)
    ops = [
        *BASE,
        a.set_field("fetch", "replaySafe", "maybe"),
        a.set_field("fetch", "tool", "weather.v2"),
    ]
    view, issues = fold_ops("p", ops)
    fetch = view.node("fetch")
    assert isinstance(fetch, CallNode)
    assert fetch.definition.replay_safe is True and fetch.definition.tool == "weather.v2"
    assert [(i.code, i.node_id, i.severity) for i in issues] == [
        ("invalid_node_field", "fetch", "blocking")
    ]
    assert "replaySafe" in issues[0].message


def test_edit_before_add_is_lost_and_reported_only_if_node_missing() -> None:
    """A set_node_field sorted before its add_node is skipped; edits of absent nodes reported."""
    a = fixed_author(start=0)
    early = a.set_field("late", "args.x", 1)
    late_node = AddNodeOp(
        op_id="z",
        actor_id="alice",
        lamport=10,
        at="2026-01-01T00:00:00Z",
        node=CallNode(id="late", definition=CallDefinition(tool="t")),
    )
    ghost = a.set_field("ghost", "args.x", 1)
    view, issues = fold_ops("p", [early, late_node, ghost])
    late = view.node("late")
    assert isinstance(late, CallNode) and late.definition.args == {}
    assert [(i.code, i.node_id) for i in issues] == [("unknown_node", "ghost")]


def test_remove_node_cascades_only_recorded_edges() -> None:
    """Removal drops the recorded incident edges; a later add re-creates an edge; danglers drop."""
    a = fixed_author(start=100)
    ops = [*BASE, a.remove_node("left", ["e1"])]
    view, issues = fold_ops("p", ops)
    assert view.node("left") is None
    assert [e.id for e in view.edges] == ["e0", "e2", "e4", "e5"]
    assert [(i.code, i.edge_id) for i in issues] == [("dangling_edge", "e3")]


def test_same_id_edge_collision_is_lww_and_reported() -> None:
    """Two different edges with one id: the later wins, and the fold names both."""
    a = fixed_author(start=100)
    view, issues = fold_ops("p", [*BASE, a.edge("entry", "report", edge_id="e0")])
    e0 = next(e for e in view.edges if e.id == "e0")
    assert (e0.from_, e0.to) == ("entry", "report")
    assert [i.code for i in issues] == ["duplicate_edge_id"]
    assert "entry→fetch" in issues[0].message and "entry→report" in issues[0].message


def test_readding_a_node_keeps_its_position() -> None:
    """Re-adding an id replaces it in place; adding after a removal appends."""
    a = fixed_author(start=100)
    replaced = fold_ops("p", [*BASE, a.call("fetch", tool="other")]).view
    assert [n.id for n in replaced.nodes] == ["entry", "fetch", "left", "right", "both", "report"]
    readded = fold_ops("p", [*BASE, a.remove_node("fetch"), a.call("fetch", tool="other")]).view
    assert [n.id for n in readded.nodes][-1] == "fetch"


def test_conflicting_ops_resolve_deterministically() -> None:
    """Two different ops with one identity: one is kept, the same one in any order."""
    one = SetNodeFieldOp(
        op_id="x", actor_id="a", lamport=99, at="2026-01-01T00:00:00Z", node_id="fetch",
        path="args.city", value="A",
    )
    two = SetNodeFieldOp(
        op_id="x", actor_id="a", lamport=99, at="2026-01-01T00:00:00Z", node_id="fetch",
        path="args.city", value="B",
    )
    v1, i1 = fold_ops("p", [*BASE, one, two])
    v2, i2 = fold_ops("p", [*BASE, two, one])
    assert v1 == v2 and [i.code for i in i1] == ["conflicting_op"] == [i.code for i in i2]


def test_bounds_and_phase_ops() -> None:
    """set_bounds replaces bounds wholesale; set_node_phase sets and clears labels."""
    a = fixed_author(start=100)
    bounds = PlanBounds(
        max_nodes=10, max_edges=10, max_steps=5, max_concurrent_frames=2, max_encoded_bytes=4096
    )
    view = fold_ops(
        "p",
        [
            *BASE,
            a.set_bounds(bounds),
            a.set_phase("fetch", "gather"),
            a.set_phase("left", "x"),
            a.set_phase("left", None),
        ],
    ).view
    assert view.bounds == bounds
    assert view.node("fetch").phase == "gather"  # type: ignore[union-attr]
    assert view.node("left").phase is None  # type: ignore[union-attr]


def test_digest_is_sensitive_to_content_identity_and_revision() -> None:
    """Any staged value, the plan id, and the revision all change the digest."""
    a = fixed_author(start=100)
    base = fold_ops("p", BASE).view.digest
    assert fold_ops("q", BASE).view.digest != base
    assert (
        fold_ops(
            "p", [*BASE, a.set_field("fetch", "args.city", ref("entry", path="city"))]
        ).view.digest
        != base
    )
    assert (
        fold_ops("p", [*BASE, a.set_field("report", "args.path", "out2.txt")]).view.digest != base
    )
    same_content_later = fold_ops("p", [*BASE, a.set_field("report", "args.path", "out.txt")]).view
    assert same_content_later.digest != base  # revision is content


def test_lookalike_dict_changes_the_digest() -> None:
    """A NodeRef and a dict that looks like one digest differently."""
    a = fixed_author(start=100)
    real = fold_ops("p", [*BASE, a.set_field("report", "args.x", NodeRef("left"))]).view.digest
    b = fixed_author(start=100)
    fake = fold_ops(
        "p", [*BASE, b.set_field("report", "args.x", {"node": "left", "select": "first"})]
    ).view.digest
    assert real != fake


def test_plan_digest_matches_the_view() -> None:
    """plan_digest recomputes the digest a fold stored on the view."""
    view = fold_ops("p", BASE).view
    assert plan_digest(view) == view.digest


def test_digest_is_the_same_in_other_processes() -> None:
    """The same plan has the same hex in processes with different hash seeds."""
    script = textwrap.dedent(
        """
        import datetime as dt, re
        from orchestration.plan.ops import fold_ops
        from tests.unit.core.plans import diamond_ops, fixed_author
        a = fixed_author(start=100)
        ops = diamond_ops() + [a.set_field("report", "args.meta", {"tags": {"x", "y", "z"},
              "when": dt.datetime(2026, 1, 1), "pat": re.compile("a+"), 7: frozenset({"q", "r"})})]
        print(fold_ops("p", ops).view.digest)
        """
    )
    digests = set()
    for seed in ("1", "2", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run(
            [sys.executable, "-c", script],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__)))),
        )
        digests.add(out.stdout.strip())
    assert len(digests) == 1 and len(next(iter(digests))) == 64
