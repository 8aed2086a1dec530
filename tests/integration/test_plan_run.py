"""PlanRun on a real dev server: stops, cancellation, close statuses, the log in the store, resume.

(The scenario set's logs are compared with the in-process host's in ``test_two_hosts``.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError
from temporalio.exceptions import ApplicationError, CancelledError

from orchestration.errors import RunRefusedError
from orchestration.run.expand import expand_log
from orchestration.run.fold import fold_run
from orchestration.run.messages import LogPage, workflow_id_for
from orchestration.store.sqlite import SqlitePlanStore
from orchestration.testing import PlanSketch
from orchestration.types import NumberField, RawPlanView, StringField
from workers.runs import TemporalRuns
from workers.worker import build_worker

from .harness import FAST_RETRY, make_toolbox, replay, start_run, unique_plan_id, wait_until_entered

pytestmark = pytest.mark.asyncio(loop_scope="session")

VALUE = [StringField(path="value"), NumberField(path="n")]


def slow_then_next(plan_id: str, *, max_steps: int = 4096) -> RawPlanView:
    return (
        PlanSketch(plan_id, max_concurrent_frames=1, max_steps=max_steps)
        .entry(StringField(path="s"))
        .call("slow", "slow", args={"seconds": 1.0}, output=VALUE)
        .call("next", "stamp", output=VALUE)
        .chain("entry", "slow", "next")
        .view()
    )


async def test_operator_stop_lets_the_call_in_flight_settle(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    """stop: nothing new starts, the call in flight settles and is recorded, the run aborts.

    The execution ends Failed (an aborted run is not a success), with a non-retryable failure
    whose type names the outcome and whose message names the interruption.
    """
    store = SqlitePlanStore(tmp_path / "plans.sqlite3")
    async with build_worker(client, task_queue=task_queue, toolbox=make_toolbox(), store=store):
        handle, view = await start_run(
            client, task_queue, store, slow_then_next(unique_plan_id("stop")), {"s": "x"}
        )
        await wait_until_entered(handle, "slow")
        await handle.signal("stop", "enough")
        with pytest.raises(WorkflowFailureError) as info:
            await handle.result()
    cause = info.value.cause
    assert isinstance(cause, ApplicationError)
    assert cause.type == "aborted" and cause.non_retryable and "operator_stop" in cause.message
    assert (await handle.describe()).status == WorkflowExecutionStatus.FAILED
    events = expand_log(await store.read_run_log(view.plan_id))
    settled = [e.frame.node_id for e in events if e.kind == "node_settled"]  # type: ignore[union-attr]
    assert settled == ["entry", "slow"]
    assert [e.kind for e in events][-2:] == ["run_interrupted", "run_settled"]
    # Equal to what history rebuilds, times aside: after a local activity (the claim, the
    # mirror) the live workflow's clock can run a few milliseconds ahead of a replay's.
    replayed = await replay(client, view.plan_id, store)
    assert [e.model_dump(exclude={"at"}) for e in replayed] == [
        e.model_dump(exclude={"at"}) for e in events
    ]
    await store.close()


async def test_cancellation_is_recorded_as_turn_abort(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    """Cancelling settles the in-flight call, records turn_abort, and ends Canceled."""
    store = SqlitePlanStore(tmp_path / "plans.sqlite3")
    async with build_worker(client, task_queue=task_queue, toolbox=make_toolbox(), store=store):
        handle, view = await start_run(
            client, task_queue, store, slow_then_next(unique_plan_id("cancel")), {"s": "x"}
        )
        await wait_until_entered(handle, "slow")
        await handle.cancel()
        with pytest.raises(WorkflowFailureError) as info:
            await handle.result()
    assert isinstance(info.value.cause, CancelledError)
    assert (await handle.describe()).status == WorkflowExecutionStatus.CANCELED
    projection = fold_run(expand_log(await store.read_run_log(view.plan_id)))
    assert projection.outcome == "aborted"
    assert projection.interruption is not None and projection.interruption.kind == "turn_abort"
    assert projection.node_status_by_id.get("slow") == "done"
    assert "next" not in projection.node_status_by_id
    await replay(client, view.plan_id, store)
    await store.close()


async def test_a_cancelled_run_resumes_its_remaining_frontier(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    """Resume (ruling 28): the frames that never ran run; what settled does not run again."""
    store = SqlitePlanStore(tmp_path / "plans.sqlite3")
    async with build_worker(client, task_queue=task_queue, toolbox=make_toolbox(), store=store):
        handle, view = await start_run(
            client, task_queue, store, slow_then_next(unique_plan_id("resume")), {"s": "x"}
        )
        await wait_until_entered(handle, "slow")
        await handle.cancel()
        with pytest.raises(WorkflowFailureError):
            await handle.result()
        runs = TemporalRuns(client, store, task_queue=task_queue, settings=FAST_RETRY)
        with pytest.raises(RunRefusedError) as unknown:
            await runs.start(view.plan_id, {"s": "x"}, resume_run_id="plan/nope")
        assert unknown.value.code == "run_not_found"
        resumed = await runs.start(
            view.plan_id, {"s": "x"}, resume_run_id=workflow_id_for(view.plan_id)
        )
        result = await resumed.result()
        assert result.outcome == "completed"
        with pytest.raises(RunRefusedError) as settled:
            await runs.start(view.plan_id, {"s": "x"}, resume_run_id=workflow_id_for(view.plan_id))
        assert settled.value.code == "run_already_settled"
        projection = await runs.projection(view.plan_id)
    events = expand_log(await store.read_run_log(view.plan_id))
    entered = [e.frame.node_id for e in events if e.kind == "node_entered"]  # type: ignore[union-attr]
    assert entered == ["entry", "slow", "next"]
    assert projection.outcome == "completed" and projection.interruption is None
    assert [e.kind for e in events].count("run_settled") == 2
    await store.close()


async def test_a_budget_halted_run_halts_again_when_resumed(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    """A run halted by its step budget re-halts at once on resume, running nothing."""
    store = SqlitePlanStore(tmp_path / "plans.sqlite3")
    async with build_worker(client, task_queue=task_queue, toolbox=make_toolbox(), store=store):
        handle, view = await start_run(
            client,
            task_queue,
            store,
            slow_then_next(unique_plan_id("budget"), max_steps=2),
            {"s": "x"},
        )
        with pytest.raises(WorkflowFailureError) as first:
            await handle.result()
        assert getattr(first.value.cause, "type", None) == "halted"
        runs = TemporalRuns(client, store, task_queue=task_queue, settings=FAST_RETRY)
        again = await runs.start(view.plan_id, {}, resume_run_id=workflow_id_for(view.plan_id))
        with pytest.raises(WorkflowFailureError) as second:
            await again.result()
        assert "budget_exhausted" in str(second.value.cause)
    events = expand_log(await store.read_run_log(view.plan_id))
    entered = [e.frame.node_id for e in events if e.kind == "node_entered"]  # type: ignore[union-attr]
    assert entered == ["entry", "slow"]
    await store.close()


async def test_the_log_is_in_the_store_and_pages_by_query(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    """The run's log is mirrored to the store; the live query pages the same entries."""
    store = SqlitePlanStore(tmp_path / "plans.sqlite3")
    async with build_worker(client, task_queue=task_queue, toolbox=make_toolbox(), store=store):
        handle, view = await start_run(
            client, task_queue, store, slow_then_next(unique_plan_id("log")), {"s": "x"}
        )
        result = await handle.result()
        page = await handle.query("events", args=[0, 3], result_type=LogPage)
    stored = await store.read_run_log(view.plan_id)
    assert result.outcome == "completed" and result.events == len(stored)
    assert list(page.entries) == stored[:3] and page.next == 3 and page.total == len(stored)
    await store.close()


