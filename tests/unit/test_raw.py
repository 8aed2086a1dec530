"""Raw views and structural diffs between revisions."""

from __future__ import annotations

import pytest

from orchestration.plan.raw import diff_views, raw_diff, raw_ops, raw_plan
from orchestration.store.memory import MemoryPlanStore
from orchestration.types import JoinNode

from .validation.helpers import author, call, every_kind_ops, fold


def test_diff_reports_nodes_fields_and_edges() -> None:
    """Added, removed and changed nodes (field by field, with dot paths) and edge changes."""
    a = author()
    base = every_kind_ops(a)
    before, _ = fold(base)
    after, _ = fold([
        *base,
        a.set_field("notify", "args.to.0", "team@example.org"),
        a.set_field("summarize", "maxAttempts", 5),
        a.remove_node("skip_note", ["e_skip"]),
        call(a, "extra"),
        a.edge("gate", "extra", "no_match", edge_id="e_skip"),
        a.edge("channel", "archive", "error", edge_id="e_new"),
    ])
    diff = diff_views(before, after)
    assert [n.id for n in diff.nodes_added] == ["extra"]
    assert [n.id for n in diff.nodes_removed] == ["skip_note"]
    changes = {c.node_id: [(f.path, f.before, f.after) for f in c.fields]
               for c in diff.nodes_changed}
    assert changes == {
        "summarize": [("maxAttempts", 2, 5)],
        "notify": [("args.to.0", "ops@example.org", "team@example.org")],
    }
    assert [e.id for e in diff.edges_added] == ["e_skip", "e_new"]
    assert [e.id for e in diff.edges_removed] == ["e_skip"]
    assert diff.from_.revision == before.revision and diff.to.digest == after.digest


def test_changed_values_are_compared_as_the_digest_does() -> None:
    """1 and 1.0, or 1 and True, are different values, and a kind change is reported."""
    a = author()
    base = [a.entry(), call(a, "x", args={"n": 1, "flag": 1})]
    before, _ = fold(base)
    after, _ = fold([*base, a.set_field("x", "args.n", 1.0), a.set_field("x", "args.flag", True),
                     a.add_node(JoinNode(id="entry"))])
    diff = diff_views(before, after)
    changes = {c.node_id: [f.path for f in c.fields] for c in diff.nodes_changed}
    assert changes["x"] == ["args.n", "args.flag"]
    assert "kind" in changes["entry"]


def test_a_list_of_a_new_length_is_reported_whole() -> None:
    """A list that grew or shrank is one change at its path."""
    a = author()
    base = [a.entry(), call(a, "x", args={"to": ["a"]})]
    after, _ = fold([*base, a.set_field("x", "args.to", ["a", "b"])])
    change = diff_views(fold(base)[0], after).nodes_changed[0].fields[0]
    assert (change.path, change.before, change.after) == ("args.to", ["a"], ["a", "b"])


@pytest.mark.asyncio
async def test_raw_views_read_the_store() -> None:
    """raw_plan, raw_ops and raw_diff read revisions from a store, 'current' included."""
    store = MemoryPlanStore()
    await store.create_plan("p")
    ops = every_kind_ops()
    await store.append_ops("p", ops[:10])
    await store.append_ops("p", ops[10:])
    current = await raw_plan(store, "p")
    assert current.revision == len(ops)
    assert (await raw_plan(store, "p", 10)).revision == 10
    assert len(await raw_ops(store, "p", through_revision=3)) == 3
    diff = await raw_diff(store, "p", 10, "current")
    assert diff.to.digest == current.digest and diff.from_.revision == 10
    assert {n.id for n in diff.nodes_added} == {n.id for n in current.nodes} - {
        n.id for n in (await raw_plan(store, "p", 10)).nodes}
    with pytest.raises(ValueError, match="neither a revision number nor 'current'"):
        await raw_diff(store, "p", "latest", "current")
