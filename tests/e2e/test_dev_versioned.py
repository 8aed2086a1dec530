"""`orch dev --deployment-name`: the embedded worker is a pinned version, current at once."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from pathlib import Path

from orchestration.store.sqlite import SqlitePlanStore
from orchestration.testing import PlanSketch, approve_into
from orchestration.types import StringField
from workers.devserver import free_port

from .cli import ORCH

ROOT = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    """No ORCH_/TEMPORAL_ settings from outside; the drill tools importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ORCH_", "TEMPORAL_"))}
    return {**env, "PYTHONPATH": str(ROOT)}


async def _approve(store_path: Path, ledger: Path) -> str:
    sketch = PlanSketch("dev-versioned").entry(StringField(path="s"))
    sketch.call(
        "one",
        "ledger.write",
        args={"ledger": str(ledger), "seconds": 0.0},
        output=[StringField(path="value")],
    )
    store = SqlitePlanStore(store_path)
    try:
        stored = await approve_into(store, sketch.chain("entry", "one").view())
    finally:
        await store.close()
    return stored.plan_id


def test_orch_dev_with_a_deployment_name_runs_plans_on_its_own_version(tmp_path: Path) -> None:
    """The dev worker makes its version current, so a run starts, completes and says its build."""
    port = free_port()
    store, output = tmp_path / "plans.sqlite3", tmp_path / "dev.out"
    command = [
        ORCH, "dev", "--data", str(tmp_path / "dev"), "--port", str(port),
        "--ui-port", str(free_port()), "--store", str(store),
        "--toolbox", "tests.integration.drill_tools:TOOLBOX",
        "--deployment-name", "dev", "--build-id", "d-1",
    ]  # fmt: skip
    with open(output, "wb") as out:
        dev = subprocess.Popen(
            command, cwd=ROOT, env=_env(), stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while "worker deployment version dev.d-1 is current" not in output.read_text():
            assert dev.poll() is None, output.read_text()
            assert time.monotonic() < deadline, output.read_text()
            time.sleep(0.2)
        plan_id = asyncio.run(_approve(store, tmp_path / "ledger.db"))
        where = ["--address", f"127.0.0.1:{port}", "--store", str(store)]
        started = subprocess.run(
            [ORCH, "run", "start", plan_id, "--input", '{"s": "x"}', "--watch", *where],
            capture_output=True, text=True, timeout=120, env=_env(),
        )  # fmt: skip
        assert started.returncode == 0, started.stdout + started.stderr
        shown = subprocess.run(
            [ORCH, "run", "show", plan_id, *where],
            capture_output=True, text=True, timeout=120, env=_env(),
        )  # fmt: skip
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout.splitlines()[1] == "build: dev.d-1", shown.stdout
    finally:
        if dev.poll() is None:
            os.killpg(dev.pid, signal.SIGINT)
            try:
                dev.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(dev.pid, signal.SIGKILL)
                dev.wait()


def test_orch_dev_refuses_a_build_id_without_a_deployment_name(tmp_path: Path) -> None:
    """It would run unversioned without saying so: one line, status 2, before anything starts."""
    result = subprocess.run(
        [ORCH, "dev", "--data", str(tmp_path / "dev"), "--build-id", "d-1"],
        capture_output=True, text=True, timeout=60, env=_env(),
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.startswith("error[bad_deployment]: a build id ('d-1') was given")
    assert len(result.stderr.splitlines()) == 1
    assert not (tmp_path / "dev").exists()
