"""Worker Versioning drills with real processes: a rollout, a rollback, the replay gate, and a
pinned run moved to another build by an operator.

Build A is ``python -m workers`` from this checkout; build B is the same command run from a
copy of the ``workflows`` package in which ``PlanRun`` issues one more command (a timer) before
anything else, a change no history recorded on A replays through. Both poll one task queue as
versions of one Worker Deployment, and the rollout is driven with the Temporal CLI exactly as
the README's Deploy section tells an operator to. The server is this module's own: its
drainage status is refreshed every second instead of every three minutes.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from temporalio.api.enums.v1 import VersioningBehavior
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle, WorkflowHistory

from orchestration.run.log import started_build
from orchestration.run.messages import RunSettings, RunStatus, workflow_id_for
from orchestration.store.sqlite import SqlitePlanStore
from orchestration.testing import PlanSketch
from orchestration.types import RawPlanView, StringField
from tests.support.hosts import replay_all
from tests.support.processes import ROOT, clean_env, kill, worker_process
from workers.devserver import DevServer, temporal_binary
from workers.runs import TemporalRuns
from workers.worker import connect
from workflows.plan_run import PLAN_BUILD, PLAN_ID
from workflows.runlog import log_from_history

from . import drill_tools
from .harness import FAST_RETRY, replay, start_run, unique_plan_id

pytestmark = pytest.mark.asyncio(loop_scope="session")

ORCH = str(Path(sys.executable).parent / "orch")
DRAIN_EVERY_SECOND = (
    "--dynamic-config-value",
    'matching.wv.VersionDrainageStatusVisibilityGracePeriod="1s"',
    "--dynamic-config-value",
    'matching.wv.VersionDrainageStatusRefreshInterval="1s"',
)
ANCHOR = "        self._build = current_build()\n"
EXTRA_STEP = '        await workflow.sleep(timedelta(milliseconds=1), summary="build B")\n'
CONTINUE_EARLY = RunSettings(
    retry=FAST_RETRY.retry, continue_as_new_after_events=100, heartbeat_seconds=None
)
LOSE_CALLS = RunSettings(
    retry=FAST_RETRY.retry, start_to_close_seconds=1.0, heartbeat_seconds=None
)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def server(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[DevServer]:
    """A dev server whose versions report their drainage within seconds."""
    logs = Path(tmp_path_factory.mktemp("temporal-versioning")) / "server.log"
    async with DevServer(ui=False, log_file=logs, extra_args=DRAIN_EVERY_SECOND) as dev:
        yield dev


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def vclient(server: DevServer) -> Client:
    """A client of that server."""
    return await connect(server.address)


# -- processes ------------------------------------------------------------------------------------


async def run(*command: str, cwd: Path = ROOT) -> tuple[int, str, str]:
    """Run a command to completion without blocking the loop; its status, stdout, stderr."""
    proc = await asyncio.create_subprocess_exec(
        *command,
        cwd=cwd,
        env=clean_env(),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=180)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def temporal(address: str, *args: str) -> tuple[int, str, str]:
    """The Temporal CLI against ``address``."""
    return await run(temporal_binary(), *args, "--address", address)


def build_b(folder: Path) -> Path:
    """A checkout of build B: this ``workflows`` package with one more command in ``PlanRun``.

    Run from the returned folder (first on ``sys.path``), ``python -m workers`` and ``python -m
    orchestration.cli`` import B's workflow code and everything else from this checkout.
    """
    root = folder / "build-b"
    shutil.copytree(
        ROOT / "workflows", root / "workflows", ignore=shutil.ignore_patterns("__pycache__")
    )
    source = root / "workflows" / "plan_run.py"
    text = source.read_text()
    assert text.count(ANCHOR) == 1, "PlanRun.run changed: move build B's extra step"
    source.write_text(text.replace(ANCHOR, EXTRA_STEP + ANCHOR))
    return root


async def eventually(check: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    """Await ``check()`` (sync or async) until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not reached within {timeout} s")
        await asyncio.sleep(0.2)


