"""Loop scenarios in process, read from their logs: rounds one at a time, each followed by its
check, and the named error an unmet loop fails with."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from orchestration.run.log import LogItem, LogSettle
from tests.support.hosts import InProcessHost
from tests.support.scenarios import SCENARIOS

pytestmark = pytest.mark.asyncio


async def _log(name: str, folder: Path) -> list[object]:
    log, _ = await InProcessHost(folder).run(SCENARIOS[name], f"{name}-{uuid.uuid4().hex[:6]}")
    return list(log)


@pytest.mark.parametrize(
    ("name", "rounds"), [("loop_converges", 2), ("loop_max_iterations", 3), ("loop_stuck", 3)]
)
async def test_each_round_is_checked_before_the_next_starts(
    name: str, rounds: int, tmp_path: Path
) -> None:
    """A round starts, then its check, then the next round: never two rounds at once."""
    log = await _log(name, tmp_path)
    order = [
        ("check" if e.after is not None else "round", e.index)
        for e in log
        if isinstance(e, LogItem)
    ]
    assert order == [(kind, i) for i in range(rounds) for kind in ("round", "check")]


@pytest.mark.parametrize(
    ("name", "errors"),
    [
        ("loop_unmet_fails", ["LoopUnmetError"]),
        ("loop_until_raises", ["RuntimeError", "LoopUntilError"]),
    ],
)
async def test_a_failed_loop_names_its_error(name: str, errors: list[str], tmp_path: Path) -> None:
    """The loop's failed settlement names why (an unmet until; a cell that raised in its
    check, after the check's own failure), handled by its error edge."""
    log = await _log(name, tmp_path)
    failed = [e for e in log if isinstance(e, LogSettle) and e.error is not None]
    assert [f.error.name for f in failed if f.error is not None] == errors
    assert all(f.handled for f in failed)
