"""Loop nodes in the engine: one round at a time, each round's own frames, the until check on
the round's outputs, the three ends, failures, the worst case, and the fold agreeing with the
engine at every step."""

from __future__ import annotations

from typing import Any

from orchestration.plan.encoding import NodeRef
from orchestration.plan.graph import PlanGraph, topological_order
from orchestration.plan.maps import worst_case
from orchestration.run.engine.machine import Dispatch, Failed, RunEngine, SettleResult, Succeeded
from orchestration.run.fold import fold_run
from orchestration.run.log import LogItem, LogSettle
from orchestration.testing import PlanSketch
from orchestration.types import (
    BudgetExhausted,
    LoopDefinition,
    MapDefinition,
    NodeSettled,
    OutcomeOk,
    RawPlanView,
    RunEvent,
)

from .helpers import assert_agrees, drive, fkey


def _plan(
    goal: int = 3, *, max_iterations: int = 5, watch: bool = False, fail_unless_met: bool = False
) -> PlanSketch:
    """entry → lp ⇒body⇒ work (reads the round) → check; lp → after."""
    s = PlanSketch(max_concurrent_frames=64).entry()
    s.loop(
        "lp",
        {"path": "work.n", "op": "gte", "value": goal},
        max_iterations=max_iterations,
        watch=NodeRef("work", path="value") if watch else None,
        fail_unless_met=fail_unless_met,
    )
    s.call("work", args={"round": NodeRef("lp", path="index"), "prev": NodeRef("lp")})
    s.call("after", args={"loop": NodeRef("lp", path="ended")})
    s.edge("entry", "lp").edge("lp", "work", "body").edge("lp", "after")
    return s


def _rounds(cap: int = 99, fail_at: int | None = None) -> Any:
    """work answers n = round + 1 and a value that stops changing after round ``cap``."""

    def script(d: Dispatch) -> SettleResult:
        if d.node.id == "work":
            index = d.args["round"]
            if index == fail_at:
                return Failed("ValueError", f"round {index} broke")
            return Succeeded.one({"n": index + 1, "value": f"v{min(index, cap)}"})
        return Succeeded.one({"value": d.node.id, "args": d.args})

    return script


def _checked(engine: RunEngine, events: list[RunEvent]) -> None:
    assert_agrees(engine, fold_run(events))


def _row(events: list[RunEvent]) -> dict[str, Any]:
    rows = [
        dict(e.outcome.output.items[0].json_)
        for e in events
        if isinstance(e, NodeSettled)
        and e.frame.node_id == "lp"
        and isinstance(e.outcome, OutcomeOk)
        and e.outcome.output.items
        and "ended" in e.outcome.output.items[0].json_
    ]
    (row,) = rows
    return row


def test_the_loop_ends_when_until_holds() -> None:
    """Rounds run one at a time until the predicate, read on the round's outputs, holds; the
    loop's row holds how it ended, the round count, the last result and every round's."""
    engine, events = drive(_plan(3).view(), {}, _rounds(), after_each=_checked)
    assert engine.outcome == "completed"
    row = _row(events)
    assert row["ended"] == "until" and row["rounds"] == 3
    assert [r["n"] for r in row["results"]] == [1, 2, 3] and row["result"]["n"] == 3


def test_each_round_reads_the_previous_result() -> None:
    """Inside the body the loop reads {index, previous}: round 0 has no previous."""
    seen: list[Any] = []
    script = _rounds()

    def spy(d: Dispatch) -> SettleResult:
        if d.node.id == "work":
            seen.append(d.args["prev"])
        return script(d)

    drive(_plan(2).view(), {}, spy)
    assert seen[0] == {"index": 0, "previous": None}
    assert seen[1]["index"] == 1 and seen[1]["previous"]["n"] == 1


def test_each_round_has_its_own_frames() -> None:
    """A round's frames sit under the loop's route plus {map: lp, index}; their keys differ."""
    engine, events = drive(_plan(3).view(), {}, _rounds())
    items = [e for e in engine.log if isinstance(e, LogItem)]
    rounds = [e.index for e in items if e.after is None]
    checks = [e.index for e in items if e.after is not None]
    assert rounds == [0, 1, 2] and checks == [0, 1, 2]
    keys = [fkey(e.frame) for e in events if isinstance(e, NodeSettled)]
    assert len(keys) == len(set(keys))
    work = [k for k in keys if k.startswith("work:")]
    assert [f"m2:lp[{i}]" in k for i, k in enumerate(work)] == [True] * 3
    # Each check reads its round: it sits on the route of that round's call.
    check_keys = [k for k in keys if k.startswith("lp:") and k.count("m2:lp[") == 2]
    assert len(check_keys) == 3


