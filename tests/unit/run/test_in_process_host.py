"""The in-process host over a real SQLite store: admission, the claim, the log, halts, resume."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from orchestration.api import create_orchestration
from orchestration.errors import RunRefusedError
from orchestration.run.expand import expand_log
from orchestration.run.fold import fold_run
from orchestration.run.host import InProcessRuns
from orchestration.run.messages import workflow_id_for
from orchestration.run.work import FrameWork
from orchestration.store.sqlite import SqlitePlanStore
from orchestration.testing import PlanSketch, approve_into
from orchestration.tools.toolbox import Toolbox, ToolContext
from orchestration.types import StringField
from tests.support.scenarios import SETTINGS

pytestmark = pytest.mark.asyncio


def tools(ledger: list[str]) -> Toolbox:
    box = Toolbox()

    @box.tool("write")
    def write(context: ToolContext, s: str = "") -> dict[str, Any]:
        ledger.append(context.node_id)
        return {"value": context.node_id}

    @box.tool("slow")
    async def slow(context: ToolContext) -> dict[str, Any]:
        ledger.append(context.node_id)
        await asyncio.sleep(0.3)
        return {"value": context.node_id}

    @box.tool("boom")
    def boom() -> str:
        raise RuntimeError("boom")

    @box.tool("vanish")
    async def vanish(context: ToolContext) -> dict[str, Any]:
        ledger.append(context.node_id)
        await asyncio.sleep(10)
        return {"value": "never"}

    return box


def chain(plan_id: str, *tools_of: str, max_steps: int = 4096, **call: Any) -> Any:
    sketch = PlanSketch(plan_id, max_steps=max_steps).entry(StringField(path="s"))
    names = [f"n{i}" for i in range(len(tools_of))]
    for name, tool in zip(names, tools_of, strict=True):
        sketch.call(name, tool, output=[StringField(path="value")], **call)
    return sketch.chain("entry", *names).view()


async def host(tmp_path: Path, ledger: list[str], **settings: Any) -> tuple[Any, InProcessRuns]:
    store = SqlitePlanStore(tmp_path / "plans.sqlite3")
    runs = InProcessRuns(
        store, FrameWork(tools(ledger)), settings=SETTINGS.model_copy(update=settings)
    )
    return store, runs


async def test_a_run_writes_its_log_to_the_store_and_runs_once(tmp_path: Path) -> None:
    """The log is in the store entry for entry; a second start is refused, nothing reruns."""
    ledger: list[str] = []
    store, runs = await host(tmp_path, ledger)
    await approve_into(store, chain("once", "write", "write"))
    projection = await runs.execute("once", {"s": "x"})
    assert projection.outcome == "completed" and ledger == ["n0", "n1"]
    assert fold_run(expand_log(await store.read_run_log("once"))) == projection
    for resume in (None, "plan/elsewhere"):
        with pytest.raises(RunRefusedError) as refused:
            await runs.execute("once", {"s": "x"}, resume_run_id=resume)
        assert refused.value.code in ("run_already_claimed", "run_not_found")
    with pytest.raises(RunRefusedError) as settled:
        await runs.execute("once", {"s": "x"}, resume_run_id=workflow_id_for("once"))
    assert settled.value.code == "run_already_settled"
    assert ledger == ["n0", "n1"]
    await store.close()


async def test_a_cancelled_run_resumes_the_frames_that_never_ran(tmp_path: Path) -> None:
    """turn_abort: the call in flight settles; resume runs only what never ran (ruling 28)."""
    ledger: list[str] = []
    store, runs = await host(tmp_path, ledger)
    await approve_into(store, chain("cancel", "slow", "write"))
    run = await runs.start("cancel", {"s": "x"})
    while not run.engine.in_flight:
        await asyncio.sleep(0.01)
    run.cancel()
    first = await run.wait()
    assert first.outcome == "aborted" and first.interruption is not None
    assert first.interruption.kind == "turn_abort" and ledger == ["n0"]
    resumed = await runs.execute("cancel", resume_run_id=workflow_id_for("cancel"))
    assert resumed.outcome == "completed" and resumed.interruption is None
    assert ledger == ["n0", "n1"]
    await store.close()


async def test_an_unhandled_failure_resumes_the_other_frames(tmp_path: Path) -> None:
    """An aborted run resumes its remaining frontier; the failed frame does not run again."""
    ledger: list[str] = []
    store, runs = await host(tmp_path, ledger)
    sketch = PlanSketch("fail").entry(StringField(path="s"))
    sketch.call("bad", "boom", output=[StringField(path="value")])
    sketch.call("later", "write", output=[StringField(path="value")])
    view = sketch.edge("entry", "bad").edge("entry", "later").view()
    await approve_into(store, view)
    first = await runs.execute("fail", {"s": "x"})
    assert first.outcome == "aborted" and ledger == []
    resumed = await runs.execute("fail", resume_run_id=workflow_id_for("fail"))
    assert resumed.outcome == "completed" and ledger == ["later"]
    await store.close()


async def test_a_budget_halted_run_halts_again_at_once(tmp_path: Path) -> None:
    """A run halted by maxSteps halts again on resume, running nothing (ruling 28)."""
    ledger: list[str] = []
    store, runs = await host(tmp_path, ledger)
    await approve_into(store, chain("budget", "write", "write", "write", max_steps=2))
    first = await runs.execute("budget", {"s": "x"})
    assert first.outcome == "halted" and ledger == ["n0"]
    again = await runs.execute("budget", resume_run_id=workflow_id_for("budget"))
    assert again.outcome == "halted" and again.interruption is not None
    assert again.interruption.kind == "budget_exhausted" and ledger == ["n0"]
    await store.close()


async def test_a_halted_call_waits_for_an_operator(tmp_path: Path) -> None:
    """A lost call that may not be repeated halts until resolve(); retry runs it again."""
    ledger: list[str] = []
    store, runs = await host(tmp_path, ledger, start_to_close_seconds=0.2)
    await approve_into(store, chain("halt", "vanish", replay_safe=False, on_indeterminate="halt"))
    run = await runs.start("halt", {"s": "x"})
    halted = await run.wait_halted()
    assert len(halted) == 1 and halted[0].startswith("n0:")
    assert run.projection().interruption is not None
    with pytest.raises(RunRefusedError):
        run.resolve("nope:", "retry")
    run.resolve(halted[0], "skip")
    projection = await run.wait()
    assert projection.outcome == "completed"
    assert projection.node_status_by_id["n0"] == "skipped" and ledger == ["n0"]
    await store.close()


async def test_a_per_run_cell_that_fails_to_load_is_refused_before_the_claim(
    tmp_path: Path,
) -> None:
    """Rulings 8 and 21: a cell that cannot load refuses the run and claims nothing."""

    class Broken:
        id = "broken"
        deterministic = True

        async def load(self) -> None:
            raise ImportError("the cell's package is not installed")

    ledger: list[str] = []
    store, runs = await host(tmp_path, ledger)
    await approve_into(store, chain("cells", "write"))
    with pytest.raises(RunRefusedError) as refused:
        await runs.start("cells", {"s": "x"}, cells=[Broken()])  # type: ignore[list-item]
    assert refused.value.code == "cell_unavailable"
    assert await store.read_run_id("cells") is None
    assert (await runs.execute("cells", {"s": "x"})).outcome == "completed"
    await store.close()


async def test_bad_input_is_refused_before_the_claim(tmp_path: Path) -> None:
    """Input that does not fit the entry refuses the run; the plan stays runnable."""
    ledger: list[str] = []
    store, runs = await host(tmp_path, ledger)
    await approve_into(store, chain("input", "write"))
    with pytest.raises(RunRefusedError) as refused:
        await runs.start("input", {"s": 5})
    assert refused.value.code == "invalid_run_input" and await store.read_run_id("input") is None
    await store.close()


async def test_the_facade_runs_plans_in_process_by_default(tmp_path: Path) -> None:
    """create_orchestration(...).execute_plan runs through the in-process host and the store."""
    ledger: list[str] = []
    store = SqlitePlanStore(tmp_path / "plans.sqlite3")
    orch = await create_orchestration(store=store, invocable=tools(ledger))
    await approve_into(store, chain("facade", "write"))
    projection = await orch.execute_plan("facade", {"s": "x"})
    assert projection.outcome == "completed" and ledger == ["n0"]
    assert await orch.run_projection("facade") == projection
    assert [e.kind for e in await orch.run_events("facade")][0] == "run_started"
    await store.close()
