"""The engine's host-facing API: misuse, failures by kind, halts, retries, resume, artifacts."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from orchestration.errors import EngineStateError, MalformedRunLogError, UnrunnablePlanError
from orchestration.plan.encoding import NodeRef
from orchestration.run.checkpoint import Checkpoint
from orchestration.run.engine.machine import (
    Decided,
    Dispatch,
    Failed,
    RunEngine,
    SettleResult,
    Skipped,
    Succeeded,
)
from orchestration.run.expand import expand_log
from orchestration.run.fold import fold_run
from orchestration.run.log import LogArrive
from orchestration.testing import (
    Attempts,
    FakeToolbox,
    Indeterminate,
    PlanSketch,
    run_in_process,
)
from orchestration.tools.contracts import BranchVerdict, PredicateContext, SelectVerdict
from orchestration.types import (
    ArtifactHandle,
    BooleanField,
    DeviationAbort,
    FrontierSnapshot,
    NodeSettled,
    OperatorStop,
    OutcomeOk,
    OutputSchemaViolation,
    PredicateUnevaluatable,
    ProcessDeath,
    RunEvent,
    StringField,
)

from .helpers import AT, Engine, assert_agrees, drive, trace


def chain_view(*names: str) -> Any:
    sketch = PlanSketch().entry()
    for name in names:
        sketch.call(name)
    return sketch.chain("entry", *names).view()


def started(view: Any, run_input: dict[str, Any] | None = None) -> tuple[RunEngine, list[RunEvent]]:
    engine = Engine.start(view, "run-1", run_input or {}, AT)
    return engine, engine.drain_events()


def test_settling_a_frame_not_in_flight_is_refused() -> None:
    """Only frames handed out may be settled, and each only once."""
    engine, _ = started(chain_view("a"))
    with pytest.raises(EngineStateError, match="not in flight"):
        engine.settle("a:e2:e0", Succeeded.one({}), AT)
    (d,) = engine.ready(AT)
    engine.settle(d.key, Succeeded.one({}), AT)
    with pytest.raises(EngineStateError):
        engine.settle(d.key, Succeeded.one({}), AT)
    assert engine.done


def test_a_result_of_the_wrong_kind_is_refused() -> None:
    """Succeeded does not settle a branch; Decided does not settle a call."""
    view = (
        PlanSketch()
        .entry()
        .branch("b", {"all": []})
        .call("c")
        .edge("entry", "b")
        .edge("b", "c", "match")
        .view()
    )
    engine, _ = started(view)
    (d,) = engine.ready(AT)
    with pytest.raises(EngineStateError, match="Succeeded does not settle"):
        engine.settle(d.key, Succeeded.one({}), AT)
    engine.settle(d.key, Decided(BranchVerdict(matched=True)), AT)
    (c,) = engine.ready(AT)
    with pytest.raises(EngineStateError, match="Decided does not settle"):
        engine.settle(c.key, Decided(BranchVerdict(matched=True)), AT)


def test_unrunnable_views_are_refused_before_anything_is_recorded() -> None:
    """No single entry, a cycle, or a dangling edge: refused by name at start."""
    two_entries = PlanSketch().entry().entry(node_id="other").view()
    with pytest.raises(UnrunnablePlanError, match="exactly one entry"):
        Engine.start(two_entries, "r", {}, AT)
    cycle = PlanSketch().entry().call("a").call("b").chain("entry", "a", "b", "a").view()
    with pytest.raises(UnrunnablePlanError, match="cycle"):
        Engine.start(cycle, "r", {}, AT)
    dangling = PlanSketch().entry().edge("entry", "ghost").view()
    with pytest.raises(UnrunnablePlanError, match="does not exist"):
        Engine.start(dangling, "r", {}, AT)


def test_wrong_verdict_kind_is_a_predicate_failure() -> None:
    """A select verdict for a branch is unevaluatable: the run halts with that cause."""
    view = PlanSketch().entry().branch("b", {"all": []}).edge("entry", "b").view()
    engine, events = started(view)
    (d,) = engine.ready(AT)
    engine.settle(d.key, Decided(SelectVerdict(case_label=None)), AT)
    events += engine.drain_events()
    assert engine.outcome == "halted"
    assert engine.interruption == PredicateUnevaluatable(node_id="b")
    assert_agrees(engine, fold_run(events))


class Raising:
    """A cell whose evaluation raises."""

    id = "boom"
    deterministic = True

    async def load(self) -> None:
        return None

    async def validate(self, node: Any) -> None:
        return None

    async def evaluate(self, node: Any, ctx: PredicateContext) -> Any:
        raise RuntimeError("cell exploded")


@pytest.mark.parametrize(("with_error_edge", "outcome"), [(False, "halted"), (True, "completed")])
def test_a_cell_that_raises(with_error_edge: bool, outcome: str) -> None:
    """A raising cell is predicate_unevaluatable (halted) unless an error edge takes it."""
    sketch = (
        PlanSketch().entry().branch("b", {"all": []}, evaluator="boom").call("h").edge("entry", "b")
    )
    if with_error_edge:
        sketch.edge("b", "h", "error")
    events, projection = asyncio.run(run_in_process(sketch.view(), {}, evaluators=[Raising()]))
    assert projection.outcome == outcome
    settled = next(e for e in events if e.kind == "node_settled" and e.frame.node_id == "b")
    assert settled.outcome.error.model_dump() == {
        "name": "RuntimeError",
        "message": "cell exploded",
    }
    if not with_error_edge:
        assert projection.interruption == PredicateUnevaluatable(node_id="b")


def test_output_schema_failure_unhandled_aborts_with_its_cause() -> None:
    """A reason node that exhausted its attempts ends the run with output_schema_violation."""
    view = PlanSketch().entry().reason("r", "say hi").edge("entry", "r").view()
    toolbox = FakeToolbox(nodes={"r": Failed("SchemaError", "no valid answer", "output_schema")})
    _, projection = asyncio.run(run_in_process(view, {}, toolbox))
    assert projection.outcome == "aborted"
    assert projection.interruption == OutputSchemaViolation(node_id="r")


def test_unencodable_items_fail_the_node() -> None:
    """Items outside the encodable subset fail the frame with a named error."""
    view = chain_view("a")
    engine, events = started(view)
    (d,) = engine.ready(AT)
    engine.settle(d.key, Succeeded(items=({"fn": print},)), AT)
    events += engine.drain_events()
    settled = next(e for e in events if e.kind == "node_settled" and e.frame.node_id == "a")
    assert settled.outcome.error.name == "UnencodableValueError"
    assert engine.outcome == "aborted"


def test_halted_frame_pauses_the_run_until_retried() -> None:
    """interrupt_frame records process_death for the frame; the run waits; a retry continues."""
    view = (
        PlanSketch()
        .entry()
        .call("a", on_indeterminate="halt", replay_safe=False)
        .call("b")
        .call("c")
        .edge("entry", "a")
        .edge("entry", "b")
        .edge("a", "c")
        .view()
    )
    engine, events = started(view)
    a, b = engine.ready(AT)
    engine.interrupt_frame(a.key, ProcessDeath(), AT)
    engine.settle(b.key, Succeeded.one({}), AT)
    assert engine.ready(AT) == []
    events += engine.drain_events()
    projection = fold_run(events)
    assert_agrees(engine, projection)
    assert projection.outcome == "running"
    assert projection.interruption == ProcessDeath()
    assert [f.node_id for f in projection.indeterminate] == ["a"]
    again = engine.retry(a.key, AT)
    assert again.attempt == 2 and again.args == a.args
    events += engine.drain_events()
    assert trace(events)[-1] == ("entered", a.key)
    assert fold_run(events).interruption is None
    engine.settle(a.key, Succeeded.one({}), AT)
    (c,) = engine.ready(AT)
    engine.settle(c.key, Succeeded.one({}), AT)
    events += engine.drain_events()
    assert engine.outcome == "completed"
    assert_agrees(engine, fold_run(events))
    assert engine.steps == 4


def test_halted_frame_skipped_continues_without_its_output() -> None:
    """Skipping a halted call settles it skipped, fires its success edges, outputs nothing."""
    view = (
        PlanSketch()
        .entry()
        .call("a", on_indeterminate="halt", replay_safe=False)
        .call("c", args={"v": NodeRef("a", path="value")}, on_missing="omit")
        .chain("entry", "a", "c")
        .view()
    )
    engine, events = started(view)
    (a,) = engine.ready(AT)
    engine.interrupt_frame(a.key, ProcessDeath(), AT)
    engine.settle(a.key, Skipped(), AT)
    (c,) = engine.ready(AT)
    assert c.args == {}
    engine.settle(c.key, Succeeded.one({}), AT)
    events += engine.drain_events()
    projection = fold_run(events)
    assert_agrees(engine, projection)
    assert projection.frame_status[a.key] == "skipped"
    assert dict(projection.node_status_by_id)["a"] == "skipped"
    assert a.key not in projection.outputs
    assert projection.outcome == "completed" and projection.interruption is None


def test_halted_frame_aborted_by_an_operator() -> None:
    """An operator's abort of a halted call ends the run aborted; the call stays indeterminate."""
    view = chain_view("a", "b")
    engine, events = started(view)
    (a,) = engine.ready(AT)
    engine.interrupt_frame(a.key, ProcessDeath(), AT)
    engine.stop(OperatorStop(), AT)
    events += engine.drain_events()
    assert trace(events)[-3:] == [
        ("interrupted", "process_death", a.key),
        ("interrupted", "operator_stop", None),
        ("run_settled", "aborted"),
    ]
    projection = fold_run(events)
    assert_agrees(engine, projection)
    assert [f.node_id for f in projection.indeterminate] == ["a"]
    with pytest.raises(EngineStateError):
        engine.settle(a.key, Succeeded.one({}), AT)


