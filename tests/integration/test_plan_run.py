"""PlanRun on a real dev server: the log equals the in-process driver's, and survives replay."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import CancelledError

from orchestration.encoding import NodeRef
from orchestration.execution import EventPage
from orchestration.routes import BranchId, EdgeSegment, frame_key
from orchestration.runs import fold_run
from orchestration.testing import PlanSketch
from orchestration.types import NumberField, RawPlanView, RunProjection, StringField
from workers.worker import build_worker

from .harness import (
    driver_events,
    make_toolbox,
    replay,
    start_run,
    strip_times,
    unique_plan_id,
    wait_until_entered,
)

pytestmark = pytest.mark.asyncio(loop_scope="session")

VALUE = [StringField(path="value"), NumberField(path="n")]


def chain(plan_id: str) -> RawPlanView:
    return (
        PlanSketch(plan_id)
        .entry(StringField(path="s"))
        .call(
            "a", "upper", args={"s": NodeRef("entry", path="s")}, output=[StringField(path="value")]
        )
        .call(
            "b", "upper", args={"s": NodeRef("a", path="value")}, output=[StringField(path="value")]
        )
        .chain("entry", "a", "b")
        .view()
    )


def fan_out(plan_id: str) -> RawPlanView:
    sketch = PlanSketch(plan_id, max_concurrent_frames=1).entry(StringField(path="s"))
    sketch.call("a", "stamp", output=VALUE).call("b", "stamp", output=VALUE)
    return sketch.edge("entry", "a").edge("entry", "a").edge("entry", "b").view()


def diamond(plan_id: str) -> RawPlanView:
    sketch = PlanSketch(plan_id, max_concurrent_frames=1).entry(StringField(path="s"))
    for node in ("fork", "left", "right", "after"):
        sketch.call(node, "stamp", output=VALUE)
    sketch.join("j")
    return (
        sketch.edge("entry", "fork")
        .edge("fork", "left")
        .edge("fork", "right")
        .edge("left", "j")
        .edge("right", "j")
        .edge("j", "after")
        .view()
    )


def branch(plan_id: str) -> RawPlanView:
    key = frame_key("measure", BranchId(segments=(EdgeSegment(edge="e0"),)))
    sketch = PlanSketch(plan_id, max_concurrent_frames=1).entry(NumberField(path="n"))
    sketch.call(
        "measure", "count", args={"n": NodeRef("entry", path="n")}, output=[NumberField(path="n")]
    )
    sketch.branch("big", {"path": f"{key}.n", "op": "gt", "value": 10})
    sketch.call("yes", "stamp", output=VALUE).call("no", "stamp", output=VALUE)
    return (
        sketch.edge("entry", "measure")
        .edge("measure", "big")
        .edge("big", "yes", "match")
        .edge("big", "no", "no_match")
        .view()
    )


def select(plan_id: str) -> RawPlanView:
    key = frame_key("measure", BranchId(segments=(EdgeSegment(edge="e0"),)))
    sketch = PlanSketch(plan_id, max_concurrent_frames=1).entry(NumberField(path="n"))
    sketch.call(
        "measure", "count", args={"n": NodeRef("entry", path="n")}, output=[NumberField(path="n")]
    )
    sketch.select(
        "size",
        ["small", "large"],
        {
            "small": {"path": f"{key}.n", "op": "lt", "value": 5},
            "large": {"path": f"{key}.n", "op": "gte", "value": 100},
        },
    )
    for node in ("s", "l", "d"):
        sketch.call(node, "stamp", output=VALUE)
    return (
        sketch.edge("entry", "measure")
        .edge("measure", "size")
        .edge("size", "s", "case_small")
        .edge("size", "l", "case_large")
        .edge("size", "d", "default")
        .view()
    )


def error_edge(plan_id: str) -> RawPlanView:
    sketch = PlanSketch(plan_id, max_concurrent_frames=1).entry(StringField(path="s"))
    sketch.call("risky", "boom", output=[StringField(path="value")]).call(
        "rescue", "stamp", output=VALUE
    )
    return sketch.edge("entry", "risky").edge("risky", "rescue", "error").view()


def unhandled(plan_id: str) -> RawPlanView:
    sketch = PlanSketch(plan_id, max_concurrent_frames=1).entry(StringField(path="s"))
    sketch.call("risky", "boom", output=[StringField(path="value")]).call(
        "never", "stamp", output=VALUE
    )
    return sketch.edge("entry", "risky").edge("risky", "never").view()


def budget(plan_id: str) -> RawPlanView:
    sketch = PlanSketch(plan_id, max_steps=3, max_concurrent_frames=1).entry(StringField(path="s"))
    for node in ("a", "b", "c", "d"):
        sketch.call(node, "stamp", output=VALUE)
    return sketch.chain("entry", "a", "b", "c", "d").view()


SCENARIOS: dict[str, tuple[Callable[[str], RawPlanView], dict[str, Any], str]] = {
    "chain": (chain, {"s": "quiet"}, "completed"),
    "fan_out": (fan_out, {"s": "x"}, "completed"),
    "diamond": (diamond, {"s": "x"}, "completed"),
    "branch_match": (branch, {"n": 42}, "completed"),
    "branch_no_match": (branch, {"n": 1}, "completed"),
    "select_case": (select, {"n": 500}, "completed"),
    "select_default": (select, {"n": 50}, "completed"),
    "error_edge": (error_edge, {"s": "x"}, "completed"),
    "unhandled_failure": (unhandled, {"s": "x"}, "aborted"),
    "budget_exhausted": (budget, {"s": "x"}, "halted"),
}


async def live_projection(client: Client, plan_id: str) -> RunProjection:
    handle = client.get_workflow_handle(f"plan/{plan_id}")
    result: RunProjection = await handle.query("projection", result_type=RunProjection)
    return result


@pytest.mark.parametrize("name", list(SCENARIOS))
async def test_scenario_matches_driver_and_replays(
    client: Client, task_queue: str, name: str
) -> None:
    """The Temporal log equals the in-process driver's; a closed run folds to its projection."""
    build, run_input, outcome = SCENARIOS[name]
    view = build(unique_plan_id(name))
    async with build_worker(client, task_queue=task_queue, toolbox=make_toolbox()):
        handle = await start_run(client, task_queue, view, run_input)
        result = await handle.result()
        live = await live_projection(client, view.plan_id)
        page = await handle.query("events", args=[0, 500], result_type=EventPage)
    assert result.outcome == outcome
    events = list(page.events)
    assert strip_times(events) == strip_times(await driver_events(view, run_input))
    assert sum(1 for e in events if e.kind == "run_settled") == 1
    # with no worker running: rebuild from history (replaying it in the sandbox as well)
    rebuilt = await replay(handle)
    assert rebuilt == events
    folded = fold_run(rebuilt)
    assert folded == live
    assert folded.outcome == outcome