def test_max_iterations_ends_the_loop_ok() -> None:
    """A predicate that never holds ends the loop after maxIterations rounds, not failed."""
    engine, events = drive(_plan(99, max_iterations=4).view(), {}, _rounds(), after_each=_checked)
    assert engine.outcome == "completed"
    row = _row(events)
    assert row["ended"] == "max_iterations" and row["rounds"] == 4


def test_the_same_watched_output_twice_is_stuck() -> None:
    """With a watch, the loop ends stuck the round its watched output repeats the last."""
    engine, events = drive(
        _plan(99, watch=True).view(), {}, _rounds(cap=1), after_each=_checked
    )
    row = _row(events)
    assert engine.outcome == "completed"
    assert row["ended"] == "stuck" and [r["value"] for r in row["results"]] == ["v0", "v1", "v1"]


def test_an_unmet_loop_fails_when_it_must_meet_until() -> None:
    """With failUnlessMet, ending by maxIterations fails the loop with LoopUnmetError."""
    engine, _ = drive(_plan(99, max_iterations=2, fail_unless_met=True).view(), {}, _rounds())
    (failed,) = [e for e in engine.log if isinstance(e, LogSettle) and e.error is not None]
    assert failed.error is not None and failed.error.name == "LoopUnmetError"
    assert "maxIterations 2" in failed.error.message
    assert engine.outcome == "aborted"


def test_a_failed_round_fails_the_loop() -> None:
    """A body failure with no error edge fails the loop (LoopRoundFailedError) at that round;
    no later round runs."""
    engine, _ = drive(_plan(99).view(), {}, _rounds(fail_at=1))
    failed = [e for e in engine.log if isinstance(e, LogSettle) and e.error is not None]
    assert [f.error.name for f in failed if f.error] == ["ValueError", "LoopRoundFailedError"]
    assert "round 1" in failed[-1].error.message  # type: ignore[union-attr]
    assert len([e for e in engine.log if isinstance(e, LogItem) and e.after is None]) == 2


def _steps(view: RawPlanView) -> int:
    graph = PlanGraph.from_view(view)
    order = topological_order(graph)
    assert order is not None
    bounds: dict[int, int] = {}
    for n in view.nodes:
        if isinstance(n.definition, LoopDefinition):
            bounds[graph.index[n.id]] = n.definition.max_iterations
        elif isinstance(n.definition, MapDefinition):
            bounds[graph.index[n.id]] = n.definition.max_items
    return worst_case(graph, order, graph.index["entry"], bounds).steps


def _nested() -> PlanSketch:
    """A map of 3 items whose body loops at most 2 rounds over a call."""
    s = PlanSketch(max_concurrent_frames=64).entry()
    s.call("fetch").map("m", NodeRef("fetch", path="files"), max_items=3)
    s.loop("lp", {"path": "work.n", "op": "gte", "value": 99}, max_iterations=2)
    s.call("work", args={"round": NodeRef("lp", path="index")})
    s.edge("entry", "fetch").edge("fetch", "m").edge("m", "lp", "item")
    s.edge("lp", "work", "body")
    return s


def _full(d: Dispatch) -> SettleResult:
    if d.node.id == "fetch":
        return Succeeded.one({"files": ["a", "b", "c"]})
    return Succeeded.one({"n": 1, "value": d.node.id})


def test_the_worst_case_is_what_a_full_run_takes() -> None:
    """A loop in a map's body, every round run: the run takes exactly the worst case freeze
    computes (entry, fetch, map; per item: the item, the loop, and per round the round, the
    call and the check), and one step less halts it."""
    view = _nested().view()
    worst = _steps(view)
    engine, _ = drive(view, {}, _full, after_each=_checked)
    assert engine.outcome == "completed" and engine.steps == worst == 3 + 3 * (2 + 2 * 3)
    tight = _nested()
    tight.bounds = tight.bounds.model_copy(update={"max_steps": worst - 1})
    engine, _ = drive(tight.view(), {}, _full)
    assert engine.outcome == "halted"
    assert isinstance(engine.interruption, BudgetExhausted)


def test_a_join_that_closes_early_cancels_a_running_loop() -> None:
    """An ``any`` join won by another route cancels a loop on the losing route, with its
    round's frames (a waiting check included), and the run goes on without them."""
    from orchestration.run.expand import expand_log
    from orchestration.run.log import LogCancel

    from .helpers import AT

    s = PlanSketch(max_concurrent_frames=64).entry()
    s.call("fork").call("quick")
    s.loop("lp", {"path": "work.n", "op": "gte", "value": 99}, max_iterations=5)
    s.call("work", args={"round": NodeRef("lp", path="index")}).join("j", "any").call("after")
    s.edge("entry", "fork").edge("fork", "quick").edge("fork", "lp").edge("lp", "work", "body")
    s.edge("quick", "j").edge("lp", "j").edge("j", "after")
    engine = RunEngine.start(s.view(), "run-1", {}, AT)
    log = engine.drain()
    while not engine.done:
        engine.ready(AT)
        log += engine.drain()
        for key in list(engine.in_flight):
            node = engine.dispatch_of(key)
            assert node is not None
            if node.node.id == "work":
                continue  # the round's work never finishes before the join closes
            engine.settle(key, Succeeded.one({"value": node.node.id}), AT)
            log += engine.drain()
            break
        else:
            raise AssertionError("stalled")
    assert engine.outcome == "completed" and not engine.maps_running
    projection = fold_run(expand_log(log))
    assert projection.node_status_by_id["after"] == "done"
    assert projection.node_status_by_id["work"] == "skipped"
    assert len({e.frame for e in log if isinstance(e, LogCancel)}) == 2  # the loop and work


