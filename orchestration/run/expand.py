"""The contract's view of a compact run log: ``expand_log(entries) -> list[RunEvent]``.

The compact log (:mod:`orchestration.run.log`) names frames by number and leaves routes, tables,
the frontier and the barriers implied; the contract's events carry them. Expansion reads the
log forward with :class:`~orchestration.run.trace.LogTrace` (the same reader the engine resumes
with) and builds each event: tables are structurally shared contract tables
(:class:`~orchestration.run.tables.Table`), and each frame's ``FrameRef`` and ``NodeOutput`` are
built once and shared by every event that names them, so expanding costs what the contract's
own objects cost and no more. What that is grows with the plan: a frame's ``BranchId`` holds
its whole route, and every ``frontier_snapshot`` lists the whole frontier.

``fold_run(expand_log(entries))`` is the run's projection; :func:`project_log` computes the
same projection without building the snapshots the fold never reads; :class:`LogExpander`
expands a log incrementally (a client reading a live run page by page keeps one).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from orchestration.run.engine.builders import (
    edge_taken,
    frame_ref,
    frontier_snapshot,
    join_arrival,
    join_state,
    node_entered,
    node_output,
    node_settled,
    outcome_ok,
    pending_frame,
)
from orchestration.run.fold import fold_run
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
    LogSettle,
    LogSnapshot,
    LogStart,
)
from orchestration.run.tables import Table
from orchestration.run.trace import LogTrace, TracedFrame
from orchestration.types import (
    ArtifactHandle,
    AttemptEnded,
    FrameRef,
    GateDecided,
    GateOpened,
    GateTimedOut,
    NodeOutput,
    OutcomeFailed,
    OutcomeSkipped,
    OutputItem,
    RunEvent,
    RunInterrupted,
    RunProjection,
    RunSettled,
    RunStarted,
)

__all__ = ["LogExpander", "expand_log", "gate_event", "project_log"]

Outputs = Table[NodeOutput]
Artifacts = Table[ArtifactHandle]
_Frame = TracedFrame[Outputs, Artifacts]
_NO_OUTPUTS: Outputs = Table()
_NO_ARTIFACTS: Artifacts = Table()


class _ContractTables:
    """Contract tables: keyed ``<nodeId>:<branchKey>``, values ``NodeOutput`` / handles."""

    def __init__(self) -> None:
        self.outputs: dict[int, NodeOutput] = {}

    def output(self, frame: _Frame, items: tuple[OutputItem, ...]) -> NodeOutput:
        """The frame's ``NodeOutput``, built once."""
        output = self.outputs.get(frame.number)
        if output is None:
            output = self.outputs[frame.number] = node_output(items, ref(frame).branch_id)
        return output

    def empty_outputs(self) -> Outputs:
        return _NO_OUTPUTS

    def empty_artifacts(self) -> Artifacts:
        return _NO_ARTIFACTS

    def add_output(self, table: Outputs, frame: _Frame, items: tuple[OutputItem, ...]) -> Outputs:
        return table.set(frame.key, self.output(frame, items), frame.node)

    def add_artifact(self, table: Artifacts, frame: _Frame, handle: ArtifactHandle) -> Artifacts:
        return table.set(frame.key, handle, frame.node)

    def union_outputs(self, tables: Sequence[Outputs]) -> Outputs:
        return Table.union(tables)

    def union_artifacts(self, tables: Sequence[Artifacts]) -> Artifacts:
        return Table.union(tables)


class _Views:
    """The contract objects of one frame, each built once.

    A live frame's table never changes, so every ``frontier_snapshot`` that lists it shares one
    ``PendingFrame`` (and a barrier's snapshots one ``JoinArrival`` per arrival).
    """

    __slots__ = ("arrival", "pending", "ref")

    def __init__(self, ref: FrameRef) -> None:
        self.ref = ref
        self.pending: Any = None
        self.arrival: Any = None


def _views(frame: _Frame) -> _Views:
    views = frame.view
    if views is None:
        views = frame.view = _Views(
            frame_ref(frame.node, frame.kind, frame.route.branch_id(), frame.via)
        )
    return views  # type: ignore[no-any-return]


def ref(frame: _Frame) -> FrameRef:
    """The frame's ``FrameRef``, built once."""
    return _views(frame).ref


def _pending(frame: _Frame) -> Any:
    views = _views(frame)
    if views.pending is None:
        views.pending = pending_frame(views.ref, frame.outputs, frame.artifacts)
    return views.pending


def _arrival(frame: _Frame) -> Any:
    views = _views(frame)
    if views.arrival is None:
        views.arrival = join_arrival(
            views.ref.branch_id, frame.via or "", frame.outputs, frame.artifacts
        )
    return views.arrival