@pytest.mark.parametrize(
    ("policy", "decision", "invocations", "status"),
    [
        ("retry", None, 2, "done"),
        ("skip", None, 1, "skipped"),
        ("halt", "retry", 2, "done"),
        ("halt", "skip", 1, "skipped"),
    ],
)
def test_driver_resolves_indeterminate_calls_by_policy(
    policy: str, decision: str | None, invocations: int, status: str
) -> None:
    """The in-process driver applies onIndeterminate as the workflow will."""
    view = (
        PlanSketch()
        .entry()
        .call("a", on_indeterminate=policy, replay_safe=policy == "retry")  # type: ignore[arg-type]
        .chain("entry", "a")
        .view()
    )
    toolbox = FakeToolbox(nodes={"a": Attempts(Indeterminate(), {"value": "second"})})
    events, projection = asyncio.run(
        run_in_process(view, {}, toolbox, on_halt=lambda d: decision)  # type: ignore[arg-type,return-value]
    )
    assert len(toolbox.invocations("a")) == invocations
    assert projection.frame_status["a:e2:e0"] == status
    assert projection.outcome == "completed"


def test_resume_from_a_log_continues_where_it_stopped() -> None:
    """An engine rebuilt from a log mid-run finishes with the same events as an unbroken run."""
    view = _canonical()
    _, whole = drive(view, {}, lambda d: Succeeded.one({"value": d.node.id}), max_in_flight=1)
    engine = Engine.start(view, "run-1", {}, AT, max_in_flight=1)
    events = engine.drain_events()
    for _ in range(3):
        (d,) = engine.ready(AT)
        engine.settle(d.key, Succeeded.one({"value": d.node.id}), AT)
    events += engine.drain_events()
    resumed = Engine.resume_from(view, engine.log, max_in_flight=1)
    assert resumed.steps == engine.steps
    rest: list[RunEvent] = []
    while not resumed.done:
        for d in resumed.ready(AT):
            resumed.settle(d.key, Succeeded.one({"value": d.node.id}), AT)
        rest += resumed.drain_events()
    assert trace(events + rest) == trace(whole)
    assert fold_run(events + rest) == fold_run(whole)