def test_a_run_stopped_mid_loop_is_not_resumed() -> None:
    """A log that ends while a loop's rounds run cannot be resumed (nor checkpointed), as a
    map's cannot; once the loop settled, a resume goes on after it."""
    import pytest

    from orchestration.errors import EngineStateError, UnrunnablePlanError
    from orchestration.types import OperatorStop

    from .helpers import AT

    view = _plan(2).view()
    engine = RunEngine.start(view, "run-1", {}, AT)
    log = engine.drain()
    (work,) = engine.ready(AT)
    assert engine.maps_running
    with pytest.raises(EngineStateError, match="map"):
        engine.checkpoint(AT)
    engine.stop(OperatorStop(), AT)
    engine.settle(work.key, Succeeded.one({"n": 1, "value": "v0"}), AT)
    log += engine.drain()
    assert engine.outcome == "aborted"
    with pytest.raises(UnrunnablePlanError, match='loop "lp" was running its rounds'):
        RunEngine.resume(view, log, reopen=True)

    from orchestration.predicates.structured import StructuredCell
    from orchestration.run.engine.machine import Decided

    engine = RunEngine.start(view, "run-1", {}, AT)
    script = _rounds()
    while engine.maps_running or not engine.in_flight and engine.steps < 2:
        for d in engine.ready(AT):
            if d.context is not None:
                decided = StructuredCell().decide(d.node, d.context)  # type: ignore[arg-type]
                engine.settle(d.key, Decided(decided), AT)
            else:
                engine.settle(d.key, script(d), AT)
    engine.stop(OperatorStop(), AT)
    resumed = RunEngine.resume(view, engine.drain(), reopen=True)
    (after,) = resumed.ready(AT)
    assert after.node.id == "after" and after.args["loop"] == "until"


def _loop_of_map() -> PlanSketch:
    """A loop of at most 2 rounds whose body lists 2 rows and maps them, and an inner loop of
    at most 3 rounds after the map, inside the same body."""
    s = PlanSketch(max_concurrent_frames=64).entry()
    s.loop("outer", {"path": "inner.rounds", "op": "gt", "value": 99}, max_iterations=2)
    s.call("fetch", args={"round": NodeRef("outer", path="index")})
    s.map("m", NodeRef("fetch", path="files"), max_items=2)
    s.call("leaf", args={"name": NodeRef("m", path="item")})
    s.loop("inner", {"path": "again.n", "op": "gt", "value": 99}, max_iterations=3)
    s.call("again", args={"round": NodeRef("inner", path="index")})
    s.edge("entry", "outer").edge("outer", "fetch", "body").edge("fetch", "m")
    s.edge("m", "leaf", "item").edge("m", "inner").edge("inner", "again", "body")
    return s


def _rows(d: Dispatch) -> SettleResult:
    if d.node.id == "fetch":
        return Succeeded.one({"files": ["a", "b"]})
    return Succeeded.one({"n": 1, "value": d.node.id})


def test_nested_loops_and_a_map_in_a_loop_take_the_worst_case() -> None:
    """A map and a loop inside a loop's body, every bound reached: the run takes exactly the
    worst case freeze computes, and the outer loop's row holds each round's result."""
    view = _loop_of_map().view()
    worst = _steps(view)
    engine, events = drive(view, {}, _rows, after_each=_checked)
    # entry, outer; 2 rounds × (round + fetch + m + 2 × (item + leaf) + inner
    #   + 3 × (round + again + check) + check) = 2 + 2 × 18.
    assert engine.outcome == "completed" and engine.steps == worst == 2 + 2 * 18
    rows = [
        e.outcome.output.items[0].json_
        for e in events
        if isinstance(e, NodeSettled)
        and e.frame.node_id == "outer"
        and isinstance(e.outcome, OutcomeOk)
        and e.outcome.output.items
        and "ended" in e.outcome.output.items[0].json_
    ]
    (row,) = rows
    assert row["ended"] == "max_iterations" and row["rounds"] == 2
    assert row["result"]["ended"] == "max_iterations" and row["result"]["rounds"] == 3
