"""Real run logs for the CLI's unit tests: plans run in process, then re-timed.

Each entry of a log is given the instant ``2026-01-01T00:00:00Z`` plus its position in seconds,
so a test knows every duration exactly while the log itself is what the real host recorded.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from orchestration.run.expand import expand_log
from orchestration.run.log import LogEntry
from orchestration.testing import PlanSketch
from orchestration.types import RawPlanView, RunEvent, StringField
from tests.support.hosts import InProcessHost
from tests.support.scenarios import SCENARIOS, VALUE, Scenario

BASE = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def fan_diamond(plan_id: str) -> RawPlanView:
    """Two edges from the entry to ``fork`` (so everything after it runs twice), a diamond
    through ``left`` and ``right`` into the join ``j``, then ``write``."""
    s = PlanSketch(plan_id).entry(StringField(path="s"))
    for node in ("fork", "left", "right", "write"):
        s.call(node, "stamp", output=VALUE)
    s.join("j")
    return (
        s.edge("entry", "fork")
        .edge("entry", "fork")
        .edge("fork", "left")
        .edge("fork", "right")
        .edge("left", "j")
        .edge("right", "j")
        .edge("j", "write")
        .view()
    )


def at(position: int) -> str:
    """The instant a re-timed log gives the entry at ``position``."""
    return (BASE + dt.timedelta(seconds=position)).isoformat().replace("+00:00", "Z")


def retimed(log: list[LogEntry]) -> list[LogEntry]:
    """The same entries, the one at position ``i`` stamped ``at(i)``."""
    return [entry.model_copy(update={"at": at(i)}) for i, entry in enumerate(log)]


async def events_of(folder: Path, scenario: Scenario | str, plan_id: str) -> tuple[
    list[LogEntry], list[RunEvent]
]:
    """Run ``scenario`` (or the named one) in process; its re-timed log and that log's events."""
    chosen = SCENARIOS[scenario] if isinstance(scenario, str) else scenario
    log, _ = await InProcessHost(folder).run(chosen, plan_id)
    log = retimed(log)
    return log, expand_log(log)


FAN_DIAMOND = Scenario(fan_diamond, {"s": "x"}, "completed")
