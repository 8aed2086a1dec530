"""A live run lets go of the log entries the store holds; every reader still gets the whole log.

A long run (a map of 10,000 items logs some 110,000 entries) must not hold its whole log: the
garbage collector's passes over it grow until one outlasts the SDK's two-second deadlock limit.
Once enough of the log is mirrored, the workflow drops what the store holds, and the ``events``
query pages from there. The thresholds are lowered here so a short run crosses them: a map of
30 calls, then an input request that keeps the run open while it is read.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest
from temporalio.client import Client

import workflows.segment as segment
from orchestration.plan.encoding import NodeRef
from orchestration.run.expand import expand_log
from orchestration.run.messages import GateAnswer, LogPage, RunSettings, workflow_id_for
from orchestration.store.sqlite import SqlitePlanStore
from orchestration.testing import PlanSketch, approve_into
from orchestration.types import RawPlanView, StringField, TextInput
from tests.support.hosts import replay_all, strip_times
from tests.support.scenarios import make_tools
from workers.runs import TemporalRuns
from workers.worker import build_worker
from workflows.runlog import log_from_history

pytestmark = pytest.mark.asyncio(loop_scope="session")


def plan(plan_id: str) -> RawPlanView:
    s = PlanSketch(plan_id, max_concurrent_frames=4).entry()
    s.call("list", "listing", args={"n": 30, "bad": 0})
    s.map("m", NodeRef("list", path="files"), max_items=30, concurrency=1)
    s.call(
        "inspect",
        "peek",
        args={"name": NodeRef("m", path="item")},
        output=[StringField(path="value")],
    )
    s.input("confirm", TextInput(), "All inspected?")
    s.edge("entry", "list").edge("list", "m").edge("m", "inspect", "item")
    return s.edge("m", "confirm").view()


async def test_an_open_run_lets_go_of_what_the_store_holds(
    client: Client, task_queue: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Mirrored entries leave the workflow's memory; read_log, the query and history agree."""
    monkeypatch.setattr(segment, "_MIRROR_EVERY", 20)
    monkeypatch.setattr(segment, "_MIRROR_CHUNK", 10)
    monkeypatch.setattr(segment, "_LET_GO_AFTER", 20)
    store = SqlitePlanStore(tmp_path / "plans.sqlite3")
    view = await approve_into(store, plan(f"long-{uuid.uuid4().hex[:8]}"))
    async with build_worker(client, task_queue=task_queue, toolbox=make_tools(), store=store):
        runs = TemporalRuns(
            client, store, task_queue=task_queue, settings=RunSettings(heartbeat_seconds=None)
        )
        handle = await runs.start(view.plan_id, {})
        while not (waiting := await runs.waiting(view.plan_id)):
            await asyncio.sleep(0.05)
        page: LogPage = await handle.query("events", args=[0, 1], result_type=LogPage)
        assert page.segment_offset > 0, "the run let go of nothing"
        live = await runs.read_log(view.plan_id)
        assert len(live) == page.total
        stored = await store.read_run_log(view.plan_id)
        assert live[: len(stored)] == stored
        events = expand_log(live)  # continuous: every frame the log names, it defined
        assert sum(e.kind == "node_settled" for e in events) == 3 + 30 * 2  # and the map
        (gate,) = waiting
        await runs.decide(
            view.plan_id, GateAnswer(frame_key=gate.frame_key, response={"text": "yes"})
        )
        assert (await handle.result()).outcome == "completed"
        whole = await runs.read_log(view.plan_id)
    assert whole[: len(live)] == live
    history = await client.get_workflow_handle(workflow_id_for(view.plan_id)).fetch_history()
    # Times aside: a live task that ran local activities can stamp a few ms apart from replay.
    assert strip_times(await log_from_history(history, store=store)) == strip_times(whole)
    await replay_all(client, view.plan_id, store)
    await store.close()
