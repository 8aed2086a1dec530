"""Scenario tests: exact event sequences, outputs and projections of small plans."""

from __future__ import annotations

import asyncio

import pytest

from orchestration.errors import InvalidRunInputError
from orchestration.plan.encoding import NodeRef
from orchestration.run.engine.machine import Dispatch, Failed, SettleResult, Succeeded
from orchestration.run.fold import fold_run
from orchestration.testing import FakeToolbox, PlanSketch, run_in_process
from orchestration.types import (
    BooleanField,
    BudgetExhausted,
    EnumField,
    JoinUnsatisfiable,
    NodeFailed,
    NumberField,
    OperatorStop,
    StringField,
)

from .helpers import AT, Engine, assert_agrees, drive, settled_nodes, trace


def by_key(d: Dispatch) -> SettleResult:
    return Succeeded.one({"value": d.key})


def test_straight_chain() -> None:
    """A chain runs each node once, in order, each reading its predecessor's output."""
    view = (
        PlanSketch()
        .entry(StringField(path="q"))
        .call("a", args={"q": NodeRef("entry", path="q")})
        .call("b", args={"x": NodeRef("a", path="value")})
        .call("c")
        .chain("entry", "a", "b", "c")
        .view()
    )
    seen: dict[str, object] = {}

    def script(d: Dispatch) -> SettleResult:
        seen[d.node.id] = d.args
        return Succeeded.one({"value": f"{d.node.id}-out"})

    engine, events = drive(view, {"q": "hi"}, script, max_in_flight=1)
    a, b, c = "a:e2:e0", "b:e2:e0e2:e1", "c:e2:e0e2:e1e2:e2"
    assert trace(events) == [
        ("run_started",),
        ("entered", "entry:"),
        ("settled", "entry:", "ok"),
        ("edge", "e0", a),
        ("entered", a),
        ("settled", a, "ok"),
        ("edge", "e1", b),
        ("entered", b),
        ("settled", b, "ok"),
        ("edge", "e2", c),
        ("entered", c),
        ("settled", c, "ok"),
        ("run_settled", "completed"),
    ]
    assert seen == {"a": {"q": "hi"}, "b": {"x": "a-out"}, "c": {}}
    projection = fold_run(events)
    assert_agrees(engine, projection)
    assert projection.outcome == "completed"
    assert projection.interruption is None
    assert list(projection.outputs) == ["entry:", a, b, c]
    assert projection.outputs["entry:"].items[0].json_ == {"q": "hi"}
    assert dict(projection.node_status_by_id) == {n: "done" for n in ("entry", "a", "b", "c")}
    assert [e.edge_id for e in projection.edges_taken] == ["e0", "e1", "e2"]
    assert projection.frontier.frames == () and projection.indeterminate == ()


def test_fan_out_with_duplicate_always_edges() -> None:
    """Duplicate handles are fan-out: each edge makes its own frame with its own table."""
    view = (
        PlanSketch()
        .entry()
        .call("a")
        .call("b")
        .call("c")
        .call("d", args={"b": NodeRef("b", path="value")})
        .edge("entry", "a")
        .edge("a", "b")
        .edge("a", "b")
        .edge("a", "c")
        .edge("b", "d")
        .view()
    )
    engine, events = drive(view, {}, by_key, max_in_flight=1)
    a = "a:e2:e0"
    b1, b2, c = "b:e2:e0e2:e1", "b:e2:e0e2:e2", "c:e2:e0e2:e3"
    d1, d2 = "d:e2:e0e2:e1e2:e4", "d:e2:e0e2:e2e2:e4"
    assert trace(events)[4:] == [
        ("entered", a),
        ("settled", a, "ok"),
        ("edge", "e1", b1),
        ("edge", "e2", b2),
        ("edge", "e3", c),
        ("entered", b1),
        ("settled", b1, "ok"),
        ("edge", "e4", d1),
        ("entered", b2),
        ("settled", b2, "ok"),
        ("edge", "e4", d2),
        ("entered", c),
        ("settled", c, "ok"),
        ("entered", d1),
        ("settled", d1, "ok"),
        ("entered", d2),
        ("settled", d2, "ok"),
        ("run_settled", "completed"),
    ]
    projection = fold_run(events)
    assert_agrees(engine, projection)
    # Each d read the b of its own route, and its table holds only that b.
    d_tables = {
        e.to.node_id + str(i): e.outputs
        for i, e in enumerate(ev for ev in events if ev.kind == "edge_taken" and ev.edge_id == "e4")
    }
    assert sorted(k for k in d_tables["d0"] if k.startswith("b:")) == [b1]
    assert sorted(k for k in d_tables["d1"] if k.startswith("b:")) == [b2]
    assert projection.outputs[d1].items[0].json_ == {"value": d1}
    assert dict(projection.node_status_by_id)["b"] == "done"


