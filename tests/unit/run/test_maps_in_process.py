"""Map scenarios in process, read from their logs: the order concurrency gives, and the named
errors a map fails with."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from orchestration.run.log import LogEdge, LogItem, LogSettle
from tests.support.hosts import InProcessHost
from tests.support.scenarios import SCENARIOS

pytestmark = pytest.mark.asyncio


async def _log(name: str, folder: Path) -> list[object]:
    log, _ = await InProcessHost(folder).run(SCENARIOS[name], f"{name}-{uuid.uuid4().hex[:6]}")
    return list(log)


async def test_two_at_a_time_starts_an_item_when_one_finishes(tmp_path: Path) -> None:
    """With concurrency 2 the first two items start together, the third once the first
    finished, the fourth once the third did (the naps order the finishes)."""
    log = await _log("map_two_at_a_time", tmp_path)
    items = {e.frame: e.index for e in log if isinstance(e, LogItem)}
    body = {e.frame: items[e.source] for e in log if isinstance(e, LogEdge) and e.source in items}
    order: list[str] = []
    for entry in log:
        if isinstance(entry, LogItem):
            order.append(f"start {entry.index}")
        elif isinstance(entry, LogSettle) and entry.frame in body:
            order.append(f"done {body[entry.frame]}")
    assert order == [
        "start 0", "start 1", "done 0", "start 2", "done 2", "start 3", "done 1", "done 3"
    ]


@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("map_over_max_items", "MapTooManyItemsError"),
        ("map_tolerance_exceeded", "MapToleranceExceededError"),
    ],
)
async def test_a_failed_map_names_its_error(name: str, error: str, tmp_path: Path) -> None:
    """The map's failed settlement carries the named error, handled by its error edge."""
    log = await _log(name, tmp_path)
    (failed,) = [e for e in log if isinstance(e, LogSettle) and e.error is not None
                 and e.error.name.startswith("Map")]
    assert failed.error is not None and failed.error.name == error and failed.handled