async def set_current(address: str, deployment: str, build: str) -> None:
    """``temporal worker deployment set-current-version``, once the version's worker polls."""

    async def attempt() -> bool:
        status, _, _ = await temporal(
            address,
            "worker",
            "deployment",
            "set-current-version",
            "--deployment-name",
            deployment,
            "--build-id",
            build,
            "--yes",
        )
        return status == 0

    await eventually(attempt, f"{deployment}.{build} current")


async def ramp(address: str, deployment: str, build: str, percentage: str) -> None:
    """``temporal worker deployment set-ramping-version``, once the version's worker polls."""

    async def attempt() -> bool:
        status, _, _ = await temporal(
            address,
            "worker",
            "deployment",
            "set-ramping-version",
            "--deployment-name",
            deployment,
            "--build-id",
            build,
            "--percentage",
            percentage,
            "--yes",
        )
        return status == 0

    await eventually(attempt, f"{deployment}.{build} ramping")


async def routing_of(address: str, deployment: str) -> dict[str, Any]:
    """The deployment's routing (current and ramping versions), from ``describe``."""
    status, out, err = await temporal(
        address, "worker", "deployment", "describe", "--name", deployment, "--output", "json"
    )
    assert status == 0, err
    routing: dict[str, Any] = json.loads(out)["routingConfig"]
    return routing


async def drainage(address: str, deployment: str, build: str) -> str:
    """The version's drainage status, as ``temporal worker deployment describe-version`` says."""
    status, out, err = await temporal(
        address,
        "worker",
        "deployment",
        "describe-version",
        "--deployment-name",
        deployment,
        "--build-id",
        build,
        "--output",
        "json",
    )
    assert status == 0, err
    info = json.loads(out).get("drainageInfo") or {}
    return str(info.get("drainageStatus", ""))


# -- what the server recorded ---------------------------------------------------------------------


async def executions(client: Client, plan_id: str) -> list[WorkflowHistory]:
    """Every execution of the run's chain, newest first."""
    histories = []
    run_id: str | None = None
    while True:
        history = await client.get_workflow_handle(
            workflow_id_for(plan_id), run_id=run_id
        ).fetch_history()
        histories.append(history)
        started = history.events[0].workflow_execution_started_event_attributes
        run_id = started.continued_execution_run_id
        if not run_id:
            return histories


def completed_by(histories: list[WorkflowHistory]) -> set[str]:
    """The deployment versions that completed the executions' workflow tasks."""
    versions = set()
    for history in histories:
        for event in history.events:
            if event.HasField("workflow_task_completed_event_attributes"):
                version = event.workflow_task_completed_event_attributes.deployment_version
                versions.add(f"{version.deployment_name}.{version.build_id}")
    return versions


async def listed(client: Client, query: str) -> set[str]:
    """Workflow ids of the executions a visibility query lists."""
    return {execution.id async for execution in client.list_workflows(query)}


# -- plans ----------------------------------------------------------------------------------------


def held_chain(plan_id: str, ledger: Path, gate: Path, length: int) -> RawPlanView:
    """entry → hold (in flight until ``gate`` exists) → c1 … c<length>."""
    sketch = PlanSketch(plan_id).entry(StringField(path="s"))
    sketch.call(
        "hold",
        "ledger.hold",
        args={"ledger": str(ledger), "gate": str(gate)},
        output=[StringField(path="value")],
    )
    steps = [f"c{i}" for i in range(1, length + 1)]
    for step in steps:
        sketch.call(
            step,
            "ledger.write",
            args={"ledger": str(ledger), "seconds": 0.0},
            output=[StringField(path="value")],
        )
    return sketch.chain("entry", "hold", *steps).view()


def halting(plan_id: str, ledger: Path) -> RawPlanView:
    """entry → lost (outlives its 1 s start-to-close; halts for an operator) → after."""
    sketch = PlanSketch(plan_id).entry(StringField(path="s"))
    sketch.call(
        "lost",
        "ledger.write",
        args={"ledger": str(ledger), "seconds": 3.0},
        output=[StringField(path="value")],
        replay_safe=False,
        on_indeterminate="halt",
    )
    sketch.call(
        "after",
        "ledger.write",
        args={"ledger": str(ledger), "seconds": 0.0},
        output=[StringField(path="value")],
    )
    return sketch.chain("entry", "lost", "after").view()


