"""Reading a compact run log forward: frames, routes, tables, frontier and barriers.

The compact log (:mod:`orchestration.run.log`) leaves routes, branch-local tables, the frontier
and the barriers implied; whoever reads it rebuilds them the same way. Two readers do: the
expander (the contract's ``RunEvent`` form, with contract tables) and the engine's resume (its
own frames, with engine tables). :class:`LogTrace` is the one implementation of the rules,
parameterised by how a table is built (:class:`TableAlgebra`), so the two can never disagree.

The rules, per entry:

* ``start`` defines frame 0 (the entry node, on the empty route, with empty tables).
* ``edge`` defines its target frame: the source's route plus the edge, the source's tables
  after its settlement; the frame joins the frontier.
* ``enter`` marks the frame entered (a frame is a step the first time it is entered); an
  unresolved halt of that frame is resolved.
* ``settle`` records the outcome; an ``ok`` call, reason, transform, entry or join adds its own
  output (and artifact handle) to the tables its successors see; the frame leaves the frontier.
* ``arrive`` parks a join arrival: it leaves the frontier and joins the barrier of its join and
  fork frame (opened on the first arrival).
* ``merge`` closes that barrier (the completing arrival leaves the frontier) and defines the
  merged frame: the fork frame's route plus the join segment, the union of the arrivals'
  tables.
* ``item`` defines a map item's frame: the map frame's route plus ``{map, index}``, the map
  frame's tables (the map has not settled); it is entered and settled ``ok`` (its output is
  the item) by the next entries, and its ``item`` edges define the body's frames. A loop's
  round is the same (``body`` edges); an ``item`` with ``after`` defines a round's ``until``
  check instead: frame ``after``'s route plus ``{map, index}``, its tables after it settled.
* ``interrupt`` with a frame halts it until it is entered again or settled; without one it is
  the run's cause. ``end`` is the outcome. Entries after an ``end`` mean the run was resumed
  (ruling 28): it is running again, and the earlier end and cause no longer apply.
* ``attempt`` (additive) counts what the attempt spent against the frame and the run, and
  remembers when the frame's first attempt started (its budgets resume from these).
* ``gate_open`` opens a request on a frame (which stays in the frontier: it waits), and
  ``gate_decided`` / ``gate_timeout`` close it; a request still open at an ``end`` is
  abandoned (a resumed run asks again). :attr:`LogTrace.gates` keeps every frame's requests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from orchestration.errors import MalformedRunLogError
from orchestration.run.budgets import Spend
from orchestration.run.engine.builders import edge_segment, item_segment, join_segment
from orchestration.run.log import (
    LogArrive,
    LogAttempt,
    LogCancel,
    LogEdge,
    LogEnd,
    LogEnter,
    LogEntry,
    LogGateDecided,
    LogGateOpen,
    LogGateTimeout,
    LogInterrupt,
    LogItem,
    LogMerge,
    LogSettle,
    LogSnapshot,
    LogStart,
)
from orchestration.run.routes import Route, edge_token, item_token, segments_key
from orchestration.types import ArtifactHandle, InterruptionCause, OutputItem

__all__ = [
    "LogTrace",
    "TableAlgebra",
    "TracedBarrier",
    "TracedFrame",
    "TracedRequest",
    "settled_ok_nodes",
]

T = TypeVar("T")
A = TypeVar("A")

_ADDS_OUTPUT = frozenset({"entry", "call", "reason", "transform", "join", "map", "loop"})


class TableAlgebra(Protocol[T, A]):
    """How a reader builds branch-local tables: empty ones, one more entry, and a union."""

    def empty_outputs(self) -> T:
        """A table with no outputs."""
        ...

    def empty_artifacts(self) -> A:
        """A table with no artifact handles."""
        ...

    def add_output(self, table: T, frame: TracedFrame[T, A], items: tuple[OutputItem, ...]) -> T:
        """``table`` plus ``frame``'s output."""
        ...

    def add_artifact(self, table: A, frame: TracedFrame[T, A], handle: ArtifactHandle) -> A:
        """``table`` plus ``frame``'s artifact handle."""
        ...

    def union_outputs(self, tables: Sequence[T]) -> T:
        """The union of output tables."""
        ...

    def union_artifacts(self, tables: Sequence[A]) -> A:
        """The union of artifact tables."""
        ...


