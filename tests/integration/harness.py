"""Shared pieces of the Temporal integration tests: tools, approved plans, waits, replay."""

from __future__ import annotations

import asyncio
import itertools
import os
import sys
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle
from temporalio.service import RPCError

from orchestration.api import Orchestration
from orchestration.plan.authoring import PlanAuthor, claim, ref
from orchestration.review.approval import approval_record
from orchestration.run.expand import expand_log
from orchestration.run.messages import (
    LogPage,
    PlanRunResult,
    RetrySettings,
    RunSettings,
    workflow_id_for,
)
from orchestration.store.base import PlanStore
from orchestration.testing import approve_into
from orchestration.tools.toolbox import Toolbox, ToolContext
from orchestration.types import (
    DEFAULT_PLAN_BOUNDS,
    NumberField,
    PlanOp,
    RawPlanView,
    RunEvent,
    StringField,
)
from tests.support.hosts import replay_all
from workers.runs import TemporalRuns
from workflows.runlog import log_from_history

ORCH = str(Path(sys.executable).parent / "orch")
"""The installed `orch` command beside this interpreter."""

FAST_RETRY = RunSettings(
    retry=RetrySettings(initial_interval_seconds=0.05, maximum_interval_seconds=0.2)
)
"""Tests wait milliseconds, not seconds, between the retries of a failing replay-safe call."""


def make_toolbox() -> Toolbox:
    """A few real tools the integration tests call."""
    tools = Toolbox()

    @tools.tool("upper")
    def upper(s: str) -> str:
        return s.upper()

    @tools.tool("stamp")
    def stamp(context: ToolContext, **args: Any) -> dict[str, Any]:
        return {"value": context.node_id, "n": len(args)}

    @tools.tool("count")
    def count(n: int) -> dict[str, Any]:
        return {"n": n}

    @tools.tool("boom")
    def boom(**args: Any) -> str:
        raise RuntimeError("boom")

    @tools.tool("slow")
    async def slow(seconds: float, context: ToolContext) -> dict[str, Any]:
        await asyncio.sleep(seconds)
        return {"value": context.node_id, "n": 0}

    return tools


def unique_plan_id(prefix: str) -> str:
    """A plan id no other test uses (workflow ids are unique per server)."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def start_run(
    client: Client,
    task_queue: str,
    store: PlanStore,
    view: RawPlanView,
    run_input: Mapping[str, Any],
    *,
    settings: RunSettings | None = None,
) -> tuple[WorkflowHandle[Any, PlanRunResult], RawPlanView]:
    """Approve the plan into ``store`` and start its run as a client would; the stored view."""
    stored = await approve_into(store, view)
    runs = TemporalRuns(client, store, task_queue=task_queue, settings=settings or FAST_RETRY)
    handle = await runs.start(stored.plan_id, dict(run_input))
    return handle, stored


async def wait_closed(client: Client, workflow_id: str, timeout: float = 30.0) -> Any:
    """Wait until the workflow's latest execution is closed; its status."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        try:
            description = await client.get_workflow_handle(workflow_id).describe()
        except RPCError:
            description = None
        if description is not None and description.status != WorkflowExecutionStatus.RUNNING:
            return description.status
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{workflow_id} did not close within {timeout} s")
        await asyncio.sleep(0.1)


async def wait_until_entered(
    handle: WorkflowHandle[Any, Any], node_id: str, timeout: float = 30.0
) -> None:
    """Poll the run's ``events`` query until ``node_id`` has been entered.

    Tests that act on a run while a call is in flight (stop, cancel) wait for this instead of a
    fixed sleep, which a loaded machine can outrun.
    """
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        page = await handle.query("events", args=[0, 2000], result_type=LogPage)
        events = expand_log(page.entries) if page.segment_offset == 0 else []
        if any(e.kind == "node_entered" and e.frame.node_id == node_id for e in events):
            return
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{node_id} was not entered within {timeout} s")
        await asyncio.sleep(0.05)


async def replay(
    client: Client, plan_id: str, store: PlanStore
) -> list[RunEvent]:
    """Replay the run's executions in the real sandbox (nondeterminism fails); its log rebuilt."""
    await replay_all(client, plan_id, store)
    handle = client.get_workflow_handle(workflow_id_for(plan_id))
    history = await handle.fetch_history()
    return expand_log(
        await log_from_history(history, store=store, data_converter=client.data_converter)
    )


async def orch_cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Run the real `orch` without blocking this loop (the worker runs here)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("ORCH_", "TEMPORAL_"))}
    proc = await asyncio.create_subprocess_exec(
        ORCH,
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**clean, **(env or {})},
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    assert proc.returncode is not None
    assert "Traceback" not in err.decode(), err.decode()
    return proc.returncode, out.decode(), err.decode()


async def approved_chain(
    orch: Orchestration,
    plan_id: str,
    tool: str = "upper",
    *,
    names: tuple[str, str] = ("a", "b"),
    args: dict[str, Any] | None = None,
    timed: bool = False,
    max_steps: int | None = None,
) -> str:
    """entry(s[, seconds]) → first(``tool``) → second(upper), authored as ops through the
    facade, frozen (it must freeze clean) and approved; its digest.

    ``timed`` adds a ``seconds`` input; ``args`` replaces the first call's (``{s: entry.s}``).
    """
    counter = itertools.count()
    a = PlanAuthor("tester", new_id=lambda: f"op{next(counter)}")
    read = [claim("text", "*", "read")]
    first, second = names
    inputs = [StringField(path="s")] + ([NumberField(path="seconds")] if timed else [])
    ops: list[PlanOp] = [
        a.entry(input=inputs),
        a.call(
            first,
            tool=tool,
            args=args or {"s": ref("entry", path="s")},
            output=[StringField(path="value")],
            authority=read,
            replay_safe=True,
            on_indeterminate="retry",
            declassifies=["value"],
        ),
        a.call(
            second,
            tool="upper",
            args={"s": ref(first, path="value")},
            output=[StringField(path="value")],
            authority=read,
            replay_safe=True,
            on_indeterminate="retry",
        ),
        a.edge("entry", first),
        a.edge(first, second),
    ]
    if max_steps is not None:
        ops.append(a.set_bounds(DEFAULT_PLAN_BOUNDS.model_copy(update={"max_steps": max_steps})))
    await orch.store.create_plan(plan_id)
    assert (await orch.store.append_ops(plan_id, ops)).ok
    frozen = await orch.freeze_plan(plan_id)
    assert frozen.ok, frozen.issues
    view = (await orch.store.fold(plan_id)).view
    approved = await orch.approve_plan(plan_id, approval_record(view, "op", "2026-01-01T00:00:00Z"))
    assert approved.ok, approved
    return view.digest
