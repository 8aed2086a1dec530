"""Liveness: healthy, stalling, stalled from heartbeats; each change reported once, not acted on."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.duration_pb2 import Duration
from google.protobuf.timestamp_pb2 import Timestamp
from temporalio.api.workflow.v1 import PendingActivityInfo

from orchestration.run.host import InProcessRuns
from orchestration.run.liveness import StallWatch, liveness_of, stall_status, with_liveness
from orchestration.run.messages import RunSettings
from orchestration.run.work import FrameWork
from orchestration.store.sqlite import SqlitePlanStore
from orchestration.testing import PlanSketch, approve_into
from orchestration.tools.toolbox import Toolbox, ToolContext
from orchestration.types import RunProjection, StringField
from workers.runs import pending_liveness

T0 = "2026-01-01T00:00:00.000Z"


def at(seconds: float) -> str:
    whole, part = divmod(seconds, 1)
    return f"2026-01-01T00:00:{int(whole):02d}.{int(round(part * 1000)):03d}Z"


def test_the_status_follows_half_and_all_of_the_heartbeat_timeout() -> None:
    """healthy below half, stalling from half, stalled from all; no timeout: always healthy."""
    assert stall_status(T0, at(1.99), 4.0) == "healthy"
    assert stall_status(T0, at(2.0), 4.0) == "stalling"
    assert stall_status(T0, at(3.99), 4.0) == "stalling"
    assert stall_status(T0, at(4.0), 4.0) == "stalled"
    assert stall_status(T0, at(59), None) == "healthy"
    assert stall_status(None, at(59), 4.0) == "healthy"


def test_each_change_is_reported_once() -> None:
    """A watcher reports stalling and stalled once each, healthy again, and forgets the gone."""
    watch = StallWatch()

    def seen(seconds: float, last: str = T0) -> list[str]:
        observed = {"a:": liveness_of(1, last, at(seconds), 4.0, "in_process")}
        return [change.now.status for change in watch.observe(observed)]

    assert seen(1) == []  # first seen healthy: nothing to say
    assert seen(2.5) == ["stalling"] and seen(3) == []
    assert seen(4.5) == ["stalled"] and seen(5) == []
    assert seen(6, last=at(5.5)) == ["healthy"]
    assert watch.observe({}) == [] and watch.statuses == {}


def test_the_server_s_pending_activities_are_read_by_frame() -> None:
    """Node activities by their ``<frame key>#<attempt>`` ids; others (claim, mirror) ignored."""
    beat = Timestamp()
    beat.FromJsonString("2026-01-01T00:00:00Z")
    call = PendingActivityInfo(activity_id="work:e2:e0#2", last_heartbeat_time=beat)
    call.activity_type.name = "plan.call"
    call.activity_options.heartbeat_timeout.CopyFrom(Duration(seconds=4))
    other = PendingActivityInfo(activity_id="claim")
    other.activity_type.name = "plan.claim"
    live = pending_liveness([call, other], at(3), heartbeat_seconds=30.0)
    assert list(live) == ["work:e2:e0"]
    found = live["work:e2:e0"]
    assert (found.attempt, found.status, found.heartbeat_timeout_seconds) == (2, "stalling", 4.0)
    assert found.last_activity == "2026-01-01T00:00:00.000Z" and found.source == "temporal"


def test_only_frames_still_running_get_their_liveness() -> None:
    """A projection carries the liveness of its running frames, not of settled ones."""
    projection = RunProjection(
        run_id="r", digest="d", frame_status={"a:": "running", "b:": "done"}
    )
    observed = {k: liveness_of(1, T0, at(1), 4.0, "in_process") for k in ("a:", "b:")}
    assert list(with_liveness(projection, observed).liveness) == ["a:"]


@pytest.mark.asyncio
async def test_the_in_process_host_keeps_each_calls_last_activity(tmp_path: Path) -> None:
    """While a call runs, its own heartbeats (and the host's) keep it healthy; then it is gone."""
    tools = Toolbox()
    release = asyncio.Event()

    @tools.tool("wait")
    async def wait(context: ToolContext) -> dict[str, Any]:
        context.heartbeat("working")
        await release.wait()
        return {"value": "done"}

    view = (
        PlanSketch("live")
        .entry(StringField(path="s"))
        .call("work", "wait", output=[StringField(path="value")])
        .chain("entry", "work")
        .view()
    )
    store = SqlitePlanStore(tmp_path / "live.sqlite3")
    try:
        await approve_into(store, view)
        settings = RunSettings(heartbeat_seconds=0.4, start_to_close_seconds=30)
        runs = InProcessRuns(store, FrameWork(tools), settings=settings)
        run = await runs.start("live", {"s": "x"})
        while not run.liveness():
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.5)  # past the timeout: the host's own heartbeats keep it alive
        (key,) = run.liveness()
        live = run.liveness()[key]
        assert key.startswith("work:") and live.status == "healthy" and live.attempt == 1
        assert run.projection().liveness[key].source == "in_process"
        release.set()
        projection = await run.wait()
    finally:
        await store.close()
    assert run.liveness() == {} and projection.liveness == {}
