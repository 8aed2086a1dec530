"""Building blocks: trusted event builders match validated models; persistent tables."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestration.plan.encoding import NodeRef
from orchestration.run.engine import builders as build
from orchestration.run.resolve import MISSING, read_path, resolve_ref
from orchestration.run.routes import BranchId, EdgeSegment, JoinSegment
from orchestration.run.tables import Table
from orchestration.types import (
    EdgeTaken,
    EdgeTakenRecord,
    FrameRef,
    FrontierSnapshot,
    JoinArrival,
    JoinState,
    NodeEntered,
    NodeOutput,
    NodeSettled,
    OutcomeOk,
    OutputItem,
    PendingFrame,
)


def same(built: Any, validated: Any) -> None:
    assert built == validated
    assert built.model_dump_json() == validated.model_dump_json()
    assert built.model_dump() == validated.model_dump()
    assert repr(built) == repr(validated)


def test_trusted_builders_equal_validated_models() -> None:
    """Each builder yields an object equal to, and serialising like, the validated model."""
    route = BranchId(segments=(EdgeSegment(edge="e0"), JoinSegment(join="j", of=("a", "b"))))
    same(build.edge_segment("e0"), EdgeSegment(edge="e0"))
    same(build.join_segment("j", ("a", "b")), JoinSegment(join="j", of=("a", "b")))
    same(build.output_item({"v": [1]}), OutputItem(json_={"v": [1]}))
    same(build.branch_id(route.segments), route)
    ref = FrameRef(node_id="n", kind="call", branch_id=route, via_edge_id="e0")
    same(build.frame_ref("n", "call", route, "e0"), ref)
    items = (OutputItem(json_={"v": 1}),)
    output = NodeOutput(items=items, branch_id=route)
    same(build.node_output(items, route), output)
    same(build.outcome_ok(output), OutcomeOk(output=output))
    same(build.node_entered(ref, "t"), NodeEntered(frame=ref, at="t"))
    same(
        build.node_settled(ref, OutcomeOk(output=output), None, "t"),
        NodeSettled(frame=ref, outcome=OutcomeOk(output=output), at="t"),
    )
    table = {"n:e2:e0": output}
    same(build.pending_frame(ref, table, {}), PendingFrame(frame=ref, outputs=table))
    same(
        build.edge_taken("e1", "always", ref, ref, table, {}, {"why": 1}, "t"),
        EdgeTaken.model_validate(
            {
                "edgeId": "e1",
                "handle": "always",
                "from": ref,
                "to": ref,
                "outputs": table,
                "artifacts": {},
                "evidence": {"why": 1},
                "at": "t",
            }
        ),
    )
    pending = PendingFrame(frame=ref, outputs=table)
    same(build.frontier_snapshot((pending,), (), "t"), FrontierSnapshot(frames=(pending,), at="t"))
    same(
        build.edge_taken_record("e1", "always", None),
        EdgeTakenRecord(edge_id="e1", handle="always"),
    )
    arrival = JoinArrival(branch=route, edge_id="e1", outputs=table)
    same(build.join_arrival(route, "e1", table, {}), arrival)
    same(
        build.join_state("j", "j@", (arrival,), 2),
        JoinState(node_id="j", correlation_key="j@", arrivals=(arrival,), required=2),
    )
    copied = build.frame_ref("n", "call", route, "e0").model_copy(update={"via_edge_id": "x"})
    assert copied.via_edge_id == "x"


def test_a_builder_must_fill_every_field() -> None:
    """A builder spec that leaves a field unfilled, or names one the model lacks, is refused."""
    for params, renamed in (("other", {}), ("edge", {"extra": "edge"})):
        with pytest.raises(TypeError, match="EdgeSegment builder must fill exactly"):
            build._builder(EdgeSegment, params, **renamed)


keys = st.from_regex(r"[a-c]:(e1:[0-9]){0,3}", fullmatch=True)


@given(
    st.lists(st.tuples(keys, st.integers()), max_size=30),
    st.lists(st.tuples(keys, st.integers()), max_size=30),
)
def test_tables_behave_like_dicts_sorted(
    first: list[tuple[str, int]], second: list[tuple[str, int]]
) -> None:
    """A table built by set/union equals the dict built the same way, and iterates sorted."""
    table: Table[int] = Table()
    plain: dict[str, int] = {}
    for key, value in first:
        table = table.set(key, value)
        plain[key] = value
    other = Table(second)
    union = Table.union([table, other])
    merged = {**plain, **dict(second)}
    assert union == merged and table == plain
    assert list(union) == sorted(merged)
    for node in ("a", "b", "c"):
        expected = min((k for k in merged if k.startswith(node + ":")), default=None)
        assert union.first_key(node) == expected
    assert Table.of(union) is union


def test_a_fan_out_shares_one_table() -> None:
    """Setting a key leaves the original untouched; equal tables compare equal to dicts."""
    base: Table[int] = Table({"a:": 1})
    child = base.set("b:e1:x", 2)
    assert dict(base) == {"a:": 1} and dict(child) == {"a:": 1, "b:e1:x": 2}
    assert child.to_dict() == {"a:": 1, "b:e1:x": 2}


def test_reading_paths_and_references() -> None:
    """Dot paths read dicts and canonical list indexes; references select items."""
    value = {"a": [{"b": 1}, None], "z": None}
    assert read_path(value, "a.0.b") == 1
    assert read_path(value, "z") is None
    assert read_path(value, "a.01") is MISSING
    assert read_path(value, "a.2") is MISSING
    assert read_path(value, "a..b") is MISSING
    assert read_path(value, "") is value
    output = NodeOutput(
        items=(OutputItem(json_={"v": 1}), OutputItem(json_={"v": 2})), branch_id=BranchId()
    )
    table = Table({"n:e1:x": output})
    assert resolve_ref(NodeRef("n", "last", path="v"), table) == 2
    assert resolve_ref(NodeRef("n", "all", path="1.v"), table) == 2
    assert resolve_ref(NodeRef("n", {"index": 0}, path="v"), table) == 1
    assert resolve_ref(NodeRef("n", {"index": 5}), table) is MISSING
    assert resolve_ref(NodeRef("n", {"index": -1}), table) is MISSING
    assert resolve_ref(NodeRef("m"), table) is MISSING
    by_route = NodeRef("n", branch_id=BranchId(segments=(EdgeSegment(edge="x"),)))
    assert resolve_ref(by_route, table) == {"v": 1}
    assert resolve_ref(NodeRef("n"), {"n:e1:x": output}) == {"v": 1}
