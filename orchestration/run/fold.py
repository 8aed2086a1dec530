"""``fold_run(events) -> RunProjection``: where a run stands, from its event log alone.

The fold reads no graph, no store and no clock, so the projection of a live run, of a closed
run read back from history, and of any prefix of either is the same function of the events.
It is total over well-formed logs and refuses only a log that does not open with
``run_started`` (:class:`~orchestration.errors.MalformedRunLogError`).

Rules (the reference's, plus the two this project adds, marked *):

* ``runId`` / ``digest`` come from the first event; later ``run_started`` events are ignored.
* ``frameStatus``: ``node_entered`` marks a frame ``running`` unless it already has a status;
  ``node_settled`` marks it ``done`` / ``failed`` / ``skipped``. *A join arrival never settles
  under its own key: the barrier settles once, under the merged key. When the merged frame
  settles, every arrival entered for that barrier (same join, route extending the merged
  route's prefix) becomes ``done``, so a completed diamond does not report its join running.
* ``nodeStatusById``: per node, ``running`` if any frame is, else ``failed`` if any failed,
  else *``skipped`` if every frame was skipped, else ``done``.
* ``outputs``: every ``ok`` settlement's output, run-wide.
* ``indeterminate``: frames of kind ``call`` entered and never settled, deduplicated, in the
  order they were first entered.
* ``edgesTaken``: every ``edge_taken``, with its evidence.
* *``verdicts``: each branch and select frame's verdict and evidence, by frame key, including
  a verdict that fired no edge.
* ``frontier``: the last ``frontier_snapshot``, then advanced by the events after it: a
  ``node_settled`` removes its frame, an ``edge_taken`` adds its ``to`` frame with the tables
  it carries. Barriers come from that snapshot (the engine writes one whenever a barrier
  changes).
* ``outcome``: the last ``run_settled``, else ``running`` (liveness is never inferred). *Events
  after a ``run_settled`` mean the run was resumed (ruling 28): it is ``running`` again, and
  the run-wide cause recorded before no longer applies.
* ``interruption``: the run-wide cause of the last ``run_interrupted`` without a frame; else,
  *while a frame-scoped interruption (a halted indeterminate call) is unresolved, its cause.
  Re-entering or settling that frame resolves it.
* *``attempts``, ``argOrigins``, ``usage``, ``nodeUsage``: from each ``attempt_ended`` (additive):
  every attempt of each call, reason and transform frame in order, where a call's arguments
  came from, and the tokens and cost spent per node and in all. A log without such events (one
  written before they existed) folds to empty histories and zero usage.
* *``liveness`` stays empty: it is not history, and a reader with a clock adds it
  (:mod:`orchestration.run.liveness`).
* *``gates``: per frame key, every request a gate made (``gate_opened``), closed by its
  ``gate_decided`` or ``gate_timed_out``, or abandoned when a ``run_settled`` comes while it
  is open; the frame is ``awaiting_approval`` (arguments, result) or ``awaiting_input`` (an
  input request, a model's questions) while its last request is open. A call whose result
  is held at a gate has completed its attempt, so it is not indeterminate. A log without gate
  events folds exactly as before.

Tables in events are content, never keys: ``edge_taken`` and ``frontier_snapshot`` carry each
frame's ``outputs`` / ``artifacts`` themselves. In memory these are the engine's structurally
shared :class:`~orchestration.run.tables.Table` objects (so a log costs no copy per edge); on the
wire they are plain JSON objects. The seed's keys-only encoding is not used, so the fold reads
the tables as they are and needs no rehydration.

Speed matters (a projection query folds the whole log): one pass, dispatch on the exact event
class, frame keys memoised per ``FrameRef`` object (the engine shares one per frame across its
events), and only the events after the last snapshot touch the frontier.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from orchestration.errors import MalformedRunLogError
from orchestration.run.budgets import Spend
from orchestration.run.engine.builders import edge_taken_record, pending_frame
from orchestration.run.routes import AnySegment, EdgeSegment, JoinSegment, edge_token, segments_key
from orchestration.types import (
    AttemptEnded,
    AttemptRecord,
    EdgeTaken,
    EdgeTakenRecord,
    FrameGates,
    FrameRef,
    Frontier,
    FrontierSnapshot,
    GateDecided,
    GateOpened,
    GateRequest,
    GateTimedOut,
    InterruptionCause,
    JoinState,
    NodeEntered,
    NodeOutput,
    NodeSettled,
    OutcomeOk,
    PendingFrame,
    RunEvent,
    RunInterrupted,
    RunProjection,
    RunSettled,
    RunStarted,
    ValueOrigin,
    Verdict,
)

__all__ = [
    "FoldDetails",
    "FrameStatus",
    "NodeStatus",
    "Outcome",
    "fold_run",
    "fold_run_details",
    "node_status_rollup",
]

FrameStatus = Literal["running", "done", "failed", "skipped"]
NodeStatus = Literal["pending", "running", "done", "failed", "skipped"]
Outcome = Literal["running", "completed", "halted", "aborted"]

_STATUS: dict[str, FrameStatus] = {"ok": "done", "failed": "failed", "skipped": "skipped"}
_CLOSING = (RunSettled, RunInterrupted)


# A node's frames fold into a mask: _RUNNING if any runs, _FAILED if any failed, _NOT_SKIPPED if
# any is other than skipped. The rollup reads the mask once per node.
_RUNNING, _FAILED, _NOT_SKIPPED = 1, 2, 4
_MASK: dict[str, int] = {
    "running": _RUNNING | _NOT_SKIPPED,
    "failed": _FAILED | _NOT_SKIPPED,
    "done": _NOT_SKIPPED,
    "skipped": 0,
}
_ROLLUP: tuple[NodeStatus, ...] = tuple(
    "running"
    if mask & _RUNNING
    else "failed"
    if mask & _FAILED
    else "done"
    if mask & _NOT_SKIPPED
    else "skipped"
    for mask in range(8)
)


def node_status_rollup(frame_status: Mapping[str, str]) -> dict[str, NodeStatus]:
    """Per node id (the key up to its first ``:``), the rollup of its frames' statuses.

    ``running`` if any frame runs, else ``failed`` if any failed, else ``skipped`` if every
    frame was skipped, else ``done``. Nodes appear in the order their first frame does.
    """
    masks: defaultdict[str, int] = defaultdict(int)
    bits = _MASK
    nodes = [key[: key.find(":")] for key in frame_status]
    for node, status in zip(nodes, frame_status.values(), strict=True):
        masks[node] |= bits[status]
    rollup = _ROLLUP
    return {node: rollup[mask] for node, mask in masks.items()}


@dataclass(frozen=True, slots=True)
class FoldDetails:
    """The projection, and what resuming an engine needs beyond it.

    Attributes:
        projection: What :func:`fold_run` returns.
        entered: Every frame key ever entered, in first-entry order (the steps taken).
        halted: Frames whose interruption is unresolved, by key, with their cause.

    """

    projection: RunProjection
    entered: tuple[str, ...]
    halted: Mapping[str, InterruptionCause]


def fold_run(events: Sequence[RunEvent]) -> RunProjection:
    """Fold a run's events into its projection. Pure and total over well-formed logs.

    Raises:
        MalformedRunLogError: when ``events`` is empty or does not open with ``run_started``.

    """
    return fold_run_details(events).projection


def fold_run_details(events: Sequence[RunEvent]) -> FoldDetails:  # noqa: C901 - one pass
    """:func:`fold_run`, plus the entered keys and unresolved halts an engine resumes from."""
    first = events[0] if events else None
    if not isinstance(first, RunStarted):
        raise MalformedRunLogError("foldRun: malformed event list; first event must be run_started")
    status: dict[str, FrameStatus] = {}
    outputs: dict[str, NodeOutput] = {}
    calls: dict[str, FrameRef] = {}
    edges: list[EdgeTakenRecord] = []
    waiting: dict[str, dict[str, _Arrival]] = {}
    halted: dict[str, InterruptionCause] = {}
    verdicts: dict[str, Verdict] = {}
    gates: dict[str, _Gates] = {}
    entered: dict[str, None] = {}
    attempts: dict[str, list[AttemptRecord]] = {}
    origins: dict[str, dict[str, tuple[ValueOrigin, ...]]] = {}
    run_spend = Spend()
    node_spend: dict[str, Spend] = {}
    memo = _Keys()
    keys = memo.by_frame
    key_of = memo.render_frame
    run_cause: InterruptionCause | None = None
    outcome: Outcome = "running"
    snapshot: FrontierSnapshot | None = None

    edge_piece = memo.edge_piece
    record = edge_taken_record
    status_of = _STATUS
    for event in events:
        if (
            outcome != "running"
            and type(event) is not RunSettled
            and type(event) is not RunInterrupted
        ):
            # Events after run_settled: the run was resumed (ruling 28) and runs again.
            outcome, run_cause = "running", None
        # Dispatch on the exact class, commonest first (a log is mostly these three).
        if type(event) is EdgeTaken:
            edge_id = event.edge_id
            edges.append(record(edge_id, event.handle, event.evidence))
            target = event.to
            if id(target) not in keys:
                # The produced frame's key is its source's key plus this one edge's token,
                # when the event is what the contract says (target = source route + edge).
                source = keys.get(id(event.from_))
                route = target.branch_id.segments
                last = route[-1] if route else None
                if (
                    source is not None
                    and type(last) is EdgeSegment
                    and last.edge == edge_id
                    and len(route) == len(event.from_.branch_id.segments) + 1
                ):
                    bkey = source[1] + edge_piece(edge_id)
                    keys[id(target)] = (f"{target.node_id}:{bkey}", bkey)
        elif type(event) is NodeEntered:
            frame = event.frame
            key, bkey = keys.get(id(frame)) or key_of(frame)
            entered[key] = None
            if key not in status:
                status[key] = "running"
                kind = frame.kind
                if kind == "call":
                    calls[key] = frame
                elif kind == "join":
                    waiting.setdefault(frame.node_id, {})[key] = (bkey, frame.branch_id.segments)
            if halted:
                halted.pop(key, None)
        elif type(event) is NodeSettled:
            frame = event.frame
            kind = frame.kind
            pair = keys.get(id(frame))
            if pair is None and kind == "join":
                pair = memo.merged_frame(frame, waiting.get(frame.node_id))
            key, bkey = pair or key_of(frame)
            result = event.outcome
            status[key] = status_of[result.status]
            if type(result) is OutcomeOk:
                outputs[key] = result.output
            if kind == "call":
                calls.pop(key, None)
            elif kind == "join":
                _absorb_arrivals(frame, bkey, waiting, status, memo)
            elif event.verdict is not None:
                verdicts[key] = event.verdict
            if halted:
                halted.pop(key, None)
        elif type(event) is FrontierSnapshot:
            snapshot = event
        elif type(event) is RunInterrupted:
            if event.frame is None:
                run_cause = event.cause
            else:
                key = (keys.get(id(event.frame)) or key_of(event.frame))[0]
                halted.pop(key, None)
                halted[key] = event.cause
        elif type(event) is RunSettled:
            outcome = event.outcome
            for frame_gates in gates.values():
                frame_gates.abandon()
        elif type(event) is AttemptEnded:
            key = (keys.get(id(event.frame)) or key_of(event.frame))[0]
            attempts.setdefault(key, []).append(
                AttemptRecord.model_construct(
                    number=event.attempt,
                    result=event.result,
                    started=event.started,
                    ended=event.at,
                    error=event.error,
                    reason=event.reason,
                    usage=event.usage,
                )
            )
            if event.origins is not None:
                origins[key] = event.origins
            run_spend.add(event.usage)
            if event.usage is not None:
                node_id = event.frame.node_id
                spend = node_spend.get(node_id)
                if spend is None:
                    spend = node_spend[node_id] = Spend()
                spend.add(event.usage)
        elif type(event) is GateOpened or type(event) is GateDecided or (
            type(event) is GateTimedOut
        ):
            frame = event.frame
            key = (keys.get(id(frame)) or key_of(frame))[0]
            record_gate = gates.get(key)
            if record_gate is None:
                record_gate = gates[key] = _Gates(frame.node_id)
            record_gate.feed(event)
            if type(event) is GateOpened and event.request.gate == "result":
                calls.pop(key, None)  # its attempt completed; the result is held

    last_snapshot = -1
    if snapshot is not None:
        # Found from the end: few events follow the last snapshot.
        last_snapshot = len(events) - 1
        while events[last_snapshot] is not snapshot:
            last_snapshot -= 1
    frames, joins = _frontier(events, last_snapshot, keys, key_of)
    interruption = run_cause
    if interruption is None and halted:
        interruption = next(reversed(halted.values()))
    projection = RunProjection.model_construct(
        run_id=first.run_id,
        digest=first.digest,
        frame_status=status,
        node_status_by_id=node_status_rollup(status),
        outputs=outputs,
        frontier=Frontier.model_construct(frames=frames, joins=joins),
        indeterminate=tuple(calls.values()),
        edges_taken=tuple(edges),
        verdicts=verdicts,
        outcome=outcome,
        interruption=interruption,
        attempts={key: tuple(records) for key, records in attempts.items()},
        arg_origins=origins,
        usage=run_spend.totals(),
        node_usage={node: spend.totals() for node, spend in node_spend.items()},
        liveness={},
        gates={key: g.build() for key, g in gates.items()},
    )
    return FoldDetails(projection=projection, entered=tuple(entered), halted=halted)


class _Gates:
    """One frame's gate requests while the fold reads them (built into ``FrameGates``)."""

    __slots__ = ("node_id", "requests")

    def __init__(self, node_id: str) -> None:
        self.node_id = node_id
        self.requests: list[GateRequest] = []

    def feed(self, event: GateOpened | GateDecided | GateTimedOut) -> None:
        if isinstance(event, GateOpened):
            self.requests.append(event.request)
            return
        for index, request in enumerate(self.requests):
            if request.request != event.request:
                continue
            if isinstance(event, GateDecided):
                edited = event.args is not None and event.args != request.args
                update: dict[str, Any] = {
                    "outcome": event.decision,
                    "decided_at": event.at,
                    "decided_by": event.decided_by,
                    "automatic": event.automatic or None,
                    "feedback": event.feedback,
                    "edited_args": event.args if edited else None,
                    "ran_digest": event.digest,
                    "answers": event.answers,
                }
            else:
                update = {"outcome": "timed_out", "decided_at": event.at,
                          "on_timeout": event.policy}
            self.requests[index] = request.model_copy(update=update)
            return

    def abandon(self) -> None:
        if self.requests and self.requests[-1].outcome is None:
            self.requests[-1] = self.requests[-1].model_copy(update={"outcome": "abandoned"})

    def build(self) -> FrameGates:
        last = self.requests[-1] if self.requests else None
        current = last if last is not None and last.outcome is None else None
        status: Literal["awaiting_approval", "awaiting_input", "closed"] = "closed"
        if current is not None:
            waits_for_input = current.gate in ("input", "questions")
            status = "awaiting_input" if waits_for_input else "awaiting_approval"
        return FrameGates(
            node_id=self.node_id, status=status, current=current, history=tuple(self.requests)
        )


