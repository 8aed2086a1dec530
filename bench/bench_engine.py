"""Engine and run-fold throughput, and the memory a fan-out costs.

Prints, in one run:
* engine settlements per second driving a generated 2,000-node plan synchronously in process
  (20 lanes from the entry, each 10 blocks of a call, a branch, a three-arm diamond and a call
  reading the fork; routes up to 50 segments), events drained as a host would, indexing the
  plan included (target >= 50,000/s); then the share of that one-off index (the plan's index
  and every join's facts), and the rate of the settlements alone; then, as the baseline
  measured in the same run, the time to build the run's log objects and nothing else (what any
  engine emitting the same pydantic events pays), and the settlements' time against it;
* ``fold_run`` events per second over a 100,000-event log of the same shape, 300 lanes wide
  (target >= 200,000/s), and as its baseline one pass that only reads each event and builds the
  edge records a projection must hold;
* peak traced memory of a run whose frame, holding a 1,000-entry table, fans out 1,000 wide,
  against 2,000 wide: the extra bytes per extra branch, next to what copying the table per
  branch would cost, and the peak ratio. Measured with the events drained to a sink (the engine
  state), and again with the log kept (its edge_taken events share the engine's tables).
"""

from __future__ import annotations

import gc
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from orchestration import engine_events as build  # noqa: E402
from orchestration.encoding import NodeRef  # noqa: E402
from orchestration.engine import Decided, RunEngine, Succeeded  # noqa: E402
from orchestration.engine_plan import CompiledPlan  # noqa: E402
from orchestration.predicates.structured import StructuredCell  # noqa: E402
from orchestration.runs import fold_run  # noqa: E402
from orchestration.testing import PlanSketch  # noqa: E402
from orchestration.types import (  # noqa: E402
    BooleanField,
    EdgeTaken,
    FrontierSnapshot,
    NodeEntered,
    NodeSettled,
    OutcomeOk,
    OutputItem,
    RawPlanView,
    RunEvent,
)

AT = "2026-01-01T00:00:00Z"
ITEM = (OutputItem(json_={"value": "ok", "n": 1}),)
FLAG = {"path": "entry:.flag", "op": "eq", "value": True}


def lanes_plan(lanes: int, units: int) -> RawPlanView:
    """``lanes`` independent pipelines from the entry, each ``units`` blocks of 10 nodes:
    a call, a branch (match continues, no_match ends at a leaf), a call, a fork into three
    calls, their join, and a call reading the fork's output.
    """
    sketch = PlanSketch("bench", max_steps=10_000_000, max_concurrent_frames=1000)
    sketch.entry(BooleanField(path="flag"))
    for lane in range(lanes):
        previous = "entry"
        for unit in range(units):
            p = f"l{lane}u{unit}"
            sketch.call(f"{p}_a", args={"flag": NodeRef("entry", path="flag")})
            sketch.branch(f"{p}_b", FLAG)
            sketch.call(f"{p}_c")
            sketch.call(f"{p}_leaf")
            sketch.call(f"{p}_fork")
            for arm in range(3):
                sketch.call(f"{p}_arm{arm}")
            sketch.join(f"{p}_j")
            sketch.call(f"{p}_after", args={"v": NodeRef(f"{p}_fork", path="value")})
            sketch.edge(previous, f"{p}_a")
            sketch.edge(f"{p}_a", f"{p}_b")
            sketch.edge(f"{p}_b", f"{p}_c", "match")
            sketch.edge(f"{p}_b", f"{p}_leaf", "no_match")
            sketch.edge(f"{p}_c", f"{p}_fork")
            for arm in range(3):
                sketch.edge(f"{p}_fork", f"{p}_arm{arm}")
                sketch.edge(f"{p}_arm{arm}", f"{p}_j")
            sketch.edge(f"{p}_j", f"{p}_after")
            previous = f"{p}_after"
    return sketch.view()


def drive(view: RawPlanView, keep: list[RunEvent] | None, cell: StructuredCell) -> None:
    """Run ``view`` to the end synchronously; every call succeeds, branches evaluate.

    Events are drained after every engine call, as a host does; they are kept in ``keep`` when
    given, else dropped. Counting them is left to the caller, outside the timed run.
    """

    def drain() -> None:
        events = engine.drain_events()
        if keep is not None:
            keep.extend(events)

    engine = RunEngine.start(view, "bench", {"flag": True}, AT)
    drain()
    item = Succeeded(ITEM)
    while not engine.done:
        ready = engine.ready(AT)
        drain()
        for d in ready:
            if d.context is not None:
                verdict = cell.decide(d.node, d.context)  # type: ignore[arg-type]
                engine.settle(d.key, Decided(verdict), AT)
            else:
                engine.settle(d.key, item, AT)
            drain()
    assert engine.outcome == "completed", engine.outcome


