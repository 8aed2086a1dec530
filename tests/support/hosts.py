"""The two hosts a scenario runs on: in this process, and on a Temporal dev server.

Both store the plan in a real SQLite plan store and approve it, start its one run through the
host's public client (:class:`~orchestration.run.host.InProcessRuns`,
:class:`~workers.runs.TemporalRuns`), answer halted frames as the scenario says, and return the
run's compact log (as the store holds it) and its projection.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowFailureError

from orchestration.run.host import InProcessRuns
from orchestration.run.log import LogEntry
from orchestration.run.work import FrameWork
from orchestration.store.base import PlanStore
from orchestration.store.sqlite import SqlitePlanStore
from orchestration.testing import approve_into
from orchestration.types import RunProjection
from tests.support.scenarios import CELLS, Scenario, make_tools

__all__ = ["InProcessHost", "TemporalHost", "replay_all", "strip_times", "untimed"]


async def replay_all(client: Client, plan_id: str, store: PlanStore) -> None:
    """Replay every execution of the run's last chain in the real sandbox (nondeterminism fails)."""
    from temporalio.worker import Replayer

    from orchestration.run.messages import workflow_id_for
    from workers.worker import sandbox_runner
    from workflows.externs import RunServices
    from workflows.plan_run import PlanRun

    replayer = Replayer(
        workflows=[PlanRun],
        interceptors=[RunServices(store)],
        data_converter=client.data_converter,
        workflow_runner=sandbox_runner(),
    )
    run_id: str | None = None
    while True:
        handle = client.get_workflow_handle(workflow_id_for(plan_id), run_id=run_id)
        history = await handle.fetch_history()
        await replayer.replay_workflow(history)
        started = history.events[0].workflow_execution_started_event_attributes
        run_id = started.continued_execution_run_id
        if not run_id:
            return


def strip_times(log: list[LogEntry]) -> list[dict[str, Any]]:
    """Entries as JSON dicts without their ``at`` and ``started`` stamps (clocks decide them)."""
    return [entry.model_dump(mode="json", exclude={"at", "started"}) for entry in log]


def untimed(projection: RunProjection) -> RunProjection:
    """The projection with its attempts' start and end times blanked (clocks decide them)."""
    attempts = {
        key: tuple(a.model_copy(update={"started": "", "ended": ""}) for a in records)
        for key, records in projection.attempts.items()
    }
    return projection.model_copy(update={"attempts": attempts})


class InProcessHost:
    """Runs a scenario with :class:`InProcessRuns` over a SQLite store."""

    name = "in_process"

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    async def run(self, scenario: Scenario, plan_id: str) -> tuple[list[LogEntry], RunProjection]:
        store = SqlitePlanStore(self.folder / f"{plan_id}.sqlite3")
        try:
            await approve_into(store, scenario.build(plan_id))
            work = FrameWork(
                make_tools(),
                cells=CELLS,
                reasoner=scenario.reasoner() if scenario.reasoner is not None else None,
                prices=scenario.prices,
            )
            runs = InProcessRuns(store, work, settings=scenario.settings)
            run = await runs.start(
                plan_id,
                scenario.run_input,
                on_halt=lambda dispatch: scenario.decisions.get(dispatch.node.id),
            )
            projection = await run.wait()
            return await store.read_run_log(plan_id), projection
        finally:
            await store.close()


class TemporalHost:
    """Runs a scenario as ``PlanRun`` on a dev server, with a worker in this process."""

    name = "temporal"

    def __init__(self, client: Client, task_queue: str, folder: Path) -> None:
        self.client = client
        self.task_queue = task_queue
        self.folder = folder

    async def run(self, scenario: Scenario, plan_id: str) -> tuple[list[LogEntry], RunProjection]:
        from workers.runs import TemporalRuns
        from workers.worker import build_worker

        store = SqlitePlanStore(self.folder / f"{plan_id}.temporal.sqlite3")
        try:
            await approve_into(store, scenario.build(plan_id))
            worker = build_worker(
                self.client,
                task_queue=self.task_queue,
                toolbox=make_tools(),
                store=store,
                evaluators=list(CELLS),
                reasoner=scenario.reasoner() if scenario.reasoner is not None else None,
                prices=scenario.prices,
            )
            async with worker:
                runs = TemporalRuns(
                    self.client, store, task_queue=self.task_queue, settings=scenario.settings
                )
                handle = await runs.start(plan_id, dict(scenario.run_input))
                waiting = asyncio.ensure_future(handle.result())
                answered: set[str] = set()
                while not waiting.done():
                    if scenario.decisions:
                        status = await runs.status(plan_id)
                        for key in status.halted:
                            node = key.split(":", 1)[0]
                            if key not in answered and node in scenario.decisions:
                                answered.add(key)
                                await runs.resolve(plan_id, key, scenario.decisions[node])
                    await asyncio.wait({waiting}, timeout=0.05)
                try:
                    waiting.result()
                except WorkflowFailureError:
                    pass  # halted and aborted runs fail the execution; the log says how
                log = await runs.read_log(plan_id)
                projection = await runs.projection(plan_id)
            await replay_all(self.client, plan_id, store)
            return log, projection
        finally:
            await store.close()
