"""Map nodes in the engine: item frames, the body per item, concurrency, tolerance, the worst
case, and the fold agreeing with the engine at every step."""

from __future__ import annotations

from typing import Any

from orchestration.plan.encoding import NodeRef
from orchestration.plan.graph import PlanGraph, topological_order
from orchestration.plan.maps import worst_case
from orchestration.run.engine.machine import Dispatch, Failed, RunEngine, SettleResult, Succeeded
from orchestration.run.fold import fold_run
from orchestration.testing import PlanSketch
from orchestration.types import BudgetExhausted, NodeFailed, RawPlanView, RunEvent

from .helpers import AT, assert_agrees, drive, trace


def _plan(
    *, max_items: int = 10, concurrency: int | None = None, **tolerance: Any
) -> PlanSketch:
    s = PlanSketch(max_concurrent_frames=64).entry()
    s.call("fetch").map(
        "m", NodeRef("fetch", path="files"), max_items=max_items, concurrency=concurrency,
        **tolerance,
    )
    s.call("work", args={"name": NodeRef("m", path="item")}).call(
        "after", args={"rows": NodeRef("m", select="all")}
    )
    s.edge("entry", "fetch").edge("fetch", "m").edge("m", "work", "item").edge("m", "after")
    return s


def _files(*names: str) -> Any:
    def script(d: Dispatch) -> SettleResult:
        if d.node.id == "fetch":
            return Succeeded.one({"files": list(names)})
        if d.node.id == "work":
            name = d.args["name"]
            if name.startswith("x"):
                return Failed("ValueError", f"cannot read {name}")
            return Succeeded.one({"value": name.upper()})
        return Succeeded.one({"value": d.node.id, "args": d.args})

    return script


def _checked(engine: RunEngine, events: list[RunEvent]) -> None:
    assert_agrees(engine, fold_run(events))


def _map_rows(events: list[RunEvent]) -> list[dict[str, Any]]:
    from orchestration.types import NodeSettled, OutcomeOk

    (settled,) = [
        e
        for e in events
        if isinstance(e, NodeSettled)
        and e.frame.node_id == "m"
        and not any(hasattr(s, "map") for s in e.frame.branch_id.segments)
    ]
    assert isinstance(settled.outcome, OutcomeOk)
    return [item.json_ for item in settled.outcome.output.items]


def test_each_item_has_its_own_frames() -> None:
    """Items run as item frames of the map, each with the body on a route through its index."""
    view = _plan().view()
    engine, events = drive(view, {}, _files("a", "b"), max_in_flight=1, after_each=_checked)
    m = "m:e2:e0e2:e1"
    item0, item1 = f"{m}m1:m[0]", f"{m}m1:m[1]"
    assert trace(events)[7:20] == [
        ("entered", m),
        ("entered", item0),
        ("settled", item0, "ok"),
        ("edge", "e2", "work:e2:e0e2:e1m1:m[0]e2:e2"),
        ("entered", item1),
        ("settled", item1, "ok"),
        ("edge", "e2", "work:e2:e0e2:e1m1:m[1]e2:e2"),
        ("entered", "work:e2:e0e2:e1m1:m[0]e2:e2"),
        ("settled", "work:e2:e0e2:e1m1:m[0]e2:e2", "ok"),
        ("entered", "work:e2:e0e2:e1m1:m[1]e2:e2"),
        ("settled", "work:e2:e0e2:e1m1:m[1]e2:e2", "ok"),
        ("settled", m, "ok"),
        ("edge", "e3", "after:e2:e0e2:e1e2:e3"),
    ]
    assert engine.outcome == "completed"
    assert _map_rows(events) == [
        {"index": 0, "ok": True, "result": {"value": "A"}},
        {"index": 1, "ok": True, "result": {"value": "B"}},
    ]
    projection = fold_run(events)
    assert projection.outputs[item1].items[0].json_ == {"index": 1, "item": "b"}


def test_concurrency_caps_the_items_running() -> None:
    """With concurrency 2 no more than two items' body frames are ever out at once."""
    view = _plan(concurrency=2).view()
    most = 0

    def watch(engine: RunEngine, events: list[RunEvent]) -> None:
        nonlocal most
        most = max(most, sum(1 for key in engine.in_flight if key.startswith("work:")))
        _checked(engine, events)

    engine, events = drive(view, {}, _files("a", "b", "c", "d", "e"), after_each=watch)
    assert most == 2 and engine.outcome == "completed"
    assert [row["result"]["value"] for row in _map_rows(events)] == ["A", "B", "C", "D", "E"]