def settled_count(events: list[RunEvent]) -> int:
    return sum(1 for e in events if e.kind == "node_settled")


def index_plan(view: RawPlanView) -> CompiledPlan:
    """What a run computes once about its plan: the index, and every join's facts (which the
    engine computes when a barrier of that join first opens)."""
    plan = CompiledPlan(view)
    for node in view.nodes:
        if node.kind == "join":
            plan.join(node.id)
    return plan


def build_log_objects(events: list[RunEvent]) -> int:
    """The baseline: build the wire objects ``events`` hold, with the engine's own trusted
    builders and no bookkeeping at all (each shared object once, as the engine shares them).

    Any engine that emits this log as pydantic models pays at least this, so the ratio of the
    engine's time to it is the engine's own overhead. Returns how many objects were built.
    """
    seen: set[int] = set()
    built = 0
    for event in events:
        if type(event) is NodeEntered:
            build.node_entered(event.frame, event.at)
            built += 1
        elif type(event) is NodeSettled:
            outcome = event.outcome
            if type(outcome) is OutcomeOk:
                output = outcome.output
                outcome = build.outcome_ok(build.node_output(output.items, output.branch_id))
                built += 2
            build.node_settled(event.frame, outcome, event.at)
            built += 1
        elif type(event) is EdgeTaken:
            to = event.to
            # A new route tuple, as the engine extends its parent's route by one segment.
            segments = to.branch_id.segments
            route = build.branch_id((*segments[:-1], segments[-1]))
            target = build.frame_ref(to.node_id, to.kind, route, to.via_edge_id)
            build.edge_taken(
                event.edge_id,
                event.handle,
                event.from_,
                target,
                event.outputs,
                event.artifacts,
                event.evidence,
                event.at,
            )
            built += 3
        elif type(event) is FrontierSnapshot:
            for pending in event.frames:
                if id(pending) not in seen:
                    seen.add(id(pending))
                    build.pending_frame(pending.frame, pending.outputs, pending.artifacts)
                    built += 1
            build.frontier_snapshot(event.frames, event.joins, event.at)
            built += 1
    return built


def timed(work: Any) -> float:
    gc.collect()
    t0 = time.perf_counter()
    work()
    return time.perf_counter() - t0


def best_rate(view: RawPlanView, cell: StructuredCell, repeats: int = 5) -> tuple[float, int]:
    best, settled = float("inf"), 0
    for _ in range(repeats):
        events: list[RunEvent] = []
        gc.collect()
        t0 = time.perf_counter()
        drive(view, events, cell)
        best = min(best, time.perf_counter() - t0)
        settled = settled_count(events)
    return best, settled


def bench_engine() -> None:
    view = lanes_plan(lanes=20, units=10)
    assert len(view.nodes) == 2001
    cell = StructuredCell()
    drive(view, None, cell)  # warm up
    best, settled = best_rate(view, cell)
    rate = settled / best
    index = min(timed(lambda: index_plan(view)) for _ in range(5))
    steady = settled / (best - index)
    print(
        f"engine: {len(view.nodes):,} nodes, {settled:,} settlements in {best * 1e3:.1f} ms "
        f"-> {rate:,.0f} settlements/s (target >= 50,000/s; ratio {rate / 50_000:.2f}x)"
    )
    print(
        f"  of which indexing the plan once per run: {index * 1e3:.1f} ms; the settlements "
        f"alone: {steady:,.0f}/s (ratio {steady / 50_000:.2f}x)"
    )
    log: list[RunEvent] = []
    drive(view, log, cell)
    objects = build_log_objects(log)
    floor = min(timed(lambda: build_log_objects(log)) for _ in range(5))
    print(
        f"  baseline, building the log's {objects:,} wire objects and nothing else: "
        f"{floor * 1e3:.1f} ms ({settled / floor:,.0f} settlements/s at most for any engine "
        f"emitting them); the settlements take {(best - index) / floor:.2f}x that"
    )
    gc.disable()
    try:
        paused, _ = best_rate(view, cell)
    finally:
        gc.enable()
    print(
        f"  same run with the cyclic GC paused: {settled / paused:,.0f} settlements/s "
        f"(ratio {settled / paused / 50_000:.2f}x); the difference is the collector walking "
        "the objects each settlement creates and the log kept"
    )


