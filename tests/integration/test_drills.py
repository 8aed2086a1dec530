"""Failure drills: a worker killed mid-call, the server restarted mid-run, oversized results,
and runs waiting at gates through both."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowFailureError

from orchestration.errors import GateRefusedError
from orchestration.run.expand import expand_log, project_log
from orchestration.run.fold import fold_run
from orchestration.run.log import LogEntry
from orchestration.run.messages import (
    GateAck,
    GateAnswer,
    GateApproval,
    PendingGateDecision,
    PlanRunResult,
    RunSettings,
    RunStatus,
    workflow_id_for,
)
from orchestration.store.sqlite import SqlitePlanStore
from orchestration.testing import PlanSketch
from orchestration.types import ApprovalGate, NodeRef, RawPlanView, StringField, TextInput
from tests.support.hosts import strip_times
from tests.support.processes import kill, wait_for, worker_process
from workers.devserver import DevServer
from workers.runs import TemporalRuns
from workers.worker import build_worker, connect
from workflows.runlog import log_from_history

from . import drill_tools
from .harness import replay, start_run, unique_plan_id

pytestmark = pytest.mark.asyncio(loop_scope="session")

FAST_DEATH = RunSettings(heartbeat_seconds=1.0, start_to_close_seconds=60)


def one_call(plan_id: str, ledger: Path, *, replay_safe: bool, policy: str) -> object:
    return (
        PlanSketch(plan_id)
        .entry(StringField(path="s"))
        .call(
            "effect",
            "ledger.write",
            args={"ledger": str(ledger), "seconds": 30.0},
            output=[StringField(path="value")],
            replay_safe=replay_safe,
            on_indeterminate=policy,
        )  # type: ignore[arg-type]
        .call(
            "after",
            "ledger.write",
            args={"ledger": str(ledger), "seconds": 0.0},
            output=[StringField(path="value")],
        )
        .chain("entry", "effect", "after")
        .view()
    )


async def kill_mid_call(
    dev_server: DevServer,
    client: Client,
    task_queue: str,
    tmp_path: Path,
    *,
    replay_safe: bool,
    policy: str,
):  # type: ignore[no-untyped-def]
    """Start the run on a worker process, SIGKILL it while 'effect' runs, start another."""
    ledger = tmp_path / "ledger.sqlite3"
    drill_tools.record(str(ledger), "-", "init")
    view = one_call(
        unique_plan_id(f"kill-{policy}"), ledger, replay_safe=replay_safe, policy=policy
    )
    path = tmp_path / "plans.sqlite3"
    store = SqlitePlanStore(path)
    first = worker_process(dev_server.address, task_queue, tmp_path / "w1.log", path)
    try:
        handle, view = await start_run(
            client, task_queue, store, view, {"s": "x"}, settings=FAST_DEATH
        )
        await wait_for(lambda: any(e == "started" for _, e in drill_tools.rows(str(ledger))))
    finally:
        kill(first)
    second = worker_process(dev_server.address, task_queue, tmp_path / "w2.log", path)
    return handle, view, ledger, second, store


async def test_replay_safe_call_killed_mid_way_completes_alone(
    dev_server: DevServer, client: Client, task_queue: str, tmp_path: Path
) -> None:
    """A replay-safe call whose worker died is retried on the next worker; no operator needed."""
    handle, view, ledger, second, store = await kill_mid_call(
        dev_server, client, task_queue, tmp_path, replay_safe=True, policy="retry"
    )
    try:
        result = await asyncio.wait_for(handle.result(), timeout=60)
    finally:
        kill(second)
    assert result.outcome == "completed"
    effect = [
        e for k, e in drill_tools.rows(str(ledger)) if k.startswith(f"{view.plan_id}/effect:")
    ]  # type: ignore[attr-defined]
    assert effect == ["started", "started", "done"]
    await replay(client, view.plan_id, store)


async def test_non_replay_safe_call_killed_is_skipped(
    dev_server: DevServer, client: Client, task_queue: str, tmp_path: Path
) -> None:
    """skip: the indeterminate call settles skipped (never repeated) and the run goes on."""
    handle, view, ledger, second, store = await kill_mid_call(
        dev_server, client, task_queue, tmp_path, replay_safe=False, policy="skip"
    )
    try:
        result = await asyncio.wait_for(handle.result(), timeout=60)
    finally:
        kill(second)
    assert result.outcome == "completed" and result.skipped == 1
    effect = [
        e for k, e in drill_tools.rows(str(ledger)) if k.startswith(f"{view.plan_id}/effect:")
    ]  # type: ignore[attr-defined]
    assert effect == ["started"]
    projection = fold_run(await replay(client, view.plan_id, store))
    assert projection.node_status_by_id["after"] == "done"
    assert (
        projection.frame_status[next(k for k in projection.frame_status if k.startswith("effect:"))]
        == "skipped"
    )


async def test_non_replay_safe_call_killed_halts_for_the_operator(
    dev_server: DevServer, client: Client, task_queue: str, tmp_path: Path
) -> None:
    """halt: run_interrupted(process_death) for the frame; the operator's retry completes it."""
    from workers.runs import TemporalRuns

    handle, view, ledger, second, store = await kill_mid_call(
        dev_server, client, task_queue, tmp_path, replay_safe=False, policy="halt"
    )
    try:

        async def halted() -> str:
            while True:
                status = await handle.query("status", result_type=RunStatus)
                if status.halted:
                    return status.halted[0]
                await asyncio.sleep(0.2)

        frame = await asyncio.wait_for(halted(), timeout=60)
        # While it waits for the operator, the plan store already holds the log up to the halt:
        # a reader without a worker sees why the run is waiting.
        # (The status query can answer between the halt and the mirror that records it.)
        async def mirrored_halt() -> list[LogEntry]:
            while True:
                log = await store.read_run_log(view.plan_id)
                if log and expand_log(log)[-1].kind == "run_interrupted":
                    return log
                await asyncio.sleep(0.1)

        mirrored = await asyncio.wait_for(mirrored_halt(), timeout=30)
        # A workflow task lost after its mirror ran leaves entries the history never recorded
        # (here: the halt again, at other times); the run's next mirror replaces them.
        lost = mirrored[-1].model_copy(update={"at": "2000-01-01T00:00:00.000Z"})
        record = await store.read_run(view.plan_id)
        assert record is not None
        await store.append_run_log(view.plan_id, record.run_id, len(mirrored), [lost])
        runs = TemporalRuns(client, store, task_queue=task_queue)
        with pytest.raises(Exception, match="not halted"):
            await runs.resolve(view.plan_id, "nope:", "retry")  # type: ignore[attr-defined]
        await runs.resolve(view.plan_id, frame, "retry")  # type: ignore[attr-defined]
        result = await asyncio.wait_for(handle.result(), timeout=60)
    finally:
        kill(second)
    assert result.outcome == "completed"
    events = await replay(client, view.plan_id, store)
    # The store holds what history holds, times aside: after the worker's death the live run
    # and a replay of its history can stamp the same event with different workflow-task times.
    history = await client.get_workflow_handle(f"plan/{view.plan_id}").fetch_history()
    recorded = await log_from_history(history, store=store, data_converter=client.data_converter)
    assert strip_times(await store.read_run_log(view.plan_id)) == strip_times(recorded)
    interrupted = [e for e in events if e.kind == "run_interrupted"]
    assert len(interrupted) == 1 and interrupted[0].cause.kind == "process_death"  # type: ignore[union-attr]
    assert interrupted[0].frame is not None and interrupted[0].frame.node_id == "effect"  # type: ignore[union-attr]
    effect = [
        e for k, e in drill_tools.rows(str(ledger)) if k.startswith(f"{view.plan_id}/effect:")
    ]  # type: ignore[attr-defined]
    assert effect == ["started", "started", "done"]