class LogExpander:
    """Expands a compact log entry by entry, keeping what later entries refer back to."""

    def __init__(self) -> None:
        self._tables = _ContractTables()
        self.trace: LogTrace[Outputs, Artifacts] = LogTrace(self._tables)

    def expand(self, entries: Iterable[LogEntry]) -> list[RunEvent]:
        """The contract events of ``entries`` (which continue what was fed before)."""
        out: list[RunEvent] = []
        for entry in entries:
            event = self.feed(entry)
            if event is not None:
                out.append(event)
        return out

    def feed(  # noqa: C901 - one branch per kind
        self, entry: LogEntry, *, snapshot: bool = True
    ) -> RunEvent | None:
        """The contract event of one entry, or ``None``.

        ``None`` for ``merge`` and ``item`` (they only name a frame) and for a snapshot point
        when ``snapshot`` is false (the entry is still read). A gate entry gives its additive
        event (:func:`gate_event`).

        Raises:
            MalformedRunLogError: the first entry is not ``start``, an entry names a frame no
                earlier entry defined, or an edge leaves a frame that has not settled.

        """
        trace = self.trace
        trace.feed(entry)
        kind = type(entry)
        if kind is LogEnter:
            assert isinstance(entry, LogEnter)
            return node_entered(ref(trace.frames[entry.frame]), entry.at)
        if kind is LogEdge:
            assert isinstance(entry, LogEdge)
            source = trace.frames[entry.source]
            target = trace.frames[entry.frame]
            return edge_taken(
                entry.edge,
                entry.handle,
                ref(source),
                ref(target),
                target.outputs,
                target.artifacts,
                entry.evidence,
                entry.at,
            )
        if kind is LogSettle:
            assert isinstance(entry, LogSettle)
            frame = trace.frames[entry.frame]
            outcome: Any
            if entry.status == "ok":
                outcome = outcome_ok(self._tables.output(frame, entry.items))
            elif entry.status == "failed":
                assert entry.error is not None
                outcome = OutcomeFailed(handled=entry.handled, error=entry.error)
            else:
                outcome = OutcomeSkipped()
            return node_settled(ref(frame), outcome, entry.verdict, entry.at)
        if kind is LogCancel:
            assert isinstance(entry, LogCancel)
            cancelled = OutcomeSkipped(reason="join_cancelled")
            return node_settled(ref(trace.frames[entry.frame]), cancelled, None, entry.at)
        if kind is LogSnapshot or kind is LogArrive:
            return self._snapshot(entry.at) if snapshot else None  # type: ignore[union-attr]
        if kind is LogInterrupt:
            assert isinstance(entry, LogInterrupt)
            at_frame = None if entry.frame is None else ref(trace.frames[entry.frame])
            return RunInterrupted(cause=entry.cause, frame=at_frame, at=entry.at)
        if kind is LogEnd:
            assert isinstance(entry, LogEnd)
            return RunSettled(outcome=entry.outcome, at=entry.at)
        if kind is LogStart:
            assert isinstance(entry, LogStart)
            return RunStarted(run_id=entry.run_id, digest=entry.digest, at=entry.at)
        if kind is LogAttempt:
            assert isinstance(entry, LogAttempt)
            return AttemptEnded.model_construct(
                frame=ref(trace.frames[entry.frame]),
                attempt=entry.attempt,
                result=entry.result,
                started=entry.started,
                error=entry.error,
                reason=entry.reason,
                usage=entry.usage,
                origins=entry.origins,
                at=entry.at,
            )
        if isinstance(entry, LogGateOpen | LogGateDecided | LogGateTimeout):
            return gate_event(entry, ref(trace.frames[entry.frame]))
        return None

    def _snapshot(self, at: str) -> RunEvent:
        trace = self.trace
        frames = tuple(
            v.pending if (v := f.view) is not None and v.pending is not None else _pending(f)
            for f in trace.frontier.values()
        )
        joins = tuple(
            join_state(
                barrier.node,
                f"{barrier.node}@{barrier.fork.route.key}",
                tuple(_arrival(a) for a in barrier.arrivals),
                barrier.required,
            )
            for barrier in trace.barriers.values()
        )
        return frontier_snapshot(frames, joins, at)


def gate_event(entry: LogEntry, frame: FrameRef) -> RunEvent:
    """The additive event of a gate entry, for the frame it names.

    ``gate_open`` → ``gate_opened``, ``gate_decided`` → ``gate_decided``, ``gate_timeout`` →
    ``gate_timed_out``.
    """
    if isinstance(entry, LogGateOpen):
        request = entry.as_request()
        return GateOpened(frame=frame, request=request, at=entry.at)
    if isinstance(entry, LogGateDecided):
        return GateDecided(
            frame=frame,
            request=entry.request,
            decision=entry.decision,
            decided_by=entry.by,
            automatic=entry.automatic,
            feedback=entry.feedback,
            args=entry.args,
            digest=entry.digest,
            answers=entry.answers,
            at=entry.at,
        )
    assert isinstance(entry, LogGateTimeout)
    return GateTimedOut(frame=frame, request=entry.request, policy=entry.policy, at=entry.at)


def expand_log(entries: Iterable[LogEntry]) -> list[RunEvent]:
    """The contract's ``RunEvent`` list of a compact log (see the module docstring).

    Raises:
        MalformedRunLogError: the log does not open with ``start`` or is out of order.

    """
    return LogExpander().expand(entries)


def project_log(entries: Sequence[LogEntry]) -> RunProjection:
    """``fold_run(expand_log(entries))``, without the snapshots the fold never reads.

    The fold's frontier is the last ``frontier_snapshot`` advanced by the events after it, and
    nothing else in the projection reads a snapshot; but every snapshot lists the whole
    frontier, so the expanded log of a wide run with joins holds O(width) entries per arrival.
    Building only the last one keeps a projection linear in the log.

    Raises:
        MalformedRunLogError: the log does not open with ``start`` or is out of order.

    """
    last = -1
    for index in range(len(entries) - 1, -1, -1):
        if type(entries[index]) is LogSnapshot or type(entries[index]) is LogArrive:
            last = index
            break
    expander = LogExpander()
    events: list[RunEvent] = []
    for index, entry in enumerate(entries):
        event = expander.feed(entry, snapshot=index == last)
        if event is not None:
            events.append(event)
    return fold_run(events)
