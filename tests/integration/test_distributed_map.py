"""A 10,000-item map on the dev server: its items run in ``PlanBatch`` child workflows.

The acceptance run of the distributed map. The plan lists 10,000 files and maps a two-call body
over them, 20 items at a time; with the default settings the run starts 100 batches (100 items
each, 20 at a time) as child workflows. It must complete, record the very log the in-process
host records (times aside), replay (the run and every batch), and keep every execution far
from Temporal's limits: at most 2,000 pending activities (or children), and under the
continue-as-new suggestion (4,096 events, 4 MiB of history).
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHistory

from orchestration.plan.encoding import NodeRef
from orchestration.run.messages import workflow_id_for
from orchestration.testing import PlanSketch
from orchestration.types import NumberField, RawPlanView, RunProjection
from tests.support.hosts import InProcessHost, TemporalHost, strip_times, timeless
from tests.support.scenarios import SETTINGS, VALUE, Scenario

pytestmark = pytest.mark.asyncio(loop_scope="session")

ITEMS = 10_000
AT_ONCE = 20
SUGGEST_EVENTS = 4096
SUGGEST_BYTES = 4 * 1024 * 1024
PENDING_LIMIT = 2000

WIDE = SETTINGS.model_copy(update={"max_in_flight": 64, "start_to_close_seconds": 120.0})
"""The scenarios' settings with room for the batches, and attempts that are never cut short
(1.5 s, the scenarios' own timeout for their lost calls, is within reach of a loaded machine's
pauses at this size, and a lost attempt retried is an entry the other host does not have);
batches at their defaults (maps of more than 1,000 items, 300 steps a batch: 100 items of this
body's 3 steps)."""


def _first_difference(left: list[dict[str, object]], right: list[dict[str, object]]) -> str:
    for index, (a, b) in enumerate(zip(left, right, strict=False)):
        if a != b:
            return f"entry {index}: {a} != {b}"
    return f"lengths {len(left)} != {len(right)}"


def files_map(plan_id: str) -> RawPlanView:
    """list (``n`` files) → map ``m`` over them, 20 at a time (body: inspect → seal) → after.

    The body's tools are short (the fast path: local activities), as a map's per-item work
    often is; a batch's calls run one after another either way.
    """
    s = PlanSketch(plan_id, max_steps=4 * ITEMS, max_concurrent_frames=64)
    s.entry(NumberField(path="n"), NumberField(path="bad"))
    s.call(
        "list",
        "listing",
        args={"n": NodeRef("entry", path="n"), "bad": NodeRef("entry", path="bad")},
        output=[NumberField(path="n")],
    )
    s.map("m", NodeRef("list", path="files"), max_items=ITEMS, concurrency=AT_ONCE)
    s.call("inspect", "peek", args={"name": NodeRef("m", path="item")}, output=VALUE)
    s.call("seal", "seal", args={"of": NodeRef("inspect", path="value")}, output=VALUE)
    s.call("after", "count", args={"n": NodeRef("list", path="n")}, output=[NumberField(path="n")])
    s.edge("entry", "list").edge("list", "m").edge("m", "inspect", "item")
    return s.edge("inspect", "seal").edge("m", "after").view()


def _every_item_sealed(projection: RunProjection) -> None:
    assert projection.outcome == "completed", projection.interruption
    (output,) = [o for k, o in projection.outputs.items() if k.startswith("m:") and "[" not in k]
    rows = [item.json_ for item in output.items]
    assert [row["index"] for row in rows] == list(range(ITEMS))
    assert all(row["ok"] and row["result"]["value"] == "seal" for row in rows)


def _most_pending(history: WorkflowHistory) -> tuple[int, int]:
    """The most activities, and the most child workflows, pending at once in ``history``."""
    activities = children = most_activities = most_children = 0
    for event in history.events:
        kind = event.event_type
        if kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            activities += 1
        elif kind in (
            EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
            EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED,
            EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT,
            EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED,
        ):
            activities -= 1
        elif kind == EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
            children += 1
        elif kind in (
            EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED,
            EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_FAILED,
            EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_CANCELED,
            EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TERMINATED,
            EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TIMED_OUT,
        ):
            children -= 1
        most_activities = max(most_activities, activities)
        most_children = max(most_children, children)
    return most_activities, most_children


async def test_ten_thousand_items_run_through_child_workflows(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    """10,000 items, two calls each: 100 batches as children, the in-process log, no limit near."""
    scenario = Scenario(
        files_map, {"n": ITEMS, "bad": 0}, "completed", check=_every_item_sealed, settings=WIDE
    )
    plan_id = f"ten-thousand-{uuid.uuid4().hex[:8]}"
    # Temporal first: the worker runs in this process, and the in-process host's log would
    # otherwise be on its heap while it runs.
    began = time.monotonic()
    remote_log, remote = await TemporalHost(client, task_queue, tmp_path / "remote").run(
        scenario, plan_id
    )
    on_temporal = time.monotonic() - began  # replaying the run and its 100 batches included
    began = time.monotonic()
    local_log, local = await InProcessHost(tmp_path / "local").run(scenario, plan_id)
    in_process = time.monotonic() - began
    _every_item_sealed(remote)
    remote_entries, local_entries = strip_times(remote_log), strip_times(local_log)
    assert remote_entries == local_entries, _first_difference(remote_entries, local_entries)
    assert timeless(remote) == timeless(local)

    run = await client.get_workflow_handle(workflow_id_for(plan_id)).fetch_history()
    assert not run.events[0].workflow_execution_started_event_attributes.continued_execution_run_id
    started = [
        e.child_workflow_execution_started_event_attributes.workflow_execution
        for e in run.events
        if e.HasField("child_workflow_execution_started_event_attributes")
    ]
    assert len(started) == -(-ITEMS // 100)
    histories = [run] + [
        await client.get_workflow_handle(c.workflow_id, run_id=c.run_id).fetch_history()
        for c in started
    ]
    for history in histories:
        size = sum(event.ByteSize() for event in history.events)
        assert len(history.events) < SUGGEST_EVENTS, (history.workflow_id, len(history.events))
        assert size < SUGGEST_BYTES, (history.workflow_id, size)
        activities, children = _most_pending(history)
        assert activities < PENDING_LIMIT and children < PENDING_LIMIT
    assert _most_pending(run)[1] == AT_ONCE
    print(
        f"\n10,000 items: in process {in_process:.1f} s, on Temporal {on_temporal:.1f} s; "
        f"run history {len(run.events)} events, "
        f"{sum(e.ByteSize() for e in run.events) / 1e6:.2f} MB; "
        f"largest batch {max(len(h.events) for h in histories[1:])} events"
    )