async def test_server_restart_mid_run(tmp_path: Path, task_queue: str) -> None:
    """The dev server stopped and started again on the same SQLite file: the run completes."""
    ledger = tmp_path / "ledger.sqlite3"
    drill_tools.record(str(ledger), "-", "init")
    server = DevServer(
        db_file=tmp_path / "temporal.sqlite3", ui=False, log_file=tmp_path / "server.log"
    )
    async with server:
        client = await connect(server.address)
        view = (
            PlanSketch(unique_plan_id("restart"))
            .entry(StringField(path="s"))
            .call(
                "slow",
                "ledger.write",
                args={"ledger": str(ledger), "seconds": 3.0},
                output=[StringField(path="value")],
            )
            .call(
                "after",
                "ledger.write",
                args={"ledger": str(ledger), "seconds": 0.0},
                output=[StringField(path="value")],
            )
            .chain("entry", "slow", "after")
            .view()
        )
        store = SqlitePlanStore(tmp_path / "plans.sqlite3")
        async with build_worker(
            client, task_queue=task_queue, toolbox=drill_tools.TOOLBOX, store=store
        ):
            handle, view = await start_run(client, task_queue, store, view, {"s": "x"})
            await wait_for(lambda: any(e == "started" for _, e in drill_tools.rows(str(ledger))))
            server.stop()
            await asyncio.sleep(1.0)
            server.start()
            await server.wait_ready()
            result = await asyncio.wait_for(handle.result(), timeout=90)
        assert result.outcome == "completed"
        await replay(client, view.plan_id, store)