class TracedFrame(Generic[T, A]):
    """What the log says of one frame.

    Attributes:
        number: Its number.
        node: Its node id; ``kind`` the node's kind.
        route: Its interned route.
        via: The edge that produced it (the completing arrival's, for a merged frame).
        outputs: The tables it sees (``artifacts`` likewise).
        after: The tables its successors see, once it settled.
        status: ``None`` until settled, then ``ok``, ``failed`` or ``skipped``.
        entered: Whether it was ever entered; ``attempt`` its latest attempt; ``entered_at``
            when it was last entered.
        spend: What its attempts spent (``None``: none ended); ``started`` when its first
            attempt started.

    """

    __slots__ = (
        "after",
        "artifacts",
        "attempt",
        "entered",
        "entered_at",
        "kind",
        "node",
        "number",
        "outputs",
        "route",
        "spend",
        "started",
        "status",
        "via",
        "view",
    )

    def __init__(
        self,
        number: int,
        node: str,
        kind: str,
        route: Route,
        via: str | None,
        outputs: T,
        artifacts: A,
    ) -> None:
        self.number = number
        self.node = node
        self.kind = kind
        self.route = route
        self.via = via
        self.outputs = outputs
        self.artifacts = artifacts
        self.after: tuple[T, A] | None = None
        self.status: str | None = None
        self.entered = False
        self.attempt = 0
        self.entered_at: str | None = None
        self.spend: Spend | None = None
        self.started: str | None = None
        self.view: Any = None
        """A reader's own object for this frame (the expander keeps its ``FrameRef`` here)."""

    @property
    def key(self) -> str:
        """The contract key ``<nodeId>:<branchKey>``."""
        return f"{self.node}:{self.route.key}"


@dataclass
class TracedBarrier(Generic[T, A]):
    """A partial barrier: its join, fork frame, required count and arrivals in order."""

    node: str
    fork: TracedFrame[T, A]
    required: int
    arrivals: list[TracedFrame[T, A]] = field(default_factory=list)


@dataclass
class TracedRequest:
    """One request of a gate, as the log tells it: opened, then decided, timed out or abandoned.

    Attributes:
        opened: The ``gate_open`` entry (what was asked).
        decided: The ``gate_decided`` entry, once decided.
        timed_out: The ``gate_timeout`` entry, once it timed out.
        abandoned: The run ended while it was open.

    """

    opened: LogGateOpen
    decided: LogGateDecided | None = None
    timed_out: LogGateTimeout | None = None
    abandoned: bool = False

    @property
    def open(self) -> bool:
        """Whether it still waits for a person."""
        return self.decided is None and self.timed_out is None and not self.abandoned