def _canonical() -> Any:
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
        .view()
    )


def test_resume_recovers_an_entered_call_for_a_decision() -> None:
    """A call entered and never settled comes back as recovered, awaiting retry or skip."""
    view = chain_view("a", "b")
    engine, events = started(view)
    (a,) = engine.ready(AT)
    events += engine.drain_events()
    resumed = Engine.resume_from(view, engine.log)
    assert [d.key for d in resumed.recovered] == [a.key]
    assert resumed.ready(AT) == []
    again = resumed.retry(a.key, AT)
    assert again.attempt == 2
    resumed.settle(a.key, Succeeded.one({}), AT)
    (b,) = resumed.ready(AT)
    resumed.settle(b.key, Succeeded.one({}), AT)
    assert resumed.outcome == "completed"
    assert resumed.steps == 3


def test_a_checkpoint_continues_the_run_as_new() -> None:
    """A checkpoint (nothing in flight) is enough to continue a run in a new engine."""
    view = _canonical()
    _, whole = drive(view, {}, lambda d: Succeeded.one({"value": d.node.id}), max_in_flight=1)
    engine = Engine.start(view, "run-1", {}, AT, max_in_flight=1)
    for _ in range(3):
        for d in engine.ready(AT):
            engine.settle(d.key, Succeeded.one({"value": d.node.id}), AT)
    assert engine.in_flight == ()
    carried = engine.checkpoint(AT)
    first = engine.drain_events()
    assert isinstance(first[-1], FrontierSnapshot)
    wire = Checkpoint.model_validate_json(carried.model_dump_json())
    resumed = RunEngine.continued(view, wire, at=AT, max_in_flight=1)
    assert resumed.steps == engine.steps
    log = [*engine.log, *resumed.drain()]
    while not resumed.done:
        for d in resumed.ready(AT):
            resumed.settle(d.key, Succeeded.one({"value": d.node.id}), AT)
        log += resumed.drain()
    events = expand_log(log)
    assert [t for t in trace(events) if t[0] != "snapshot"] == [
        t for t in trace(whole) if t[0] != "snapshot"
    ]
    assert fold_run(events).outputs == fold_run(whole).outputs


