"""Client-side runs: approved plans only, at most once ever, logs readable with no worker."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import pytest_asyncio
from temporalio.client import Client
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError

from orchestration.api import Orchestration, create_orchestration
from orchestration.errors import RunRefusedError
from orchestration.run.expand import expand_log
from orchestration.run.fold import fold_run
from orchestration.run.messages import PlanRunInput, RunSettings
from orchestration.store import SqlitePlanStore
from workers.devserver import DevServer
from workers.runs import TemporalRuns
from workers.worker import build_worker
from workflows.runlog import log_from_history

from .harness import approved_chain, make_toolbox, replay, unique_plan_id

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def approved_plan(orch: Orchestration, plan_id: str) -> str:
    """A two-call chain, frozen and approved; its digest."""
    return await approved_chain(orch, plan_id)


@pytest_asyncio.fixture(loop_scope="session")
async def orch(tmp_path: Path) -> Orchestration:
    return await create_orchestration(
        store=SqlitePlanStore(str(tmp_path / "plans.sqlite3")), invocable=make_toolbox()
    )


async def test_a_plan_runs_at_most_once(
    client: Client, task_queue: str, orch: Orchestration
) -> None:
    """A second run is refused with the existing id, a direct restart fails, a rerun is settled."""
    plan_id = unique_plan_id("once")
    await approved_plan(orch, plan_id)
    runs = TemporalRuns(client, orch.store, task_queue=task_queue)
    async with build_worker(
        client, task_queue=task_queue, toolbox=make_toolbox(), store=orch.store
    ):
        projection = await runs.execute(plan_id, {"s": "hello"})
    assert projection.outcome == "completed"
    assert projection.outputs[next(k for k in projection.outputs if k.startswith("b:"))].items[
        0
    ].json_ == {"value": "HELLO"}
    with pytest.raises(RunRefusedError) as again:
        await runs.start(plan_id, {"s": "again"})
    assert again.value.code == "run_already_claimed"
    assert again.value.existing_run_id == f"plan/{plan_id}"
    with pytest.raises(RunRefusedError) as resumed:
        await runs.start(plan_id, {"s": "again"}, resume_run_id=f"plan/{plan_id}")
    assert resumed.value.code == "run_already_settled"
    view = (await orch.store.fold(plan_id)).view
    approval = await orch.store.read_approval(plan_id)
    assert approval is not None
    with pytest.raises(WorkflowAlreadyStartedError):
        await client.start_workflow(
            "PlanRun",
            PlanRunInput(plan=view, approval=approval, run_input={"s": "x"}),
            id=f"plan/{plan_id}",
            task_queue=task_queue,
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
        )


async def test_concurrent_starts_yield_one_run(
    client: Client, task_queue: str, orch: Orchestration
) -> None:
    """Two concurrent starts of one plan: one run, the other refused with its id."""
    plan_id = unique_plan_id("race")
    await approved_plan(orch, plan_id)
    runs = TemporalRuns(client, orch.store, task_queue=task_queue)
    async with build_worker(
        client, task_queue=task_queue, toolbox=make_toolbox(), store=orch.store
    ):
        results = await asyncio.gather(
            runs.start(plan_id, {"s": "a"}), runs.start(plan_id, {"s": "b"}), return_exceptions=True
        )
        started = [r for r in results if not isinstance(r, BaseException)]
        refused = [r for r in results if isinstance(r, RunRefusedError)]
        assert len(started) == 1 and len(refused) == 1
        assert refused[0].code == "run_already_claimed"
        await started[0].result()
    await replay(client, plan_id, orch.store)
    executions = [w async for w in client.list_workflows(f"WorkflowId = 'plan/{plan_id}'")]
    assert len({w.run_id for w in executions}) <= 1


async def test_refusals_happen_before_the_claim(
    client: Client, task_queue: str, orch: Orchestration
) -> None:
    """Unapproved plans and bad input are refused and leave the plan runnable."""
    plan_id = unique_plan_id("refuse")
    await orch.store.create_plan(plan_id)
    runs = TemporalRuns(client, orch.store, task_queue=task_queue)
    with pytest.raises(RunRefusedError) as editable:
        await runs.start(plan_id, {"s": "x"})
    assert editable.value.code == "not_executable" and "approve" in editable.value.message
    ready = unique_plan_id("input")
    await approved_plan(orch, ready)
    with pytest.raises(RunRefusedError) as bad:
        await runs.start(ready, {"s": 7})
    assert bad.value.code == "invalid_run_input"
    assert await orch.store.read_run_id(ready) is None
    async with build_worker(
        client, task_queue=task_queue, toolbox=make_toolbox(), store=orch.store
    ):
        assert (await runs.execute(ready, {"s": "fine"})).outcome == "completed"


async def test_closed_run_log_reads_with_no_worker(
    client: Client, task_queue: str, orch: Orchestration
) -> None:
    """After the run closed and the worker stopped, its log reads, and rebuilds from history."""
    plan_id = unique_plan_id("closed")
    await approved_plan(orch, plan_id)
    runs = TemporalRuns(client, orch.store, task_queue=task_queue)
    async with build_worker(
        client, task_queue=task_queue, toolbox=make_toolbox(), store=orch.store
    ):
        handle = await runs.start(plan_id, {"s": "x"})
        await handle.result()
        live = await runs.read_log(plan_id)
    closed = await asyncio.wait_for(runs.read_log(plan_id), timeout=30)
    assert closed == live and closed[0].kind == "start" and closed[-1].kind == "end"
    history = await handle.fetch_history()
    rebuilt = await asyncio.wait_for(
        log_from_history(history, store=orch.store, data_converter=client.data_converter),
        timeout=30,
    )
    assert rebuilt == live
    events = expand_log(closed)
    assert events[0].kind == "run_started" and events[-1].kind == "run_settled"
    assert fold_run(events).outcome == "completed"


async def test_another_sdk_can_start_a_run_with_plain_json(
    dev_server: DevServer, client: Client, task_queue: str, orch: Orchestration
) -> None:
    """A client without our model classes starts PlanRun by type name with a JSON payload."""
    plan_id = unique_plan_id("polyglot")
    await approved_plan(orch, plan_id)
    view = (await orch.store.fold(plan_id)).view
    approval = await orch.store.read_approval(plan_id)
    assert approval is not None
    payload = json.loads(
        PlanRunInput(plan=view, approval=approval, run_input={"s": "json"}).model_dump_json()
    )
    assert "runInput" in payload and "planId" in payload["plan"]
    plain = await Client.connect(dev_server.address)  # default converter: JSON, no pydantic
    async with build_worker(
        client, task_queue=task_queue, toolbox=make_toolbox(), store=orch.store
    ):
        handle = await plain.start_workflow(
            "PlanRun",
            payload,
            id=f"plan/{plan_id}",
            task_queue=task_queue,
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
        )
        result = await handle.result()
    assert isinstance(result, dict) and result["outcome"] == "completed"
    await replay(client, plan_id, orch.store)
    assert result["settled"] == 3


async def test_search_attributes_find_the_run(
    client: Client, task_queue: str, orch: Orchestration
) -> None:
    """Runs are listed by PlanId and filtered by PlanOutcome."""
    plan_id = unique_plan_id("search")
    digest = await approved_plan(orch, plan_id)
    runs = TemporalRuns(client, orch.store, task_queue=task_queue, settings=RunSettings())
    async with build_worker(
        client, task_queue=task_queue, toolbox=make_toolbox(), store=orch.store
    ):
        await runs.execute(plan_id, {"s": "x"})
    query = f"PlanId = '{plan_id}' AND PlanDigest = '{digest}' AND PlanOutcome = 'completed'"
    for _ in range(300):  # visibility is eventually consistent
        found = [w async for w in client.list_workflows(query)]
        if found:
            break
        await asyncio.sleep(0.1)
    assert [w.id for w in found] == [f"plan/{plan_id}"]
