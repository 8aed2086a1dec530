"""Drill: a call that stops heartbeating is reported stalling, then stalled, then resolved.

The worker running the call is frozen (SIGSTOP to its process group): its process lives, its
heartbeats stop. A reader watching the run sees the call go ``healthy`` → ``stalling`` (half the
heartbeat timeout without a heartbeat) → ``stalled`` (all of it), and only then does the
heartbeat timeout resolve the attempt as lost, under its ``onIndeterminate`` (here ``skip``).
Nothing acts on the stall itself: the liveness monitor only reports it.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest
import structlog
from temporalio.client import Client

from orchestration.run.expand import project_log
from orchestration.run.liveness import StallWatch
from orchestration.run.messages import RunSettings, workflow_id_for
from orchestration.store.sqlite import SqlitePlanStore
from orchestration.testing import PlanSketch
from orchestration.types import StringField
from tests.support.processes import kill, wait_for, worker_process
from workers.devserver import DevServer
from workers.liveness import LivenessMonitor
from workers.runs import TemporalRuns

from . import drill_tools
from .harness import replay, start_run, unique_plan_id

pytestmark = pytest.mark.asyncio(loop_scope="session")

HEARTBEAT = 4.0
SETTINGS = RunSettings(heartbeat_seconds=HEARTBEAT, start_to_close_seconds=120)


async def test_a_frozen_call_is_reported_stalling_then_stalled_before_it_is_resolved(
    dev_server: DevServer, client: Client, task_queue: str, tmp_path: Path
) -> None:
    """healthy → stalling → stalled while the activity is still pending; then skip resolves it."""
    ledger = tmp_path / "ledger.sqlite3"
    drill_tools.record(str(ledger), "-", "init")
    view = (
        PlanSketch(unique_plan_id("stall"))
        .entry(StringField(path="s"))
        .call(
            "effect",
            "ledger.write",
            args={"ledger": str(ledger), "seconds": 60.0},
            output=[StringField(path="value")],
            replay_safe=False,
            on_indeterminate="skip",
        )
        .call(
            "after",
            "ledger.write",
            args={"ledger": str(ledger), "seconds": 0.0},
            output=[StringField(path="value")],
        )
        .chain("entry", "effect", "after")
        .view()
    )
    path = tmp_path / "plans.sqlite3"
    store = SqlitePlanStore(path)
    runs = TemporalRuns(client, store, task_queue=task_queue, settings=SETTINGS)
    monitor = LivenessMonitor(client, task_queue, every=0.1)
    frozen = worker_process(dev_server.address, task_queue, tmp_path / "w1.log", path)
    second = None
    try:
        handle, view = await start_run(
            client, task_queue, store, view, {"s": "x"}, settings=SETTINGS
        )
        await wait_for(lambda: any(e == "started" for _, e in drill_tools.rows(str(ledger))))
        seen: list[str] = []
        reported: list[str] = []
        watch = StallWatch()
        # A little while alive first: heartbeats keep the call healthy.
        for _ in range(10):
            live = await runs.liveness(view.plan_id)
            seen += [f.status for k, f in live.items() if k.startswith("effect:")]
            await asyncio.sleep(0.2)
        assert seen and set(seen) == {"healthy"}, seen
        os.killpg(frozen.pid, signal.SIGSTOP)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 60
        stalled_since: float | None = None
        with structlog.testing.capture_logs() as lines:
            while stalled_since is None or loop.time() - stalled_since < 2.0:
                assert loop.time() < deadline, seen
                live = await runs.liveness(view.plan_id)
                effect = {k: f for k, f in live.items() if k.startswith("effect:")}
                # No worker can act on the run: the call stays in flight, timed out or not.
                assert effect, seen
                seen += [f.status for f in effect.values()]
                reported += [c.now.status for c in watch.observe(effect)]
                await monitor.sweep()
                if "stalled" in seen and stalled_since is None:
                    stalled_since = loop.time()
                await asyncio.sleep(0.1)
        # Reported in order, each once; stalled stays stalled until the run acts on it.
        assert reported == ["stalling", "stalled"], seen
        assert seen[-1] == "stalled" and "healthy" not in seen[seen.index("stalling") :]
        logged = [line for line in lines if line.get("event") == "frame liveness changed"]
        assert [line["status"] for line in logged] == ["stalling", "stalled"], lines
        assert logged[0]["plan_id"] == view.plan_id and logged[0]["node_id"] == "effect"
        assert logged[1]["heartbeat_timeout"] == HEARTBEAT
        # Another worker takes the run on: the heartbeat timeout resolves the call as lost,
        # and its onIndeterminate (skip) decides: it is never repeated.
        second = worker_process(dev_server.address, task_queue, tmp_path / "w2.log", path)
        result = await asyncio.wait_for(handle.result(), timeout=60)
    finally:
        kill(frozen)
        if second is not None:
            kill(second)
    assert result.outcome == "completed" and result.skipped == 1
    projection = project_log(await runs.read_log(view.plan_id))
    (key,) = [k for k in projection.attempts if k.startswith("effect:")]
    (attempt,) = projection.attempts[key]
    assert attempt.result == "lost" and attempt.error is not None
    assert attempt.error.name == "HeartbeatTimeout"
    assert projection.frame_status[key] == "skipped"
    effect = [
        e for k, e in drill_tools.rows(str(ledger)) if k.startswith(f"{view.plan_id}/effect:")
    ]
    assert effect == ["started"]
    assert workflow_id_for(view.plan_id) == handle.id
    assert await runs.liveness(view.plan_id) == {}
    await replay(client, view.plan_id, store)
    await store.close()
