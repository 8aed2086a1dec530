"""Runs longer than one history: continue-as-new carries a small checkpoint, never the plan.

A 5,000-node chain and a 5,000-wide fan-out (bounds raised) complete on the dev server through
continue-as-new; every continued execution's input is asserted small (the plan travels by
reference, the frontier as a checkpoint); the log equals the in-process host's for the same
plan; and every execution's history replays.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import Client

from orchestration.plan.encoding import NodeRef
from orchestration.run.host import InProcessRuns
from orchestration.run.messages import RunSettings
from orchestration.run.work import FrameWork
from orchestration.store.sqlite import SqlitePlanStore
from orchestration.testing import PlanSketch, approve_into
from orchestration.tools.toolbox import Toolbox
from orchestration.types import RawPlanView, StringField
from tests.support.hosts import replay_all, strip_times
from workers.runs import TemporalRuns
from workers.worker import build_worker

from .harness import unique_plan_id

pytestmark = pytest.mark.asyncio(loop_scope="session")

CHECKPOINT_LIMIT = 256 * 1024
"""The most a continued execution's input may hold beyond the frontier's own outputs."""


def tools() -> Toolbox:
    box = Toolbox()

    @box.tool("echo", short=True)
    def echo(v: str = "") -> dict[str, str]:
        return {"value": v or "x"}

    return box


def chain(plan_id: str, n: int) -> RawPlanView:
    sketch = PlanSketch(
        plan_id, max_nodes=n + 10, max_edges=n + 10, max_steps=n + 10, max_concurrent_frames=4
    ).entry(StringField(path="s"))
    previous = "entry"
    for i in range(n):
        node = f"n{i}"
        sketch.call(
            node,
            "echo",
            args={"v": NodeRef(previous, path="value" if i else "s")},
            output=[StringField(path="value")],
        )
        sketch.edge(previous, node)
        previous = node
    return sketch.view()


def fan_out(plan_id: str, n: int) -> RawPlanView:
    sketch = PlanSketch(
        plan_id, max_nodes=n + 10, max_edges=n + 10, max_steps=n + 10, max_concurrent_frames=500
    ).entry(StringField(path="s"))
    for i in range(n):
        sketch.call(f"c{i}", "echo", output=[StringField(path="value")])
        sketch.edge("entry", f"c{i}")
    return sketch.view()


async def _continued_inputs(client: Client, plan_id: str) -> list[int]:
    """The encoded input size of every execution of the run's chain after the first."""
    sizes: list[int] = []
    run_id: str | None = None
    while True:
        handle = client.get_workflow_handle(f"plan/{plan_id}", run_id=run_id)
        history = await handle.fetch_history()
        started = history.events[0].workflow_execution_started_event_attributes
        size = sum(len(p.data) for p in started.input.payloads)
        run_id = started.continued_execution_run_id
        if not run_id:
            return sizes
        sizes.append(size)


async def _run_on_both(
    client: Client, task_queue: str, tmp_path: Path, view: RawPlanView, settings: RunSettings
) -> None:
    temporal_store = SqlitePlanStore(tmp_path / "temporal.sqlite3")
    local_store = SqlitePlanStore(tmp_path / "local.sqlite3")
    await approve_into(temporal_store, view)
    await approve_into(local_store, view)
    async with build_worker(
        client,
        task_queue=task_queue,
        toolbox=tools(),
        store=temporal_store,
        max_concurrent_activities=500,
    ):
        runs = TemporalRuns(client, temporal_store, task_queue=task_queue, settings=settings)
        handle = await runs.start(view.plan_id, {"s": "x"})
        result = await handle.result()
        remote = await runs.read_log(view.plan_id)
    assert result.outcome == "completed" and result.segments >= 2, result
    sizes = await _continued_inputs(client, view.plan_id)
    assert sizes and max(sizes) < CHECKPOINT_LIMIT, sizes
    local_runs = InProcessRuns(local_store, FrameWork(tools()), settings=settings)
    local = await local_runs.execute(view.plan_id, {"s": "x"})
    assert local.outcome == "completed"
    local_log = await local_store.read_run_log(view.plan_id)
    # The Temporal log has a snapshot where each execution began; otherwise it is the same.
    assert [e for e in strip_times(remote) if e["kind"] != "snapshot"] == [
        e for e in strip_times(local_log) if e["kind"] != "snapshot"
    ]
    await replay_all(client, view.plan_id, temporal_store)
    await temporal_store.close()
    await local_store.close()


@pytest.mark.slow
async def test_a_five_thousand_node_chain_completes_through_continue_as_new(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    """5,000 calls in a chain, each reading the last: small checkpoints, the in-process log."""
    settings = RunSettings(max_in_flight=1, search_attributes=False)
    await _run_on_both(
        client, task_queue, tmp_path, chain(unique_plan_id("chain"), 5000), settings
    )


@pytest.mark.slow
async def test_a_five_thousand_wide_fan_out_completes_through_continue_as_new(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    """5,000 calls off one entry: the window stays under the pending-activity wedge."""
    settings = RunSettings(max_in_flight=1, search_attributes=False)
    await _run_on_both(
        client, task_queue, tmp_path, fan_out(unique_plan_id("wide"), 5000), settings
    )