def test_diamond_forked_at_the_entry() -> None:
    """A diamond whose fork is the entry node closes its barrier (ruling 9)."""
    view = (
        PlanSketch()
        .entry()
        .call("b")
        .call("c")
        .join("j")
        .call(
            "d",
            args={
                "b": NodeRef("b", path="value"),
                "c": NodeRef("c", path="value"),
                "via": NodeRef("j", select="all"),
            },
        )
        .edge("entry", "b")
        .edge("entry", "c")
        .edge("b", "j")
        .edge("c", "j")
        .edge("j", "d")
        .view()
    )
    args: dict[str, object] = {}

    def script(d: Dispatch) -> SettleResult:
        args[d.node.id] = d.args
        return Succeeded.one({"value": d.node.id})

    engine, events = drive(view, {}, script, max_in_flight=1)
    b, c = "b:e2:e0", "c:e2:e1"
    jb, jc = "j:e2:e0e2:e2", "j:e2:e1e2:e3"
    merged = "j:j1:j(e2:e2e2:e3)"
    d = "d:j1:j(e2:e2e2:e3)e2:e4"
    assert trace(events) == [
        ("run_started",),
        ("entered", "entry:"),
        ("settled", "entry:", "ok"),
        ("edge", "e0", b),
        ("edge", "e1", c),
        ("entered", b),
        ("settled", b, "ok"),
        ("edge", "e2", jb),
        ("entered", c),
        ("settled", c, "ok"),
        ("edge", "e3", jc),
        ("entered", jb),
        ("snapshot", (jc,), ("j@",)),
        ("entered", jc),
        ("settled", merged, "ok"),
        ("edge", "e4", d),
        ("snapshot", (d,), ()),
        ("entered", d),
        ("settled", d, "ok"),
        ("run_settled", "completed"),
    ]
    assert args["d"] == {
        "b": "b",
        "c": "c",
        "via": [
            {"via": "e2", "from": "b", "branch": "e2:e0e2:e2"},
            {"via": "e3", "from": "c", "branch": "e2:e1e2:e3"},
        ],
    }
    projection = fold_run(events)
    assert_agrees(engine, projection)
    assert projection.frame_status[jb] == projection.frame_status[jc] == "done"
    assert dict(projection.node_status_by_id)["j"] == "done"
    assert projection.outcome == "completed"


def _canonical_diamond() -> PlanSketch:
    return (
        PlanSketch()
        .entry()
        .call("a")
        .call("b")
        .call("c")
        .join("j")
        .call("after")
        .edge("entry", "a")
        .edge("a", "b")
        .edge("a", "c")
        .edge("b", "j")
        .edge("c", "j")
        .edge("j", "after")
    )


def test_diamond_forked_mid_plan() -> None:
    """The canonical diamond settles entry, a, b, c, j, after; the merged route keeps its prefix."""
    engine, events = drive(_canonical_diamond().view(), {}, max_in_flight=1)
    assert settled_nodes(events) == ["entry", "a", "b", "c", "j", "after"]
    projection = fold_run(events)
    assert_agrees(engine, projection)
    merged = "j:e2:e0j1:j(e2:e3e2:e4)"
    assert projection.outputs[merged].branch_id.model_dump()["segments"] == (
        {"edge": "e0"},
        {"join": "j", "of": ("e3", "e4")},
    )
    parked = [e for e in events if e.kind == "frontier_snapshot" and e.joins]
    assert [j.correlation_key for e in parked for j in e.joins] == ["j@e2:e0"]
    assert "after:e2:e0j1:j(e2:e3e2:e4)e2:e5" in projection.outputs


