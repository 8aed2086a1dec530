"""Two worker processes and two client processes share one PostgreSQL plan store and one server.

Twenty approved plans; both clients try to start every one of them at the same time. Each plan
must get exactly one run (the other client is refused with ``run_already_claimed``), every run
must complete, and the external ledger must show each call's side effect exactly once.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from temporalio.client import Client

from orchestration.api import create_orchestration
from orchestration.plan.authoring import PlanAuthor, claim
from orchestration.review.approval import approval_record
from orchestration.run.messages import workflow_id_for
from orchestration.store.postgres import PostgresPlanStore
from orchestration.types import StringField
from tests.postgres_cluster import PostgresCluster
from tests.support.processes import kill, worker_process
from workers.devserver import DevServer

from . import drill_tools
from .harness import unique_plan_id

pytestmark = pytest.mark.asyncio(loop_scope="session")

ROOT = Path(__file__).resolve().parents[2]
PLANS = 20


async def approved_plans(dsn: str, ledger: Path) -> list[str]:
    store = PostgresPlanStore(dsn)
    orch = await create_orchestration(store=store, invocable=drill_tools.TOOLBOX)
    ids = [unique_plan_id(f"shared{i}") for i in range(PLANS)]
    try:
        for plan_id in ids:
            author = PlanAuthor("planner")
            await store.create_plan(plan_id)
            await store.append_ops(
                plan_id,
                [
                    author.entry(input=[StringField(path="s")]),
                    author.call(
                        "effect",
                        tool="ledger.write",
                        args={"ledger": str(ledger), "seconds": 0.2},
                        output=[StringField(path="value")],
                        authority=[claim("ledger", "*", "create")],
                        replay_safe=False,
                        on_indeterminate="halt",
                    ),
                    author.edge("entry", "effect"),
                ],
            )
            frozen = await orch.freeze_plan(plan_id)
            assert frozen.ok, frozen.issues
            view = (await store.fold(plan_id)).view
            approved = await orch.approve_plan(
                plan_id, approval_record(view, "op", "2026-01-01T00:00:00Z")
            )
            assert approved.ok, approved
    finally:
        await store.close()
    return ids


async def client_process(dsn: str, address: str, queue: str, ids: list[str]) -> dict[str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.integration.start_runs",
        dsn,
        address,
        queue,
        *ids,
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    assert proc.returncode == 0, err.decode()
    result: dict[str, str] = json.loads(out.decode().strip().splitlines()[-1])
    return result


async def test_twenty_plans_two_workers_two_clients_one_store(
    dev_server: DevServer,
    client: Client,
    task_queue: str,
    postgres: PostgresCluster,
    tmp_path: Path,
) -> None:
    """Every plan runs exactly once, whichever client and worker handle it."""
    dsn = postgres.new_database()
    ledger = tmp_path / "ledger.sqlite3"
    drill_tools.record(str(ledger), "-", "init")
    ids = await approved_plans(dsn, ledger)
    workers = [
        worker_process(dev_server.address, task_queue, tmp_path / f"w{i}.log", dsn)
        for i in range(2)
    ]
    try:
        first, second = await asyncio.gather(
            client_process(dsn, dev_server.address, task_queue, ids),
            client_process(dsn, dev_server.address, task_queue, list(reversed(ids))),
        )
        for plan_id in ids:
            answers = sorted([first[plan_id], second[plan_id]])
            assert answers == ["run_already_claimed", "started"], (plan_id, answers)
        results = await asyncio.gather(
            *(
                asyncio.wait_for(client.get_workflow_handle(workflow_id_for(p)).result(), 60)
                for p in ids
            )
        )
    finally:
        for process in workers:
            kill(process)
    assert [r["outcome"] if isinstance(r, dict) else r.outcome for r in results] == [
        "completed"
    ] * PLANS
    done = [k for k, e in drill_tools.rows(str(ledger)) if e == "done"]
    assert sorted(done) == sorted(f"{p}/effect:e{len('entry-effect')}:entry-effect" for p in ids)
    assert len(done) == len(set(done)) == PLANS
    store = PostgresPlanStore(dsn)
    try:
        assert [await store.read_run_id(p) for p in ids] == [workflow_id_for(p) for p in ids]
    finally:
        await store.close()