_Arrival = tuple[str, tuple[AnySegment, ...]]
"""A join arrival entered and not yet absorbed: its branch key and its route."""


class _Keys:
    """Frame keys, memoised per ``FrameRef`` object and rendered from cached segment tokens.

    Rendering a route costs its length, and a route that crossed many diamonds is long. So a
    frame's key is rendered once per ``FrameRef`` object (the engine shares one per frame
    across its events) and each segment's token once per edge id or join segment; the fold
    extends a produced frame's key from its source's instead of rendering it.
    """

    __slots__ = ("by_frame", "by_segment", "tokens")

    def __init__(self) -> None:
        self.by_frame: dict[int, tuple[str, str]] = {}
        self.by_segment: dict[int, str] = {}
        self.tokens: dict[object, str] = {}

    def edge_piece(self, edge: str) -> str:
        """An edge segment's rendering, by edge id, computed once per id."""
        token = self.tokens.get(edge)
        if token is None:
            token = self.tokens[edge] = edge_token(edge)
        return token

    def token(self, segment: AnySegment) -> str:
        """The segment's rendering, computed once per edge id or join segment."""
        if isinstance(segment, EdgeSegment):
            token = self.edge_piece(segment.edge)
        elif not isinstance(segment, JoinSegment):
            token = segments_key((segment,))
        else:
            ident = (segment.join, segment.of)
            known = self.tokens.get(ident)
            token = known if known is not None else segments_key((segment,))
            self.tokens[ident] = token
        self.by_segment[id(segment)] = token
        return token

    def merged_frame(
        self, frame: FrameRef, arrivals: Mapping[str, _Arrival] | None
    ) -> tuple[str, str] | None:
        """Key a merged join frame from one of its arrivals instead of rendering its route.

        The merged route is the barrier's prefix plus one join segment, and every arrival's
        route extends that prefix; so the prefix's key is an arrival's key minus the tokens of
        the few segments after the prefix. ``None`` when no waiting arrival fits (the caller
        then renders the route).
        """
        segments = frame.branch_id.segments
        if not arrivals or not segments:
            return None
        last = segments[-1]
        if type(last) is not JoinSegment or last.join != frame.node_id:
            return None
        cut = len(segments) - 1
        prefix = segments[:cut]
        by_segment = self.by_segment
        for bkey, route in arrivals.values():
            if len(route) > cut and route[:cut] == prefix:
                end = len(bkey)
                for segment in route[cut:]:
                    end -= len(by_segment.get(id(segment)) or self.token(segment))
                merged = bkey[:end] + self.token(last)
                pair = (f"{frame.node_id}:{merged}", merged)
                self.by_frame[id(frame)] = pair
                return pair
        return None

    def render_frame(self, frame: FrameRef) -> tuple[str, str]:
        """Render, memoise and return ``(frame key, branch key)``.

        Segment tokens are looked up by segment object (every event keeps its segments
        alive for the whole fold, so ids are stable); a segment not seen yet is tokenised once.
        Only the entry and merged join frames get here (every other frame's key is extended
        from its source's), and each merged frame brings one join segment not seen before.
        """
        segments = frame.branch_id.segments
        parts = list(map(self.by_segment.get, map(id, segments)))
        if None in parts:
            parts = [part or self.token(segments[i]) for i, part in enumerate(parts)]
        bkey = "".join(parts)  # type: ignore[arg-type]
        pair = (f"{frame.node_id}:{bkey}", bkey)
        self.by_frame[id(frame)] = pair
        return pair