class LogTrace(Generic[T, A]):
    """Reads a compact log forward and keeps what it implies (see the module docstring).

    Feed entries in order with :meth:`feed`; after each, :attr:`frames`, :attr:`frontier`,
    :attr:`barriers`, :attr:`halted` and the rest describe the run up to that entry.
    """

    def __init__(self, tables: TableAlgebra[T, A]) -> None:
        self.tables = tables
        self.frames: dict[int, TracedFrame[T, A]] = {}
        self.frontier: dict[int, TracedFrame[T, A]] = {}
        self.barriers: dict[tuple[str, int], TracedBarrier[T, A]] = {}
        self.halted: dict[int, InterruptionCause] = {}
        self.gates: dict[int, list[TracedRequest]] = {}
        self.start: LogStart | None = None
        self.cause: InterruptionCause | None = None
        self.outcome: str = "running"
        self.steps = 0
        self.next_frame = 0
        self.spend = Spend()
        """What every attempt so far spent on models."""
        self.node_spend: dict[str, Spend] = {}
        """The same, per node id."""

    def reopen(self) -> None:
        """Set the run's end and run-wide cause aside: the run goes on (a resume)."""
        self.outcome = "running"
        self.cause = None

    def frame(self, number: int) -> TracedFrame[T, A]:
        """The frame numbered ``number``.

        Raises:
            MalformedRunLogError: no entry so far defines it.

        """
        frame = self.frames.get(number)
        if frame is None:
            raise MalformedRunLogError(
                f"the run log names frame {number} before any entry defines it; read the log "
                "from its first entry"
            )
        return frame

    def feed_all(self, entries: Iterable[LogEntry]) -> None:
        """Feed every entry, in order."""
        for entry in entries:
            self.feed(entry)

    def feed(self, entry: LogEntry) -> None:  # noqa: C901 - one branch per entry kind
        """Advance past one entry.

        Raises:
            MalformedRunLogError: the first entry is not ``start``, or an entry names a frame
                no earlier entry defined, or an edge leaves a frame that has not settled.

        """
        kind = type(entry)
        if self.start is None and kind is not LogStart:
            raise MalformedRunLogError(
                "foldRun: malformed event list; first event must be run_started"
            )
        if self.outcome != "running" and kind is not LogEnd and kind is not LogInterrupt:
            # Entries after the end: the run was resumed, and goes on until its next end.
            self.reopen()
        if kind is LogEnter:
            assert isinstance(entry, LogEnter)
            frame = self.frame(entry.frame)
            if not frame.entered:
                frame.entered = True
                self.steps += 1
            frame.attempt = entry.attempt
            frame.entered_at = entry.at
            self.halted.pop(frame.number, None)
        elif kind is LogEdge:
            assert isinstance(entry, LogEdge)
            self._edge(entry)
        elif kind is LogSettle:
            assert isinstance(entry, LogSettle)
            self._settle(entry)
        elif kind is LogCancel:
            assert isinstance(entry, LogCancel)
            cancelled = self.frame(entry.frame)
            cancelled.after = (cancelled.outputs, cancelled.artifacts)
            cancelled.status = "skipped"
            self.frontier.pop(cancelled.number, None)
            self.halted.pop(cancelled.number, None)
        elif kind is LogArrive:
            assert isinstance(entry, LogArrive)
            arrival = self.frame(entry.frame)
            self.frontier.pop(arrival.number, None)
            key = (arrival.node, entry.fork)
            barrier = self.barriers.get(key)
            if barrier is None:
                barrier = self.barriers[key] = TracedBarrier(
                    arrival.node, self.frame(entry.fork), entry.required
                )
            if arrival not in barrier.arrivals:
                barrier.arrivals.append(arrival)
        elif kind is LogMerge:
            assert isinstance(entry, LogMerge)
            self._merge(entry)
        elif kind is LogItem:
            assert isinstance(entry, LogItem)
            self._item(entry)
        elif kind is LogInterrupt:
            assert isinstance(entry, LogInterrupt)
            if entry.frame is None:
                self.cause = entry.cause
            else:
                number = self.frame(entry.frame).number
                self.halted.pop(number, None)
                self.halted[number] = entry.cause
        elif kind is LogEnd:
            assert isinstance(entry, LogEnd)
            self.outcome = entry.outcome
            for requests in self.gates.values():
                last = requests[-1]
                if last.open:
                    last.abandoned = True
        elif kind is LogGateOpen:
            assert isinstance(entry, LogGateOpen)
            self.gates.setdefault(self.frame(entry.frame).number, []).append(
                TracedRequest(entry)
            )
        elif kind is LogGateDecided or kind is LogGateTimeout:
            assert isinstance(entry, LogGateDecided | LogGateTimeout)
            opened = self.gates.get(entry.frame, [])
            request = next((r for r in opened if r.opened.request == entry.request), None)
            if request is None:
                raise MalformedRunLogError(
                    f"the run log closes request {entry.request} of frame {entry.frame} before "
                    "opening it; read the log from its first entry"
                )
            if isinstance(entry, LogGateDecided):
                request.decided = entry
            else:
                request.timed_out = entry
        elif kind is LogStart:
            assert isinstance(entry, LogStart)
            if self.start is None:
                self.start = entry
                tables = self.tables
                root = TracedFrame(
                    0,
                    entry.entry,
                    "entry",
                    Route.root(entry.entry),
                    None,
                    tables.empty_outputs(),
                    tables.empty_artifacts(),
                )
                self.frames[0] = root
                self.frontier[0] = root
                self.next_frame = 1
        elif kind is LogAttempt:
            assert isinstance(entry, LogAttempt)
            attempted = self.frame(entry.frame)
            if attempted.started is None:
                attempted.started = entry.started
            if attempted.spend is None:
                attempted.spend = Spend()
            attempted.spend.add(entry.usage)
            self.spend.add(entry.usage)
            if entry.usage is not None:
                self.node_spend.setdefault(attempted.node, Spend()).add(entry.usage)
        else:
            assert isinstance(entry, LogSnapshot)

    def _edge(self, entry: LogEdge) -> None:
        source = self.frame(entry.source)
        after = source.after
        if after is None:
            raise MalformedRunLogError(
                f"an edge leaves frame {source.key} before it settled; the log is out of order"
            )
        route = source.route.child(
            edge_segment(entry.edge), edge_token(entry.edge), entry.node, entry.frame
        )
        target = TracedFrame(
            entry.frame, entry.node, entry.node_kind, route, entry.edge, after[0], after[1]
        )
        self._define(target)

    def _item(self, entry: LogItem) -> None:
        head = self.frame(entry.map)
        base, tables = head, (head.outputs, head.artifacts)
        if entry.after is not None:
            base = self.frame(entry.after)
            if base.after is None:
                raise MalformedRunLogError(
                    f"a loop's check follows frame {base.key} before it settled; the log is "
                    "out of order"
                )
            tables = base.after
        route = base.route.child(
            item_segment(head.node, entry.index),
            item_token(head.node, entry.index),
            head.node,
            entry.frame,
        )
        item = TracedFrame(entry.frame, head.node, head.kind, route, None, tables[0], tables[1])
        self._define(item)
        # An item frame is entered and settled by the next entries, and a loop's check is the
        # loop's own work (its frame, pending until the last check, stands for it): neither
        # waits in the frontier.
        self.frontier.pop(item.number, None)

    def _define(self, frame: TracedFrame[T, A]) -> None:
        self.frames[frame.number] = frame
        self.frontier[frame.number] = frame
        self.next_frame = max(self.next_frame, frame.number + 1)

    def _settle(self, entry: LogSettle) -> None:
        frame = self.frame(entry.frame)
        outputs, artifacts = frame.outputs, frame.artifacts
        if entry.status == "ok" and frame.kind in _ADDS_OUTPUT:
            outputs = self.tables.add_output(outputs, frame, entry.items)
            if entry.artifact is not None:
                artifacts = self.tables.add_artifact(artifacts, frame, entry.artifact)
        frame.after = (outputs, artifacts)
        frame.status = entry.status
        frame.attempt = entry.attempt
        self.frontier.pop(frame.number, None)
        self.halted.pop(frame.number, None)

    def _merge(self, entry: LogMerge) -> None:
        fork = self.frame(entry.fork)
        arrivals = [self.frame(number) for number in entry.arrivals]
        for arrival in arrivals:
            self.frontier.pop(arrival.number, None)
        self.barriers.pop((entry.node, fork.number), None)
        segment = join_segment(entry.node, entry.of)
        route = fork.route.child(segment, segments_key((segment,)), entry.node, entry.frame)
        tables = self.tables
        merged = TracedFrame(
            entry.frame,
            entry.node,
            "join",
            route,
            entry.via,
            tables.union_outputs([a.outputs for a in arrivals]),
            tables.union_artifacts([a.artifacts for a in arrivals]),
        )
        self._define(merged)
        # A merged frame is settled by the next entry; it never waits in the frontier.
        self.frontier.pop(merged.number, None)