def test_a_checkpoint_needs_nothing_in_flight() -> None:
    """Frames in flight cannot be carried: checkpoint() refuses until they settle."""
    engine, _ = started(chain_view("a"))
    engine.ready(AT)
    with pytest.raises(EngineStateError, match="nothing in flight"):
        engine.checkpoint(AT)


def test_a_repeated_arrival_is_idempotent() -> None:
    """The same (edge, route) arriving twice at a barrier counts once."""
    view = _canonical()
    whole, _ = drive(view, {}, lambda d: Succeeded.one({"value": d.node.id}))
    cut = next(i for i, e in enumerate(whole.log) if isinstance(e, LogArrive)) + 1
    # The parked arrival is recorded a second time, as a redelivered entry would be: on
    # resume it must still count once, and the barrier closes on the other branch.
    log = [*whole.log[:cut], whole.log[cut - 1]]
    resumed = Engine.resume_from(view, log, max_in_flight=1)
    out: list[RunEvent] = []
    while not resumed.done:
        for d in resumed.ready(AT):
            resumed.settle(d.key, Succeeded.one({"value": d.node.id}), AT)
        out += resumed.drain_events()
    merged = next(e for e in out if isinstance(e, NodeSettled) and e.frame.node_id == "j")
    assert isinstance(merged.outcome, OutcomeOk)
    assert [i.json_["via"] for i in merged.outcome.output.items] == ["e3", "e4"]
    assert resumed.outcome == "completed"


def test_refuse_records_a_deviation_before_any_node() -> None:
    """A run refused at start records run_started, the cause, and settles aborted."""
    engine = RunEngine.refuse("run-1", "d" * 64, DeviationAbort(detail="digest"), AT, entry="entry")
    events = expand_log(engine.drain())
    assert trace(events) == [
        ("run_started",),
        ("interrupted", "deviation_abort", None),
        ("run_settled", "aborted"),
    ]
    assert fold_run(events).interruption == DeviationAbort(detail="digest")


def test_artifacts_travel_to_transforms_through_fan_out_and_joins() -> None:
    """A call's artifact handle reaches a transform on its route, also across a join."""
    handle = ArtifactHandle(tag="memory", locator="blob-1", artifact_class="SpooledJsonArtifact")
    view = (
        PlanSketch()
        .entry()
        .call("fetch")
        .call("left")
        .call("right")
        .join("j")
        .transform("read", NodeRef("fetch"), "artifact_head")
        .transform("lost", NodeRef("left"), "artifact_head")
        .edge("entry", "fetch")
        .edge("fetch", "left")
        .edge("fetch", "right")
        .edge("left", "j")
        .edge("right", "j")
        .edge("j", "read")
        .edge("j", "lost", "always")
        .edge("lost", "read", "error")
        .view()
    )
    sources: dict[str, Any] = {}

    def script(d: Dispatch) -> SettleResult:
        if d.node.id == "fetch":
            return Succeeded.one({"body": "x"}, artifact=handle)
        if d.kind == "transform":
            sources[d.key] = d.source
        return Succeeded.one({"value": d.node.id})

    _, events = drive(view, {}, script)
    # "read" runs twice: after the join, and after "lost" failed (its error edge).
    assert list(sources.values()) == [handle, handle]
    lost = next(e for e in events if e.kind == "node_settled" and e.frame.node_id == "lost")
    assert lost.outcome.error.name == "MissingArtifactError"
    edge = next(e for e in events if e.kind == "edge_taken" and e.to.node_id == "read")
    assert dict(edge.artifacts) == {"fetch:e2:e0": handle}


def test_reason_prompt_parts_are_resolved_and_rendered() -> None:
    """Prompt references render as text: strings as is, other values as compact JSON."""
    view = (
        PlanSketch()
        .entry(StringField(path="topic"), BooleanField(path="brief"))
        .reason(
            "r",
            "Write about ",
            NodeRef("entry", path="topic"),
            " brief=",
            NodeRef("entry", path="brief"),
            " ",
            NodeRef("ghost"),
        )
        .edge("entry", "r")
        .view()
    )
    engine, _ = started(view, {"topic": "owls", "brief": True})
    (d,) = engine.ready(AT)
    assert d.prompt == "Write about owls brief=true [unresolved: ghost]"