def _absorb_arrivals(
    frame: FrameRef,
    bkey: str,
    waiting: dict[str, dict[str, _Arrival]],
    status: dict[str, FrameStatus],
    memo: _Keys,
) -> None:
    """Mark ``done`` the arrivals a merged join frame settled for (see the module docstring)."""
    segments = frame.branch_id.segments
    pending = waiting.get(frame.node_id)
    if not pending or not segments:
        return
    last = segments[-1]
    if type(last) is not JoinSegment or last.join != frame.node_id:
        return
    prefix = bkey[: len(bkey) - len(memo.token(last))]
    for key, (arrival, _) in list(pending.items()):
        if arrival.startswith(prefix) and status.get(key) == "running":
            status[key] = "done"
            del pending[key]


def _frontier(
    events: Sequence[RunEvent],
    last_snapshot: int,
    keys: dict[int, tuple[str, str]],
    key_of: Any,
) -> tuple[tuple[PendingFrame, ...], tuple[JoinState, ...]]:
    """The last snapshot's frontier, advanced by the events after it."""
    joins: tuple[JoinState, ...] = ()
    snapshot_frames: tuple[PendingFrame, ...] = ()
    snapshot = events[last_snapshot] if last_snapshot >= 0 else None
    if isinstance(snapshot, FrontierSnapshot):
        snapshot_frames, joins = snapshot.frames, snapshot.joins
    later = events[last_snapshot + 1 :]
    if not any(isinstance(e, NodeSettled | EdgeTaken) for e in later):
        return snapshot_frames, joins
    frames: dict[str, PendingFrame] = {}
    for pending in snapshot_frames:
        frames[(keys.get(id(pending.frame)) or key_of(pending.frame))[0]] = pending
    for event in later:
        if isinstance(event, NodeSettled):
            frames.pop((keys.get(id(event.frame)) or key_of(event.frame))[0], None)
        elif isinstance(event, EdgeTaken):
            target = event.to
            key = (keys.get(id(target)) or key_of(target))[0]
            frames[key] = pending_frame(target, event.outputs, event.artifacts)
    return tuple(frames.values()), joins
