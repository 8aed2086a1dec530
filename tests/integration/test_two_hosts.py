"""One semantics, two hosts (ruling 33): every scenario's log on Temporal is the in-process log.

Each scenario runs in process and as ``PlanRun`` on the dev server, with the same plan id, the
same tools, model script, prices and operator answers (and the same decisions at gates); the
two compact logs must be equal entry for entry (timestamps and gate deadlines aside), the
scenario's checks must hold on Temporal too, and the Temporal
run's history must replay in the sandbox.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from temporalio.client import Client

from tests.support.hosts import InProcessHost, TemporalHost, strip_times, timeless
from tests.support.scenarios import SCENARIOS

pytestmark = pytest.mark.asyncio(loop_scope="session")


@pytest.mark.parametrize("name", list(SCENARIOS))
async def test_both_hosts_record_the_same_log(
    client: Client, task_queue: str, tmp_path: Path, name: str
) -> None:
    """Temporal and the in-process host write the same log for the scenario."""
    scenario = SCENARIOS[name]
    plan_id = f"{name.replace('_', '-')}-{uuid.uuid4().hex[:8]}"
    local_log, local = await InProcessHost(tmp_path).run(scenario, plan_id)
    remote_log, remote = await TemporalHost(client, task_queue, tmp_path).run(scenario, plan_id)
    assert remote.outcome == scenario.outcome, remote.interruption
    assert strip_times(remote_log) == strip_times(local_log)
    assert timeless(remote) == timeless(local)
    if scenario.check is not None:
        scenario.check(remote)