def test_evidence_is_recorded_on_every_edge_a_verdict_fires() -> None:
    """Decided evidence lands on each edge_taken of that settlement and in edgesTaken."""
    view = (
        PlanSketch()
        .entry()
        .branch("b", {"all": []})
        .call("x")
        .call("y")
        .edge("entry", "b")
        .edge("b", "x", "match")
        .edge("b", "y", "match")
        .view()
    )
    engine, events = started(view)
    (d,) = engine.ready(AT)
    engine.settle(d.key, Decided(BranchVerdict(matched=True), evidence={"score": 0.9}), AT)
    events += engine.drain_events()
    assert [e.evidence for e in events if e.kind == "edge_taken" and e.from_.node_id == "b"] == [
        {"score": 0.9},
        {"score": 0.9},
    ]
    assert fold_run(events).edges_taken[-1].evidence == {"score": 0.9}


def test_snapshot_on_demand_matches_the_engine_frontier() -> None:
    """snapshot() records the live frames and open barriers; the fold reads them back."""
    engine, events = started(_canonical())
    for _ in range(2):
        for d in engine.ready(AT):
            engine.settle(d.key, Succeeded.one({}), AT)
    engine.snapshot(AT)
    events += engine.drain_events()
    assert isinstance(events[-1], FrontierSnapshot)
    assert_agrees(engine, fold_run(events))


def test_fold_refuses_a_log_that_does_not_open_with_run_started() -> None:
    """An empty log, or one not opening with run_started, is malformed."""
    with pytest.raises(MalformedRunLogError):
        fold_run([])
    engine, events = started(chain_view("a"))
    with pytest.raises(MalformedRunLogError):
        fold_run(events[1:])
    with pytest.raises(MalformedRunLogError):
        RunEngine.resume(chain_view("a"), events[1:])


def test_driver_stops_when_asked_and_records_a_clean_log() -> None:
    """run_in_process applies stop_when after a settlement; the log still folds and ends once."""
    view = chain_view("a", "b", "c")
    toolbox = FakeToolbox()
    events, projection = asyncio.run(
        run_in_process(
            view,
            {},
            toolbox,
            stop_when=lambda engine: OperatorStop() if engine.steps >= 2 else None,
        )
    )
    assert [c.node_id for c in toolbox.calls] == ["a"]
    assert projection.outcome == "aborted" and projection.interruption == OperatorStop()
    assert [e.kind for e in events].count("run_settled") == 1


def test_indeterminate_action_never_repeats_an_unsafe_call() -> None:
    """skip skips; retry repeats only replay-safe calls; anything else halts for an operator."""
    from orchestration.run.engine.machine import indeterminate_action
    from orchestration.types import CallDefinition, CallNode, JoinNode

    def call(policy: str, safe: bool) -> CallNode:
        definition = CallDefinition(tool="t", replay_safe=safe, on_indeterminate=policy)  # type: ignore[arg-type]
        return CallNode(id="c", definition=definition)

    assert indeterminate_action(call("skip", False)) == "skip"
    assert indeterminate_action(call("retry", True)) == "retry"
    assert indeterminate_action(call("retry", False)) == "halt"
    assert indeterminate_action(call("halt", True)) == "halt"
    assert indeterminate_action(JoinNode(id="j")) == "retry"


def test_every_verdict_is_recorded_with_its_evidence_even_when_no_edge_fires() -> None:
    """A branch whose verdict fires no edge still records the verdict and its evidence."""
    view = (
        PlanSketch()
        .entry()
        .branch("b", {"all": []})
        .call("x")
        .edge("entry", "b")
        .edge("b", "x", "match")
        .view()
    )
    engine, events = started(view)
    (d,) = engine.ready(AT)
    engine.settle(d.key, Decided(BranchVerdict(matched=False), evidence={"seen": 3}), AT)
    events += engine.drain_events()
    settled = next(e for e in events if isinstance(e, NodeSettled) and e.frame.node_id == "b")
    assert settled.verdict is not None
    assert (settled.verdict.handle, settled.verdict.evidence) == ("no_match", {"seen": 3})
    projection = fold_run(events)
    assert projection.outcome == "completed" and "x" not in projection.node_status_by_id
    assert projection.verdicts["b:e2:e0"].handle == "no_match"