def test_asymmetric_diamond_runs_breadth_first() -> None:
    """A short arm and a long arm: frames run in FIFO order and the join waits for both."""
    view = (
        PlanSketch()
        .entry()
        .call("fork")
        .call("short")
        .call("l1")
        .call("l2")
        .call("l3")
        .join("j")
        .call("after")
        .chain("entry", "fork")
        .chain("fork", "short", "j")
        .chain("fork", "l1", "l2", "l3", "j")
        .chain("j", "after")
        .view()
    )
    toolbox = FakeToolbox()
    events, projection = asyncio.run(run_in_process(view, {}, toolbox, max_in_flight=1))
    assert [c.node_id for c in toolbox.calls] == ["fork", "short", "l1", "l2", "l3", "after"]
    assert projection.outcome == "completed"


def test_a_join_over_a_reconverging_region_still_closes() -> None:
    """Freeze refuses a region that reconverges before its join, but the engine stays total.

    ``m`` is reached by two routes inside the diamond, so it runs twice and arrives twice; each
    arrival's route is cut at the fork ``f`` and the barrier closes once, with all three
    fork→join routes.
    """
    sketch = PlanSketch().entry()
    for name in ("f", "a", "b", "m", "c", "after"):
        sketch.call(name)
    view = (
        sketch.join("j")
        .chain("entry", "f")
        .chain("f", "a", "m", "j")
        .chain("f", "b", "m")
        .chain("f", "c", "j")
        .chain("j", "after")
        .view()
    )
    engine, events = drive(view, {}, max_in_flight=1)
    assert settled_nodes(events) == ["entry", "f", "a", "b", "c", "m", "m", "j", "after"]
    projection = fold_run(events)
    assert_agrees(engine, projection)
    assert projection.outcome == "completed"
    (merged,) = [key for key in projection.outputs if key.startswith("j:")]
    items = [item.json_ for item in projection.outputs[merged].items]
    arrivals = [(item["via"], item["from"]) for item in items]
    assert arrivals == [("e3", "m"), ("e3", "m"), ("e7", "c")]


def test_two_diamonds_in_sequence() -> None:
    """A join can be the next diamond's fork: the second barrier correlates on the first merge."""
    view = (
        PlanSketch()
        .entry()
        .call("f")
        .call("a")
        .call("b")
        .join("j1")
        .call("c")
        .call("d")
        .join("j2")
        .call("z")
        .edge("entry", "f")
        .edge("f", "a")
        .edge("f", "b")
        .edge("a", "j1")
        .edge("b", "j1")
        .edge("j1", "c")
        .edge("j1", "d")
        .edge("c", "j2")
        .edge("d", "j2")
        .edge("j2", "z")
        .view()
    )
    engine, events = drive(view, {}, max_in_flight=1)
    assert settled_nodes(events) == ["entry", "f", "a", "b", "j1", "c", "d", "j2", "z"]
    first = "e2:e0j2:j1(e2:e3e2:e4)"
    second = first + "j2:j2(e2:e7e2:e8)"
    correlations = [
        j.correlation_key for e in events if e.kind == "frontier_snapshot" for j in e.joins
    ]
    assert correlations == ["j1@e2:e0", f"j2@{first}"]
    projection = fold_run(events)
    assert_agrees(engine, projection)
    assert f"j1:{first}" in projection.outputs
    assert f"j2:{second}" in projection.outputs
    assert f"z:{second}e2:e9" in projection.outputs
    assert projection.outcome == "completed"