def test_a_failed_item_within_tolerance_is_named() -> None:
    """An item whose body fails is a row naming the node and error; the map still succeeds."""
    view = _plan(tolerated_failure_percent=50).view()
    engine, events = drive(view, {}, _files("a", "x1"), max_in_flight=1, after_each=_checked)
    assert engine.outcome == "completed"
    assert _map_rows(events)[1] == {
        "index": 1,
        "ok": False,
        "error": {"node": "work", "name": "ValueError", "message": "cannot read x1"},
    }


def test_failures_over_tolerance_fail_the_map() -> None:
    """Past the tolerance no new item starts, and the map fails naming the failed items."""
    view = _plan(tolerated_failures=1, concurrency=1).view()
    engine, _ = drive(
        view, {}, _files("x0", "x1", "c", "d"), max_in_flight=1, after_each=_checked
    )
    assert engine.outcome == "aborted" and engine.interruption == NodeFailed(node_id="m")
    settle = [e for e in engine.log if getattr(e, "status", None) == "failed"][-1]
    assert settle.error is not None and settle.error.name == "MapToleranceExceededError"
    assert 'item 0 at "work"' in settle.error.message
    assert 'item 1 at "work"' in settle.error.message
    assert "2 of 4 items failed" in settle.error.message
    started = [e for e in engine.log if type(e).__name__ == "LogItem"]
    assert len(started) == 2


def test_more_items_than_max_items_fail_the_map_before_any_runs() -> None:
    """A list longer than maxItems fails the map with a named error; no item frame exists."""
    view = _plan(max_items=2).view()
    engine, _ = drive(view, {}, _files("a", "b", "c"), after_each=_checked)
    assert engine.outcome == "aborted"
    settle = [e for e in engine.log if getattr(e, "status", None) == "failed"][-1]
    assert settle.error is not None and settle.error.name == "MapTooManyItemsError"
    assert "3 items" in settle.error.message and "maxItems 2" in settle.error.message
    assert not [e for e in engine.log if type(e).__name__ == "LogItem"]


def test_not_a_list_fails_the_map() -> None:
    """A map whose reference reads no list fails with MapItemsError."""
    view = _plan().view()

    def script(d: Dispatch) -> SettleResult:
        return Succeeded.one({"files": "not a list"})

    engine, _ = drive(view, {}, script)
    settle = [e for e in engine.log if getattr(e, "status", None) == "failed"][-1]
    assert settle.error is not None and settle.error.name == "MapItemsError"


def _steps(view: RawPlanView) -> int:
    graph = PlanGraph.from_view(view)
    order = topological_order(graph)
    assert order is not None
    max_items = {
        graph.index[n.id]: n.definition.max_items for n in view.nodes if n.kind == "map"
    }
    return worst_case(graph, order, graph.index["entry"], max_items).steps


def _nested() -> PlanSketch:
    s = PlanSketch(max_concurrent_frames=64).entry()
    s.call("fetch").map("outer", NodeRef("fetch", path="files"), max_items=3)
    s.call("list", args={"name": NodeRef("outer", path="item")})
    s.map("inner", NodeRef("list", path="rows"), max_items=2)
    s.call("leaf", args={"row": NodeRef("inner", path="item")}).call("left").call("right")
    s.join("j")
    s.edge("entry", "fetch").edge("fetch", "outer").edge("outer", "list", "item")
    s.edge("list", "inner").edge("inner", "leaf", "item")
    s.edge("leaf", "left").edge("leaf", "right").edge("left", "j").edge("right", "j")
    return s


def _full(d: Dispatch) -> SettleResult:
    if d.node.id == "fetch":
        return Succeeded.one({"files": ["a", "b", "c"]})
    if d.node.id == "list":
        return Succeeded.one({"rows": [1, 2]})
    return Succeeded.one({"value": d.node.id})


def test_the_worst_case_is_what_a_full_run_takes() -> None:
    """Nested maps and a diamond in a body, every list at maxItems: the run takes exactly the
    worst case freeze computes, and one step less halts it."""
    view = _nested().view()
    worst = _steps(view)
    engine, events = drive(view, {}, _full, after_each=_checked)
    assert engine.outcome == "completed" and engine.steps == worst == 3 + 3 * (3 + 2 * 6)
    tight = _nested()
    tight.bounds = tight.bounds.model_copy(update={"max_steps": worst - 1})
    engine, _ = drive(tight.view(), {}, _full)
    assert engine.outcome == "halted"
    assert isinstance(engine.interruption, BudgetExhausted)


