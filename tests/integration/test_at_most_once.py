"""At most once is the worker's promise (ruling 30), tried as an attacker would.

An approved plan's input is started again under another workflow id, under its own id with a
reuse policy that allows it, by the Temporal CLI with a hand-built input; malformed input, no
input and two inputs are sent. Every tool call is written to a ledger in this process (the
worker runs here): no tool may run twice, and no bad start may leave a workflow running.
"""

from __future__ import annotations

import asyncio
import subprocess
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError
from temporalio.common import RawValue, WorkflowIDReusePolicy

from orchestration.plan.encoding import NodeRef
from orchestration.run.expand import expand_log
from orchestration.run.messages import PlanRunInput, PlanRunResult
from orchestration.store.sqlite import SqlitePlanStore
from orchestration.testing import PlanSketch, approve_into
from orchestration.tools.toolbox import Toolbox, ToolContext
from orchestration.types import StringField
from workers.devserver import DevServer, temporal_binary
from workers.runs import TemporalRuns
from workers.worker import build_worker

from .harness import wait_closed

pytestmark = pytest.mark.asyncio(loop_scope="session")


def ledger_tools(ledger: Counter[str]) -> Toolbox:
    tools = Toolbox()

    @tools.tool("write")
    def write(s: str, context: ToolContext) -> str:
        ledger[context.node_id] += 1
        return s.upper()

    return tools


def plan(plan_id: str) -> Any:
    sketch = PlanSketch(plan_id).entry(StringField(path="s"))
    sketch.call(
        "first",
        "write",
        args={"s": NodeRef("entry", path="s")},
        output=[StringField(path="value")],
        replay_safe=False,
        on_indeterminate="halt",
    )
    sketch.call(
        "second",
        "write",
        args={"s": NodeRef("first", path="value")},
        output=[StringField(path="value")],
        replay_safe=False,
        on_indeterminate="halt",
    )
    return sketch.chain("entry", "first", "second").view()


async def _approved_run(
    client: Client, task_queue: str, tmp_path: Path, ledger: Counter[str]
) -> tuple[SqlitePlanStore, Any, PlanRunInput]:
    store = SqlitePlanStore(tmp_path / "plans.sqlite3")
    plan_id = f"once-{uuid.uuid4().hex[:8]}"
    view = await approve_into(store, plan(plan_id))
    approval = await store.read_approval(plan_id)
    assert approval is not None
    request = PlanRunInput(plan=view, approval=approval, run_input={"s": "x"})
    return store, view, request


