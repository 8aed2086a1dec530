"""Readable names for a run's frames, and the times and attempts a person reads beside them.

A frame's exact key (``write:e2:e0j1:j(e2:e4e2:e5)e2:e6``) is injective, which is what tables
and ids need, and unreadable, which is what a person at a terminal gets from it. Here a frame
is named by its node id alone when the node runs once in the run, and otherwise by its node id,
its place among that node's frames in the order they came to exist, and the last edge of its
route: ``write #2 (via e6)``. The number tells instances apart even when two share their last
edge (two forks feeding the same edge); the edge says where the instance came from.

A join's arrivals are frames too (each arriving route parks at the barrier), but they are not
executions of the join: only the merged frame that settles is. So arrivals are never counted as
instances nor named; :func:`is_join_arrival` tells them apart (the merged frame's route ends
with the join's own segment, an arrival's with the edge it arrived by).

A map's frames are named by their item instead: ``m item 3`` for the item's own frame,
``inspect [m item 3]`` for a frame of the body (nested maps list every item, outermost first).
A loop's own frames are ``lp round 2`` and ``lp check 2`` (its until check after round 2); its
body's read ``draft [lp item 2]``.

Labels read from a whole log (:meth:`FrameLabels.of_events`) number every instance from the
start. Labels made live, while a run goes, cannot know the future: a node's first frame is
named by its id alone until a second frame of that node appears, and from then on each is
numbered. Exact keys stay in JSON output and in ids; this module only names what is printed.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

from orchestration.run.routes import BranchId, EdgeSegment, ItemSegment, JoinSegment
from orchestration.types import (
    EdgeTaken,
    FrameRef,
    NodeEntered,
    NodeSettled,
    RunEvent,
    RunInterrupted,
)

__all__ = [
    "FrameLabels",
    "FrameTiming",
    "barrier_arrivals",
    "format_duration",
    "frame_timings",
    "frames_of",
    "is_join_arrival",
    "last_edge",
    "seconds_between",
]


def last_edge(branch: BranchId) -> str | None:
    """The id of the last edge on a route (a join's segment is skipped), or ``None``."""
    for segment in reversed(branch.segments):
        if isinstance(segment, EdgeSegment):
            return segment.edge
    return None


def is_join_arrival(frame: FrameRef) -> bool:
    """Whether ``frame`` is an arrival parked at a join's barrier, not the merged frame."""
    segments = frame.branch_id.segments
    return frame.kind == "join" and not (segments and isinstance(segments[-1], JoinSegment))


def barrier_arrivals(merged: FrameRef, arrivals: Iterable[FrameRef]) -> list[FrameRef]:
    """Those of ``arrivals`` that landed at the barrier the merged frame ``merged`` closed.

    The merged frame's route is its fork frame's route plus the join's segment, and every
    arrival at that barrier came through the same fork frame, so its route starts with the
    fork's. The fork is a node of a DAG, so no other fork frame's route is such a prefix.
    """
    prefix = merged.branch_id.segments[:-1]
    return [
        arrival
        for arrival in arrivals
        if arrival.node_id == merged.node_id and arrival.branch_id.segments[: len(prefix)] == prefix
    ]


def frames_of(event: RunEvent) -> tuple[FrameRef, ...]:
    """The frames an event names that are executions of their node (join arrivals left out).

    In the order they appear in the event: an edge's source, then the frame it produced.
    """
    named: tuple[FrameRef, ...]
    if isinstance(event, EdgeTaken):
        named = (event.from_, event.to)
    elif isinstance(event, NodeEntered | NodeSettled):
        named = (event.frame,)
    elif isinstance(event, RunInterrupted) and event.frame is not None:
        named = (event.frame,)
    else:
        named = ()
    return tuple(frame for frame in named if not is_join_arrival(frame))


class FrameLabels:
    """Names frames for people: the node id, numbered only when the node runs more than once.

    Frames are numbered per node in the order :meth:`see` (or :meth:`label`) first meets
    them; see the module docstring for what a live labeller can and cannot know.
    """

    def __init__(self) -> None:
        self._instances: dict[str, dict[str, int]] = {}

    @classmethod
    def of_events(cls, events: Iterable[RunEvent]) -> FrameLabels:
        """Labels for a whole log: every frame is known, so every repeated node is numbered."""
        labels = cls()
        for event in events:
            for frame in frames_of(event):
                labels.see(frame)
        return labels

    def see(self, frame: FrameRef) -> None:
        """Count ``frame`` as an instance of its node, if it is a new one (not an arrival)."""
        if is_join_arrival(frame) or any(
            isinstance(seg, ItemSegment) for seg in frame.branch_id.segments
        ):
            return
        instances = self._instances.setdefault(frame.node_id, {})
        instances.setdefault(frame.key, len(instances) + 1)

    def instances(self, node_id: str) -> int:
        """How many frames of ``node_id`` have been seen."""
        return len(self._instances.get(node_id, {}))

    def label(self, frame: FrameRef) -> str:
        """``node`` when the node has one frame so far, else ``node #n (via <edge>)``.

        A join arrival is named by its join and the edge it arrived by (``j ← e4``).
        """
        if is_join_arrival(frame):
            edge = last_edge(frame.branch_id)
            return frame.node_id if edge is None else f"{frame.node_id} ← {edge}"
        items = [seg for seg in frame.branch_id.segments if isinstance(seg, ItemSegment)]
        if not items:
            self.see(frame)
        else:
            # A map's item frames and its body's frames are named by the item they run for.
            last = frame.branch_id.segments[-1]
            if isinstance(last, ItemSegment) and last.map == frame.node_id:
                own = items[:-1]
                word = "item"
                if frame.kind == "loop":
                    # A loop's round, or its check (whose route passes its round's segment).
                    word = "check" if last in own else "round"
                    own = [seg for seg in own if seg != last]
                outer = " · ".join(f"{seg.map} item {seg.index}" for seg in own)
                return f"{frame.node_id} {word} {last.index}" + (f" [{outer}]" if outer else "")
            where = " · ".join(f"{seg.map} item {seg.index}" for seg in items)
            return f"{frame.node_id} [{where}]"
        instances = self._instances[frame.node_id]
        if len(instances) == 1:
            return frame.node_id
        edge = last_edge(frame.branch_id)
        via = f" (via {edge})" if edge is not None else ""
        return f"{frame.node_id} #{instances[frame.key]}{via}"


def seconds_between(start: str, end: str) -> float:
    """Seconds from ISO-8601 instant ``start`` to ``end`` (``Z`` or an offset)."""
    return (dt.datetime.fromisoformat(end) - dt.datetime.fromisoformat(start)).total_seconds()


def format_duration(seconds: float) -> str:
    """A short human duration: ``0.42s``, ``12.3s``, ``4m05s``, ``2h03m``.

    Precision falls as the duration grows, because nobody reads milliseconds of an hour. A
    negative duration (clocks of two hosts disagreeing) reads as ``0.00s``.
    """
    seconds = max(seconds, 0.0)
    if seconds < 10:
        return f"{seconds:.2f}s"
    if seconds < 60:
        return f"{seconds:.1f}s"
    whole = int(seconds)
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


@dataclass(frozen=True)
class FrameTiming:
    """One execution of a node as ``orch run show`` lists it.

    Attributes:
        frame: The frame (its exact key is ``frame.key``).
        label: Its readable name (see :class:`FrameLabels`).
        seconds: From its first ``node_entered`` to its ``node_settled`` (retries and their
            pauses included); for a join, from its first arrival to the merged frame's
            settlement (how long the barrier stayed open). ``None`` until it settled.
        attempts: How many times it was entered (each retry is an entry); 0 for a join.
        arrivals: For a join: how many arrivals its barrier took; 0 otherwise.

    """

    frame: FrameRef
    label: str
    seconds: float | None
    attempts: int
    arrivals: int


def frame_timings(events: Iterable[RunEvent]) -> list[FrameTiming]:
    """Every frame that executed (join arrivals folded into their join), in order of appearance.

    Durations and attempts come from the events' own ``at`` times and entries, so they are
    the same whichever host ran the run and whenever the log is read.
    """
    events = list(events)
    labels = FrameLabels.of_events(events)
    order: dict[str, FrameRef] = {}
    entered: dict[str, str] = {}
    settled: dict[str, str] = {}
    attempts: dict[str, int] = {}
    arrivals: list[FrameRef] = []
    arrived_at: dict[str, str] = {}
    counts: dict[str, int] = {}
    for event in events:
        for frame in frames_of(event):
            order.setdefault(frame.key, frame)
        if isinstance(event, NodeEntered):
            frame = event.frame
            if is_join_arrival(frame):
                arrivals.append(frame)
                arrived_at.setdefault(frame.key, event.at)
                continue
            entered.setdefault(frame.key, event.at)
            attempts[frame.key] = attempts.get(frame.key, 0) + 1
        elif isinstance(event, NodeSettled) and not is_join_arrival(event.frame):
            frame = event.frame
            settled.setdefault(frame.key, event.at)
            if frame.kind == "join":
                mine = barrier_arrivals(frame, arrivals)
                counts[frame.key] = len(mine)
                if mine:
                    entered.setdefault(frame.key, min(arrived_at[a.key] for a in mine))
    timings = []
    for key, frame in order.items():
        start, end = entered.get(key), settled.get(key)
        timings.append(
            FrameTiming(
                frame=frame,
                label=labels.label(frame),
                seconds=None if start is None or end is None else seconds_between(start, end),
                attempts=attempts.get(key, 0),
                arrivals=counts.get(key, 0),
            )
        )
    return timings