def test_branch_inside_a_diamond_leaves_the_join_unsatisfiable() -> None:
    """A branch not firing toward the join halts the run once no frame can reach the join."""
    view = (
        PlanSketch()
        .entry(BooleanField(path="flag"))
        .call("f")
        .branch("x", {"path": "entry:.flag", "op": "truthy"})
        .call("y")
        .call("z")
        .call("z2")
        .call("w")
        .join("j")
        .call("after")
        .edge("entry", "f")
        .edge("f", "x")
        .edge("x", "y", "match")
        .edge("x", "z", "no_match")
        .edge("f", "w")
        .edge("y", "j")
        .edge("w", "j")
        .edge("j", "after")
        .edge("z", "z2")
        .view()
    )
    engine, events = drive(view, {"flag": False}, max_in_flight=1)
    f, x, w = "f:e2:e0", "x:e2:e0e2:e1", "w:e2:e0e2:e4"
    z, z2, jw = "z:e2:e0e2:e1e2:e3", "z2:e2:e0e2:e1e2:e3e2:e8", "j:e2:e0e2:e4e2:e6"
    assert trace(events)[4:] == [
        ("entered", f),
        ("settled", f, "ok"),
        ("edge", "e1", x),
        ("edge", "e4", w),
        ("entered", x),
        ("settled", x, "ok"),
        ("edge", "e3", z),
        ("entered", w),
        ("settled", w, "ok"),
        ("edge", "e6", jw),
        ("entered", z),
        ("settled", z, "ok"),
        ("edge", "e8", z2),
        ("entered", jw),
        ("snapshot", (z2,), ("j@e2:e0",)),
        ("interrupted", "join_unsatisfiable", None),
        ("run_settled", "halted"),
    ]
    projection = fold_run(events)
    assert_agrees(engine, projection)
    assert projection.outcome == "halted"
    assert projection.interruption == JoinUnsatisfiable(node_id="j")
    assert [p.frame.node_id for p in projection.frontier.frames] == ["z2"]


def test_each_execution_of_a_diamond_counts_only_its_own_frames() -> None:
    """Two executions of one diamond (a fan-out into its fork) keep separate barriers.

    Neither branch fires toward the join, so each barrier is unsatisfiable once its own
    execution's frames are gone. The first barrier to open must not count the other
    execution's frame queued on the join (a different route): the run halts at once, before
    that frame is entered.
    """
    view = (
        PlanSketch()
        .entry(BooleanField(path="flag"))
        .call("a")
        .call("f")
        .branch("x", {"path": "entry:.flag", "op": "truthy"})
        .call("w")
        .join("j")
        .edge("entry", "a")
        .edge("a", "f")
        .edge("a", "f")
        .edge("f", "x")
        .edge("f", "w")
        .edge("x", "j", "match")
        .edge("w", "j")
        .view()
    )
    engine, events = drive(view, {"flag": False}, max_in_flight=1)
    entered_joins = [
        step[1] for step in trace(events) if step[0] == "entered" and step[1][0] == "j"
    ]
    assert len(entered_joins) == 1
    assert trace(events)[-2:] == [
        ("interrupted", "join_unsatisfiable", None),
        ("run_settled", "halted"),
    ]
    projection = fold_run(events)
    assert_agrees(engine, projection)
    assert projection.interruption == JoinUnsatisfiable(node_id="j")
    # The other execution's join frame is still queued, never entered.
    assert [p.frame.node_id for p in projection.frontier.frames] == ["j"]


@pytest.mark.parametrize(
    ("color", "taken", "ran"),
    [("red", "e1", "r"), ("blue", "e2", "bl"), ("green", "e3", "other")],
)
def test_select_takes_the_first_matching_case_else_default(
    color: str, taken: str, ran: str
) -> None:
    """A select fires the edge of the first case whose predicate holds, or its default."""
    view = (
        PlanSketch()
        .entry(EnumField(path="color", values=("red", "blue", "green")))
        .select(
            "s",
            ["red", "blue"],
            {
                "red": {"path": "entry:.color", "op": "eq", "value": "red"},
                "blue": {"path": "entry:.color", "op": "eq", "value": "blue"},
            },
        )
        .call("r")
        .call("bl")
        .call("other")
        .edge("entry", "s")
        .edge("s", "r", "case_red")
        .edge("s", "bl", "case_blue")
        .edge("s", "other", "default")
        .view()
    )
    engine, events = drive(view, {"color": color}, max_in_flight=1)
    assert [e.edge_id for e in events if e.kind == "edge_taken"] == ["e0", taken]
    assert settled_nodes(events) == ["entry", "s", ran]
    projection = fold_run(events)
    assert_agrees(engine, projection)
    assert projection.outputs["s:e2:e0"].items == ()


@pytest.mark.parametrize(("flag", "ran"), [(True, "m"), (False, "dflt")])
def test_branch_default_fires_only_when_nothing_matched(flag: bool, ran: str) -> None:
    """A branch with match and default edges takes default only when it did not match."""
    view = (
        PlanSketch()
        .entry(BooleanField(path="flag"))
        .branch("b", {"path": "entry:.flag", "op": "eq", "value": True})
        .call("m")
        .call("dflt")
        .call("never")
        .edge("entry", "b")
        .edge("b", "m", "match")
        .edge("b", "dflt", "default")
        .edge("b", "never", "always")
        .view()
    )
    _, events = drive(view, {"flag": flag}, max_in_flight=1)
    assert settled_nodes(events) == ["entry", "b", ran]


