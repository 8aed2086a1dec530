"""What every facade has without being told: the structured predicate cell."""

from __future__ import annotations

import pytest

from orchestration.api import create_orchestration
from orchestration.store.memory import MemoryPlanStore
from orchestration.types import NumberField

from .validation.helpers import TOOLS, author


@pytest.mark.asyncio
async def test_the_structured_cell_is_wired_by_default() -> None:
    """A branch naming the structured cell freezes with no cells passed; a bad one is refused."""
    orch = await create_orchestration(store=MemoryPlanStore(), invocable=TOOLS)
    assert [cell.id for cell in orch.inputs.evaluators] == ["structured"]
    a = author()
    for plan_id, predicate in (
        ("good", {"path": "entry:.n", "op": "gt", "value": 1}),
        ("bad", {"path": "entry:.n", "op": "bigger", "value": 1}),
    ):
        await orch.store.create_plan(plan_id)
        await orch.store.append_ops(
            plan_id,
            [
                a.entry(input=[NumberField(path="n")]),
                a.branch("b", predicate=predicate),
                a.edge("entry", "b"),
            ],
        )
    assert (await orch.freeze_plan("good")).ok
    refused = await orch.freeze_plan("bad")
    assert [i.code for i in refused.issues] == ["evaluator_error"]
