"""The two hosts a scenario runs on: in this process, and on a Temporal dev server.

Both store the plan in a real SQLite plan store and approve it, start its one run through the
host's public client (:class:`~orchestration.run.host.InProcessRuns`,
:class:`~workers.runs.TemporalRuns`), answer halted frames and gates as the scenario says, and
return the run's compact log (as the store holds it) and its projection.

Gates are answered by :func:`speak` over each host's own surface: the in-process run's
``waiting`` and ``decide``, the workflow's ``waiting`` query and ``decide``/``answer`` updates.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowFailureError

from orchestration.errors import GateRefusedError
from orchestration.run.host import InProcessRuns
from orchestration.run.log import LogEntry
from orchestration.run.messages import GateAck, PendingGateDecision, WaitingGate
from orchestration.run.work import FrameWork
from orchestration.store.base import PlanStore
from orchestration.store.sqlite import SqlitePlanStore
from orchestration.testing import approve_into
from orchestration.types import RunProjection
from tests.support.scenarios import CELLS, SETTINGS, Scenario, make_reasoner, make_tools

__all__ = [
    "InProcessHost",
    "TemporalHost",
    "replay_all",
    "speak",
    "strip_times",
    "timeless",
]

_TIMES = ("at", "deadline", "requested_at", "decided_at", "started", "ended")


async def replay_all(client: Client, plan_id: str, store: PlanStore) -> None:
    """Replay every execution of the run's last chain, and every batch it started as a child,
    in the real sandbox (nondeterminism fails)."""
    from temporalio.worker import Replayer

    from orchestration.run.messages import workflow_id_for
    from workers.worker import sandbox_runner
    from workflows.batch import PlanBatch
    from workflows.externs import RunServices
    from workflows.plan_run import PlanRun

    replayer = Replayer(
        workflows=[PlanRun, PlanBatch],
        interceptors=[RunServices(store)],
        data_converter=client.data_converter,
        workflow_runner=sandbox_runner(),
    )
    run_id: str | None = None
    while True:
        handle = client.get_workflow_handle(workflow_id_for(plan_id), run_id=run_id)
        history = await handle.fetch_history()
        await replayer.replay_workflow(history)
        # A map's batches ran as child workflows: each replays too.
        for event in history.events:
            if event.HasField("child_workflow_execution_started_event_attributes"):
                child = event.child_workflow_execution_started_event_attributes
                batch = client.get_workflow_handle(
                    child.workflow_execution.workflow_id,
                    run_id=child.workflow_execution.run_id,
                )
                await replayer.replay_workflow(await batch.fetch_history())
        started = history.events[0].workflow_execution_started_event_attributes
        run_id = started.continued_execution_run_id
        if not run_id:
            return


def strip_times(log: list[LogEntry]) -> list[dict[str, Any]]:
    """Entries as JSON dicts without their ``at`` and ``started`` stamps and gate deadlines
    (clocks decide them)."""
    return [
        entry.model_dump(mode="json", exclude={"at", "started", "deadline"}) for entry in log
    ]


def _without_times(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_times(v) for k, v in value.items() if k not in _TIMES}
    if isinstance(value, list | tuple):
        return [_without_times(v) for v in value]
    return value


def timeless(projection: RunProjection) -> dict[str, Any]:
    """A projection as JSON without the times its gates' requests carry."""
    return _without_times(projection.model_dump(mode="python", by_alias=False))  # type: ignore[no-any-return]


async def speak(
    scenario: Scenario,
    waiting: Callable[[], Awaitable[list[WaitingGate]]],
    decide: Callable[[PendingGateDecision], Awaitable[GateAck]],
    done: Callable[[], bool],
) -> list[tuple[str, int, str]]:
    """Say at each request what the scenario says, as requests open, until the run is done.

    Returns ``(node, request, what became of it)`` per decision; a mismatch with what the
    scenario expects fails at once.
    """
    said: list[tuple[str, int, str]] = []
    handled: set[tuple[str, int]] = set()
    while not done():
        for gate in await waiting():
            mark = (gate.frame_key, gate.request.request)
            if mark in handled:
                continue
            handled.add(mark)
            scripts = scenario.gates.get(gate.node_id, ())
            if gate.request.request > len(scripts):
                continue
            for say in scripts[gate.request.request - 1]:
                if say.late:
                    while not done() and any(
                        (g.frame_key, g.request.request) == mark for g in await waiting()
                    ):
                        await asyncio.sleep(0.05)
                try:
                    ack = await decide(say.decision(gate))
                    became = "applied" if ack.applied else "skipped"
                except GateRefusedError as exc:
                    became = exc.code
                said.append((gate.node_id, gate.request.request, became))
                assert became == say.expect, (gate.node_id, gate.request.request, became, say)
        await asyncio.sleep(0.05)
    return said


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
                reasoner=scenario.reasoner() if scenario.reasoner is not None else make_reasoner(),
                prices=scenario.prices,
            )
            runs = InProcessRuns(store, work, settings=scenario.settings or SETTINGS)
            run = await runs.start(
                plan_id,
                scenario.run_input,
                on_halt=lambda dispatch: scenario.decisions.get(dispatch.node.id),
            )

            async def waiting() -> list[WaitingGate]:
                return run.waiting()

            said = asyncio.ensure_future(speak(scenario, waiting, run.decide, lambda: run.done))
            ended = asyncio.ensure_future(run.wait())
            await asyncio.wait({said, ended}, return_when=asyncio.FIRST_EXCEPTION)
            if said.done() and said.exception() is not None:
                ended.cancel()
                await said
            projection = await ended
            await said
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
                reasoner=scenario.reasoner() if scenario.reasoner is not None else make_reasoner(),
                prices=scenario.prices,
            )
            async with worker:
                runs = TemporalRuns(
                    self.client,
                    store,
                    task_queue=self.task_queue,
                    settings=scenario.settings or SETTINGS,
                )
                handle = await runs.start(plan_id, dict(scenario.run_input))
                waiting = asyncio.ensure_future(handle.result())

                async def gates() -> list[WaitingGate]:
                    try:
                        return await runs.waiting(plan_id)
                    except Exception:  # noqa: BLE001 - the run closed between two polls
                        return []

                async def decide(decision: PendingGateDecision) -> GateAck:
                    return await runs.decide(plan_id, decision)

                said = asyncio.ensure_future(speak(scenario, gates, decide, waiting.done))
                answered: set[str] = set()
                while not waiting.done():
                    if said.done() and said.exception() is not None:
                        await said
                    if scenario.decisions:
                        status = await runs.status(plan_id)
                        for key in status.halted:
                            node = key.split(":", 1)[0]
                            if key not in answered and node in scenario.decisions:
                                answered.add(key)
                                await runs.resolve(plan_id, key, scenario.decisions[node])
                    await asyncio.wait({waiting}, timeout=0.05)
                await said
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