async def test_deviating_approval_aborts_before_any_node(client: Client, task_queue: str) -> None:
    """A run whose approval binds other content records run_started and aborts at once."""
    view = chain(unique_plan_id("deviation"))
    other = chain(view.plan_id + "x")
    async with build_worker(client, task_queue=task_queue, toolbox=make_toolbox()):
        handle = await start_run(client, task_queue, view, {"s": "x"}, approval_view=other)
        result = await handle.result()
        page = await handle.query("events", args=[0, 500], result_type=EventPage)
    assert result.outcome == "aborted"
    assert [e.kind for e in page.events] == ["run_started", "run_interrupted", "run_settled"]
    assert result.interruption is not None and result.interruption.kind == "deviation_abort"
    await replay(handle)


async def test_tampered_plan_content_is_refused(client: Client, task_queue: str) -> None:
    """Content changed after approval (digest no longer matches) never runs a node."""
    view = chain(unique_plan_id("tamper"))
    node = view.nodes[1]
    changed_definition = node.definition.model_copy(update={"args": {"s": "rm -rf"}})
    tampered = view.model_copy(
        update={
            "nodes": (
                view.nodes[0],
                node.model_copy(update={"definition": changed_definition}),
                view.nodes[2],
            )
        }
    )
    async with build_worker(client, task_queue=task_queue, toolbox=make_toolbox()):
        handle = await start_run(client, task_queue, tampered, {"s": "x"}, approval_view=view)
        result = await handle.result()
    assert result.outcome == "aborted" and result.interruption is not None
    assert "digest" in result.interruption.detail  # type: ignore[union-attr]


async def test_operator_stop_lets_the_call_in_flight_settle(
    client: Client, task_queue: str
) -> None:
    """stop: nothing new starts, the call in flight settles and is recorded, run aborted."""
    view = (
        PlanSketch(unique_plan_id("stop"), max_concurrent_frames=1)
        .entry(StringField(path="s"))
        .call("slow", "slow", args={"seconds": 1.0}, output=VALUE)
        .call("next", "stamp", output=VALUE)
        .chain("entry", "slow", "next")
        .view()
    )
    async with build_worker(client, task_queue=task_queue, toolbox=make_toolbox()):
        handle = await start_run(client, task_queue, view, {"s": "x"})
        await wait_until_entered(handle, "slow")
        await handle.signal("stop", "enough")
        result = await handle.result()
        page = await handle.query("events", args=[0, 500], result_type=EventPage)
    kinds = [e.kind for e in page.events]
    assert result.outcome == "aborted" and result.interruption is not None
    assert result.interruption.kind == "operator_stop"
    settled = [e.frame.node_id for e in page.events if e.kind == "node_settled"]  # type: ignore[union-attr]
    assert settled == ["entry", "slow"]
    assert kinds[-2:] == ["run_interrupted", "run_settled"]
    assert await replay(handle) == list(page.events)


async def test_cancellation_is_recorded_as_turn_abort(client: Client, task_queue: str) -> None:
    """Cancelling the workflow settles the in-flight call, records turn_abort, ends CANCELED."""
    view = (
        PlanSketch(unique_plan_id("cancel"), max_concurrent_frames=1)
        .entry(StringField(path="s"))
        .call("slow", "slow", args={"seconds": 1.0}, output=VALUE)
        .call("next", "stamp", output=VALUE)
        .chain("entry", "slow", "next")
        .view()
    )
    async with build_worker(client, task_queue=task_queue, toolbox=make_toolbox()):
        handle = await start_run(client, task_queue, view, {"s": "x"})
        await wait_until_entered(handle, "slow")
        await handle.cancel()
        with pytest.raises(WorkflowFailureError) as info:
            await handle.result()
    assert isinstance(info.value.cause, CancelledError)
    events = await replay(handle)
    projection = fold_run(events)
    assert projection.outcome == "aborted"
    assert projection.interruption is not None and projection.interruption.kind == "turn_abort"
    assert projection.node_status_by_id.get("slow") == "done"
    assert "next" not in projection.node_status_by_id
