"""The sans-IO run engine: a pure state machine that walks a frozen plan, one settlement at a time.

A host drives it: the Temporal workflow in production, :func:`orchestration.testing.run_in_process`
in tests. The host asks for ready work (:meth:`RunEngine.ready`), runs it however it likes
(activities, concurrently), and hands each result back (:meth:`RunEngine.settle`) in whatever
order results arrive. The engine answers with the run-event log (:meth:`RunEngine.drain_events`)
and the next ready work. It performs no I/O, reads no clock (every method that records takes
``at``), draws no randomness, and iterates only lists and insertion-ordered dicts, so the same
calls in the same order produce the same events in every process: what a workflow replay needs.

Invariants it protects:

* **Frames and routes.** A frame is one execution of one node, identified by the route that
  reached it; a route grows by one edge segment per edge, and a join replaces the arriving
  routes by their correlation prefix plus ``{join, of}``. Tables are keyed
  ``<nodeId>:<branchKey>``, which is injective, so no frame's output can overwrite another's.
* **Branch-local tables.** Each frame sees the outputs (and artifact handles) of its own route
  only. Tables are persistent maps (:class:`~orchestration.tables.Table`): a fan-out hands every
  successor the same table object, so its cost does not grow with the table.
* **Commit protocol.** ``node_entered`` is recorded before a frame is handed out; a settlement
  is one batch ``node_settled`` + ``edge_taken``* + ``frontier_snapshot``; an unhandled failure
  is ``node_settled`` alone; the end is ``run_interrupted``? + ``run_settled``. With a window of
  one the event order is the reference's sequential order.
* **Edge firing.** On success every applicable edge fires exactly once, duplicates included;
  ``default`` only when nothing else fired; ``always`` never for a branch, select or failure; a
  failure fires only ``error`` edges, and with none the run ends.
* **Joins are engine state.** A barrier is keyed by the arriving route truncated at the join's
  fork (its immediate dominator; a fork at the entry truncates to the empty route), closes when
  ``required`` distinct ``(edge, route)`` arrivals have landed (repeats are idempotent), and
  settles once under the merged identity with the union of the arrivals' tables. A barrier that
  no live frame can still reach is ``join_unsatisfiable`` at once: each barrier counts the live
  frames in its region whose route extends its prefix, updated as frames come and go.
* **Budgets.** ``maxSteps`` counts node entries (join arrivals and the entry included; a retry
  of an entered frame is not a new entry); at most ``min(maxConcurrentFrames, max_in_flight)``
  frames are in flight.
* **Graceful ends.** Once a cause to end is known (an unhandled failure, the budget, an
  unsatisfiable join, a stop), nothing new starts; frames already in flight still settle and
  are recorded, then ``run_interrupted`` + ``run_settled`` close the log. The first cause wins.

``RunEngine.projection()`` is the engine's own account of where the run stands; ``fold_run``
of the events recorded so far equals it after every call (a property test holds both to it).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any, Literal, NoReturn, cast

from pydantic import ValidationError

from orchestration.contracts import PredicateContext
from orchestration.encoding import validate_value
from orchestration.engine_events import (
    branch_id,
    edge_taken,
    edge_taken_record,
    frame_ref,
    frontier_snapshot,
    join_arrival,
    node_entered,
    node_output,
    node_settled,
    outcome_ok,
    output_item,
    pending_frame,
)
from orchestration.engine_plan import CompiledPlan, Hop
from orchestration.engine_state import Barrier, Frame
from orchestration.engine_types import (
    Decided,
    Dispatch,
    Failed,
    SettleResult,
    Skipped,
    Succeeded,
)
from orchestration.errors import EngineStateError, UnencodableValueError, UnrunnablePlanError
from orchestration.resolve import MissingValue, output_for, resolve_args, resolve_prompt
from orchestration.routes import EdgeSegment, JoinSegment, branch_key
from orchestration.run_input import check_run_input
from orchestration.runs import FrameStatus, Outcome, fold_run_details, node_status_rollup
from orchestration.tables import Table
from orchestration.types import (
    ArtifactHandle,
    BudgetExhausted,
    CallNode,
    EdgeTakenRecord,
    EntryNode,
    ErrorInfo,
    FrameRef,
    Frontier,
    FrontierSnapshot,
    InterruptionCause,
    JoinState,
    JoinUnsatisfiable,
    NodeFailed,
    NodeOutput,
    NodeSettled,
    OutcomeFailed,
    OutcomeSkipped,
    OutputItem,
    OutputSchemaViolation,
    PendingFrame,
    PlanNode,
    PredicateUnevaluatable,
    RawPlanView,
    ReasonNode,
    RunEvent,
    RunInterrupted,
    RunProjection,
    RunSettled,
    RunStarted,
    TransformNode,
)

__all__ = [
    "DEFAULT_MAX_IN_FLIGHT",
    "Decided",
    "Dispatch",
    "Failed",
    "RunEngine",
    "SettleResult",
    "Skipped",
    "Succeeded",
    "indeterminate_action",
    "outcome_for",
]

DEFAULT_MAX_IN_FLIGHT = 1000
"""The host's own cap on frames in flight; Temporal wedges a workflow past 2,000 pending."""

