"""Maps whose items run in batches (sub-runs), in process: the same run as without batches.

A batch runs its items one after another and the run takes batches in order, so with one item
at a time a batched map's log is the unbatched map's, entry for entry; with more at once only
the order of the entries differs, never a frame, an output or a row. The tolerance is decided
batch by batch, a lost call ends its batch (its items fail, nothing is repeated), a stop stops
the batches, and a body that needs a person or a run-wide budget runs in the run instead.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from orchestration.plan.encoding import NodeRef
from orchestration.plan.gates import ApprovalGate
from orchestration.run.batching import (
    Batching,
    BatchResult,
    batch_facts,
    decode_result,
    encode_result,
    renumbered,
)
from orchestration.run.engine.compiled import CompiledPlan
from orchestration.run.engine.machine import Dispatch, Failed, RunEngine, Succeeded
from orchestration.run.log import LogEdge, LogItem, LogMerge
from orchestration.testing import FakeToolbox, Indeterminate, PlanSketch, run_in_process
from orchestration.types import (
    NodeSettled,
    OperatorStop,
    OutcomeFailed,
    OutcomeOk,
    RawPlanView,
    RunEvent,
)
from tests.support.hosts import timeless

SMALL = Batching(over=4, steps=9)
"""Maps of more than 4 items run in batches of 3 (an item is 3 steps: its frame and 2 calls)."""


def _plan(
    *,
    concurrency: int | None = 1,
    budget: bool = False,
    gate: bool = False,
    halt: bool = False,
    **tolerance: Any,
) -> RawPlanView:
    s = PlanSketch(max_concurrent_frames=64, max_steps=10_000).entry()
    s.call("fetch").map(
        "m", NodeRef("fetch", path="files"), max_items=1000, concurrency=concurrency, **tolerance
    )
    s.call(
        "work",
        args={"name": NodeRef("m", path="item")},
        gate=ApprovalGate(on="arguments") if gate else None,
        replay_safe=not halt,
        on_indeterminate="halt" if halt else "retry",
    )
    s.call("check", args={"value": NodeRef("work", path="value")})
    s.call("after", args={"rows": NodeRef("m", select="all")})
    s.call("rescue")
    s.edge("entry", "fetch").edge("fetch", "m").edge("m", "work", "item")
    s.edge("work", "check").edge("m", "after").edge("m", "rescue", "error")
    view = s.view()
    if budget:
        view = view.model_copy(
            update={"bounds": view.bounds.model_copy(update={"max_tokens": 1000})}
        )
    return view


def _tools(n: int, bad: frozenset[int] = frozenset(), lost: frozenset[int] = frozenset()) -> Any:
    def work(d: Dispatch) -> Any:
        index = int(d.args["name"][1:])
        if index in lost:
            return Indeterminate()
        if index in bad:
            return Failed("ValueError", f"cannot read f{index}")
        return Succeeded.one({"value": d.args["name"].upper()})

    return FakeToolbox(nodes={"fetch": {"files": [f"f{i}" for i in range(n)]}, "work": work})


def _without_times(events: list[RunEvent]) -> list[dict[str, Any]]:
    return [e.model_dump(mode="json", exclude={"at", "started", "ended"}) for e in events]


def _rows(events: list[RunEvent]) -> list[Any]:
    outcome = _settled_map(events).outcome
    assert isinstance(outcome, OutcomeOk)
    return [item.json_ for item in outcome.output.items]


def _settled_map(events: list[RunEvent]) -> NodeSettled:
    (settled,) = [
        e
        for e in events
        if isinstance(e, NodeSettled)
        and e.frame.node_id == "m"
        and not any(hasattr(s, "map") for s in e.frame.branch_id.segments)
    ]
    return settled


@pytest.mark.asyncio
async def test_one_item_at_a_time_the_batched_log_is_the_unbatched_log() -> None:
    """Batches of 3 over 11 items, one item at a time: every event, in order, is the same."""
    plain_events, plain = await run_in_process(_plan(), {}, _tools(11))
    batched_events, batched = await run_in_process(_plan(), {}, _tools(11), batching=SMALL)
    assert batched.outcome == "completed"
    assert _without_times(batched_events) == _without_times(plain_events)
    assert timeless(batched) == timeless(plain)


@pytest.mark.asyncio
async def test_many_at_once_only_the_order_differs() -> None:
    """Four items at once, in batches and not: the same frames, outputs and rows."""
    tools = _tools(23)
    plain_events, plain = await run_in_process(_plan(concurrency=4), {}, _tools(23))
    events, batched = await run_in_process(_plan(concurrency=4), {}, tools, batching=SMALL)
    assert batched.outcome == "completed"
    assert _rows(events) == _rows(plain_events)
    assert [row["index"] for row in _rows(events)] == list(range(23))
    left, right = timeless(batched), timeless(plain)
    assert Counter(map(str, left.pop("edges_taken"))) == Counter(
        map(str, right.pop("edges_taken"))
    )
    assert left == right
    assert Counter(type(e).__name__ for e in events) == Counter(
        type(e).__name__ for e in plain_events
    )
    # Every item ran once; at most four at once (four batches at a time, each one by one).
    assert sorted(c.args["name"] for c in tools.invocations("work")) == sorted(
        f"f{i}" for i in range(23)
    )
    assert tools.max_concurrent <= 4


@pytest.mark.asyncio
async def test_a_tolerated_failure_is_a_row() -> None:
    """One failure tolerated: the map completes with the failure named in its row."""
    events, projection = await run_in_process(
        _plan(concurrency=2, tolerated_failures=1), {}, _tools(8, bad=frozenset({4})),
        batching=SMALL,
    )
    assert projection.outcome == "completed"
    rows = _rows(events)
    assert rows[4]["ok"] is False and rows[4]["error"]["name"] == "ValueError"
    assert all(row["ok"] for i, row in enumerate(rows) if i != 4)


@pytest.mark.asyncio
async def test_past_the_tolerance_no_later_batch_starts() -> None:
    """Two failures in the first batch, none tolerated: the batches after it never start."""
    tools = _tools(30, bad=frozenset({0, 1}))
    events, projection = await run_in_process(
        _plan(concurrency=1), {}, tools, batching=SMALL
    )
    settled = _settled_map(events)
    assert isinstance(settled.outcome, OutcomeFailed)
    assert "MapToleranceExceededError" in str(settled.outcome)
    assert [c.args["name"] for c in tools.invocations("work")] == ["f0", "f1", "f2"]
    assert projection.outcome == "completed"  # the error edge went to rescue
    assert any(key.startswith("rescue:") for key in projection.outputs)


@pytest.mark.asyncio
async def test_a_lost_call_ends_its_batch_and_fails_its_items() -> None:
    """A call whose outcome is lost is not repeated: its batch ends, its unfinished items fail,
    the other batches run, and nothing is left in flight in the log."""
    tools = _tools(9, lost=frozenset({4}))
    events, projection = await run_in_process(
        _plan(concurrency=1, halt=True, tolerated_failures=5), {}, tools, batching=SMALL
    )
    assert projection.outcome == "completed"
    rows = _rows(events)
    assert [row["ok"] for row in rows] == [True, True, True, True, False, False] + [True] * 3
    assert rows[4]["error"]["name"] == "MapBatchEndedError"
    assert "lost" in rows[4]["error"]["message"]
    assert rows[5]["error"]["message"].startswith("item 5 did not finish")
    names = [c.args["name"] for c in tools.invocations("work")]
    assert names.count("f4") == 1 and "f5" not in names
    assert projection.frontier.frames == ()


@pytest.mark.asyncio
async def test_a_stop_stops_the_batches() -> None:
    """A stop while batches run: they start nothing more, and the run ends aborted."""
    tools = _tools(60)
    tools.delays["work"] = 0.001

    def stop_when(engine: RunEngine) -> Any:
        return OperatorStop() if engine.steps > 20 else None

    _, projection = await run_in_process(
        _plan(concurrency=3), {}, tools, batching=SMALL, stop_when=stop_when
    )
    assert projection.outcome == "aborted"
    assert len(tools.invocations("work")) < 30


@pytest.mark.asyncio
async def test_what_may_not_run_in_batches_runs_in_the_run() -> None:
    """A gated body or a run-wide budget: no batches; a plain body: batches, with its reads."""
    gated = CompiledPlan(_plan(gate=True))
    assert batch_facts(gated, "m", frozenset({"work"})) is None
    assert batch_facts(CompiledPlan(_plan(budget=True)), "m", frozenset()) is None
    facts = batch_facts(CompiledPlan(_plan()), "m", frozenset())
    assert facts is not None
    assert facts.item_steps == 3
    assert facts.reads == frozenset({"m", "work"})


@pytest.mark.asyncio
async def test_a_batch_carries_its_items_not_the_whole_list() -> None:
    """The batch spec holds its own items and only the outputs its body reads."""
    view = _plan()
    engine = RunEngine.start(view, "run-1", {}, "2026-01-01T00:00:00Z")
    engine.use_batches(SMALL)
    at = "2026-01-01T00:00:01Z"
    (fetch,) = engine.ready(at)
    engine.settle(fetch.key, Succeeded.one({"files": [f"f{i}" for i in range(10)]}), at)
    assert engine.ready(at) == []
    (batch,) = engine.ready_batches()
    assert batch.spec.items == ("f0", "f1", "f2")
    assert batch.spec.checkpoint.outputs == ()  # fetch's list is not carried
    assert batch.key.endswith("#batch0")


def test_results_travel_compressed_and_whole() -> None:
    """encode/decode is lossless, and a batch's log compresses well."""
    log = tuple(
        LogItem(frame=10 + i, map=3, index=i, at=f"2026-01-01T00:00:{i:02d}Z") for i in range(50)
    )
    result = BatchResult(
        rows=({"index": 0, "ok": True, "result": 1},), log=log, next_frame=60, steps=50
    )
    data = encode_result(result)
    decoded = decode_result(data)
    assert decoded.model_dump(exclude={"log"}) == result.model_dump(exclude={"log"})
    assert decoded.entries(13, 100) == [renumbered(e, 13, 100) for e in log]
    assert len(data) < len(result.model_dump_json()) / 4


def test_renumbering_moves_only_the_batch_frames() -> None:
    """Frames at or past the base move; the run's own (the map's frame) stay."""
    edge = LogEdge(
        edge="e1", handle="always", source=11, frame=12, node="b", node_kind="call", at="t"
    )
    assert (renumbered(edge, 11, 100).source, renumbered(edge, 11, 100).frame) == (111, 112)
    item = LogItem(frame=11, map=3, index=0, at="t")
    moved = renumbered(item, 11, 100)
    assert (moved.frame, moved.map) == (111, 3)
    merge = LogMerge(frame=20, node="j", fork=12, of=("a",), arrivals=(13, 14))
    moved_merge = renumbered(merge, 11, 5)
    assert (moved_merge.frame, moved_merge.fork, moved_merge.arrivals) == (25, 17, (18, 19))

