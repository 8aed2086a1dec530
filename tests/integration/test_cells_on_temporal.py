"""Predicate cells on a real dev server: node-id paths and their evidence inline, and the jexl
cell in the local activity.

Every run is also replayed in the real sandbox (``harness.replay``).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from temporalio.client import Client

from orchestration.predicates import JexlCell, LuaCell
from orchestration.testing import PlanSketch
from orchestration.types import EdgeTaken, NumberField, RunEvent, StringField
from workers.worker import build_worker

from . import artifact_tools
from .harness import replay, start_run, unique_plan_id

pytestmark = pytest.mark.asyncio(loop_scope="session")

def worker(client: Client, task_queue: str) -> Any:
    return build_worker(
        client,
        task_queue=task_queue,
        toolbox=artifact_tools.TOOLBOX,
        evaluators=[JexlCell({"upper": str.upper}), LuaCell()],
    )


def edges_from(events: list[RunEvent], node_id: str) -> list[EdgeTaken]:
    return [e for e in events if isinstance(e, EdgeTaken) and e.from_.node_id == node_id]


async def test_structured_node_paths_and_jexl_decide_with_evidence(
    client: Client, task_queue: str
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
    async with worker(client, task_queue):
        handle = await start_run(client, task_queue, view, {"s": "x", "n": 5})
        result = await asyncio.wait_for(handle.result(), timeout=60)
    events = await replay(handle)
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