_HALTING = frozenset(
    {"budget_exhausted", "join_unsatisfiable", "predicate_unevaluatable", "gate_timeout"}
)
_EMPTY_OUTPUTS: Table[NodeOutput] = Table()
_EMPTY_ARTIFACTS: Table[ArtifactHandle] = Table()
_ACTIVITY_KINDS = ("call", "reason", "transform")


def indeterminate_action(node: PlanNode) -> Literal["retry", "skip", "halt"]:
    """What a host does with a call whose outcome is unknown (it started, then lost contact).

    ``skip`` settles it skipped; ``retry`` repeats it, but only when the tool is replay-safe:
    a non-replay-safe call is never repeated without an operator's decision, so ``retry``
    without ``replaySafe`` halts like ``halt`` does (freeze refuses that combination anyway).
    Non-call frames hold no side effect and are simply retried.
    """
    if not isinstance(node, CallNode):
        return "retry"
    policy = node.definition.on_indeterminate
    if policy == "skip":
        return "skip"
    if policy == "retry" and node.definition.replay_safe:
        return "retry"
    return "halt"


def outcome_for(cause: InterruptionCause | None) -> Literal["completed", "halted", "aborted"]:
    """How a run ends, by cause.

    No cause completes; the plan's own content or bounds halt it (budget, unsatisfiable join,
    unevaluatable predicate, gate timeout); a failure or an outside act aborts it (everything
    else).
    """
    if cause is None:
        return "completed"
    return "halted" if cause.kind in _HALTING else "aborted"


