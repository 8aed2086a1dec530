"""Batches on Temporal, tried as an operator and as an attacker would.

A map's batches run as ``PlanBatch`` children of the plan's run. Started by anyone else (a client
with a batch's own input, under its id or another, or with bad input) a batch runs nothing:
every tool call goes to a ledger in this process. Stopping or cancelling the run stops its
batches: nothing is left running, and what they did is in the run's log.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError
from temporalio.common import RawValue, WorkflowIDReusePolicy

from orchestration.plan.encoding import NodeRef
from orchestration.run.messages import (
    PlanRunInput,
    PlanRunResult,
    RunSettings,
    workflow_id_for,
)
from orchestration.store.sqlite import SqlitePlanStore
from orchestration.testing import PlanSketch, approve_into
from orchestration.tools.toolbox import Toolbox, ToolContext
from orchestration.types import NumberField, RawPlanView, StringField
from tests.support.hosts import replay_all, strip_times
from workers.runs import TemporalRuns
from workers.worker import build_worker
from workflows.runlog import log_from_history

from .harness import wait_closed

pytestmark = pytest.mark.asyncio(loop_scope="session")

BATCHED = RunSettings(heartbeat_seconds=None, batch_maps_over=2, batch_steps=4)
"""Maps of more than two items run in batches of two (an item here is two steps)."""


def ledger_tools(ledger: Counter[str], nap: float = 0.0) -> Toolbox:
    tools = Toolbox()

    @tools.tool("listing")
    def listing(n: int) -> dict[str, Any]:
        return {"files": [f"f{i}" for i in range(n)]}

    @tools.tool("write")
    async def write(name: str, context: ToolContext) -> str:
        ledger[name] += 1
        await asyncio.sleep(nap)
        return name.upper()

    return tools


def plan(plan_id: str, **tolerance: Any) -> RawPlanView:
    s = PlanSketch(plan_id, max_concurrent_frames=8).entry(NumberField(path="n"))
    s.call("list", "listing", args={"n": NodeRef("entry", path="n")})
    s.map("m", NodeRef("list", path="files"), max_items=40, concurrency=3, **tolerance)
    s.call(
        "write",
        "write",
        args={"name": NodeRef("m", path="item")},
        output=[StringField(path="value")],
        replay_safe=False,
        on_indeterminate="halt",
    )
    s.edge("entry", "list").edge("list", "m").edge("m", "write", "item")
    return s.view()


async def _children(client: Client, plan_id: str) -> list[tuple[str, str]]:
    history = await client.get_workflow_handle(workflow_id_for(plan_id)).fetch_history()
    return [
        (
            e.child_workflow_execution_started_event_attributes.workflow_execution.workflow_id,
            e.child_workflow_execution_started_event_attributes.workflow_execution.run_id,
        )
        for e in history.events
        if e.HasField("child_workflow_execution_started_event_attributes")
    ]


async def test_a_batch_started_by_anyone_but_its_run_runs_nothing(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    """A batch's own input, started by a client under its id or another: refused, no call."""
    ledger: Counter[str] = Counter()
    store = SqlitePlanStore(tmp_path / "plans.sqlite3")
    view = await approve_into(store, plan(f"batch-once-{uuid.uuid4().hex[:8]}"))
    async with build_worker(
        client, task_queue=task_queue, toolbox=ledger_tools(ledger), store=store
    ):
        runs = TemporalRuns(client, store, task_queue=task_queue, settings=BATCHED)
        projection = await runs.execute(view.plan_id, {"n": 6})
        assert projection.outcome == "completed"
        assert ledger == Counter({f"f{i}": 1 for i in range(6)})
        children = await _children(client, view.plan_id)
        assert len(children) == 3
        # The input the run gave its first batch, as an attacker could copy it from history.
        child_id, child_run = children[0]
        started = (
            (await client.get_workflow_handle(child_id, run_id=child_run).fetch_history())
            .events[0]
            .workflow_execution_started_event_attributes
        )
        assert started.parent_workflow_execution.workflow_id == workflow_id_for(view.plan_id)
        (payload,) = started.input.payloads
        attempts: list[tuple[str, list[Any]]] = [
            (child_id, [RawValue(payload)]),
            (f"{child_id}-again", [RawValue(payload)]),
            (f"elsewhere-{uuid.uuid4().hex[:6]}", [RawValue(payload)]),
            (f"{child_id}-none", []),
            (
                f"{child_id}-garbage",
                [RawValue(Payload(metadata={"encoding": b"json/plain"}, data=b'{"nope": 1}'))],
            ),
        ]
        for workflow_id, arguments in attempts:
            handle = await client.start_workflow(
                "PlanBatch",
                args=arguments,
                id=workflow_id,
                task_queue=task_queue,
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
            )
            with pytest.raises(WorkflowFailureError) as failure:
                await asyncio.wait_for(handle.result(), timeout=20)
            cause = failure.value.cause
            assert getattr(cause, "type", None) == "batch_refused", (workflow_id, cause)
            assert getattr(cause, "non_retryable", False)
    assert ledger == Counter({f"f{i}": 1 for i in range(6)})
    await replay_all(client, view.plan_id, store)
    # The run's history alone rebuilds its whole log, batches included (their logs came back
    # in the children's results).
    history = await client.get_workflow_handle(workflow_id_for(view.plan_id)).fetch_history()
    rebuilt = await log_from_history(history, store=store)
    assert strip_times(rebuilt) == strip_times(await store.read_run_log(view.plan_id))
    await store.close()