def single(plan_id: str, ledger: Path) -> RawPlanView:
    """entry → one."""
    sketch = PlanSketch(plan_id).entry(StringField(path="s"))
    sketch.call(
        "one",
        "ledger.write",
        args={"ledger": str(ledger), "seconds": 0.0},
        output=[StringField(path="value")],
    )
    return sketch.chain("entry", "one").view()


async def halted_frame(handle: WorkflowHandle[Any, Any]) -> RunStatus:
    async def check() -> RunStatus | None:
        status = await handle.query("status", result_type=RunStatus)
        return status if status.halted else None

    result: RunStatus = await eventually(check, "a halted frame")
    return result


# -- the drills -----------------------------------------------------------------------------------


async def test_a_rollout_keeps_each_run_on_the_build_it_started_on(
    server: DevServer, vclient: Client, tmp_path: Path
) -> None:
    """B made current: runs in flight on A (a held call, a halted frame, a continue-as-new) end
    on A; new runs, and the resumed execution of a run cancelled on A, start on B; after a
    rollback new runs start on A again. Each run records its build; A drains; the replay gate
    passes each build's executions on its own code only."""
    address = server.address
    task_queue = f"tq-{uuid.uuid4().hex[:10]}"
    deployment = f"orch-{uuid.uuid4().hex[:6]}"
    build_a, build_b_id = f"{deployment}.a-1", f"{deployment}.b-1"
    store_path, ledger, gate = tmp_path / "plans.sqlite3", tmp_path / "ledger.db", tmp_path / "gate"
    resume_gate = tmp_path / "resume-gate"
    drill_tools.record(str(ledger), "-", "init")
    store = SqlitePlanStore(store_path)
    b_code = build_b(tmp_path)
    # Build A takes its version from the environment, build B from flags.
    a = worker_process(
        address,
        task_queue,
        tmp_path / "a.log",
        store_path,
        env={"ORCH_DEPLOYMENT_NAME": deployment, "ORCH_BUILD_ID": "a-1"},
    )
    b: subprocess.Popen[bytes] | None = None
    try:
        await set_current(address, deployment, "a-1")
        held, held_view = await start_run(
            vclient,
            task_queue,
            store,
            held_chain(unique_plan_id("held"), ledger, gate, 24),
            {"s": "x"},
            settings=CONTINUE_EARLY,
        )
        stuck, stuck_view = await start_run(
            vclient,
            task_queue,
            store,
            halting(unique_plan_id("halt"), ledger),
            {"s": "x"},
            settings=LOSE_CALLS,
        )
        assert (await halted_frame(stuck)).build == build_a
        cancelled, resumed_view = await start_run(
            vclient,
            task_queue,
            store,
            held_chain(unique_plan_id("resume"), ledger, resume_gate, 1),
            {"s": "x"},
        )
        for plan_id in (held_view.plan_id, resumed_view.plan_id):
            await eventually(
                lambda plan_id=plan_id: "hold" in drill_tools.pids(str(ledger), plan_id),
                "a held call in flight",
            )

        b = worker_process(
            address,
            task_queue,
            tmp_path / "b.log",
            store_path,
            cwd=b_code,
            flags=("--deployment-name", deployment, "--build-id", "b-1"),
        )
        await ramp(address, deployment, "b-1", "10")
        routing = await routing_of(address, deployment)
        assert routing["currentVersionBuildID"] == "a-1"
        assert routing["rampingVersionBuildID"] == "b-1"
        assert routing["rampingVersionPercentage"] == 10
        removed = await temporal(
            address,
            "worker",
            "deployment",
            "set-ramping-version",
            "--deployment-name",
            deployment,
            "--delete",
            "--yes",
        )
        assert removed[0] == 0, removed[2]
        assert not (await routing_of(address, deployment))["rampingVersionBuildID"]
        await set_current(address, deployment, "b-1")

        async def still_on_a() -> bool:
            status, out, _ = await temporal(
                address,
                "workflow",
                "list",
                "--query",
                f"PlanBuild = '{build_a}' AND ExecutionStatus = 'Running'",
            )
            return status == 0 and workflow_id_for(held_view.plan_id) in out

        await eventually(still_on_a, "A's open runs listed by PlanBuild")

        async def draining() -> bool:
            return await drainage(address, deployment, "a-1") == "draining"

        await eventually(draining, "A draining while its runs are open")

        fresh, fresh_view = await start_run(
            vclient, task_queue, store, single(unique_plan_id("fresh"), ledger), {"s": "x"}
        )
        assert (await asyncio.wait_for(fresh.result(), 60)).outcome == "completed"

        runs = TemporalRuns(vclient, store, task_queue=task_queue, settings=FAST_RETRY)
        await cancelled.cancel()  # it ends once its call in flight settles, and c1 never runs
        resume_gate.touch()
        with pytest.raises(WorkflowFailureError):
            await asyncio.wait_for(cancelled.result(), 60)
        resumed = await runs.start(
            resumed_view.plan_id, {"s": "x"}, resume_run_id=workflow_id_for(resumed_view.plan_id)
        )
        assert (await asyncio.wait_for(resumed.result(), 60)).outcome == "completed"

        gate.touch()
        frame = (await stuck.query("status", result_type=RunStatus)).halted[0]
        await runs.resolve(stuck_view.plan_id, frame, "skip")
        held_result = await asyncio.wait_for(held.result(), 120)
        stuck_result = await asyncio.wait_for(stuck.result(), 60)
        assert held_result.outcome == stuck_result.outcome == "completed"
        assert held_result.segments >= 2  # continued as new after B became current

        async def drained() -> bool:
            return await drainage(address, deployment, "a-1") == "drained"

        await eventually(drained, "A drained once its runs ended")

        await set_current(address, deployment, "a-1")  # the rollback
        back, back_view = await start_run(
            vclient, task_queue, store, single(unique_plan_id("back"), ledger), {"s": "x"}
        )
        assert (await asyncio.wait_for(back.result(), 60)).outcome == "completed"

        # Each run's log, every workflow task of every execution, and every call agree.
        expected = {
            held_view.plan_id: (build_a, a.pid),
            stuck_view.plan_id: (build_a, a.pid),
            fresh_view.plan_id: (build_b_id, b.pid),
            back_view.plan_id: (build_a, a.pid),
        }
        for plan_id, (build, pid) in expected.items():
            assert started_build(await store.read_run_log(plan_id)) == build, plan_id
            assert completed_by(await executions(vclient, plan_id)) == {build}, plan_id
            workers_of = drill_tools.pids(str(ledger), plan_id)
            assert workers_of and set().union(*workers_of.values()) == {pid}, plan_id
        assert len(await executions(vclient, held_view.plan_id)) == held_result.segments
        description = await held.describe()
        versioning = description.raw_description.workflow_execution_info.versioning_info
        assert versioning.behavior == VersioningBehavior.VERSIONING_BEHAVIOR_PINNED
        assert versioning.deployment_version.build_id == "a-1"
        # A resume is a new execution: it starts on the current version, B; the log's start
        # still names the build the run started on.
        resumed_id = workflow_id_for(resumed_view.plan_id)
        newest, oldest = [
            await vclient.get_workflow_handle(resumed_id, run_id=e.run_id).fetch_history()
            async for e in vclient.list_workflows(f"WorkflowId = '{resumed_id}'")
        ]
        assert completed_by([oldest]) == {build_a} and completed_by([newest]) == {build_b_id}
        assert started_build(await store.read_run_log(resumed_view.plan_id)) == build_a
        assert drill_tools.pids(str(ledger), resumed_view.plan_id) == {
            "hold": {a.pid},
            "c1": {b.pid},
        }

        in_queue = f"TaskQueue = '{task_queue}'"
        on_a = {workflow_id_for(p) for p, (build, _) in expected.items() if build == build_a}
        on_a.add(resumed_id)
        on_b = {workflow_id_for(fresh_view.plan_id), resumed_id}

        async def searchable() -> bool:
            listed_a = await listed(vclient, f"{in_queue} AND PlanBuild = '{build_a}'")
            listed_b = await listed(vclient, f"{in_queue} AND PlanBuild = '{build_b_id}'")
            return listed_a == on_a and listed_b == on_b

        await eventually(searchable, "PlanBuild lists each build's runs")

        show = ("run", "show", fresh_view.plan_id, "--address", address, "--store", str(store_path))
        status, out, err = await run(ORCH, *show)
        assert status == 0, err
        assert f"build: {build_b_id}" in out.splitlines()[1]

        # Every run replays on the code of the build it ran on, and only there.
        await replay_all(vclient, held_view.plan_id, store)  # every execution of the chain
        for plan_id in (stuck_view.plan_id, back_view.plan_id):
            await replay(vclient, plan_id, store)
        # Replay reads the version history recorded, so a log rebuilt from history agrees.
        (history,) = await executions(vclient, back_view.plan_id)
        converter = vclient.data_converter
        rebuilt = await log_from_history(history, store=store, data_converter=converter)
        assert started_build(rebuilt) == build_a
        gate_args = ("--address", address, "--store", str(store_path), "--limit", "50")
        on_b_code = (sys.executable, "-m", "orchestration.cli", "replay-check")
        status, out, err = await run(
            *on_b_code, "--query", f"{in_queue} AND PlanBuild = '{build_b_id}'", *gate_args,
            cwd=b_code,
        )
        assert status == 0, out + err
        assert out.startswith("ok ") and "2 replayed: 2 ok, 0 not" in out
        status, out, err = await run(
            ORCH, "replay-check", "--query", f"{in_queue} AND PlanBuild = '{build_a}'", *gate_args
        )
        assert status == 0, out + err
        lines = out.splitlines()
        a_executions = len(on_a) - 1 + held_result.segments  # held continued as new
        assert sum(line.startswith("ok ") for line in lines) == a_executions, out
        on_b_query = ("--query", f"{in_queue} AND PlanBuild = '{build_b_id}'")
        status, out, err = await run(ORCH, "replay-check", *on_b_query, *gate_args)
        assert status == 2, out + err
        assert out.startswith("nondeterministic ") and build_b_id in out
        assert err.startswith("error[replay_failed]: 2 of 2 histories do not replay")
        status, out, err = await run(
            *on_b_code, "--query", f"{in_queue} AND PlanBuild = '{build_a}'", *gate_args,
            cwd=b_code,
        )
        assert status == 2, out + err
        assert sum(line.startswith("nondeterministic ") for line in out.splitlines()) == (
            a_executions
        )
    finally:
        if b is not None:
            kill(b)
        kill(a)
        await store.close()


