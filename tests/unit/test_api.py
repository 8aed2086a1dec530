"""The facade: construction loads cells, freeze transitions only clean plans, overrides apply."""

from __future__ import annotations

from typing import Any

import pytest

from orchestration.api import FreezeOverrides, Orchestration, create_orchestration
from orchestration.store.memory import MemoryPlanStore
from orchestration.tools.allowlist import ToolAllowlist
from orchestration.types import StringField

from .validation.helpers import TOOLS, FakeCell, author, call, every_kind_ops


async def _orch(ops: list[Any] | None = None, **kwargs: Any) -> Orchestration:
    store = MemoryPlanStore()
    kwargs.setdefault("evaluators", [FakeCell()])
    orch = await create_orchestration(store=store, invocable=TOOLS, **kwargs)
    await store.create_plan("p")
    await store.append_ops("p", ops if ops is not None else every_kind_ops())
    return orch


@pytest.mark.asyncio
async def test_construction_loads_every_cell() -> None:
    """Each cell is loaded once at construction, so a missing dependency fails at boot."""
    cell = FakeCell()
    await create_orchestration(store=MemoryPlanStore(), invocable=TOOLS, evaluators=[cell])
    assert cell.loads == 1
    with pytest.raises(RuntimeError, match="not installed"):
        await create_orchestration(
            store=MemoryPlanStore(), invocable=TOOLS, evaluators=[FakeCell(fail_load=True)]
        )


@pytest.mark.asyncio
async def test_freeze_makes_a_clean_plan_reviewable() -> None:
    """A plan with no blocking issue moves to reviewable at the digest it was validated at."""
    orch = await _orch()
    digest = (await orch.store.read_state("p")).digest
    result = await orch.freeze_plan("p")
    assert result.ok and result.issues == ()
    state = await orch.store.read_state("p")
    assert state.state == "reviewable" and state.digest == digest


@pytest.mark.asyncio
async def test_freeze_refuses_a_plan_with_blocking_issues() -> None:
    """A blocking issue keeps the plan editable; the issues are returned."""
    a = author()
    orch = await _orch([a.entry(), call(a, "x", on_missing_value=None), a.edge("entry", "x")])
    result = await orch.freeze_plan("p")
    assert not result.ok and [i.code for i in result.issues] == ["missing_on_missing_value"]
    assert (await orch.store.read_state("p")).state == "editable"


@pytest.mark.asyncio
async def test_freezing_twice_is_a_rejected_transition() -> None:
    """A plan already reviewable cannot be frozen again: a blocking transition_rejected."""
    orch = await _orch()
    assert (await orch.freeze_plan("p")).ok
    again = await orch.freeze_plan("p")
    assert not again.ok
    issue = again.issues[-1]
    assert issue.code == "transition_rejected" and issue.severity == "blocking"
    assert "already frozen" in issue.message


class _MovingStore:
    """Delegates to a memory store, but appends an op right after each fold (a racing author)."""

    def __init__(self, inner: MemoryPlanStore) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def fold(self, plan_id: str, *, revision: int | None = None) -> Any:
        result = await self._inner.fold(plan_id, revision=revision)
        await self._inner.append_ops(plan_id, [author("racer").set_phase("fetch", "moved")])
        return result


@pytest.mark.asyncio
async def test_a_plan_that_moves_during_freeze_is_not_frozen() -> None:
    """The transition is a compare-and-set on the validated digest: a moved plan is refused."""
    inner = MemoryPlanStore()
    await inner.create_plan("p")
    await inner.append_ops("p", every_kind_ops())
    orch = await create_orchestration(
        store=_MovingStore(inner), invocable=TOOLS, evaluators=[FakeCell()]  # type: ignore[arg-type]
    )
    result = await orch.freeze_plan("p")
    assert not result.ok and result.issues[-1].code == "transition_rejected"
    assert "digest_mismatch" in result.issues[-1].message
    assert (await inner.read_state("p")).state == "editable"


@pytest.mark.asyncio
async def test_invocable_override_replaces_the_allowlist() -> None:
    """An invocable passed to freeze replaces the configured one wholesale."""
    orch = await _orch()
    narrow = ToolAllowlist.of(text=["web.fetch"])
    result = await orch.freeze_plan("p", FreezeOverrides(invocable=narrow))
    assert not result.ok
    assert {i.code for i in result.issues} >= {"unknown_tool"}
    assert (await orch.store.read_state("p")).state == "editable"


@pytest.mark.asyncio
async def test_evaluator_override_merges_by_id() -> None:
    """A per-freeze cell replaces the same-id configured cell; other cells survive."""
    a = author()
    ops = [a.entry(), a.branch("g1", evaluator="fake", predicate={"ok": 1}),
           a.branch("g2", evaluator="keep", predicate={"ok": 1}),
           a.edge("entry", "g1"), a.edge("g1", "g2", "match")]
    orch = await _orch(ops, evaluators=[FakeCell("fake"), FakeCell("keep")])
    strict = FakeCell("fake", fail_load=True)
    result = await orch.check_plan("p", FreezeOverrides(evaluators=(strict,)))
    assert [(i.code, i.node_id) for i in result] == [("evaluator_error", "g1")]


@pytest.mark.asyncio
async def test_reading_views_through_the_facade() -> None:
    """render, outline, slice and raw views read the same plan."""
    orch = await _orch()
    text = await orch.render("p")
    digest = (await orch.store.read_state("p")).digest
    assert f"digest: {digest}" in text and "Issues: none." in text
    outline = await orch.outline("p")
    assert outline.state == "editable" and [p.phase for p in outline.phases] == [
        "intake", "gather", "decide", "report"]
    sliced = await orch.slice("p", phase="decide")
    assert [n.id for n in sliced.nodes] == ["summarize", "gate"]
    assert sliced.boundary.incoming == ("both",)
    assert (await orch.raw.plan("p")).digest == digest
    assert len(await orch.raw.ops("p")) == (await orch.store.read_state("p")).revision
    a = author("bob")
    await orch.store.append_ops("p", [call(a, "extra", output=[StringField(path="x")])])
    diff = await orch.raw.diff("p", 0, "current")
    assert len(diff.nodes_added) == len(outline.phases[0].node_ids) + sum(
        len(p.node_ids) for p in outline.phases[1:]) + len(outline.unphased.node_ids) + 1  # type: ignore[union-attr]
    assert "extra" in await orch.render_diff("p", diff.to.revision - 1)