async def test_a_second_start_under_any_id_runs_nothing(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    """Started again under another id, or under its own id with reuse allowed: no tool reruns."""
    ledger: Counter[str] = Counter()
    store, view, request = await _approved_run(client, task_queue, tmp_path, ledger)
    async with build_worker(
        client, task_queue=task_queue, toolbox=ledger_tools(ledger), store=store
    ):
        runs = TemporalRuns(client, store, task_queue=task_queue)
        projection = await runs.execute(view.plan_id, {"s": "x"})
        assert projection.outcome == "completed"
        assert ledger == Counter({"first": 1, "second": 1})
        for workflow_id, reuse in (
            (f"plan/{view.plan_id}-again", WorkflowIDReusePolicy.ALLOW_DUPLICATE),
            (f"plan/{view.plan_id}", WorkflowIDReusePolicy.ALLOW_DUPLICATE),
            (f"elsewhere-{view.plan_id}", WorkflowIDReusePolicy.ALLOW_DUPLICATE),
        ):
            handle = await client.start_workflow(
                "PlanRun",
                request,
                id=workflow_id,
                task_queue=task_queue,
                id_reuse_policy=reuse,
                result_type=PlanRunResult,
            )
            with pytest.raises(WorkflowFailureError) as failure:
                await handle.result()
            assert getattr(failure.value.cause, "type", None) == "aborted"
            assert "deviation_abort" in str(failure.value.cause)
    assert ledger == Counter({"first": 1, "second": 1})
    # The plan's own log is the first run's: nothing a refused execution did reached it.
    events = expand_log(await store.read_run_log(view.plan_id))
    assert [e.kind for e in events].count("run_started") == 1
    await store.close()


async def test_the_temporal_cli_with_a_hand_built_input_runs_nothing_twice(
    client: Client, dev_server: DevServer, task_queue: str, tmp_path: Path
) -> None:
    """`temporal workflow start` with the input JSON, again after the run: refused, no rerun."""
    ledger: Counter[str] = Counter()
    store, view, request = await _approved_run(client, task_queue, tmp_path, ledger)
    input_file = tmp_path / "in.json"
    input_file.write_text(request.model_dump_json(by_alias=True))
    async with build_worker(
        client, task_queue=task_queue, toolbox=ledger_tools(ledger), store=store
    ):
        for attempt in range(2):
            started = subprocess.run(
                [
                    temporal_binary(),
                    "workflow",
                    "start",
                    "--address",
                    dev_server.address,
                    "--type",
                    "PlanRun",
                    "--task-queue",
                    task_queue,
                    "--workflow-id",
                    f"plan/{view.plan_id}",
                    "--id-reuse-policy",
                    "AllowDuplicate",
                    "--input-file",
                    str(input_file),
                ],
                capture_output=True,
                text=True,
                check=False,
            )
            assert started.returncode == 0, started.stderr
            status = await wait_closed(client, f"plan/{view.plan_id}")
            expected = (
                WorkflowExecutionStatus.COMPLETED
                if attempt == 0
                else WorkflowExecutionStatus.FAILED
            )
            assert status == expected
    assert ledger == Counter({"first": 1, "second": 1})
    await store.close()


@pytest.mark.parametrize(
    "arguments",
    [
        [],
        [RawValue(Payload(metadata={"encoding": b"json/plain"}, data=b'{"nope": 1}'))],
        [RawValue(Payload(metadata={"encoding": b"json/plain"}, data=b"\x00not json"))],
        [RawValue(Payload(metadata={"encoding": b"binary/null"}, data=b""))],
        ["one", "two"],
    ],
    ids=["no_input", "wrong_shape", "not_json", "null", "two_inputs"],
)
async def test_bad_input_fails_at_once(
    client: Client, task_queue: str, tmp_path: Path, arguments: list[Any]
) -> None:
    """Input that cannot be decoded ends the execution Failed within seconds, named."""
    store = SqlitePlanStore(tmp_path / "plans.sqlite3")
    async with build_worker(
        client, task_queue=task_queue, toolbox=ledger_tools(Counter()), store=store
    ):
        handle = await client.start_workflow(
            "PlanRun",
            args=arguments,
            id=f"plan/bad-{uuid.uuid4().hex[:8]}",
            task_queue=task_queue,
        )
        with pytest.raises(WorkflowFailureError) as failure:
            await asyncio.wait_for(handle.result(), timeout=20)
    cause = failure.value.cause
    assert getattr(cause, "type", None) == "invalid_plan_run_input", cause
    assert getattr(cause, "non_retryable", False)
    await store.close()


async def test_a_deviating_approval_is_refused_before_any_node(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    """An approval for other content (or a tampered plan) aborts with deviation_abort."""
    ledger: Counter[str] = Counter()
    store, view, request = await _approved_run(client, task_queue, tmp_path, ledger)
    tampered_node = view.nodes[1].model_copy(update={"phase": "tampered"})
    tampered = view.model_copy(update={"nodes": (view.nodes[0], tampered_node, *view.nodes[2:])})
    forged = request.model_copy(
        update={"approval": request.approval.model_copy(update={"digest": "0" * 64})}
    )
    async with build_worker(
        client, task_queue=task_queue, toolbox=ledger_tools(ledger), store=store
    ):
        for bad in (forged, request.model_copy(update={"plan": tampered})):
            handle = await client.start_workflow(
                "PlanRun",
                bad,
                id=f"plan/{view.plan_id}",
                task_queue=task_queue,
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
                result_type=PlanRunResult,
            )
            with pytest.raises(WorkflowFailureError) as failure:
                await handle.result()
            assert "deviation_abort" in str(failure.value.cause)
    assert ledger == Counter()
    assert await store.read_run_id(view.plan_id) is None
    await store.close()
