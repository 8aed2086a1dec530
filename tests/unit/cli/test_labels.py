"""Readable frame names, durations and attempts, from real run logs."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestration.cli.labels import (
    FrameLabels,
    format_duration,
    frame_timings,
    frames_of,
    is_join_arrival,
    last_edge,
    seconds_between,
)
from orchestration.run.routes import BranchId, EdgeSegment, JoinSegment
from orchestration.types import EdgeTaken, FrameRef, NodeEntered
from tests.unit.cli.runs import FAN_DIAMOND, events_of


def frame(node: str, *segments: EdgeSegment | JoinSegment, kind: str = "call") -> FrameRef:
    return FrameRef.model_validate(
        {"nodeId": node, "kind": kind, "branchId": BranchId(segments=segments)}
    )


E = EdgeSegment


def test_last_edge_skips_a_join_segment() -> None:
    """The last edge of a route is its last edge segment, even when a join closes it."""
    assert last_edge(BranchId()) is None
    assert last_edge(BranchId(segments=(E(edge="e0"), E(edge="e2")))) == "e2"
    joined = BranchId(segments=(E(edge="e0"), JoinSegment(join="j", of=("e4", "e5"))))
    assert last_edge(joined) == "e0"


def test_a_join_arrival_is_not_its_merged_frame() -> None:
    """An arrival ends with the edge it came by; the merged frame with the join's segment."""
    assert is_join_arrival(frame("j", E(edge="e0"), E(edge="e4"), kind="join"))
    assert not is_join_arrival(
        frame("j", E(edge="e0"), JoinSegment(join="j", of=("e4", "e5")), kind="join")
    )
    assert not is_join_arrival(frame("write", E(edge="e6")))


def test_a_node_that_runs_once_is_named_by_its_id() -> None:
    """One frame of a node: its id, whatever its route."""
    labels = FrameLabels()
    assert labels.label(frame("fetch", E(edge="e0"), E(edge="e1"))) == "fetch"
    assert labels.label(frame("entry")) == "entry"


def test_live_labels_number_a_node_once_its_second_frame_appears() -> None:
    """Live: the first frame is plain until a second one exists; then both are numbered."""
    labels = FrameLabels()
    first = frame("write", E(edge="e0"), E(edge="e2"))
    second = frame("write", E(edge="e1"), E(edge="e4"))
    assert labels.label(first) == "write"
    assert labels.label(second) == "write #2 (via e4)"
    assert labels.label(first) == "write #1 (via e2)"
    assert labels.label(second) == "write #2 (via e4)"
    assert labels.instances("write") == 2


@pytest.mark.asyncio
async def test_labels_of_a_whole_log_number_every_repeated_node(tmp_path: Path) -> None:
    """Read from a whole log, every repeated node is numbered from its first frame.

    Numbers follow the order frames came to exist; a join counts its merged frames only,
    never its arrivals; no label holds a route key.
    """
    _, events = await events_of(tmp_path, FAN_DIAMOND, "labels")
    labels = FrameLabels.of_events(events)
    names = {f.key: labels.label(f) for event in events for f in frames_of(event)}
    assert sorted(set(names.values())) == sorted(
        [
            "entry",
            "fork #1 (via e0)",
            "fork #2 (via e1)",
            "left #1 (via e2)",
            "left #2 (via e2)",
            "right #1 (via e3)",
            "right #2 (via e3)",
            "j #1 (via e0)",
            "j #2 (via e1)",
            "write #1 (via e6)",
            "write #2 (via e6)",
        ]
    )
    assert labels.instances("j") == 2
    arrivals = [e.to for e in events if isinstance(e, EdgeTaken) and is_join_arrival(e.to)]
    assert len(arrivals) == 4
    assert all(labels.label(a).startswith("j ← e") for a in arrivals)
    # The exact keys stay distinct (and unreadable): the labels are only for people.
    assert len(names) == 11 and all(":" in key for key in names if key != "entry:")


def test_seconds_between_reads_zulu_and_offsets() -> None:
    """Seconds between two ISO instants, with Z or an offset, fractions kept."""
    assert seconds_between("2026-01-01T00:00:00Z", "2026-01-01T00:01:30.5Z") == 90.5
    assert seconds_between("2026-01-01T01:00:00+01:00", "2026-01-01T00:00:02Z") == 2.0


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (0.0, "0.00s"),
        (0.4249, "0.42s"),
        (9.999, "10.00s"),
        (12.34, "12.3s"),
        (65, "1m05s"),
        (3599.9, "59m59s"),
        (7384, "2h03m"),
        (-3, "0.00s"),
    ],
)
def test_format_duration_loses_precision_as_it_grows(seconds: float, shown: str) -> None:
    """Hundredths under ten seconds, tenths under a minute, then minutes and hours."""
    assert format_duration(seconds) == shown


@pytest.mark.asyncio
async def test_frame_timings_take_durations_and_attempts_from_the_log(tmp_path: Path) -> None:
    """A retried call: two attempts, timed from its first enter to its settle.

    Each entry of the re-timed log is one second after the previous one, so the duration is
    the number of entries between the first enter and the settle.
    """
    log, events = await events_of(tmp_path, "transient_retried", "timings")
    timings = {t.label: t for t in frame_timings(events)}
    work = timings["work"]
    enters = [i for i, e in enumerate(log) if e.kind == "enter" and e.frame == 1]
    settle = next(i for i, e in enumerate(log) if e.kind == "settle" and e.frame == 1)
    assert work.attempts == len(enters) == 3
    assert work.seconds == settle - enters[0]
    assert timings["entry"].attempts == 1 and timings["entry"].seconds == 1.0


@pytest.mark.asyncio
async def test_a_joins_timing_is_its_barrier_open_and_its_arrivals(tmp_path: Path) -> None:
    """A join: no attempts, the arrivals its barrier took, timed from its first arrival."""
    log, events = await events_of(tmp_path, FAN_DIAMOND, "joins")
    joins = [t for t in frame_timings(events) if t.frame.kind == "join"]
    assert [(t.label, t.attempts, t.arrivals) for t in joins] == [
        ("j #1 (via e0)", 0, 2),
        ("j #2 (via e1)", 0, 2),
    ]
    # From the enter of the barrier's first arrival to the settle of the merged frame.
    merges = [e for e in log if e.kind == "merge"]
    expected = []
    for merge in merges:
        first = min(
            i for i, e in enumerate(log) if e.kind == "enter" and e.frame in merge.arrivals
        )
        settle = next(
            i for i, e in enumerate(log) if e.kind == "settle" and e.frame == merge.frame
        )
        expected.append(float(settle - first))
    assert [t.seconds for t in joins] == expected
    assert not any(isinstance(e, NodeEntered) and e.frame.kind == "join" and
                   not is_join_arrival(e.frame) for e in events)