def trace_log(
    entries: Iterable[LogEntry],
    tables: TableAlgebra[T, A],
    *,
    each: Callable[[LogEntry], None] | None = None,
) -> LogTrace[T, A]:
    """Feed every entry to a new :class:`LogTrace` (calling ``each`` after each one)."""
    trace: LogTrace[T, A] = LogTrace(tables)
    for entry in entries:
        trace.feed(entry)
        if each is not None:
            each(entry)
    return trace


class _NoTables:
    """A table algebra that builds nothing, for readers that need frames but not their tables."""

    def empty_outputs(self) -> None:
        return None

    def empty_artifacts(self) -> None:
        return None

    def add_output(
        self, table: None, frame: TracedFrame[None, None], items: tuple[OutputItem, ...]
    ) -> None:
        return None

    def add_artifact(
        self, table: None, frame: TracedFrame[None, None], handle: ArtifactHandle
    ) -> None:
        return None

    def union_outputs(self, tables: Sequence[None]) -> None:
        return None

    def union_artifacts(self, tables: Sequence[None]) -> None:
        return None


def settled_ok_nodes(entries: Iterable[LogEntry]) -> tuple[str, ...]:
    """The node ids whose frames settled ``ok``, in log order, each once.

    A ``settle`` names a frame; its node is the one the ``start`` (frame 0), ``edge`` or
    ``merge`` entry that defined the frame names. A node reached by several routes settles once
    per route and is listed at its first. A clone's ``completedAtClone`` is this list.

    Raises:
        MalformedRunLogError: the log does not open with ``start`` or names a frame before
            defining it.

    """
    trace: LogTrace[None, None] = LogTrace(_NoTables())
    nodes: dict[str, None] = {}
    for entry in entries:
        trace.feed(entry)
        if isinstance(entry, LogSettle) and entry.status == "ok":
            nodes.setdefault(trace.frames[entry.frame].node, None)
    return tuple(nodes)
