"""What a person reads while a run goes and after: labels, one line per join, a settle count."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from orchestration.cli.labels import format_duration
from orchestration.cli.progress import ProgressLines, describe_events, describe_run
from orchestration.run.fold import fold_run
from orchestration.types import RunEvent
from tests.unit.cli.runs import FAN_DIAMOND, events_of

pytestmark = pytest.mark.asyncio

ROUTE_KEY = re.compile(r"\be\d+:[\w-]|\bj\d+:[\w-]+\(")
"""What a length-prefixed route key looks like (``e2:e0``, ``j1:j(``)."""


def live(events: list[RunEvent]) -> list[str]:
    lines = ProgressLines()
    return [line for event in events if (line := lines.line(event)) is not None]


async def test_live_progress_names_frames_and_prints_each_join_once(tmp_path: Path) -> None:
    """No route key anywhere; arrivals print nothing; each join prints once, with its arrivals.

    Each settle line opens with the frames settled out of the frames created so far, which
    reaches 11 of 11 (the two joins' merged frames included, their four arrivals not).
    """
    _, events = await events_of(tmp_path, FAN_DIAMOND, "live")
    lines = live(events)
    assert not [line for line in lines if ROUTE_KEY.search(line)]
    assert not [line for line in lines if "→ e4" in line or "→ e5" in line]
    joins = [line for line in lines if " j" in line]
    assert len(joins) == 2 and all(line.endswith("ok (2/2 arrived)") for line in joins)
    counts = [re.match(r"\[(\d+)/(\d+) settled\] ", line) for line in lines]
    settled = [(int(m[1]), int(m[2])) for m in counts if m is not None]
    assert [n for n, _ in settled] == list(range(1, 12))
    assert settled[-1] == (11, 11)
    assert all(n <= known for n, known in settled)
    assert "    → e1 (always) to fork #2 (via e1)" in lines
    assert any(line.startswith("[11/11 settled] ✓ write #2 (via e6) ") for line in lines)


async def test_a_whole_log_numbers_from_the_start_and_a_fresh_reader_agrees(
    tmp_path: Path,
) -> None:
    """Fed the same events, two readers print the same lines (how a watcher catches up).

    Read whole, the first frame of a repeated node is numbered too; live, it is plain until
    the second frame exists. Nothing else differs.
    """
    _, events = await events_of(tmp_path, FAN_DIAMOND, "whole")
    assert live(events) == live(events)
    whole = describe_events(events)
    assert "    → e0 (always) to fork #1 (via e0)" in whole
    assert "    → e0 (always) to fork" in live(events)
    different = [(a, b) for a, b in zip(live(events), whole, strict=True) if a != b]
    assert different and all("#1" in b and "#1" not in a for a, b in different)


async def test_a_retried_call_says_which_attempt_it_is(tmp_path: Path) -> None:
    """A re-entered frame is the same frame: one name, with the attempt it is on."""
    _, events = await events_of(tmp_path, "transient_retried", "retry")
    entered = [line for line in live(events) if line.startswith("  ▶ work")]
    assert [line.split()[-1] for line in entered] == ["call", "2", "3"]
    assert entered[1].endswith("call, attempt 2")


async def test_the_summary_gives_each_frame_its_status_time_and_attempts(
    tmp_path: Path,
) -> None:
    """``run show``: one row per execution, readable, with its duration and attempts.

    The re-timed log puts one second between entries, so every duration is known; a node the
    run never reached is listed as such.
    """
    _, events = await events_of(tmp_path, FAN_DIAMOND, "summary")
    text = describe_run(fold_run(events), events)
    assert not ROUTE_KEY.search(text)
    rows = {line.split("  ")[1].strip(): line for line in text.splitlines()[2:-1]}
    assert set(rows) == {
        "entry", "fork #1 (via e0)", "fork #2 (via e1)", "left #1 (via e2)",
        "left #2 (via e2)", "right #1 (via e3)", "right #2 (via e3)", "j #1 (via e0)",
        "j #2 (via e1)", "write #1 (via e6)", "write #2 (via e6)",
    }
    assert rows["entry"].split()[1:] == ["done", format_duration(1), "1", "attempt"]
    assert rows["j #1 (via e0)"].endswith("2/2 arrived")

    _, branch = await events_of(tmp_path, "branch_match", "branch")
    nodes = ["entry", "measure", "big", "yes", "no"]
    text = describe_run(fold_run(branch), branch, nodes)
    assert text.splitlines()[-2].split() == ["no", "not", "reached"]
    assert "  no " not in describe_run(fold_run(branch), branch)

    _, retried = await events_of(tmp_path, "transient_retried", "retried")
    work = next(line for line in describe_run(fold_run(retried), retried).splitlines()
                if line.startswith("  work "))
    # Three attempts, each an enter and its end, one second apart, then the settle: 6 s from
    # the first enter.
    assert work.split()[1:] == ["done", format_duration(6), "3", "attempts"]
