"""Engine, log and run-fold throughput, and what memory a fan-out and a long chain cost.

Prints, in one run:
* engine settlements per second driving a generated 2,000-node plan synchronously in process
  (20 lanes from the entry, each 10 blocks of a call, a branch, a three-arm diamond and a call
  reading the fork; routes up to 50 segments), its compact log drained as a host does, indexing
  the plan included (target >= 50,000/s); then the share of that one-off index (the plan's
  index and every join's facts), and the rate of the settlements alone; then, as the baseline
  measured in the same run, the time to build the log's entries and nothing else (what any
  engine emitting the same entries pays), and the settlements' time against it;
* ``expand_log`` entries per second: the compact log of a 3,000-lane run expanded into the
  contract's ``RunEvent`` list (what a reader pays to get the contract's events back);
* ``fold_run`` events per second over 100,000 of those events (target >= 200,000/s), and as
  its baseline one pass that only reads each event and builds the edge records a projection
  must hold;
* peak traced memory of a run whose frame, holding a 1,000-entry table, fans out 1,000 wide,
  against 2,000 wide: the extra bytes per extra branch, next to what copying the table per
  branch would cost;
* peak traced memory of the engine driving a chain of 1,000, 5,000 and 20,000 calls, its log
  drained to a sink as the workflow mirrors it: constant state per step means the peak does
  not grow with the length.
"""

from __future__ import annotations