async def test_oversized_result_fails_the_node_without_retrying(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    """A result over 2 MiB fails its node with a clear error at once, not in a retry loop."""
    view = (
        PlanSketch(unique_plan_id("huge"))
        .entry(StringField(path="s"))
        .call("big", "huge", output=[StringField(path="value")])
        .chain("entry", "big")
        .view()
    )
    store = SqlitePlanStore(tmp_path / "plans.sqlite3")
    async with build_worker(
        client, task_queue=task_queue, toolbox=drill_tools.TOOLBOX, store=store
    ):
        started = time.monotonic()
        handle, view = await start_run(client, task_queue, store, view, {"s": "x"})
        with pytest.raises(WorkflowFailureError) as failure:
            await asyncio.wait_for(handle.result(), timeout=30)
    assert time.monotonic() - started < 15
    assert getattr(failure.value.cause, "type", None) == "aborted"
    events = await replay(client, view.plan_id, store)
    failed = [e for e in events if e.kind == "node_settled" and e.outcome.status == "failed"]  # type: ignore[union-attr]
    assert failed[0].outcome.error.name == "output_too_large"  # type: ignore[union-attr]
    assert "artifact" in failed[0].outcome.error.message  # type: ignore[union-attr]


WAITING_RUNS = 50
REPLY = "confidential-reply-r4p9"
"""In every response: no log line of a worker may hold it."""


def waiting_plan(plan_id: str) -> RawPlanView:
    """entry → send (upper, approved before it runs); entry → ask (text) → greet (upper of it)."""
    value = [StringField(path="value")]
    return (
        PlanSketch(plan_id)
        .entry(StringField(path="s"))
        .call("send", "upper", args={"s": NodeRef("entry", path="s")}, output=value,
              gate=ApprovalGate(on="arguments"))
        .input("ask", TextInput(), "Reply to ", NodeRef("entry", path="s"))
        .call("greet", "upper", args={"s": NodeRef("ask", path="text")}, output=value)
        .edge("entry", "send")
        .edge("entry", "ask")
        .edge("ask", "greet")
        .view()
    )


async def test_runs_waiting_at_gates_survive_a_killed_worker_and_a_restarted_server(
    tmp_path: Path, task_queue: str
) -> None:
    """50 runs wait at two gates each on one worker process; the worker is SIGKILLed and the
    server restarted while they wait; on a new worker every gate is decided (each decision sent
    twice, as a retrying client would): every run completes, each request is decided exactly
    once, and no worker log line holds a response."""
    server = DevServer(
        db_file=tmp_path / "temporal.sqlite3", ui=False, log_file=tmp_path / "server.log"
    )
    path = tmp_path / "plans.sqlite3"
    flags = ("--spool-dir", str(tmp_path / "spool"))
    logs = [tmp_path / "w1.log", tmp_path / "w2.log"]
    plan_ids = [unique_plan_id(f"wait{i}") for i in range(WAITING_RUNS)]
    async with server:
        client = await connect(server.address)
        store = SqlitePlanStore(path)
        first = worker_process(server.address, task_queue, logs[0], path, flags=flags)
        try:
            for i, plan_id in enumerate(plan_ids):
                await start_run(client, task_queue, store, waiting_plan(plan_id), {"s": f"m{i}"})

            async def all_waiting() -> bool:
                """Every run's store shows both requests. The worker may die before the
                workflow task that mirrored them completes: the task then runs again on the
                next worker and its mirror replaces what the lost one wrote."""
                for plan_id in plan_ids:
                    log = await store.read_run_log(plan_id)
                    if not log:  # not yet mirrored
                        return False
                    gates = project_log(log).gates
                    if sum(1 for g in gates.values() if g.current is not None) < 2:
                        return False
                return True

            deadline = time.monotonic() + 90
            while not await all_waiting():
                assert time.monotonic() < deadline, "the runs did not all reach their gates"
                await asyncio.sleep(0.2)
        finally:
            kill(first)
        server.stop()
        await asyncio.sleep(1.0)
        server.start()
        await server.wait_ready()
        second = worker_process(server.address, task_queue, logs[1], path, flags=flags)
        try:
            runs = TemporalRuns(client, store, task_queue=task_queue)

            async def reopened(plan_id: str) -> None:
                """The run (on the new worker) waits at both gates again, as an operator's
                `orch run gates` would show before deciding."""
                while len(await runs.waiting(plan_id)) < 2:
                    await asyncio.sleep(0.2)

            await asyncio.wait_for(asyncio.gather(*(reopened(p) for p in plan_ids)), 90)
            decisions: list[tuple[str, PendingGateDecision]] = []
            for i, plan_id in enumerate(plan_ids):
                gates = project_log(await store.read_run_log(plan_id)).gates
                for key, gate in gates.items():
                    assert gate.current is not None, (plan_id, key)
                    number = gate.current.request
                    decision: PendingGateDecision = (
                        GateApproval(frame_key=key, request=number, decision="approved",
                                     decided_by="alice")
                        if gate.node_id == "send"
                        else GateAnswer(frame_key=key, request=number,
                                        response=f"{REPLY} {i}", provided_by="bob")
                    )
                    decisions.append((plan_id, decision))
            limit = asyncio.Semaphore(10)

            async def send(plan_id: str, decision: PendingGateDecision) -> GateAck | str:
                async with limit:
                    try:
                        return await runs.decide(plan_id, decision)
                    except GateRefusedError as exc:
                        return exc.code

            acks = await asyncio.gather(*(send(p, d) for p, d in decisions + decisions))
            firsts, repeats = acks[: len(decisions)], acks[len(decisions) :]
            for (_, decision), ack, again in zip(decisions, firsts, repeats, strict=True):
                assert isinstance(ack, GateAck) and ack.applied, (decision.frame_key, ack)
                assert again == ack or again == "gate_already_decided", (ack, again)

            async def result(plan_id: str) -> str:
                handle = client.get_workflow_handle(
                    workflow_id_for(plan_id), result_type=PlanRunResult
                )
                return (await handle.result()).outcome

            outcomes = await asyncio.wait_for(
                asyncio.gather(*(result(p) for p in plan_ids)), timeout=90
            )
        finally:
            kill(second)
        assert outcomes == ["completed"] * WAITING_RUNS

        for i, plan_id in enumerate(plan_ids):
            events = await replay(client, plan_id, store)
            history = await client.get_workflow_handle(workflow_id_for(plan_id)).fetch_history()
            recorded = await log_from_history(
                history, store=store, data_converter=client.data_converter
            )
            assert strip_times(await store.read_run_log(plan_id)) == strip_times(recorded)
            decided = [(e.frame.key, e.request) for e in events if e.kind == "gate_decided"]  # type: ignore[union-attr]
            assert sorted(decided) == sorted(set(decided)) and len(decided) == 2, decided
            assert not [e for e in events if e.kind == "gate_timed_out"]
            projection = fold_run(events)
            outcomes_by_node = {
                g.node_id: [r.outcome for r in g.history] for g in projection.gates.values()
            }
            assert outcomes_by_node == {"send": ["approved"], "ask": ["answered"]}
            greeted = next(o for k, o in projection.outputs.items() if k.startswith("greet:"))
            assert greeted.items[0].json_ == {"value": f"{REPLY} {i}".upper()}
        await store.close()

    for log in logs:
        lines = log.read_text().splitlines()
        assert any("worker started" in line for line in lines), log
        leaked = [line for line in lines if REPLY in line or REPLY.upper() in line]
        assert not leaked, leaked[:3]