async def test_an_operator_moves_a_stuck_pinned_run_to_another_build(
    server: DevServer, vclient: Client, tmp_path: Path
) -> None:
    """A run halted on build 1 whose workers must go: the gate vouches for build 2 replaying it,
    ``temporal workflow update-options`` pins it there, build 1 is stopped, and the operator's
    answer completes the run on build 2 (its start still says build 1)."""
    address = server.address
    task_queue = f"tq-{uuid.uuid4().hex[:10]}"
    deployment = f"move-{uuid.uuid4().hex[:6]}"
    store_path, ledger = tmp_path / "plans.sqlite3", tmp_path / "ledger.db"
    drill_tools.record(str(ledger), "-", "init")
    store = SqlitePlanStore(store_path)
    flags = ("--deployment-name", deployment, "--build-id")
    first = worker_process(
        address, task_queue, tmp_path / "1.log", store_path, flags=(*flags, "m-1")
    )
    second: subprocess.Popen[bytes] | None = None
    try:
        await set_current(address, deployment, "m-1")
        handle, view = await start_run(
            vclient,
            task_queue,
            store,
            halting(unique_plan_id("move"), ledger),
            {"s": "x"},
            settings=LOSE_CALLS,
        )
        frame = (await halted_frame(handle)).halted[0]
        second = worker_process(
            address, task_queue, tmp_path / "2.log", store_path, flags=(*flags, "m-2")
        )
        await set_current(address, deployment, "m-2")

        workflow_id = workflow_id_for(view.plan_id)
        status, out, err = await run(
            ORCH,
            "replay-check",
            "--query",
            f"WorkflowId = '{workflow_id}'",
            "--address",
            address,
            "--store",
            str(store_path),
        )
        assert status == 0 and out.startswith("ok "), out + err
        status, _, err = await temporal(
            address,
            "workflow",
            "update-options",
            "--workflow-id",
            workflow_id,
            "--versioning-override-behavior",
            "pinned",
            "--versioning-override-deployment-name",
            deployment,
            "--versioning-override-build-id",
            "m-2",
        )
        assert status == 0, err
        describe = ("workflow", "describe", "--workflow-id", workflow_id)
        status, out, err = await temporal(address, *describe)
        assert status == 0 and "m-2" in out, out + err
        kill(first)
        await TemporalRuns(vclient, store, task_queue=task_queue).resolve(
            view.plan_id, frame, "skip"
        )
        assert (await asyncio.wait_for(handle.result(), 60)).outcome == "completed"
    finally:
        if second is not None:
            kill(second)
        if first.poll() is None:
            kill(first)
    (history,) = await executions(vclient, view.plan_id)
    order = [
        e.workflow_task_completed_event_attributes.deployment_version.build_id
        for e in history.events
        if e.HasField("workflow_task_completed_event_attributes")
    ]
    assert order[0] == "m-1" and order[-1] == "m-2", order
    assert drill_tools.pids(str(ledger), view.plan_id)["after"] == {second.pid}
    info = (await handle.describe()).raw_description.workflow_execution_info.versioning_info
    assert info.versioning_override.pinned.version.build_id == "m-2"
    assert started_build(await store.read_run_log(view.plan_id)) == f"{deployment}.m-1"
    await replay(vclient, view.plan_id, store)
    await store.close()


