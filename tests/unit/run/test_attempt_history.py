"""Attempt histories in the log and the projection; logs written before them still fold."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestration.run.expand import expand_log, project_log
from orchestration.run.fold import fold_run
from orchestration.run.log import LOG_ADAPTER, LogAttempt
from orchestration.types import AttemptEnded, RunProjection, UsageTotals
from tests.support.hosts import InProcessHost
from tests.support.scenarios import SCENARIOS

pytestmark = pytest.mark.asyncio

OLD_LOG = (
    '[{"kind":"start","runId":"plan/p","digest":"d","entry":"entry","at":"2025-01-01T00:00:00Z"},'
    '{"kind":"enter","frame":0,"attempt":1,"at":"2025-01-01T00:00:00Z"},'
    '{"kind":"settle","frame":0,"status":"ok","items":[{"json":{"s":"x"}}],'
    '"at":"2025-01-01T00:00:00Z"},'
    '{"kind":"edge","edge":"e0","handle":"always","source":0,"frame":1,"node":"a",'
    '"nodeKind":"call","at":"2025-01-01T00:00:00Z"},'
    '{"kind":"enter","frame":1,"attempt":1,"at":"2025-01-01T00:00:01Z"},'
    '{"kind":"enter","frame":1,"attempt":2,"at":"2025-01-01T00:00:02Z"},'
    '{"kind":"settle","frame":1,"status":"ok","items":[{"json":{"value":"A"}}],"attempt":2,'
    '"at":"2025-01-01T00:00:03Z"},'
    '{"kind":"end","outcome":"completed","at":"2025-01-01T00:00:03Z"}]'
)
"""A compact log as stored before attempts were recorded: two enters, one settle."""


def without_attempts(projection: RunProjection) -> RunProjection:
    return projection.model_copy(
        update={"attempts": {}, "arg_origins": {}, "usage": UsageTotals(), "node_usage": {}}
    )


async def test_a_log_written_before_attempts_folds_with_empty_histories() -> None:
    """The old JSON reads as it was; the projection has every contract field and no history."""
    log = LOG_ADAPTER.validate_json(OLD_LOG)
    projection = project_log(log)
    assert projection.outcome == "completed" and projection.frame_status["a:e2:e0"] == "done"
    assert projection.attempts == {} and projection.arg_origins == {}
    assert projection.usage == UsageTotals() and projection.node_usage == {}
    assert LOG_ADAPTER.validate_json(LOG_ADAPTER.dump_json(log)) == log


async def test_attempts_fold_in_order_and_dropping_them_leaves_the_contract_unchanged(
    tmp_path: Path,
) -> None:
    """Each attempt entry expands to one ``attempt_ended``; without them the rest is the same."""
    log, projection = await InProcessHost(tmp_path).run(SCENARIOS["transient_retried"], "hist")
    attempts = [e for e in log if isinstance(e, LogAttempt)]
    events = expand_log(log)
    ended = [e for e in events if isinstance(e, AttemptEnded)]
    assert len(ended) == len(attempts) == 4  # three of "work", one of "after"
    assert [(e.frame.node_id, e.attempt, e.result) for e in ended] == [
        ("work", 1, "failed"),
        ("work", 2, "failed"),
        ("work", 3, "ok"),
        ("after", 1, "ok"),
    ]
    assert all(e.error is not None and e.error.name == "ConnectionError" for e in ended[:2])
    old = [e for e in log if not isinstance(e, LogAttempt)]
    assert fold_run(expand_log(old)) == without_attempts(projection)
    (work,) = [records for key, records in projection.attempts.items() if key.startswith("work")]
    assert all(a.started <= a.ended for a in work)
    assert work[0].ended <= work[1].started  # the retry started after the failure ended


async def test_a_halted_frames_lost_attempt_and_the_operators_retry_are_recorded(
    tmp_path: Path,
) -> None:
    """lost (start-to-close), halt, operator retry: the history says so in the same words."""
    _, projection = await InProcessHost(tmp_path).run(
        SCENARIOS["lost_unsafe_halt_retry"], "halted"
    )
    (work,) = [records for key, records in projection.attempts.items() if key.startswith("work")]
    assert [(a.result, a.reason) for a in work] == [("lost", None), ("ok", "operator_retry")]
    assert work[0].error is not None and work[0].error.name == "StartToCloseTimeout"
