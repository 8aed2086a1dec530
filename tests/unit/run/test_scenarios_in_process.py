"""Every run scenario in process: its outcome and checks hold (the integration tier compares
the same scenarios' logs with Temporal's)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from orchestration.run.expand import expand_log, project_log
from orchestration.run.fold import fold_run
from tests.support.hosts import InProcessHost
from tests.support.scenarios import SCENARIOS

pytestmark = pytest.mark.asyncio


@pytest.mark.parametrize("name", list(SCENARIOS))
async def test_scenario_in_process(name: str, tmp_path: Path) -> None:
    """The scenario ends as it should, and its stored log folds to the projection returned."""
    scenario = SCENARIOS[name]
    log, projection = await InProcessHost(tmp_path).run(scenario, f"{name}-{uuid.uuid4().hex[:6]}")
    assert projection.outcome == scenario.outcome, projection.interruption
    assert fold_run(expand_log(log)) == projection
    for length in range(1, len(log) + 1):
        assert project_log(log[:length]) == fold_run(expand_log(log[:length])), length
    if scenario.check is not None:
        scenario.check(projection)