def failing_a(d: Dispatch) -> SettleResult:
    if d.node.id == "a":
        return Failed("ToolError", "the tool refused")
    return Succeeded.one({"value": d.node.id})


def test_error_edge_takes_a_failure_and_the_run_completes() -> None:
    """A failure fires only error edges (never always), is handled, and the run completes."""
    view = (
        PlanSketch()
        .entry()
        .call("a")
        .call("b")
        .call("h")
        .edge("entry", "a")
        .edge("a", "b")
        .edge("a", "h", "error")
        .view()
    )
    engine, events = drive(view, {}, failing_a, max_in_flight=1)
    a, h = "a:e2:e0", "h:e2:e0e2:e2"
    assert trace(events)[4:] == [
        ("entered", a),
        ("settled", a, "failed"),
        ("edge", "e2", h),
        ("entered", h),
        ("settled", h, "ok"),
        ("run_settled", "completed"),
    ]
    settled = next(e for e in events if e.kind == "node_settled" and e.frame.node_id == "a")
    assert settled.outcome.handled is True
    assert settled.outcome.error.model_dump() == {
        "name": "ToolError",
        "message": "the tool refused",
    }
    projection = fold_run(events)
    assert_agrees(engine, projection)
    assert projection.outcome == "completed"
    assert dict(projection.node_status_by_id) == {"entry": "done", "a": "failed", "h": "done"}


def test_unhandled_failure_aborts_the_run() -> None:
    """A failure with no error edge settles alone, then the run ends aborted with node_failed."""
    view = PlanSketch().entry().call("a").call("b").chain("entry", "a", "b").view()
    engine, events = drive(view, {}, failing_a, max_in_flight=1)
    a = "a:e2:e0"
    assert trace(events)[4:] == [
        ("entered", a),
        ("settled", a, "failed"),
        ("interrupted", "node_failed", None),
        ("run_settled", "aborted"),
    ]
    projection = fold_run(events)
    assert_agrees(engine, projection)
    assert projection.outcome == "aborted"
    assert projection.interruption == NodeFailed(node_id="a")
    assert projection.frontier.frames == ()


def test_max_steps_halts_with_budget_exhausted() -> None:
    """maxSteps counts node entries; the next frame is not entered and the run halts."""
    view = (
        PlanSketch(max_steps=3)
        .entry()
        .call("a")
        .call("b")
        .call("c")
        .chain("entry", "a", "b", "c")
        .view()
    )
    engine, events = drive(view, {}, max_in_flight=1)
    c = "c:e2:e0e2:e1e2:e2"
    assert trace(events)[-4:] == [
        ("settled", "b:e2:e0e2:e1", "ok"),
        ("edge", "e2", c),
        ("interrupted", "budget_exhausted", None),
        ("run_settled", "halted"),
    ]
    projection = fold_run(events)
    assert_agrees(engine, projection)
    assert projection.interruption == BudgetExhausted(settled=3)
    assert [p.frame.node_id for p in projection.frontier.frames] == ["c"]
    assert engine.steps == 3


@pytest.mark.parametrize(("plan_cap", "host_cap", "expected"), [(3, 1000, 3), (32, 2, 2)])
def test_in_flight_frames_never_exceed_the_window(
    plan_cap: int, host_cap: int, expected: int
) -> None:
    """At most min(maxConcurrentFrames, max_in_flight) frames run at once."""
    sketch = PlanSketch(max_concurrent_frames=plan_cap).entry().call("a").edge("entry", "a")
    for i in range(10):
        sketch.call(f"b{i}").edge("a", f"b{i}")
    toolbox = FakeToolbox(delays={f"b{i}": 0.005 for i in range(10)})
    events, projection = asyncio.run(
        run_in_process(sketch.view(), {}, toolbox, max_in_flight=host_cap)
    )
    assert toolbox.max_concurrent == expected
    assert projection.outcome == "completed"
    assert len([e for e in events if e.kind == "node_settled"]) == 12