import gc
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from orchestration.plan.encoding import NodeRef  # noqa: E402
from orchestration.predicates.structured import StructuredCell  # noqa: E402
from orchestration.run.engine import builders as build  # noqa: E402
from orchestration.run.engine.compiled import CompiledPlan  # noqa: E402
from orchestration.run.engine.machine import Decided, RunEngine, Succeeded  # noqa: E402
from orchestration.run.expand import expand_log  # noqa: E402
from orchestration.run.fold import fold_run  # noqa: E402
from orchestration.run.log import LogEdge, LogEnter, LogEntry, LogSettle  # noqa: E402
from orchestration.testing import PlanSketch  # noqa: E402
from orchestration.types import (  # noqa: E402
    BooleanField,
    EdgeTaken,
    NodeEntered,
    NodeSettled,
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


def drive(view: RawPlanView, keep: list[LogEntry] | None, cell: StructuredCell) -> None:
    """Run ``view`` to the end synchronously; every call succeeds, branches evaluate.

    The log is drained after every engine call, as a host does; it is kept in ``keep`` when
    given, else dropped. Counting it is left to the caller, outside the timed run.
    """

    def drain() -> None:
        entries = engine.drain()
        if keep is not None:
            keep.extend(entries)

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


def settled_count(log: list[LogEntry]) -> int:
    return sum(1 for e in log if type(e) is LogSettle)


def index_plan(view: RawPlanView) -> CompiledPlan:
    """What a run computes once about its plan: the index, and every join's facts (which the
    engine computes when a barrier of that join first opens)."""
    plan = CompiledPlan(view)
    for node in view.nodes:
        if node.kind == "join":
            plan.join(node.id)
    return plan


def build_log_entries(log: list[LogEntry]) -> int:
    """The baseline: build the entries ``log`` holds with the engine's own trusted builders
    and no bookkeeping at all.

    Any engine that emits this log pays at least this, so the ratio of the engine's time to it
    is the engine's own overhead. Returns how many entries were built.
    """
    built = 0
    for entry in log:
        kind = type(entry)
        if kind is LogEnter:
            assert isinstance(entry, LogEnter)
            build.log_enter(entry.frame, entry.attempt, entry.at)
        elif kind is LogSettle:
            assert isinstance(entry, LogSettle)
            build.log_settle(
                entry.frame,
                entry.status,
                entry.items,
                entry.artifact,
                entry.handled,
                entry.error,
                entry.attempt,
                entry.verdict,
                entry.at,
            )
        elif kind is LogEdge:
            assert isinstance(entry, LogEdge)
            build.log_edge(
                entry.edge,
                entry.handle,
                entry.source,
                entry.frame,
                entry.node,
                entry.node_kind,
                entry.evidence,
                entry.at,
            )
        else:
            entry.model_construct(**dict(entry))
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
        log: list[LogEntry] = []
        gc.collect()
        t0 = time.perf_counter()
        drive(view, log, cell)
        best = min(best, time.perf_counter() - t0)
        settled = settled_count(log)
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
    log: list[LogEntry] = []
    drive(view, log, cell)
    objects = build_log_entries(log)
    floor = min(timed(lambda: build_log_entries(log)) for _ in range(5))
    print(
        f"  baseline, building the log's {objects:,} entries and nothing else: "
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
    entries: list[LogEntry] = []
    drive(view, entries, StructuredCell())
    expand_log(entries[:10_000])  # warm up
    best = min(timed(lambda: expand_log(entries)) for _ in range(3))
    events = expand_log(entries)
    print(
        f"expand_log: {len(entries):,} compact entries to {len(events):,} contract events in "
        f"{best * 1e3:.0f} ms -> {len(entries) / best:,.0f} entries/s"
    )
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
    keep: list[LogEntry] | None = [] if keep_log else None
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


def bench_memory() -> None:
    print("fan-out memory (tracemalloc peak; events drained as a host does):")
    per_branch: dict[int, float] = {}
    for table in (100, 1000):
        narrow = traced_peak(fan_plan(table, 1000), keep_log=False)
        wide = traced_peak(fan_plan(table, 2000), keep_log=False)
        per_branch[table] = (wide - narrow) / 1000
        copy_cost = dict_copy_bytes(table + 1)
        print(
            f"  {table:>5,}-entry table: 1,000 wide {narrow / 1e6:.1f} MB, 2,000 wide "
            f"{wide / 1e6:.1f} MB (ratio {wide / narrow:.2f}); per extra branch "
            f"{per_branch[table] / 1e3:.1f} kB (its frame, its interned route, its dispatch) "
            f"vs {copy_cost / 1e3:.1f} kB to copy the table once"
        )
    kept_narrow = traced_peak(fan_plan(1000, 1000), keep_log=True)
    kept_wide = traced_peak(fan_plan(1000, 2000), keep_log=True)
    print(
        f"  with the whole log kept: 1,000 wide {kept_narrow / 1e6:.1f} MB, 2,000 wide "
        f"{kept_wide / 1e6:.1f} MB (ratio {kept_wide / kept_narrow:.2f}; the compact log's "
        "entries carry no tables)"
    )


def chain_plan(length: int) -> RawPlanView:
    sketch = PlanSketch("chain", max_steps=10_000_000, max_concurrent_frames=1000).entry()
    names = [f"c{i}" for i in range(length)]
    for name in names:
        sketch.call(name)
    return sketch.chain("entry", *names).view()


def bench_chain_memory() -> None:
    print("chain memory (tracemalloc peak of the run, plan index included; log drained):")
    peaks: dict[int, int] = {}
    for length in (1_000, 5_000, 20_000):
        view = chain_plan(length)
        engine_peak = traced_peak(view, keep_log=False)
        plan_bytes = plan_index_bytes(view)
        peaks[length] = engine_peak - plan_bytes
        print(
            f"  {length:>6,} calls: peak {engine_peak / 1e6:.1f} MB, of which the plan's index "
            f"{plan_bytes / 1e6:.1f} MB; the run's own state {peaks[length] / 1e3:.0f} kB "
            f"({peaks[length] / length:.0f} B per step)"
        )
    per_step = {length: peak / length for length, peak in peaks.items()}
    print(
        f"  bytes per step at 20,000 calls / at 1,000: {per_step[20_000] / per_step[1_000]:.2f} "
        "(constant per step: ~1; what a step keeps is its route's one segment and its key's "
        "digest, since a frame's identity is its whole route)"
    )


def plan_index_bytes(view: RawPlanView) -> int:
    """What indexing the plan holds, which any run of it needs whatever its progress."""
    gc.collect()
    tracemalloc.start()
    plan = index_plan(view)
    size, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del plan
    return size


def calibration() -> None:
    t0 = time.perf_counter()
    sum(range(10_000_000))
    print(f"machine: sum(range(10**7)) takes {(time.perf_counter() - t0) * 1e3:.0f} ms here")


if __name__ == "__main__":
    calibration()
    bench_engine()
    bench_fold()
    bench_memory()
    bench_chain_memory()
