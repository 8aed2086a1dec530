"""Histories of earlier PlanRun runs still replay on the current code (no server needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from orchestration.run.expand import expand_log
from orchestration.run.fold import fold_run
from workers.worker import sandbox_runner
from workflows.externs import RunServices
from workflows.plan_run import PlanRun
from workflows.runlog import log_from_history

FIXTURES = sorted((Path(__file__).resolve().parents[1] / "fixtures" / "histories").glob("*.json"))


def test_fixtures_exist() -> None:
    """There are recorded histories to replay."""
    assert len(FIXTURES) >= 5


@pytest.mark.asyncio
@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
async def test_recorded_history_replays(path: Path) -> None:
    """A recorded run replays without nondeterminism and its rebuilt log folds to its outcome."""
    document = json.loads(path.read_text())
    history = WorkflowHistory.from_json(document["workflowId"], document["history"])
    await Replayer(
        workflows=[PlanRun],
        interceptors=[RunServices(None)],
        data_converter=pydantic_data_converter,
        workflow_runner=sandbox_runner(),
    ).replay_workflow(history)
    log = await log_from_history(history)
    assert fold_run(expand_log(log)).outcome == document["outcome"]