def test_on_missing_value_fail_fails_the_node() -> None:
    """onMissingValue 'fail': a reference that reads nothing fails the node with a named error."""
    view = (
        PlanSketch()
        .entry()
        .call("a", args={"x": NodeRef("entry", path="absent"), "y": 1}, on_missing="fail")
        .edge("entry", "a")
        .view()
    )
    toolbox = FakeToolbox()
    events, projection = asyncio.run(run_in_process(view, {}, toolbox))
    assert toolbox.calls == []
    failed = next(e for e in events if e.kind == "node_settled" and e.frame.node_id == "a")
    assert failed.outcome.error.name == "MissingValueError"
    assert "args.x" in failed.outcome.error.message
    assert projection.outcome == "aborted"
    assert projection.interruption == NodeFailed(node_id="a")


def test_on_missing_value_omit_drops_the_argument() -> None:
    """onMissingValue 'omit': a reference that reads nothing drops its key; the call runs."""
    view = (
        PlanSketch()
        .entry(NumberField(path="n"))
        .call(
            "a",
            args={
                "x": NodeRef("entry", path="absent"),
                "n": NodeRef("entry", path="n"),
                "nested": {"gone": NodeRef("nowhere"), "kept": 2},
                "list": [NodeRef("nowhere"), 3],
            },
            on_missing="omit",
        )
        .edge("entry", "a")
        .view()
    )
    toolbox = FakeToolbox()
    _, projection = asyncio.run(run_in_process(view, {"n": 7}, toolbox))
    assert toolbox.calls[0].args == {"n": 7, "nested": {"kept": 2}, "list": [3]}
    assert projection.outcome == "completed"


@pytest.mark.parametrize(
    ("run_input", "problem"),
    [
        ({}, 'missing required declared field "q"'),
        ({"q": 3}, 'input field "q" must be a string'),
        ({"q": "é" * 10}, "over its maxBytes of 8"),
        ({"q": "ok", "level": "loud"}, "must be one of 'low', 'high'"),
        ({"q": "ok", "n": True}, 'input field "n" must be a number'),
    ],
)
def test_bad_run_input_is_refused_before_run_started(
    run_input: dict[str, object], problem: str
) -> None:
    """Input that fails the entry's declared fields raises before any event exists."""
    view = (
        PlanSketch()
        .entry(
            StringField(path="q", max_bytes=8),
            EnumField(path="level", values=("low", "high")),
            NumberField(path="n"),
        )
        .call("a")
        .edge("entry", "a")
        .view()
    )
    full = {"level": "low", "n": 1, **run_input}
    if "q" not in run_input:
        full.pop("q", None)
    with pytest.raises(InvalidRunInputError) as refused:
        Engine.start(view, "run-1", full, AT)
    assert any(problem in p for p in refused.value.problems), refused.value.problems
    toolbox = FakeToolbox()
    with pytest.raises(InvalidRunInputError):
        asyncio.run(run_in_process(view, full, toolbox))
    assert toolbox.calls == []


def test_stop_lets_in_flight_frames_settle_then_aborts() -> None:
    """operator_stop: nothing new starts, in-flight frames settle and are recorded, then abort."""
    view = (
        PlanSketch()
        .entry()
        .call("a")
        .call("b")
        .call("c")
        .call("after_a")
        .edge("entry", "a")
        .edge("entry", "b")
        .edge("entry", "c")
        .edge("a", "after_a")
        .view()
    )
    engine = Engine.start(view, "run-1", {}, AT)
    events = engine.drain_events()
    ready = engine.ready(AT)
    assert [d.node.id for d in ready] == ["a", "b", "c"]
    engine.settle(ready[0].key, Succeeded.one({}), AT)
    engine.stop(OperatorStop(), AT)
    assert engine.ready(AT) == []
    engine.settle(ready[1].key, Succeeded.one({}), AT)
    assert not engine.done
    engine.settle(ready[2].key, Succeeded.one({}), AT)
    events += engine.drain_events()
    assert engine.done
    assert trace(events)[-3:] == [
        ("settled", "c:e2:e2", "ok"),
        ("interrupted", "operator_stop", None),
        ("run_settled", "aborted"),
    ]
    assert "after_a" not in [e.frame.node_id for e in events if e.kind == "node_entered"]
    projection = fold_run(events)
    assert_agrees(engine, projection)
    assert projection.interruption == OperatorStop()
