"""A run longer than one history segment continues as new and its full log still folds right."""

from __future__ import annotations

import pytest
from temporalio.client import Client

from orchestration.encoding import NodeRef
from orchestration.execution import RunSettings
from orchestration.runs import fold_run
from orchestration.testing import PlanSketch, run_in_process
from orchestration.types import NumberField, StringField
from workers.runs import TemporalRuns
from workers.worker import build_worker
from workflows.runlog import events_from_history

from .harness import make_toolbox, mirror_toolbox, start_run, unique_plan_id

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def test_long_chain_spans_segments(client: Client, task_queue: str) -> None:
    """Forced continue-as-new every ~200 history events: outputs and statuses match the driver."""
    sketch = PlanSketch(unique_plan_id("long"), max_concurrent_frames=4).entry(
        StringField(path="s")
    )
    previous = "entry"
    for i in range(60):
        node = f"n{i}"
        sketch.call(
            node,
            "stamp",
            args={"prev": NodeRef(previous, path="value" if i else "s")},
            output=[StringField(path="value"), NumberField(path="n")],
        )
        sketch.edge(previous, node)
        previous = node
    view = sketch.view()
    settings = RunSettings(continue_as_new_after_events=200)
    async with build_worker(client, task_queue=task_queue, toolbox=make_toolbox()):
        handle = await start_run(client, task_queue, view, {"s": "x"}, settings=settings)
        result = await handle.result()
    assert result.outcome == "completed" and result.segments >= 2 and result.settled == 61
    runs = TemporalRuns(client, None, task_queue=task_queue)  # type: ignore[arg-type]
    log = await runs.read_log(view.plan_id)
    assert [e.kind for e in log].count("run_started") == 1
    assert [e.kind for e in log].count("run_settled") == 1
    assert len(log) == result.events
    folded = fold_run(log)
    _, expected = await run_in_process(
        view, {"s": "x"}, mirror_toolbox(), run_id=f"plan/{view.plan_id}"
    )
    assert folded.outputs == expected.outputs
    assert folded.frame_status == expected.frame_status
    assert folded.outcome == expected.outcome == "completed"
    # every execution of the chain replays on the current code
    executions = [h async for _, h in runs._executions(f"plan/{view.plan_id}")]  # noqa: SLF001
    assert len(executions) == result.segments
    for history in executions:
        await events_from_history(history)


async def test_three_thousand_calls_continue_as_new_when_suggested(
    client: Client, task_queue: str
) -> None:
    """3,000 call nodes (raised bounds) outgrow one history; the server's suggestion splits it."""
    n = 3000
    sketch = PlanSketch(
        unique_plan_id("wide"),
        max_nodes=n + 10,
        max_edges=n + 10,
        max_steps=n + 10,
        max_concurrent_frames=300,
    ).entry(StringField(path="s"))
    for i in range(n):
        sketch.call(f"c{i}", "stamp", output=[StringField(path="value"), NumberField(path="n")])
        sketch.edge("entry", f"c{i}")
    view = sketch.view()
    async with build_worker(
        client, task_queue=task_queue, toolbox=make_toolbox(), max_concurrent_activities=300
    ):
        handle = await start_run(client, task_queue, view, {"s": "x"})
        result = await handle.result()
    assert result.outcome == "completed" and result.settled == n + 1
    assert result.segments >= 2
    runs = TemporalRuns(client, None, task_queue=task_queue)  # type: ignore[arg-type]
    log = await runs.read_log(view.plan_id)
    folded = fold_run(log)
    assert folded.outcome == "completed"
    assert sum(1 for status in folded.frame_status.values() if status == "done") == n + 1
    assert len(folded.outputs) == n + 1
