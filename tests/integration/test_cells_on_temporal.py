"""Predicate cells on a real dev server: node-id paths and their evidence inline, and the jexl
cell in the local activity.

Every run is also replayed in the real sandbox (``harness.replay``).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from temporalio.client import Client, WorkflowFailureError

from orchestration.predicates import JexlCell, LuaCell
from orchestration.testing import PlanSketch
from orchestration.types import EdgeTaken, NumberField, RunEvent, StringField
from workers.worker import build_worker

from . import artifact_tools
from .harness import replay, start_run, unique_plan_id

pytestmark = pytest.mark.asyncio(loop_scope="session")


def worker(client: Client, task_queue: str, store: Any) -> Any:
    return build_worker(
        client,
        task_queue=task_queue,
        toolbox=artifact_tools.TOOLBOX,
        store=store,
        evaluators=[JexlCell({"upper": str.upper}), LuaCell()],
    )


def edges_from(events: list[RunEvent], node_id: str) -> list[EdgeTaken]:
    return [e for e in events if isinstance(e, EdgeTaken) and e.from_.node_id == node_id]


async def test_structured_node_paths_and_jexl_decide_with_evidence(
    client: Client, task_queue: str, store: Any
) -> None:
    """`entry.s` (structured, in the workflow) and a jexl expression with a transform (local
    activity) decide their nodes; each fired edge carries the cell's evidence."""
    sketch = PlanSketch(unique_plan_id("cells"), max_concurrent_frames=1).entry(
        StringField(path="s"), NumberField(path="n")
    )
    sketch.branch("by_path", {"path": "entry.n", "op": "gte", "value": 3})
    sketch.branch("by_jexl", "entry.s|upper == 'X' && entry.n > 2", evaluator="jexl")
    for node in ("after_path", "after_jexl"):
        sketch.call(node, "stamp", output=[StringField(path="value")])
    view = (
        sketch.chain("entry", "by_path")
        .edge("by_path", "after_path", "match")
        .chain("entry", "by_jexl")
        .edge("by_jexl", "after_jexl", "match")
        .view()
    )
    async with worker(client, task_queue, store):
        handle, view = await start_run(client, task_queue, store, view, {"s": "x", "n": 5})
        result = await asyncio.wait_for(handle.result(), timeout=60)
    events = await replay(client, view.plan_id, store)
    assert result.outcome == "completed"
    [by_path] = edges_from(events, "by_path")
    assert by_path.handle == "match"
    assert by_path.evidence == {
        "cell": "structured",
        "result": True,
        "checks": [{"path": "entry.n", "op": "gte", "value": 3, "actual": 5, "holds": True}],
    }
    [by_jexl] = edges_from(events, "by_jexl")
    assert by_jexl.evidence == {
        "cell": "jexl",
        "result": True,
        "reads": {"entry.s": "x", "entry.n": 5},
    }


BOMBS = [
    "return string.rep('', 1 << 62) == ''",
    "return table.move({}, 1, 1 << 40, 2) ~= nil",
    "while true do end",
]


@pytest.mark.parametrize("bomb", BOMBS, ids=["string_rep", "table_move", "loop"])
async def test_a_lua_bomb_halts_its_run_and_the_worker_goes_on(
    client: Client, task_queue: str, store: Any, bomb: str
) -> None:
    """Ruling 31 on a real worker: a Lua predicate that would run for ever halts the run
    ``predicate_unevaluatable`` within seconds; the worker's tools still run afterwards; the
    closed run's log reads back and its history replays."""
    bombed = (
        PlanSketch(unique_plan_id("bomb"))
        .entry(StringField(path="s"))
        .branch("decide", bomb, evaluator="lua")
        .call("never", "stamp", output=[StringField(path="value")])
        .chain("entry", "decide")
        .edge("decide", "never", "match")
        .view()
    )
    calm = (
        PlanSketch(unique_plan_id("calm"))
        .entry(StringField(path="s"))
        .call("work", "stamp", output=[StringField(path="value")])
        .chain("entry", "work")
        .view()
    )
    async with worker(client, task_queue, store):
        started = asyncio.get_running_loop().time()
        handle, bombed = await start_run(client, task_queue, store, bombed, {"s": "x"})
        with pytest.raises(WorkflowFailureError) as failure:
            await asyncio.wait_for(handle.result(), timeout=60)
        assert asyncio.get_running_loop().time() - started < 20
        assert "predicate_unevaluatable" in str(failure.value.cause)
        after, calm = await start_run(client, task_queue, store, calm, {"s": "x"})
        assert (await asyncio.wait_for(after.result(), timeout=30)).outcome == "completed"
    events = await replay(client, bombed.plan_id, store)
    assert [e.kind for e in events][-2:] == ["run_interrupted", "run_settled"]


async def test_a_worker_restarted_while_a_bomb_is_evaluated_settles_the_run(
    client: Client, task_queue: str, store: Any
) -> None:
    """The branch being evaluated when its worker stops is evaluated again by the next worker
    and the run halts as it would have; its history replays."""
    view = (
        PlanSketch(unique_plan_id("restart"))
        .entry(StringField(path="s"))
        .branch("decide", BOMBS[2], evaluator="lua")
        .chain("entry", "decide")
        .view()
    )
    first = worker(client, task_queue, store)
    running = asyncio.create_task(first.run())
    handle, view = await start_run(client, task_queue, store, view, {"s": "x"})
    await asyncio.sleep(0.5)
    await first.shutdown()
    await running
    async with worker(client, task_queue, store):
        with pytest.raises(WorkflowFailureError) as failure:
            await asyncio.wait_for(handle.result(), timeout=60)
    assert "predicate_unevaluatable" in str(failure.value.cause)
    await replay(client, view.plan_id, store)