async def test_a_plan_given_inline_keeps_its_maps_in_the_run(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    """Started with the plan inline (a batch could not load it): no batches, the map runs."""
    ledger: Counter[str] = Counter()
    store = SqlitePlanStore(tmp_path / "plans.sqlite3")
    view = await approve_into(store, plan(f"batch-inline-{uuid.uuid4().hex[:8]}"))
    approval = await store.read_approval(view.plan_id)
    assert approval is not None
    async with build_worker(
        client, task_queue=task_queue, toolbox=ledger_tools(ledger), store=store
    ):
        handle = await client.start_workflow(
            "PlanRun",
            PlanRunInput(plan=view, approval=approval, run_input={"n": 6}, settings=BATCHED),
            id=workflow_id_for(view.plan_id),
            task_queue=task_queue,
            result_type=PlanRunResult,
        )
        assert (await handle.result()).outcome == "completed"
    assert ledger == Counter({f"f{i}": 1 for i in range(6)})
    assert await _children(client, view.plan_id) == []
    await replay_all(client, view.plan_id, store)
    await store.close()


@pytest.mark.parametrize("how", ["stop", "cancel"])
async def test_ending_the_run_ends_its_batches(
    client: Client, task_queue: str, tmp_path: Path, how: str
) -> None:
    """Stopped or cancelled mid-map: every batch closes, the run ends, its log says what ran."""
    ledger: Counter[str] = Counter()
    store = SqlitePlanStore(tmp_path / "plans.sqlite3")
    view = await approve_into(store, plan(f"batch-{how}-{uuid.uuid4().hex[:8]}"))
    async with build_worker(
        client, task_queue=task_queue, toolbox=ledger_tools(ledger, nap=0.3), store=store
    ):
        runs = TemporalRuns(client, store, task_queue=task_queue, settings=BATCHED)
        handle = await runs.start(view.plan_id, {"n": 30})
        while sum(ledger.values()) < 4:
            await asyncio.sleep(0.05)
        if how == "stop":
            await handle.signal("stop", "enough")
        else:
            await handle.cancel()
        status = await wait_closed(client, handle.id, timeout=30)
        expected = (
            WorkflowExecutionStatus.FAILED if how == "stop" else WorkflowExecutionStatus.CANCELED
        )
        assert status == expected
        for child_id, child_run in await _children(client, view.plan_id):
            described = await client.get_workflow_handle(child_id, run_id=child_run).describe()
            assert described.status == WorkflowExecutionStatus.COMPLETED, (child_id, described)
        ran = sum(ledger.values())
        assert ran < 30
        projection = await runs.projection(view.plan_id)
        assert projection.outcome == "aborted"
        written = [k for k, s in projection.frame_status.items() if k.startswith("write:")]
        assert len(written) == ran
        assert all(projection.frame_status[k] == "done" for k in written)
    await replay_all(client, view.plan_id, store)
    await store.close()


async def test_a_failed_batch_fails_its_items_within_the_tolerance(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    """A batch's child terminated mid-run: its items fail by name, the others run, and the
    map's tolerance decides (here: any number may fail, so the run completes)."""
    ledger: Counter[str] = Counter()
    store = SqlitePlanStore(tmp_path / "plans.sqlite3")
    view = await approve_into(
        store,
        plan(f"batch-dies-{uuid.uuid4().hex[:8]}", tolerated_failure_percent=100),
    )
    async with build_worker(
        client, task_queue=task_queue, toolbox=ledger_tools(ledger, nap=0.5), store=store
    ):
        runs = TemporalRuns(client, store, task_queue=task_queue, settings=BATCHED)
        handle = await runs.start(view.plan_id, {"n": 8})
        while not (
            first := [c for c in await _children(client, view.plan_id) if c[0].endswith("#batch0")]
        ):
            await asyncio.sleep(0.05)
        ((first_id, run_id),) = first
        await client.get_workflow_handle(first_id, run_id=run_id).terminate("a mistake")
        assert (await handle.result()).outcome == "completed"
        projection = await runs.projection(view.plan_id)
    (output,) = [o for k, o in projection.outputs.items() if k.startswith("m:") and "[" not in k]
    rows = [item.json_ for item in output.items]
    assert [row["ok"] for row in rows[:2]] == [False, False]
    assert rows[0]["error"]["name"] == "MapBatchEndedError"
    assert "terminated" in rows[0]["error"]["message"].lower()
    assert all(row["ok"] for row in rows[2:])
    assert all(ledger[f"f{i}"] == 1 for i in range(2, 8))
    await replay_all(client, view.plan_id, store)
    await store.close()