async def test_without_a_deployment_name_a_run_is_unversioned_as_before(
    server: DevServer, vclient: Client, tmp_path: Path
) -> None:
    """No deployment name: no version, no pinning, no PlanBuild, no build recorded; it runs."""
    task_queue = f"tq-{uuid.uuid4().hex[:10]}"
    store_path, ledger = tmp_path / "plans.sqlite3", tmp_path / "ledger.db"
    drill_tools.record(str(ledger), "-", "init")
    store = SqlitePlanStore(store_path)
    process = worker_process(server.address, task_queue, tmp_path / "w.log", store_path)
    try:
        handle, view = await start_run(
            vclient, task_queue, store, single(unique_plan_id("plain"), ledger), {"s": "x"}
        )
        assert (await asyncio.wait_for(handle.result(), 60)).outcome == "completed"
    finally:
        kill(process)
    assert started_build(await store.read_run_log(view.plan_id)) is None
    (history,) = await executions(vclient, view.plan_id)
    completions = [
        e.workflow_task_completed_event_attributes
        for e in history.events
        if e.HasField("workflow_task_completed_event_attributes")
    ]
    assert completions and all(
        c.versioning_behavior == VersioningBehavior.VERSIONING_BEHAVIOR_UNSPECIFIED
        and not c.deployment_version.deployment_name
        for c in completions
    )
    description = await handle.describe()
    attributes = description.typed_search_attributes
    assert attributes.get(PLAN_ID) == view.plan_id and attributes.get(PLAN_BUILD) is None
    await replay(vclient, view.plan_id, store)
    await store.close()


async def test_the_replay_gate_refuses_bad_input_by_name(server: DevServer) -> None:
    """A bad query, an empty sample and an unreachable server each fail in one line."""
    status, _, err = await run(
        ORCH, "replay-check", "--address", server.address, "--query", "NoSuchAttribute = 'x'"
    )
    assert status == 2 and err.startswith("error[bad_query]: "), err
    assert len(err.strip().splitlines()) == 1
    empty = f"WorkflowType = 'PlanRun' AND TaskQueue = 'tq-{uuid.uuid4().hex}'"
    status, _, err = await run(ORCH, "replay-check", "--address", server.address, "--query", empty)
    assert status == 2 and err.startswith("error[replay_no_histories]: "), err
    status, _, _ = await run(
        ORCH, "replay-check", "--address", server.address, "--query", empty, "--allow-empty"
    )
    assert status == 0
    status, _, err = await run(ORCH, "replay-check", "--address", "127.0.0.1:1")
    assert status == 3 and err.startswith("error[temporal_unreachable]: "), err
    status, _, err = await run(ORCH, "replay-check", "--limit", "0")
    assert status == 2 and err.startswith("error[usage]: "), err
