"""Freeze is total: on random op logs and random graphs it returns issues and never raises."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from orchestration.plan.encoding import NodeRef
from orchestration.plan.raw import diff_views
from orchestration.review.outline import plan_outline
from orchestration.review.render import render_plan
from orchestration.run.routes import BranchId, EdgeSegment, JoinSegment
from orchestration.types import (
    AddEdgeOp,
    AddNodeOp,
    AuthorityClaim,
    BooleanField,
    BranchNode,
    CallDefinition,
    CallNode,
    EmitRows,
    EmitValue,
    EntryDefinition,
    EntryNode,
    EnumField,
    JoinNode,
    LoopDefinition,
    LoopNode,
    LoopUntil,
    MapDefinition,
    MapNode,
    NumberField,
    PlanBounds,
    PlanEdge,
    PlanIssue,
    ReasonDefinition,
    ReasonNode,
    RemoveEdgeOp,
    RemoveNodeOp,
    SelectDefinition,
    SelectNode,
    SetBoundsOp,
    SetNodeFieldOp,
    SetNodePhaseOp,
    StringField,
    TextPart,
    TransformDefinition,
    TransformNode,
    TransformStep,
)

from .helpers import FakeCell, check, fold

IDS = ["entry", "a", "b", "c", "d", "j", "k", "Bad.Id"]
EDGE_IDS = ["e1", "e2", "e3", "e4", "e5", "e6", "e:7", "e8"]
HANDLES = [
    "always", "error", "match", "no_match", "default", "case_x", "case_y", "case_", "item", "body"
]
TOOLS = ["web.fetch", "files.read_json", "image.render", "blob.get", "legacy.tool", "nope"]
SCHEMAS = [
    '{"type": "object", "properties": {"x": {"type": "string"}}}',
    '{"type": "string"}',
    "not json",
    "[]",
    '{"type": "object", "required": 3}',
    '{"$ref": "https://example.org/schema.json", "type": "object"}',
]
FIELD_PATHS = ["args.x", "args.y.z", "tool", "cases", "maxAttempts", "output", "predicate"]
STEPS = ["artifact_json_get", "artifact_head", "artifact_cat", "artifact_nope"]

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12), st.binary(max_size=8),
    st.just("lorem ipsum"),
)
plain = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.text(max_size=5), inner, max_size=3),
    ),
    max_leaves=8,
)
segments = st.one_of(
    st.builds(EdgeSegment, edge=st.sampled_from(EDGE_IDS)),
    st.builds(JoinSegment, join=st.sampled_from(IDS),
              of=st.lists(st.sampled_from(EDGE_IDS), max_size=3).map(tuple)),
)
refs = st.builds(
    NodeRef,
    st.sampled_from(IDS),
    st.sampled_from(["first", "last", "all", 0, 2]),
    st.one_of(st.none(), st.sampled_from(["x", "body", "value", "via", "a.b", ""])),
    st.one_of(st.none(), st.lists(segments, max_size=4).map(lambda s: BranchId(segments=tuple(s)))),
)
args = st.recursive(
    st.one_of(scalars, refs),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.text(max_size=4), inner, max_size=3)),
    max_leaves=6,
)
fields = st.lists(
    st.one_of(
        st.builds(StringField, path=st.sampled_from(["x", "body", "a.b", "", "a..b"]),
                  max_bytes=st.one_of(st.none(), st.integers(0, 5))),
        st.builds(NumberField, path=st.sampled_from(["x", "n"])),
        st.builds(BooleanField, path=st.just("flag")),
        st.builds(EnumField, path=st.just("mode"),
                  values=st.lists(st.sampled_from(["a", "b"]), max_size=3).map(tuple)),
    ),
    max_size=3,
).map(tuple)
claims = st.lists(
    st.builds(AuthorityClaim, capability=st.sampled_from(["http", "mail"]),
              scope=st.sampled_from(["*", "x"]),
              verb=st.sampled_from(["list", "read", "create", "update", "delete"])),
    max_size=3,
).map(tuple)


def _node(node_id: str, kind: str, data: st.DataObject) -> Any:
    draw = data.draw
    phase = draw(st.one_of(st.none(), st.sampled_from(["p1", "p2", ""])))
    if kind == "entry":
        return EntryNode(id=node_id, phase=phase, definition=EntryDefinition(input=draw(fields)))
    if kind == "call":
        return CallNode(id=node_id, phase=phase, definition=CallDefinition(
            tool=draw(st.sampled_from(TOOLS)),
            args=draw(st.dictionaries(st.text(max_size=4), args, max_size=3)),
            output=draw(fields), authority=draw(claims),
            on_missing_value=draw(st.sampled_from([None, "fail", "omit"])),
            replay_safe=draw(st.sampled_from([None, True, False])),
            on_indeterminate=draw(st.sampled_from([None, "retry", "halt", "skip"])),
            declassifies=draw(st.one_of(st.none(), st.lists(st.sampled_from(["x", "body"]),
                                                           max_size=2).map(tuple))),
        ))
    if kind == "reason":
        prompt = draw(st.lists(st.one_of(st.builds(TextPart, text=st.text(max_size=5)), refs),
                               max_size=3))
        return ReasonNode(id=node_id, phase=phase, definition=ReasonDefinition(
            prompt=tuple(prompt), output_schema=draw(st.sampled_from(SCHEMAS)),
            max_attempts=draw(st.integers(-1, 3))))
    if kind == "transform":
        steps = draw(st.lists(st.builds(
            TransformStep, name=st.sampled_from(STEPS),
            args=st.one_of(st.none(), st.dictionaries(st.sampled_from(["n", "path", "z"]), plain,
                                                      max_size=2))), max_size=3))
        emit = draw(st.one_of(st.just(EmitRows()),
                              st.builds(EmitValue, field=st.sampled_from(["x", "t"]))))
        return TransformNode(id=node_id, phase=phase, definition=TransformDefinition(
            source=draw(refs), steps=tuple(steps), emit=emit, output=draw(fields)))
    if kind in ("branch", "select"):
        evaluator = draw(st.sampled_from(["fake", "other"]))
        predicate = draw(st.one_of(plain, st.just({"bad": 1})))
        if kind == "branch":
            return BranchNode.model_validate({"id": node_id, "phase": phase, "definition": {
                "evaluator": evaluator, "predicate": predicate}})
        return SelectNode(id=node_id, phase=phase, definition=SelectDefinition(
            evaluator=evaluator, predicate=predicate,
            cases=tuple(draw(st.lists(st.sampled_from(["x", "y", ""]), max_size=3)))))
    if kind == "map":
        return MapNode(id=node_id, phase=phase, definition=MapDefinition(
            over=draw(refs), max_items=draw(st.integers(1, 5)),
            concurrency=draw(st.one_of(st.none(), st.integers(1, 3))),
            tolerated_failures=draw(st.one_of(st.none(), st.integers(0, 2)))))
    if kind == "loop":
        return LoopNode(id=node_id, phase=phase, definition=LoopDefinition(
            max_iterations=draw(st.integers(1, 5)),
            until=LoopUntil(
                evaluator=draw(st.sampled_from(["fake", "other"])),
                predicate=draw(st.one_of(plain, st.just({"bad": 1}))),
            ),
            watch=draw(st.one_of(st.none(), refs)),
            fail_unless_met=draw(st.booleans())))
    return JoinNode(id=node_id, phase=phase)


KINDS = ["entry", "call", "reason", "transform", "branch", "select", "join", "map", "loop"]


@st.composite
def op_logs(draw: Any) -> list[Any]:
    data = draw(st.data())
    counter = itertools.count(1)

    def ident() -> dict[str, Any]:
        return {"op_id": f"op{next(counter)}", "actor_id": draw(st.sampled_from(["a", "b"])),
                "lamport": draw(st.integers(0, 6)), "at": "2026-01-01T00:00:00Z"}

    ops: list[Any] = []
    for _ in range(draw(st.integers(0, 18))):
        choice = draw(st.sampled_from(["node", "node", "edge", "edge", "edge", "rm_node",
                                       "rm_edge", "field", "phase", "bounds"]))
        if choice == "node":
            node = _node(draw(st.sampled_from(IDS)), draw(st.sampled_from(KINDS)), data)
            ops.append(AddNodeOp(node=node, **ident()))
        elif choice == "edge":
            edge = PlanEdge.model_validate({"id": draw(st.sampled_from(EDGE_IDS)),
                                            "from": draw(st.sampled_from(IDS)),
                                            "to": draw(st.sampled_from(IDS)),
                                            "handle": draw(st.sampled_from(HANDLES))})
            ops.append(AddEdgeOp(edge=edge, **ident()))
        elif choice == "rm_node":
            ops.append(RemoveNodeOp(node_id=draw(st.sampled_from(IDS)),
                                    incident_edge_ids=tuple(draw(st.lists(st.sampled_from(EDGE_IDS),
                                                                          max_size=2))), **ident()))
        elif choice == "rm_edge":
            ops.append(RemoveEdgeOp(edge_id=draw(st.sampled_from(EDGE_IDS)), **ident()))
        elif choice == "field":
            ops.append(SetNodeFieldOp(node_id=draw(st.sampled_from(IDS)),
                                      path=draw(st.sampled_from(FIELD_PATHS)),
                                      value=draw(args), **ident()))
        elif choice == "phase":
            ops.append(SetNodePhaseOp(node_id=draw(st.sampled_from(IDS)),
                                      phase=draw(st.one_of(st.none(), st.text(max_size=3))),
                                      **ident()))
        else:
            ops.append(SetBoundsOp(bounds=PlanBounds(
                max_nodes=draw(st.integers(1, 10)), max_edges=draw(st.integers(0, 10)),
                max_steps=10, max_concurrent_frames=1,
                max_encoded_bytes=draw(st.integers(1, 5000))), **ident()))
    return ops


def _assert_total(issues: list[PlanIssue]) -> None:
    assert all(isinstance(i, PlanIssue) for i in issues)
    assert "internal_error" not in [i.code for i in issues], [i.message for i in issues]


@given(op_logs())
def test_validate_never_raises_on_random_op_logs(ops: list[Any]) -> None:
    """Any well-typed op log folds to a view that freeze answers with issues, never an error."""
    issues = check(ops, cells=[FakeCell(), FakeCell("other", fail_load=True)])
    _assert_total(issues)
    view, _ = fold(ops)
    render_plan(view, "operator", issues)
    render_plan(view, "model")
    plan_outline(view, "editable", issues)
    diff_views(fold(ops[: len(ops) // 2])[0], view)


@st.composite
def dags(draw: Any) -> list[Any]:
    """A random DAG in topological order (edges only go forward) with random kinds: joins
    and diamonds occur often, which exercises dominators, regions and route counting."""
    data = draw(st.data())
    n = draw(st.integers(2, 12))
    names = [f"n{i}" for i in range(n)]
    counter = itertools.count(1)
    ops: list[Any] = [AddNodeOp(node=EntryNode(id="n0"), op_id="op0", actor_id="a", lamport=0,
                                at="2026-01-01T00:00:00Z")]
    for name in names[1:]:
        kind = draw(st.sampled_from(["call", "join", "join", "branch", "select", "reason"]))
        ops.append(AddNodeOp(node=_node(name, kind, data), op_id=f"op{next(counter)}",
                             actor_id="a", lamport=1, at="2026-01-01T00:00:00Z"))
    for k in range(draw(st.integers(1, 3 * n))):
        i = draw(st.integers(0, n - 2))
        j = draw(st.integers(i + 1, n - 1))
        edge = PlanEdge.model_validate({"id": f"e{k}", "from": names[i], "to": names[j],
                                        "handle": draw(st.sampled_from(HANDLES))})
        ops.append(AddEdgeOp(edge=edge, op_id=f"op{next(counter)}", actor_id="a", lamport=2,
                             at="2026-01-01T00:00:00Z"))
    return ops


@given(dags())
def test_validate_never_raises_on_random_dags(ops: list[Any]) -> None:
    """Random acyclic graphs with many joins are analysed without error."""
    issues = check(ops)
    _assert_total(issues)
    assert "cycle" not in [i.code for i in issues]
    view, _ = fold(ops)
    render_plan(view, "operator", issues)