def bench_fold() -> None:
    view = lanes_plan(lanes=300, units=10)
    events: list[RunEvent] = []
    drive(view, events, StructuredCell())
    log = events[:100_000]
    assert len(log) == 100_000, len(events)
    fold_run(log)  # warm up
    best = float("inf")
    for _ in range(5):
        gc.collect()
        t0 = time.perf_counter()
        projection = fold_run(log)
        best = min(best, time.perf_counter() - t0)
    rate = len(log) / best
    print(
        f"fold_run: {len(log):,} events in {best * 1e3:.1f} ms -> {rate:,.0f} events/s "
        f"(target >= 200,000/s; ratio {rate / 200_000:.2f}x); "
        f"{len(projection.frame_status):,} frames, {len(projection.frontier.frames)} live"
    )
    floor = min(timed(lambda: read_log(log)) for _ in range(5))
    print(
        f"  baseline, one pass reading each event's frame and outcome and building the edge "
        f"records a projection holds, nothing keyed: {floor * 1e3:.1f} ms "
        f"({len(log) / floor:,.0f} events/s); fold_run takes {best / floor:.2f}x that"
    )


def read_log(events: list[RunEvent]) -> int:
    """The fold's baseline: what any fold pays to read the log and list the edges taken."""
    records: list[Any] = []
    touched = 0
    for event in events:
        if type(event) is EdgeTaken:
            records.append(build.edge_taken_record(event.edge_id, event.handle, event.evidence))
        elif type(event) is NodeEntered:
            touched += event.frame is not None
        elif type(event) is NodeSettled:
            touched += event.outcome is not None
    return touched + len(records)


def fan_plan(table: int, width: int) -> RawPlanView:
    """A chain of ``table`` calls (so the last frame's table has ``table`` + 1 entries), then
    one call fanning out ``width`` edges to one leaf, which runs once per edge.
    """
    sketch = PlanSketch("fan", max_steps=10_000_000, max_concurrent_frames=1000)
    sketch.entry()
    names = [f"c{i}" for i in range(table)]
    for name in names:
        sketch.call(name)
    sketch.call("fan")
    sketch.call("leaf")
    sketch.chain("entry", *names, "fan")
    for _ in range(width):
        sketch.edge("fan", "leaf")
    return sketch.view()


def traced_peak(view: RawPlanView, keep_log: bool) -> int:
    gc.collect()
    tracemalloc.start()
    keep: list[RunEvent] | None = [] if keep_log else None
    drive(view, keep, StructuredCell())
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del keep
    return peak


def dict_copy_bytes(entries: int) -> int:
    """What copying a table of ``entries`` outputs into a fresh dict costs."""
    table: dict[str, Any] = {f"c{i}:e{i}": None for i in range(entries)}
    gc.collect()
    tracemalloc.start()
    copy = dict(table)
    size, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del copy
    return size


def route_bytes(table: int) -> int:
    """What one leaf frame's route costs by contract: its segments and its two key strings."""
    view = fan_plan(table, 1)
    engine = RunEngine.start(view, "bench", {}, AT)
    while True:
        ready = engine.ready(AT)
        leaf = next((d for d in ready if d.node.id == "leaf"), None)
        if leaf is not None:
            break
        for d in ready:
            engine.settle(d.key, Succeeded(ITEM), AT)
    segments = leaf.frame.branch_id.segments
    key = leaf.key
    return sys.getsizeof(segments) + sys.getsizeof(key) + sys.getsizeof(key[key.index(":") + 1 :])


def bench_memory() -> None:
    print("fan-out memory (tracemalloc peak; events drained as a host does):")
    per_branch: dict[int, float] = {}
    for table in (100, 1000):
        narrow = traced_peak(fan_plan(table, 1000), keep_log=False)
        wide = traced_peak(fan_plan(table, 2000), keep_log=False)
        per_branch[table] = (wide - narrow) / 1000
        route = route_bytes(table)
        copy_cost = dict_copy_bytes(table + 1)
        print(
            f"  {table:>5,}-entry table: 1,000 wide {narrow / 1e6:.1f} MB, 2,000 wide "
            f"{wide / 1e6:.1f} MB (ratio {wide / narrow:.2f}); per extra branch "
            f"{per_branch[table] / 1e3:.1f} kB, of which {route / 1e3:.1f} kB is the route; "
            f"the rest {(per_branch[table] - route) / 1e3:.1f} kB vs {copy_cost / 1e3:.1f} kB "
            "to copy the table"
        )
    kept_narrow = traced_peak(fan_plan(1000, 1000), keep_log=True)
    kept_wide = traced_peak(fan_plan(1000, 2000), keep_log=True)
    print(
        f"  with the whole log kept: 1,000 wide {kept_narrow / 1e6:.1f} MB, 2,000 wide "
        f"{kept_wide / 1e6:.1f} MB (ratio {kept_wide / kept_narrow:.2f}; the log's edge_taken "
        "events share the engine's tables)"
    )


def calibration() -> None:
    t0 = time.perf_counter()
    sum(range(10_000_000))
    print(f"machine: sum(range(10**7)) takes {(time.perf_counter() - t0) * 1e3:.0f} ms here")


if __name__ == "__main__":
    calibration()
    bench_engine()
    bench_fold()
    bench_memory()