def test_a_join_that_closes_early_cancels_a_running_map() -> None:
    """An ``any`` join won by another route cancels a map on the losing route, with the frames
    of its body, and the run goes on without them."""
    from orchestration.run.engine.machine import RunEngine
    from orchestration.run.expand import expand_log
    from orchestration.run.log import LogCancel

    s = PlanSketch(max_concurrent_frames=64).entry()
    s.call("fork").call("quick").map("m", NodeRef("fork", path="files"), max_items=5)
    s.call("work", args={"name": NodeRef("m", path="item")}).join("j", "any").call("after")
    s.edge("entry", "fork").edge("fork", "quick").edge("fork", "m").edge("m", "work", "item")
    s.edge("quick", "j").edge("m", "j").edge("j", "after")
    view = s.view()
    engine = RunEngine.start(view, "run-1", {}, AT)
    log = engine.drain()
    while not engine.done:
        engine.ready(AT)
        log += engine.drain()
        for key in list(engine.in_flight):
            if key not in engine.in_flight:
                continue
            node = engine.dispatch_of(key)
            assert node is not None
            if node.node.id == "work":
                continue  # the items' work never finishes before the join closes
            result = Succeeded.one({"files": ["a", "b"]} if node.node.id == "fork" else {})
            engine.settle(key, result, AT)
            log += engine.drain()
            break
        else:
            raise AssertionError("stalled")
    assert engine.outcome == "completed"
    cancelled = {e.frame for e in log if isinstance(e, LogCancel)}
    projection = fold_run(expand_log(log))
    assert projection.node_status_by_id["after"] == "done"
    assert projection.node_status_by_id["work"] == "skipped"
    assert len(cancelled) == 3  # the map's frame and the two items' work
    work = {key for key in projection.frame_status if key.startswith("work:")}
    assert set(engine.drain_cancelled()) == work


def test_a_run_stopped_mid_map_is_not_resumed() -> None:
    """A log that ends while a map's items run cannot be resumed (nor checkpointed): the map's
    run is engine state a log does not carry yet, and refusing beats running items twice."""
    import pytest

    from orchestration.errors import EngineStateError, UnrunnablePlanError
    from orchestration.types import OperatorStop

    view = _plan(concurrency=1).view()
    engine = RunEngine.start(view, "run-1", {}, AT)
    log = engine.drain()
    (fetch,) = engine.ready(AT)
    engine.settle(fetch.key, Succeeded.one({"files": ["a", "b"]}), AT)
    (work,) = engine.ready(AT)
    assert engine.maps_running
    with pytest.raises(EngineStateError, match="map"):
        engine.checkpoint(AT)
    engine.stop(OperatorStop(), AT)
    engine.settle(work.key, Succeeded.one({"value": "A"}), AT)
    log += engine.drain()
    assert engine.outcome == "aborted"
    with pytest.raises(UnrunnablePlanError, match='map "m" was running its items'):
        RunEngine.resume(view, log, reopen=True)


def test_a_run_that_ended_after_its_map_resumes() -> None:
    """Once the map settled, a resume goes on from the frames after it."""
    from orchestration.types import OperatorStop

    view = _plan().view()
    engine = RunEngine.start(view, "run-1", {}, AT)
    (fetch,) = engine.ready(AT)
    engine.settle(fetch.key, Succeeded.one({"files": ["a", "b"]}), AT)
    for work in engine.ready(AT):
        engine.settle(work.key, Succeeded.one({"value": work.args["name"]}), AT)
    assert not engine.maps_running
    engine.stop(OperatorStop(), AT)
    log = engine.drain()
    assert engine.outcome == "aborted"
    resumed = RunEngine.resume(view, log, reopen=True)
    (after,) = resumed.ready(AT)
    assert after.node.id == "after" and after.args["rows"][1]["result"] == {"value": "b"}
    resumed.settle(after.key, Succeeded.one({"value": "ok"}), AT)
    assert resumed.outcome == "completed"


def test_a_diamond_forked_at_the_map_closes_once_per_item() -> None:
    """Two item edges into a join inside the body: the barrier is per item (its fork frame is
    the item's), so each item's join closes once, and the map's row is the join's output."""
    s = PlanSketch(max_concurrent_frames=64).entry()
    s.call("fetch").map("m", NodeRef("fetch", path="files"), max_items=3)
    s.call("left").call("right").join("j")
    s.edge("entry", "fetch").edge("fetch", "m")
    s.edge("m", "left", "item").edge("m", "right", "item").edge("left", "j").edge("right", "j")
    view = s.view()
    engine, events = drive(view, {}, _files("a", "b", "c"), after_each=_checked)
    assert engine.outcome == "completed"
    projection = fold_run(events)
    merged = sorted(k for k in projection.frame_status if k.startswith("j:") and k.endswith(")"))
    assert merged == [f"j:e2:e0e2:e1m1:m[{i}]j1:j(e2:e4e2:e5)" for i in range(3)]
    assert [row["result"]["via"] for row in _map_rows(events)] == ["e4"] * 3
    assert engine.steps == _steps(view)