class RunEngine:
    """One run of one frozen plan, as a pure state machine.

    Build it with :meth:`start`, :meth:`resume` or :meth:`refuse`; drive it with :meth:`ready`
    and :meth:`settle`.

    The typical host loop (a Temporal workflow; ``now()`` is ``workflow.now()`` as ISO-8601)::

        engine = RunEngine.start(view, run_id, run_input, now())
        record(engine.drain_events())
        while not engine.done:
            for d in engine.ready(now()):
                start_activity(d, activity_id=d.key)       # or evaluate a branch/select
            key, result = await next_settlement()          # Succeeded/Decided/Failed/Skipped
            engine.settle(key, result, now())
            record(engine.drain_events())

    Frames handed out by :meth:`ready` must each be settled exactly once (or retried, or
    interrupted). Results may come back in any order.
    """

    def __init__(
        self,
        plan: CompiledPlan,
        run_id: str,
        digest: str,
        *,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
    ) -> None:
        if max_in_flight < 1:
            raise ValueError("max_in_flight must be at least 1")
        self._plan = plan
        self.run_id = run_id
        self.digest = digest
        self._window = max(1, min(plan.max_concurrent, max_in_flight))
        self._log: list[RunEvent] = []
        # Live frames (queued, in flight, or waiting to arrive at a join) by node id, then key:
        # opening a barrier counts only the frames on its region's nodes.
        self._live: dict[str, dict[str, Frame]] = {}
        # Live frames a snapshot listed (by key, in creation order), and those created since.
        self._pending: dict[str, PendingFrame] = {}
        self._fresh: list[Frame] = []
        self._queue: deque[Frame] = deque()
        self._running: dict[str, Frame] = {}
        self._halted: dict[str, InterruptionCause] = {}
        self._recovered: dict[str, None] = {}
        self._barriers: dict[str, Barrier] = {}
        # Open barriers by the region nodes they watch, and those no live frame can reach.
        self._watch: dict[str, list[Barrier]] = {}
        self._unreachable: dict[str, Barrier] = {}
        self._join_states: tuple[JoinState, ...] | None = ()
        self._joins_version = 0
        self._snapshot_version = 0
        self._status: dict[str, FrameStatus] = {}
        self._outputs: dict[str, NodeOutput] = {}
        self._calls: dict[str, FrameRef] = {}
        # Fired edges, recorded cheaply (the edge, with its evidence when there is any);
        # turned into records only when a projection is asked for.
        self._edges: list[EdgeTakenRecord | Hop | tuple[Hop, Any]] = []
        self._steps = 0
        self._draining: InterruptionCause | None = None
        self._run_cause: InterruptionCause | None = None
        self._outcome: Outcome = "running"

    # ------------------------------------------------------------------------------------
    # Construction
    # ------------------------------------------------------------------------------------

    @classmethod
    def start(
        cls,
        view: RawPlanView,
        run_id: str,
        run_input: Mapping[str, Any],
        at: str,
        *,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
    ) -> RunEngine:
        """Begin a run: check the plan and the input, then record the start and the entry.

        Records ``run_started``, the entry frame's ``node_entered``, and its settlement (the
        whole input object as the entry's one output item) with its edges and a snapshot.

        Args:
            view: The frozen plan.
            run_id: The run's id (the plan's one run).
            run_input: The run's input, checked against the entry's declared fields.
            at: ISO-8601 time of the start.
            max_in_flight: The host's cap on frames in flight (the plan's
                ``maxConcurrentFrames`` applies too; the smaller wins).

        Raises:
            UnrunnablePlanError: the view has no single entry, a dangling edge or a cycle.
            InvalidRunInputError: the input does not satisfy the entry's declared fields.
                Both are raised before any event exists.

        """
        plan = CompiledPlan(view)
        entry = plan.entry
        assert isinstance(entry, EntryNode)
        check_run_input(entry.definition.input, run_input)
        engine = cls(plan, run_id, view.digest, max_in_flight=max_in_flight)
        engine._record(RunStarted(run_id=run_id, digest=view.digest, at=at))
        engine._run_entry(dict(run_input), at, count_step=True)
        engine._after(at)
        return engine

    @classmethod
    def refuse(cls, view: RawPlanView, run_id: str, cause: InterruptionCause, at: str) -> RunEngine:
        """A run that starts and ends before any node is entered (a ``deviation_abort``).

        Records ``run_started``, ``run_interrupted{cause}`` and ``run_settled``.
        """
        plan = CompiledPlan(view)
        engine = cls(plan, run_id, view.digest)
        engine._record(RunStarted(run_id=run_id, digest=view.digest, at=at))
        engine._finish(cause, at)
        return engine

    @classmethod
    def resume(
        cls,
        view: RawPlanView,
        events: Sequence[RunEvent],
        *,
        run_input: Mapping[str, Any] | None = None,
        steps: int | None = None,
        at: str | None = None,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
    ) -> RunEngine:
        """Rebuild an engine from a run's log, to continue it in this process.

        ``events`` is the whole log, or, to continue a run as new elsewhere, its ``run_started``
        followed by a ``frontier_snapshot`` (and anything after it); pass ``steps`` (the old
        engine's :attr:`steps`) when the log does not hold every entry. Continue as new only
        when nothing is in flight.

        From the frontier: frames never entered are queued in order; an entered, unsettled
        frame of any kind but ``call`` is queued to be entered again (not a new step); an
        entered, unsettled ``call`` is *recovered*: its side effect may or may not have
        happened, so it waits in :attr:`recovered` for the host's ``onIndeterminate`` decision
        (:meth:`retry`, ``settle(key, Skipped())`` or :meth:`interrupt_frame`). Open barriers
        come back with their arrivals. The new events start empty; with ``at``, the new segment
        opens with a ``frontier_snapshot``.

        Raises:
            MalformedRunLogError: the log does not open with ``run_started``.
            UnrunnablePlanError: the view cannot be walked, or the log names nodes it lacks.
            EngineStateError: the entry never settled and no ``run_input`` (and ``at``) was
                given.

        """
        plan = CompiledPlan(view)
        details = fold_run_details(events)
        projection = details.projection
        engine = cls(plan, projection.run_id, projection.digest, max_in_flight=max_in_flight)
        engine._status = dict(projection.frame_status)
        engine._outputs = dict(projection.outputs)
        engine._edges = list(projection.edges_taken)
        engine._steps = len(details.entered) if steps is None else steps
        for ref in projection.indeterminate:
            engine._calls[f"{ref.node_id}:{branch_key(ref.branch_id)}"] = ref
        if projection.outcome != "running":
            engine._outcome = projection.outcome
            engine._run_cause = projection.interruption
            return engine
        for pending in projection.frontier.frames:
            engine._restore_frame(pending, details.halted)
        for state in projection.frontier.joins:
            engine._restore_barrier(state)
        entry_key = f"{plan.entry.id}:"
        # A continued log starts with a snapshot, so its entry settled in an earlier segment.
        entry_settled = any(
            isinstance(event, FrontierSnapshot)
            or (isinstance(event, NodeSettled) and event.frame.node_id == plan.entry.id)
            for event in events
        )
        if not entry_settled:
            if run_input is None or at is None:
                raise EngineStateError(
                    "the log ends before the entry node settled; resume with run_input and at "
                    "so the entry's output can be materialised"
                )
            # The entry's settlement batch ends with the snapshot the new segment opens with.
            engine._run_entry(dict(run_input), at, count_step=entry_key not in details.entered)
        elif at is not None:
            engine._record(engine._snapshot_event(at))
        if at is not None:
            engine._after(at)
        return engine

    def _restore_frame(
        self, pending: PendingFrame, halted: Mapping[str, InterruptionCause]
    ) -> None:
        ref = pending.frame
        node = self._plan.nodes.get(ref.node_id)
        if node is None:
            raise UnrunnablePlanError(
                f'the run log names node "{ref.node_id}", which this plan does not have; '
                "resume with the plan the run started with"
            )
        bkey = branch_key(ref.branch_id)
        frame = Frame(
            f"{ref.node_id}:{bkey}",
            bkey,
            ref,
            ref.branch_id.segments,
            node,
            Table.of(pending.outputs),
            Table.of(pending.artifacts),
        )
        frame.pending = pending
        self._add_live(frame)
        if self._status.get(frame.key) != "running":
            self._queue.append(frame)
            return
        dispatch = self._dispatch_for(frame) if node.kind == "call" else None
        if isinstance(dispatch, Dispatch):
            frame.dispatch = dispatch
            self._running[frame.key] = frame
            if frame.key in halted:
                self._halted[frame.key] = halted[frame.key]
            else:
                self._recovered[frame.key] = None
        else:
            frame.reentry = True
            self._queue.append(frame)

    def _restore_barrier(self, state: JoinState) -> None:
        facts = self._plan.join(state.node_id)
        prefix_key = state.correlation_key[len(state.node_id) + 1 :]
        prefix: tuple[EdgeSegment | JoinSegment, ...] = ()
        if state.arrivals:
            segments = state.arrivals[0].branch.segments
            cut, _ = self._plan.cut_at_fork(
                segments, branch_key(state.arrivals[0].branch), facts.fork
            )
            prefix = segments[:cut]
        barrier = Barrier(facts, state.correlation_key, prefix, prefix_key)
        for arrival in state.arrivals:
            bkey = branch_key(arrival.branch)
            barrier.add(arrival, bkey, f"{state.node_id}:{bkey}")
        self._open_barrier(barrier)
        self._invalidate_joins()

    # ------------------------------------------------------------------------------------
    # Observation
    # ------------------------------------------------------------------------------------

    @property
    def done(self) -> bool:
        """Whether ``run_settled`` has been recorded."""
        return self._outcome != "running"

    @property
    def outcome(self) -> Outcome:
        """``running`` until the run settles, then ``completed``, ``halted`` or ``aborted``."""
        return self._outcome

    @property
    def interruption(self) -> InterruptionCause | None:
        """The run's cause to end once recorded; else an unresolved halted frame's cause."""
        if self._run_cause is not None:
            return self._run_cause
        if self._halted:
            return next(reversed(self._halted.values()))
        return None

    @property
    def stopping(self) -> InterruptionCause | None:
        """The cause the run is ending with, while frames in flight still settle."""
        return None if self.done else self._draining

    @property
    def steps(self) -> int:
        """Node entries so far (the count ``maxSteps`` bounds)."""
        return self._steps

    @property
    def window(self) -> int:
        """How many frames may be in flight at once."""
        return self._window

    @property
    def in_flight(self) -> tuple[str, ...]:
        """Keys of the frames handed out and not yet settled, in dispatch order.

        Empty once the run has settled (a halted frame left unsettled stays indeterminate in
        the projection, but nothing is in flight any more).
        """
        return () if self.done else tuple(self._running)

    @property
    def halted(self) -> tuple[str, ...]:
        """Keys of frames interrupted by :meth:`interrupt_frame` that await a decision.

        Empty once the run is ending or has settled: a stop overrides every pending decision.
        """
        if self.done or self._draining is not None:
            return ()
        return tuple(self._halted)

    @property
    def recovered(self) -> tuple[Dispatch, ...]:
        """Calls a resumed log shows entered and unsettled, awaiting the host's decision."""
        if self.done:
            return ()
        out: list[Dispatch] = []
        for key in self._recovered:
            dispatch = self._running[key].dispatch
            assert dispatch is not None
            out.append(dispatch)
        return tuple(out)

    def drain_events(self) -> list[RunEvent]:
        """Hand over the events recorded since the last drain, in order.

        The engine keeps no copy: the host owns the log (a workflow appends them to its own,
        a test collects them), so the engine's memory does not grow with the log.
        """
        new = self._log
        self._log = []
        return new

    def frontier(self) -> Frontier:
        """Live frames (queued and in flight, in creation order) and open barriers."""
        return Frontier.model_construct(frames=self._pending_frames(), joins=self._barrier_states())

    def projection(self) -> RunProjection:
        """The engine's own account of the run; equals ``fold_run`` of its events."""
        status = dict(self._status)
        return RunProjection.model_construct(
            run_id=self.run_id,
            digest=self.digest,
            frame_status=status,
            node_status_by_id=node_status_rollup(status),
            outputs=dict(self._outputs),
            frontier=self.frontier(),
            indeterminate=tuple(self._calls.values()),
            edges_taken=tuple(self._edge_records()),
            outcome=self._outcome,
            interruption=self.interruption,
        )

    def _edge_records(self) -> list[EdgeTakenRecord]:
        records: list[EdgeTakenRecord] = []
        for fired in self._edges:
            if type(fired) is Hop:
                records.append(edge_taken_record(fired.edge_id, fired.handle, None))
            elif type(fired) is tuple:
                hop, evidence = cast(tuple[Hop, Any], fired)
                records.append(edge_taken_record(hop.edge_id, hop.handle, evidence))
            else:
                records.append(cast(EdgeTakenRecord, fired))
        return records

    # ------------------------------------------------------------------------------------
    # Driving
    # ------------------------------------------------------------------------------------

    def ready(self, at: str) -> list[Dispatch]:
        """Enter and hand out the frames that may run now, oldest first.

        Joins, and calls whose references fail to resolve, are settled here without being
        handed out. Nothing is handed out while the run is ending or a frame is halted.
        """
        out: list[Dispatch] = []
        if self.done or self._draining is not None or self._halted:
            self._after(at)
            return out
        queue = self._queue
        running = self._running
        window = self._window
        max_steps = self._plan.max_steps
        while queue and len(running) < window:
            frame = queue[0]
            if frame.reentry:
                frame.reentry = False
            elif self._steps >= max_steps:
                self._begin_end(BudgetExhausted(settled=self._steps))
                break
            else:
                self._steps += 1
            queue.popleft()
            self._enter(frame, at)
            if frame.kind == "join":
                self._arrive(frame, at)
            else:
                dispatch = self._dispatch_for(frame)
                if type(dispatch) is Dispatch:
                    frame.dispatch = dispatch
                    running[frame.key] = frame
                    out.append(dispatch)
                else:
                    self._fail(frame, cast(Failed, dispatch), at)
            if self._unreachable:
                self._check_barriers()
            if self._draining is not None:
                break
        self._after(at)
        return out

    def settle(self, key: str, result: SettleResult, at: str) -> None:
        """Record how an in-flight frame ended, fire its edges, and move the run on.

        Args:
            key: The frame key of a frame handed out by :meth:`ready` or :meth:`retry`.
            result: ``Succeeded`` (call, reason, transform), ``Decided`` (branch, select),
                ``Failed`` (any), or ``Skipped`` (call, reason, transform).
            at: ISO-8601 time of the settlement.

        Raises:
            EngineStateError: the frame is not in flight, or the result does not fit its kind.

        """
        frame = self._running.get(key)
        if frame is None or self.done:
            raise EngineStateError(
                f'frame "{key}" is not in flight; settle each frame ready() or retry() handed '
                "out exactly once"
            )
        kind = frame.kind
        result_type = type(result)
        if result_type is Succeeded:
            if kind not in _ACTIVITY_KINDS:
                self._refuse(key, "Succeeded", kind)
            self._release(key)
            self._succeed(frame, cast(Succeeded, result), at)
        elif result_type is Decided:
            if kind != "branch" and kind != "select":
                self._refuse(key, "Decided", kind)
            self._release(key)
            self._decide(frame, cast(Decided, result), at)
        elif result_type is Failed:
            self._release(key)
            self._fail(frame, cast(Failed, result), at)
        elif result_type is Skipped:
            if kind not in _ACTIVITY_KINDS:
                self._refuse(key, "Skipped", kind)
            self._release(key)
            self._skip(frame, at)
        else:
            raise EngineStateError(
                f"{result_type.__name__} is not a settle result; pass Succeeded, Decided, "
                "Failed or Skipped"
            )
        if self._unreachable:
            self._check_barriers()
        self._after(at)

    def retry(self, key: str, at: str) -> Dispatch:
        """Hand an in-flight frame out again.

        For an indeterminate call retried, or an operator's retry of a halted one. Records
        ``node_entered`` again; it is not a new step.

        Raises:
            EngineStateError: the frame is not in flight, or the run is ending.

        """
        frame = self._running.get(key)
        if frame is None or self.done or self._draining is not None:
            raise EngineStateError(
                f'frame "{key}" cannot be retried: only a frame in flight of a run that is not '
                "ending can be"
            )
        self._halted.pop(key, None)
        self._recovered.pop(key, None)
        frame.attempt += 1
        self._record(node_entered(frame.ref, at))
        assert frame.dispatch is not None
        frame.dispatch = frame.dispatch._replace(attempt=frame.attempt)
        return frame.dispatch

    def interrupt_frame(self, key: str, cause: InterruptionCause, at: str) -> None:
        """Halt an in-flight frame whose outcome is unknown (``onIndeterminate: halt``).

        Records ``run_interrupted{cause, frame}`` without ending the run: nothing new starts
        until the frame is decided by :meth:`retry`, ``settle(key, Skipped())``, or
        :meth:`stop` (an operator's abort).

        Raises:
            EngineStateError: the frame is not in flight.

        """
        frame = self._running.get(key)
        if frame is None or self.done:
            raise EngineStateError(f'frame "{key}" is not in flight; only such a frame halts')
        self._recovered.pop(key, None)
        self._halted.pop(key, None)
        self._halted[key] = cause
        self._record(RunInterrupted(cause=cause, frame=frame.ref, at=at))
        self._after(at)

    def stop(self, cause: InterruptionCause, at: str) -> None:
        """End the run from outside (``operator_stop``, ``turn_abort``, ...).

        Nothing new starts; frames in flight still settle and are recorded; then
        ``run_interrupted{cause}`` and ``run_settled`` (outcome by cause) close the log. Halted
        and recovered frames are not waited for. A no-op once the run has settled, and the
        first cause wins if the run is already ending.
        """
        if self.done:
            return
        self._begin_end(cause)
        self._after(at)

    def snapshot(self, at: str) -> FrontierSnapshot:
        """Record and return a ``frontier_snapshot`` of the live frames and open barriers.

        Raises:
            EngineStateError: the run has settled.

        """
        if self.done:
            raise EngineStateError("the run has settled; there is no frontier to snapshot")
        event = self._snapshot_event(at)
        self._record(event)
        return event

    # ------------------------------------------------------------------------------------
    # Internals: recording, frames, tables
    # ------------------------------------------------------------------------------------

    def _record(self, event: RunEvent) -> None:
        self._log.append(event)

    def _invalidate_joins(self) -> None:
        self._join_states = None
        self._joins_version += 1

    def _snapshot_event(self, at: str) -> FrontierSnapshot:
        self._snapshot_version = self._joins_version
        return frontier_snapshot(self._pending_frames(), self._barrier_states(), at)

    def _pending_frames(self) -> tuple[PendingFrame, ...]:
        """The live frames as snapshots list them, in creation order.

        A frame's ``PendingFrame`` is built the first time a snapshot includes it: snapshots
        follow barrier changes, and most frames settle before one is taken. Frames created
        since the last snapshot are all newer than the ones it listed, so appending the
        survivors keeps creation order.
        """
        fresh = self._fresh
        if fresh:
            live, pending = self._live, self._pending
            for frame in fresh:
                bucket = live.get(frame.node_id)
                if bucket is not None and bucket.get(frame.key) is frame:
                    frame.pending = pending[frame.key] = pending_frame(
                        frame.ref, frame.outputs, frame.artifacts
                    )
            fresh.clear()
        return tuple(self._pending.values())

    def _barrier_states(self) -> tuple[JoinState, ...]:
        states = self._join_states
        if states is None:
            states = self._join_states = tuple(b.state() for b in self._barriers.values())
        return states

    def _add_live(self, frame: Frame) -> None:
        bucket = self._live.get(frame.node_id)
        if bucket is None:
            self._live[frame.node_id] = {frame.key: frame}
        else:
            bucket[frame.key] = frame
        if frame.pending is None:
            self._fresh.append(frame)
        else:
            self._pending[frame.key] = frame.pending
        watchers = self._watch.get(frame.node_id)
        if watchers:
            self._watched(frame, watchers, 1)

    def _remove_live(self, frame: Frame) -> None:
        bucket = self._live.get(frame.node_id)
        if bucket is None or bucket.pop(frame.key, None) is None:
            return
        self._pending.pop(frame.key, None)
        watchers = self._watch.get(frame.node_id)
        if watchers:
            self._watched(frame, watchers, -1)

    def _watched(self, frame: Frame, watchers: list[Barrier], change: int) -> None:
        """A live frame on a watched node came (+1) or went (-1): adjust its barriers' counts."""
        bkey = frame.bkey
        for barrier in watchers:
            if bkey.startswith(barrier.prefix_key):
                barrier.live += change
                if barrier.live <= 0:
                    self._unreachable[barrier.key] = barrier
                else:
                    self._unreachable.pop(barrier.key, None)

    def _release(self, key: str) -> None:
        del self._running[key]
        self._recovered.pop(key, None)

    def _enter(self, frame: Frame, at: str) -> None:
        self._record(node_entered(frame.ref, at))
        if frame.key not in self._status:
            self._status[frame.key] = "running"
            if frame.kind == "call":
                self._calls[frame.key] = frame.ref
        self._halted.pop(frame.key, None)

    def _run_entry(self, run_input: dict[str, Any], at: str, *, count_step: bool) -> None:
        entry = self._plan.entry
        route = branch_id(())
        ref = frame_ref(entry.id, "entry", route, None)
        frame = Frame(f"{entry.id}:", "", ref, (), entry, _EMPTY_OUTPUTS, _EMPTY_ARTIFACTS)
        if count_step:
            self._steps += 1
        self._enter(frame, at)
        # The input was checked against the value subset before anything was recorded.
        output = node_output((output_item(run_input),), route)
        self._settle_ok(frame, output, None, at)

    # ------------------------------------------------------------------------------------
    # Internals: what to hand out
    # ------------------------------------------------------------------------------------

    def _dispatch_for(self, frame: Frame) -> Dispatch | Failed:
        """The dispatch of a frame, or the failure that settles it without running."""
        node = frame.node
        kind = frame.kind
        if kind == "call":
            definition = cast(CallNode, node).definition
            try:
                args = resolve_args(
                    definition.args, frame.outputs, definition.on_missing_value or "fail"
                )
            except MissingValue as missing:
                return Failed("MissingValueError", missing.message)
            return Dispatch(frame.key, frame.ref, node, args=args, attempt=frame.attempt)
        if kind == "branch" or kind == "select":
            context = PredicateContext(outputs=frame.outputs, frame=frame.ref)
            return Dispatch(frame.key, frame.ref, node, context=context, attempt=frame.attempt)
        if kind == "reason":
            parts = resolve_prompt(cast(ReasonNode, node).definition.prompt, frame.outputs)
            return Dispatch(frame.key, frame.ref, node, prompt_parts=parts, attempt=frame.attempt)
        if kind == "transform":
            reads = cast(TransformNode, node).definition.source
            source = output_for(reads, frame.artifacts)
            if source is None:
                return Failed(
                    "MissingArtifactError",
                    f'transform source "{reads.node}" has no artifact on this '
                    "route; read the output of a call whose tool returns an artifact",
                )
            return Dispatch(frame.key, frame.ref, node, source=source, attempt=frame.attempt)
        return Failed(
            "UnrunnableNodeError", f'node "{node.id}" of kind {node.kind} cannot be run here'
        )

    # ------------------------------------------------------------------------------------
    # Internals: settlements
    # ------------------------------------------------------------------------------------

    @staticmethod
    def _refuse(key: str, result: str, kind: str) -> NoReturn:
        raise EngineStateError(f'{result} does not settle frame "{key}" of a {kind} node')

    def _succeed(self, frame: Frame, result: Succeeded, at: str) -> None:
        items = result.items
        if not all(type(item) is OutputItem for item in items):
            try:
                items = tuple(
                    item if type(item) is OutputItem else OutputItem(json_=item) for item in items
                )
            except (ValidationError, UnencodableValueError, TypeError) as exc:
                self._fail(
                    frame,
                    Failed(
                        "UnencodableValueError",
                        f"the result of {frame.node_id} is not an encodable list of field maps: "
                        f"{exc}",
                    ),
                    at,
                )
                return
        output = node_output(cast(tuple[OutputItem, ...], items), frame.ref.branch_id)
        self._settle_ok(frame, output, result.artifact, at)

    def _settle_ok(
        self, frame: Frame, output: NodeOutput, artifact: ArtifactHandle | None, at: str
    ) -> None:
        key = frame.key
        outputs = frame.outputs.set(key, output, frame.node_id)
        artifacts = frame.artifacts
        if artifact is not None:
            artifacts = artifacts.set(key, artifact, frame.node_id)
        self._outputs[key] = output
        self._close_frame(
            frame,
            "done",
            outcome_ok(output),
            self._plan.success_hops.get(frame.node_id, ()),
            outputs,
            artifacts,
            None,
            at,
        )

    def _decide(self, frame: Frame, result: Decided, at: str) -> None:
        node = frame.node
        hops = self._plan.verdict_hops(node, result.verdict)
        if hops is None:
            self._fail(
                frame,
                Failed(
                    "VerdictMismatchError",
                    f"a {node.kind} node needs a {node.kind} verdict, got {result.verdict!r}",
                    "predicate",
                ),
                at,
            )
            return
        try:
            evidence = validate_value(result.evidence)
        except UnencodableValueError as exc:
            self._fail(frame, Failed("UnencodableValueError", exc.message, "predicate"), at)
            return
        output = node_output((), frame.ref.branch_id)
        self._outputs[frame.key] = output
        self._close_frame(
            frame, "done", outcome_ok(output), hops, frame.outputs, frame.artifacts, evidence, at
        )

    def _skip(self, frame: Frame, at: str) -> None:
        self._close_frame(
            frame,
            "skipped",
            OutcomeSkipped(),
            self._plan.success_hops.get(frame.node_id, ()),
            frame.outputs,
            frame.artifacts,
            None,
            at,
        )

    def _fail(self, frame: Frame, failure: Failed, at: str) -> None:
        error = ErrorInfo(name=failure.name, message=failure.message)
        hops = self._plan.error_hops.get(frame.node_id, ())
        # An error edge takes the failure; without one the batch is the settlement alone (no
        # edge fires, and no barrier changed since the last snapshot), and the run ends.
        outcome = OutcomeFailed(handled=bool(hops), error=error)
        self._close_frame(frame, "failed", outcome, hops, frame.outputs, frame.artifacts, None, at)
        if hops:
            return
        cause: InterruptionCause
        if failure.kind == "predicate":
            cause = PredicateUnevaluatable(node_id=frame.node_id)
        elif failure.kind == "output_schema":
            cause = OutputSchemaViolation(node_id=frame.node_id)
        else:
            cause = NodeFailed(node_id=frame.node_id)
        self._begin_end(cause)

    def _close_frame(
        self,
        frame: Frame,
        status: FrameStatus,
        outcome: Any,
        hops: Sequence[Hop],
        outputs: Table[NodeOutput],
        artifacts: Table[ArtifactHandle],
        evidence: Any,
        at: str,
    ) -> None:
        """One settlement batch: ``node_settled``, ``edge_taken`` per fired edge, snapshot.

        Each fired edge spawns its successor frame here, sharing ``outputs`` and ``artifacts``
        with its siblings.
        """
        ref = frame.ref
        log = self._log
        log.append(node_settled(ref, outcome, at))
        key = frame.key
        self._status[key] = status
        if frame.kind == "call":
            self._calls.pop(key, None)
        self._halted.pop(key, None)
        self._remove_live(frame)
        if hops:
            queue = self._queue
            fired = self._edges
            bkey = frame.bkey
            segments = frame.segments
            for hop in hops:
                child_bkey = bkey + hop.token
                child_segments = (*segments, hop.segment)
                target = hop.target
                child_ref = frame_ref(
                    hop.target_id, target.kind, branch_id(child_segments), hop.edge_id
                )
                child_key = hop.head + child_bkey
                child = Frame(
                    child_key, child_bkey, child_ref, child_segments, target, outputs, artifacts
                )
                self._add_live(child)
                queue.append(child)
                log.append(
                    edge_taken(
                        hop.edge_id, hop.handle, ref, child_ref, outputs, artifacts, evidence, at
                    )
                )
                fired.append(hop if evidence is None else (hop, evidence))
        if self._joins_version != self._snapshot_version:
            # Frames need no snapshot (the fold advances them from node_settled and
            # edge_taken); barriers do, so a snapshot closes a batch only when one changed.
            log.append(self._snapshot_event(at))

    # ------------------------------------------------------------------------------------
    # Internals: joins
    # ------------------------------------------------------------------------------------

    def _arrive(self, frame: Frame, at: str) -> None:
        """A frame reached its join: add it to its barrier; close it or park it."""
        facts = self._plan.join(frame.node_id)
        segments = frame.segments
        edge_id = frame.ref.via_edge_id or ""
        cut, key_length = self._plan.cut_at_fork(segments, frame.bkey, facts.fork)
        prefix_key = frame.bkey[:key_length]
        correlation = f"{frame.node_id}@{prefix_key}"
        self._remove_live(frame)
        barrier = self._barriers.get(correlation)
        if barrier is None:
            barrier = Barrier(facts, correlation, segments[:cut], prefix_key)
            self._open_barrier(barrier)
        arrival = join_arrival(frame.ref.branch_id, edge_id, frame.outputs, frame.artifacts)
        barrier.add(arrival, frame.bkey, frame.key)
        self._invalidate_joins()
        if barrier.complete:
            self._close_barrier(barrier, frame, at)
        else:
            self._record(self._snapshot_event(at))

    def _close_barrier(self, barrier: Barrier, completing: Frame, at: str) -> None:
        self._close_watch(barrier)
        self._invalidate_joins()
        facts = barrier.facts
        plan = self._plan
        route = branch_id((*barrier.prefix, facts.segment))
        bkey = barrier.prefix_key + facts.segment_key
        ref = frame_ref(facts.node_id, "join", route, completing.ref.via_edge_id)
        rows = sorted(zip((a.edge_id for a in barrier.arrivals), barrier.bkeys, strict=True))
        items = tuple(
            output_item({"via": via, "from": plan.source_of(via), "branch": b}) for via, b in rows
        )
        outputs: Table[NodeOutput] = Table.union([a.outputs for a in barrier.arrivals])
        artifacts: Table[ArtifactHandle] = Table.union([a.artifacts for a in barrier.arrivals])
        for key in barrier.frame_keys:
            if self._status.get(key) == "running":
                self._status[key] = "done"
        merged = Frame(
            f"{facts.node_id}:{bkey}",
            bkey,
            ref,
            route.segments,
            completing.node,
            outputs,
            artifacts,
        )
        self._settle_ok(merged, node_output(items, route), None, at)

    def _open_barrier(self, barrier: Barrier) -> None:
        """Open a barrier: count the live frames that may still arrive, and watch its region."""
        prefix = barrier.prefix_key
        live = self._live
        barrier.live = sum(
            1
            for node_id in barrier.facts.region_nodes
            for f in live.get(node_id, {}).values()
            if f.bkey.startswith(prefix)
        )
        self._barriers[barrier.key] = barrier
        for node_id in barrier.facts.region_nodes:
            self._watch.setdefault(node_id, []).append(barrier)
        if barrier.live <= 0:
            self._unreachable[barrier.key] = barrier
        self._invalidate_joins()

    def _close_watch(self, barrier: Barrier) -> None:
        del self._barriers[barrier.key]
        self._unreachable.pop(barrier.key, None)
        for node_id in barrier.facts.region_nodes:
            watchers = self._watch[node_id]
            watchers.remove(barrier)
            if not watchers:
                del self._watch[node_id]
        self._invalidate_joins()

    def _check_barriers(self) -> None:
        """End the run ``join_unsatisfiable`` when a partial barrier can no longer be reached."""
        if self._draining is not None or self.done:
            return
        for barrier in self._barriers.values():
            if barrier.key in self._unreachable and barrier.live <= 0:
                self._begin_end(JoinUnsatisfiable(node_id=barrier.facts.node_id))
                return

    # ------------------------------------------------------------------------------------
    # Internals: ending
    # ------------------------------------------------------------------------------------

    def _begin_end(self, cause: InterruptionCause) -> None:
        if not self.done and self._draining is None:
            self._draining = cause

    def _after(self, at: str) -> None:
        """Settle the run if nothing is left to wait for."""
        if self.done:
            return
        if self._draining is not None:
            if all(k in self._halted or k in self._recovered for k in self._running):
                self._finish(self._draining, at)
            return
        if not self._running and not self._queue:
            if self._barriers:
                first = next(iter(self._barriers.values()))
                self._finish(JoinUnsatisfiable(node_id=first.facts.node_id), at)
            else:
                self._finish(None, at)

    def _finish(self, cause: InterruptionCause | None, at: str) -> None:
        if cause is not None:
            self._record(RunInterrupted(cause=cause, at=at))
            self._run_cause = cause
        outcome = outcome_for(cause)
        self._record(RunSettled(outcome=outcome, at=at))
        self._outcome = outcome