def _labelled_node_activities(history: Any) -> list[int]:
    """Events of a node's activity (ordinary, or local: a ``plan.call`` marker) with a label."""
    found = []
    for event in history.events:
        if not event.user_metadata.HasField("summary"):
            continue
        marker = event.marker_recorded_event_attributes
        local_call = marker.marker_name == "core_local_activity" and any(
            b"plan.call" in payload.data for payload in marker.details["data"].payloads
        )
        if event.HasField("activity_task_scheduled_event_attributes") or local_call:
            found.append(event.event_id)
    return found


async def test_short_replay_safe_calls_take_the_fast_path(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    """A tool declared short runs its replay-safe calls as local activities; others do not."""
    from orchestration.tools.toolbox import Toolbox

    tools = Toolbox()

    @tools.tool("quick", short=True)
    def quick() -> dict[str, str]:
        return {"value": "q"}

    @tools.tool("careful")
    def careful() -> dict[str, str]:
        return {"value": "c"}

    sketch = PlanSketch(unique_plan_id("fast")).entry(StringField(path="s"))
    sketch.call("a", "quick", output=[StringField(path="value")])
    sketch.call("b", "careful", output=[StringField(path="value")])
    sketch.call(
        "c", "quick", output=[StringField(path="value")], replay_safe=False, on_indeterminate="halt"
    )
    store = SqlitePlanStore(tmp_path / "plans.sqlite3")
    plan = sketch.chain("entry", "a", "b", "c").view()
    quiet = FAST_RETRY.model_copy(update={"activity_summaries": False})
    async with build_worker(client, task_queue=task_queue, toolbox=tools, store=store):
        handle, view = await start_run(client, task_queue, store, plan, {"s": "x"})
        assert (await handle.result()).outcome == "completed"
        unlabelled, other = await start_run(
            client,
            task_queue,
            store,
            plan.model_copy(update={"plan_id": unique_plan_id("quiet")}),
            {"s": "x"},
            settings=quiet,
        )
        assert (await unlabelled.result()).outcome == "completed"
    history = await handle.fetch_history()
    scheduled = [
        e.activity_task_scheduled_event_attributes.activity_id
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    ]
    markers = sum(1 for e in history.events if e.HasField("marker_recorded_event_attributes"))
    assert [s.split(":")[0] for s in scheduled] == ["b", "c"]
    assert markers >= 3  # the claim, the fast tools, a's call (and the log's mirror)
    # Each node's activity carries its label; with activity_summaries off, none does.
    converter = client.data_converter.payload_converter
    labels = {
        converter.from_payload(e.user_metadata.summary, str)
        for e in history.events
        if e.user_metadata.HasField("summary")
    }
    assert {"a · quick (local)", "b · careful", "c · quick"} <= labels
    quiet_history = await unlabelled.fetch_history()
    assert len(_labelled_node_activities(history)) == 3
    assert _labelled_node_activities(quiet_history) == []
    await replay(client, view.plan_id, store)
    await replay(client, other.plan_id, store)
    await store.close()


async def test_a_runs_projection_folds_from_the_store_after_its_history_is_gone(
    tmp_path: Path, task_queue: str
) -> None:
    """The log lives in the plan store too: with the server (and its history) gone, the run's
    projection still folds from the store, equal to what was read while history was there."""
    from workers.devserver import DevServer
    from workers.worker import connect

    store = SqlitePlanStore(tmp_path / "plans.sqlite3")
    async with DevServer(ui=False) as server:  # in memory: its histories die with it
        client = await connect(server.address)
        async with build_worker(client, task_queue=task_queue, toolbox=make_toolbox(), store=store):
            handle, view = await start_run(
                client, task_queue, store, slow_then_next(unique_plan_id("gone")), {"s": "x"}
            )
            assert (await handle.result()).outcome == "completed"
            runs = TemporalRuns(client, store, task_queue=task_queue)
            while_there = await runs.projection(view.plan_id)
    folded = fold_run(expand_log(await store.read_run_log(view.plan_id)))
    assert folded == while_there and folded.outcome == "completed"
    assert folded.node_status_by_id == {"entry": "done", "slow": "done", "next": "done"}
    await store.close()
