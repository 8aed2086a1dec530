"""Shared pieces of the Temporal integration tests: tools, plan runs, replay checks."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping
from typing import Any

from temporalio.client import Client, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from orchestration.approval import approval_record
from orchestration.engine import Failed
from orchestration.execution import (
    EventPage,
    PlanRunInput,
    PlanRunResult,
    RetrySettings,
    RunSettings,
)
from orchestration.testing import FakeToolbox, run_in_process
from orchestration.toolbox import Toolbox, ToolContext
from orchestration.types import RawPlanView, RunEvent
from workers.worker import sandbox_runner
from workflows.plan_run import PlanRun
from workflows.runlog import events_from_history

FAST_RETRY = RunSettings(
    retry=RetrySettings(initial_interval_seconds=0.05, maximum_interval_seconds=0.2)
)
"""Tests wait milliseconds, not seconds, between the retries of a failing replay-safe call."""


def make_toolbox() -> Toolbox:
    """Real tools whose behaviour the fake toolbox below mirrors exactly."""
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


def mirror_toolbox() -> FakeToolbox:
    """The in-process doubles of :func:`make_toolbox`'s tools."""

    def stamp(d: Any) -> dict[str, Any]:
        return {"value": d.node.id, "n": len(d.args or {})}

    return FakeToolbox(
        tools={
            "upper": lambda d: {"value": d.args["s"].upper()},
            "stamp": stamp,
            "count": lambda d: {"n": d.args["n"]},
            "boom": Failed(name="tool_failed", message="RuntimeError: boom"),
            "slow": lambda d: {"value": d.node.id, "n": 0},
        }
    )


def strip_times(events: list[RunEvent]) -> list[dict[str, Any]]:
    """Events as JSON dicts without their ``at`` stamps (the only field clocks decide)."""
    return [e.model_dump(mode="json", exclude={"at"}) for e in events]


async def start_run(
    client: Client,
    task_queue: str,
    view: RawPlanView,
    run_input: Mapping[str, Any],
    *,
    settings: RunSettings | None = None,
    approval_view: RawPlanView | None = None,
) -> WorkflowHandle[Any, PlanRunResult]:
    """Start PlanRun directly (as any Temporal client could) with an approval of the view."""
    approval = approval_record(approval_view or view, "tester", "2026-01-01T00:00:00Z")
    return await client.start_workflow(
        "PlanRun",
        PlanRunInput(
            plan=view, approval=approval, run_input=dict(run_input), settings=settings or FAST_RETRY
        ),
        id=f"plan/{view.plan_id}",
        task_queue=task_queue,
        result_type=PlanRunResult,
    )


def unique_plan_id(prefix: str) -> str:
    """A plan id no other test uses (workflow ids are unique per server)."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def wait_until_entered(
    handle: WorkflowHandle[Any, Any], node_id: str, timeout: float = 30.0
) -> None:
    """Poll the run's ``events`` query until ``node_id`` has been entered.

    Tests that act on a run while a call is in flight (stop, cancel) wait for this instead of a
    fixed sleep, which a loaded machine can outrun.
    """
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        page = await handle.query("events", args=[0, 500], result_type=EventPage)
        if any(
            e.kind == "node_entered" and e.frame.node_id == node_id  # type: ignore[union-attr]
            for e in page.events
        ):
            return
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{node_id} was not entered within {timeout} s")
        await asyncio.sleep(0.05)


async def replay(handle: WorkflowHandle[Any, Any]) -> list[RunEvent]:
    """Replay the run's history in the real sandbox (nondeterminism fails), then rebuild its log."""
    history = await handle.fetch_history()
    await Replayer(
        workflows=[PlanRun],
        data_converter=pydantic_data_converter,
        workflow_runner=sandbox_runner(),
    ).replay_workflow(history)
    return await events_from_history(history)


async def driver_events(view: RawPlanView, run_input: Mapping[str, Any]) -> list[RunEvent]:
    """The in-process driver's log for the same plan, run id and tool behaviour."""
    events, _ = await run_in_process(
        view, run_input, mirror_toolbox(), run_id=f"plan/{view.plan_id}", max_in_flight=1
    )
    return events
