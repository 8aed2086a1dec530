"""Property: for random valid plans and outcomes, the fold of the log is the engine's state."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from orchestration.plan.encoding import NodeRef
from orchestration.predicates.structured import StructuredCell
from orchestration.run.engine.machine import Decided, Dispatch, Failed, SettleResult, Succeeded
from orchestration.run.expand import project_log
from orchestration.run.fold import fold_run
from orchestration.testing import PlanSketch
from orchestration.types import (
    BooleanField,
    EnumField,
    OperatorStop,
    RawPlanView,
    RunEvent,
    RunProjection,
    RunSettled,
)

from .helpers import Engine, fkey

EVENTS: TypeAdapter[list[RunEvent]] = TypeAdapter(list[RunEvent])


class PlanGen:
    """Grows a freeze-valid plan from blocks.

    Blocks are calls (some failing, some with error handlers), branches, selects,
    duplicate-edge fan-outs, and diamonds whose fork is whatever came before (the entry, a call
    reached twice, or the previous join). Diamond arms are join-free and reconvergence-free,
    and may hold a branch that leaves their route unfired.
    """

    def __init__(self, draw: Any, calm: bool) -> None:
        self.draw = draw
        self.calm = calm
        self.sketch = PlanSketch(
            max_steps=4096 if calm else draw(st.sampled_from([4096, 4096, 8, 20])),
            max_concurrent_frames=draw(st.integers(1, 4)),
        )
        self.count = 0
        self.fields: list[Any] = []
        self.run_input: dict[str, Any] = {}
        self.failing: set[str] = set()
        self.produced: list[str] = []

    def name(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def call(self, tail: str, handle: str) -> str:
        node = self.name("c")
        args: dict[str, Any] = {}
        if self.produced and self.draw(st.booleans()):
            source = self.draw(st.sampled_from(self.produced))
            args["x"] = NodeRef(source, path="value")
        self.sketch.call(node, args=args, on_missing="omit")
        self.sketch.edge(tail, node, handle)
        self.produced.append(node)
        if not self.calm and self.draw(st.integers(0, 11)) == 0:
            self.failing.add(node)
        if self.draw(st.integers(0, 3)) == 0:
            handler = self.name("h")
            self.sketch.call(handler)
            self.sketch.edge(node, handler, "error")
        return node

    def flag(self) -> str:
        field = self.name("f")
        self.fields.append(BooleanField(path=field))
        self.run_input[field] = self.calm or self.draw(st.sampled_from([True, True, False]))
        return field

    def branch(self, tail: str, handle: str) -> str:
        node = self.name("b")
        field = self.flag()
        self.sketch.branch(node, {"path": f"entry:.{field}", "op": "truthy"})
        self.sketch.edge(tail, node, handle)
        if self.draw(st.booleans()):
            self.sketch.call(self.name("leaf"))
            self.sketch.edge(node, f"leaf{self.count}", "no_match")
        return self.call(node, "match")

    def select(self, tail: str, handle: str) -> str:
        node = self.name("s")
        field = self.name("k")
        self.fields.append(EnumField(path=field, values=("x", "y", "z")))
        self.run_input[field] = "x" if self.calm else self.draw(st.sampled_from(["x", "y", "z"]))
        predicate = {
            label: {"path": f"entry:.{field}", "op": "eq", "value": label} for label in ("x", "y")
        }
        self.sketch.select(node, ["x", "y"], predicate)
        self.sketch.edge(tail, node, handle)
        other = self.name("other")
        self.sketch.call(other)
        self.sketch.edge(node, other, "default")
        self.call(node, "case_y")
        return self.call(node, "case_x")

    def arm(self, fork: str, handle: str) -> str:
        tail = fork
        for _ in range(self.draw(st.integers(1, 2))):
            if self.draw(st.integers(0, 4)) == 0:
                tail = self.branch(tail, handle)
            else:
                tail = self.call(tail, handle)
            handle = "always"
        return tail

    def diamond(self, fork: str, handle: str) -> str:
        ends = [self.arm(fork, handle) for _ in range(self.draw(st.integers(2, 3)))]
        join = self.name("j")
        self.sketch.join(join)
        for end in ends:
            self.sketch.edge(end, join)
        self.produced.append(join)
        return join

    def fan(self, tail: str, handle: str) -> str:
        node = self.name("c")
        self.sketch.call(node)
        for _ in range(self.draw(st.integers(2, 3))):
            self.sketch.edge(tail, node, handle)
        self.produced.append(node)
        return node

    def build(self) -> RawPlanView:
        tail, handle = "entry", "always"
        for _ in range(self.draw(st.integers(1, 4))):
            kind = self.draw(
                st.sampled_from(["diamond", "call", "diamond", "fan", "branch", "select"])
            )
            tail = getattr(self, kind)(tail, handle)
            handle = "always"
        nodes = self.sketch.nodes
        self.sketch.nodes = []
        self.sketch.entry(*self.fields)
        self.sketch.nodes += nodes
        return self.sketch.view()


@st.composite
def runs(draw: Any) -> tuple[RawPlanView, dict[str, Any], set[str], bool, Any]:
    """A plan, its input, its failing calls, whether to stop it, and the settle-order source.

    Half the runs are calm (nothing fails, every branch and select goes on, no stop), so
    barriers close often; the other half fail, stop and exhaust budgets.
    """
    calm = draw(st.booleans())
    gen = PlanGen(draw, calm)
    view = gen.build()
    return view, gen.run_input, gen.failing, not calm, draw(st.data())


def outcome(d: Dispatch, failing: set[str], cell: StructuredCell) -> SettleResult:
    if d.context is not None:
        return Decided(cell.decide(d.node, d.context))  # type: ignore[arg-type]
    if d.node.id in failing:
        return Failed("ToolError", f"{d.node.id} failed")
    return Succeeded.one({"value": d.key})


def _state(engine: Engine) -> tuple[Any, ...]:
    """What the engine says of the run: its frontier, outcome and interruption."""
    return (*engine.frontier_keys(), engine.outcome, engine.interruption)


def _folded_state(projection: RunProjection) -> tuple[Any, ...]:
    frames = tuple(fkey(p.frame) for p in projection.frontier.frames)
    joins = tuple(j.correlation_key for j in projection.frontier.joins)
    return (frames, joins, projection.outcome, projection.interruption)


@settings(max_examples=150)
@given(runs())
def test_fold_of_every_prefix_is_the_engine_state(
    case: tuple[RawPlanView, dict[str, Any], set[str], bool, Any],
) -> None:
    """The fold of the log after every engine call agrees with the engine's own state.

    Also: every prefix folds, the log ends with exactly one run_settled, a calm run completes,
    and the JSON round trip of the log folds to the same projection.
    """
    view, run_input, failing, may_stop, data = case
    cell = StructuredCell()
    engine = Engine.start(view, "run-1", run_input, "t0")
    events: list[RunEvent] = engine.drain_events()
    checkpoints: list[tuple[int, Any]] = [(len(events), _state(engine))]

    logged: list[int] = [len(engine.log)]

    def checkpoint() -> None:
        events.extend(engine.drain_events())
        checkpoints.append((len(events), _state(engine)))
        logged.append(len(engine.log))

    in_flight: list[Dispatch] = []
    stop_at = data.draw(st.one_of(st.none(), st.integers(1, 12))) if may_stop else None
    tick = 0
    while not engine.done:
        tick += 1
        in_flight += engine.ready(f"t{tick}")
        checkpoint()
        assert len(in_flight) <= engine.window
        if engine.done:
            break
        assert in_flight, "the engine stalled with nothing in flight"
        if tick == stop_at:
            engine.stop(OperatorStop(), f"t{tick}")
            checkpoint()
        index = data.draw(st.integers(0, len(in_flight) - 1))
        dispatch = in_flight.pop(index)
        engine.settle(dispatch.key, outcome(dispatch, failing, cell), f"t{tick}")
        checkpoint()

    settled = [i for i, e in enumerate(events) if isinstance(e, RunSettled)]
    assert settled == [len(events) - 1]
    if not may_stop:
        # Nothing fails and every branch goes on: every barrier closes, nothing halts early.
        assert engine.outcome == "completed", engine.interruption
    for (length, state), entries in zip(checkpoints, logged, strict=True):
        projection = fold_run(events[:length])
        assert _folded_state(projection) == state
        # The projection built without the snapshots the fold never reads is the same.
        assert project_log(engine.log[:entries]) == projection
    for length in range(1, len(events) + 1):
        folded = fold_run(events[:length])
        assert folded.outcome == ("running" if length < len(events) else engine.outcome)
    decoded = EVENTS.validate_json(EVENTS.dump_json(events))
    assert fold_run(decoded).model_dump_json() == fold_run(events).model_dump_json()
