"""The sans-IO run engine: a pure state machine that walks a frozen plan, one settlement at a time.

A host drives it: the Temporal workflow in production, the in-process host in library use and
tests. The host asks for ready work (:meth:`RunEngine.ready`), runs it however it likes
(activities, concurrently), and hands each result back (:meth:`RunEngine.settle`) in whatever
order results arrive. The engine answers with the run's compact log (:meth:`RunEngine.drain`,
see :mod:`orchestration.run.log`) and the next ready work. It performs no I/O, reads no clock
(every method that records takes ``at``), draws no randomness, and iterates only lists and
insertion-ordered dicts, so the same calls in the same order produce the same log in every
process: what a workflow replay needs.

Invariants it protects:

* **Constant work per step.** A frame's route is interned (:class:`~orchestration.run.routes.Route`:
  its parent's route plus one segment), its tables are persistent maps keyed by frame number
  (:class:`~orchestration.run.tables.FrameTable`), and every log entry names frames by number. No
  step copies a route, renders a branch key longer than a short name, or copies a table, so a
  chain of any depth costs the same per step.
* **Frames and routes.** A frame is one execution of one node, identified by the route that
  reached it; a route grows by one edge segment per edge, and a join's merged frame has its
  fork frame's route plus ``{join, of}``. Contract keys (``<nodeId>:<branchKey>``) are
  injective, so no frame's output can overwrite another's.
* **Branch-local tables.** Each frame sees the outputs (and artifact handles) of its own route
  only. A fan-out hands every successor the same table object.
* **Commit protocol.** ``enter`` is recorded before a frame is handed out; a settlement is one
  batch ``settle`` + ``edge``* (+ ``snapshot`` when a barrier changed); an unhandled failure is
  ``settle`` alone; the end is ``interrupt``? + ``end``. With a window of one the order is the
  reference's sequential order.
* **Edge firing.** On success every applicable edge fires exactly once, duplicates included;
  ``default`` only when nothing else fired; ``always`` never for a branch, select or failure; a
  failure fires only ``error`` edges, and with none the run ends.
* **Joins are engine state.** A barrier is keyed by the join and the arriving route's ancestor
  at the join's fork (its immediate dominator; a fork at the entry is the entry's frame),
  closes when ``required`` distinct ``(edge, route)`` arrivals have landed (repeats are
  idempotent), and settles once under the merged identity with the union of the arrivals'
  tables. A barrier that no live frame can still reach is ``join_unsatisfiable`` at once: each
  barrier counts the live frames in its region that descend from its fork frame.
* **Budgets.** ``maxSteps`` counts node entries (join arrivals and the entry included; a retry
  of an entered frame is not a new entry); at most ``min(maxConcurrentFrames, max_in_flight)``
  frames are in flight. Token, cost and wall-time budgets (:mod:`orchestration.run.budgets`)
  are checked before a call, reason or transform frame is entered, from what the run's
  attempts spent (:meth:`RunEngine.attempt_ended` counts it; a host checks retries with
  :meth:`RunEngine.refusal`).
* **Attempts and provenance.** Each attempt's end is recorded as a log entry of its own
  (:meth:`RunEngine.attempt_ended`); each ``ok`` settlement marks whether its output traces
  back to a model, and each verdict records what it compared and from where
  (:mod:`orchestration.run.provenance`).
* **Graceful ends.** Once a cause to end is known (an unhandled failure, the budget, an
  unsatisfiable join, a stop), nothing new starts; frames already in flight still settle and
  are recorded, then ``interrupt`` + ``end`` close the log. The first cause wins.

``fold_run(expand_log(log))`` is the run's projection at every point of the log (a property
test holds the engine to it).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, NoReturn, cast

from pydantic import ValidationError

from orchestration.errors import EngineStateError, UnencodableValueError
from orchestration.plan.encoding import validate_value
from orchestration.plan.gates import (
    ResponseProblem,
    WaitPolicy,
    approval_gate,
    args_digest,
    deadline_after,
    response_item,
    wait_policy,
)
from orchestration.run.batching import (
    BatchDispatch,
    BatchFacts,
    Batching,
    BatchResult,
    BatchSpec,
    batch_facts,
    spliceable,
    unsettled,
)
from orchestration.run.budgets import Allowance, Spend
from orchestration.run.engine.builders import (
    item_segment,
    log_attempt,
    log_edge,
    log_enter,
    log_settle,
    node_output,
    output_item,
)
from orchestration.run.engine.builders import verdict as make_verdict
from orchestration.run.engine.compiled import CompiledPlan, Hop
from orchestration.run.engine.gating import GateStatus, Waiting
from orchestration.run.engine.results import (
    Asked,
    Decided,
    Dispatch,
    Failed,
    SettleResult,
    Skipped,
    Succeeded,
)
from orchestration.run.engine.state import Barrier, Frame, ItemRun, Items, LoopRun, MapRun
from orchestration.run.inputs import check_run_input
from orchestration.run.log import (
    AskedRound,
    LogArrive,
    LogCancel,
    LogEnd,
    LogEntry,
    LogGateDecided,
    LogGateOpen,
    LogGateTimeout,
    LogInterrupt,
    LogItem,
    LogMerge,
    LogSnapshot,
    LogStart,
)
from orchestration.run.provenance import arg_origins, call_refs, reads_model, verdict_check
from orchestration.run.resolve import (
    MISSING,
    MissingValue,
    entry_for,
    resolve_args,
    resolve_prompt,
    resolve_ref,
)
from orchestration.run.routes import Route, item_token
from orchestration.tools.contracts import PredicateContext

if TYPE_CHECKING:
    from orchestration.run.checkpoint import Checkpoint
from orchestration.run.tables import FrameEntry, FrameTable
from orchestration.types import (
    ApprovalGate,
    ArtifactHandle,
    AttemptResult,
    BranchDefinition,
    BranchNode,
    BudgetExhausted,
    CallNode,
    EntryNode,
    ErrorInfo,
    GateDecision,
    GateKind,
    GateOutcome,
    GateTimeout,
    InputDefinition,
    InterruptionCause,
    JoinUnsatisfiable,
    LoopNode,
    MapDefinition,
    MapNode,
    NodeFailed,
    NodeOutput,
    OutputItem,
    OutputSchemaViolation,
    PlanNode,
    PredicateUnevaluatable,
    RawPlanView,
    ReasonNode,
    RetryReason,
    TransformNode,
    Usage,
    ValueOrigin,
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

Outcome = Literal["running", "completed", "halted", "aborted"]

_HALTING = frozenset(
    {"budget_exhausted", "join_unsatisfiable", "predicate_unevaluatable", "gate_timeout"}
)
_NO_OUTPUTS: FrameTable[Items] = FrameTable()
_NO_ARTIFACTS: FrameTable[ArtifactHandle] = FrameTable()
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


def _gated_nodes(plan: CompiledPlan) -> tuple[frozenset[str], frozenset[str]]:
    """The nodes that pause before they run (calls), and those whose result is held."""
    before: set[str] = set()
    after: set[str] = set()
    for node_id, node in plan.nodes.items():
        gate = approval_gate(node)
        if gate is None:
            continue
        if gate.on == "arguments" and isinstance(node, CallNode):
            before.add(node_id)
        elif gate.on == "result":
            after.add(node_id)
    return frozenset(before), frozenset(after)


def outcome_for(cause: InterruptionCause | None) -> Literal["completed", "halted", "aborted"]:
    """How a run ends, by cause.

    No cause completes; the plan's own content or bounds halt it (budget, unsatisfiable join,
    unevaluatable predicate, gate timeout); a failure or an outside act aborts it (everything
    else).
    """
    if cause is None:
        return "completed"
    return "halted" if cause.kind in _HALTING else "aborted"


def _output_of(entry: FrameEntry) -> NodeOutput:
    """An engine table entry as the contract's ``NodeOutput``."""
    return node_output(cast(Items, entry.value), entry.route.branch_id())


def _handle_of(entry: FrameEntry) -> ArtifactHandle:
    return cast(ArtifactHandle, entry.value)


class RunEngine:
    """One run of one frozen plan, as a pure state machine.

    Build it with :meth:`start`, :meth:`resume` or :meth:`refuse`; drive it with :meth:`ready`
    and :meth:`settle`.

    The typical host loop (a Temporal workflow; ``now()`` is ``workflow.now()`` as ISO-8601)::

        engine = RunEngine.start(view, run_id, run_input, now())
        record(engine.drain())
        while not engine.done:
            for d in engine.ready(now()):
                start_activity(d, activity_id=d.key)       # or evaluate a branch/select
            key, result = await next_settlement()          # Succeeded/Decided/Failed/Skipped
            engine.settle(key, result, now())
            record(engine.drain())

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
        self._log: list[LogEntry] = []
        self._next = 0
        # Live frames (queued, in flight, or waiting to arrive at a join) by node id, then
        # number: opening a barrier counts only the frames on its region's nodes.
        self._live: dict[str, dict[int, Frame]] = {}
        self._queue: deque[Frame] = deque()
        self._running: dict[str, Frame] = {}
        self._halted: dict[str, InterruptionCause] = {}
        self._recovered: dict[str, None] = {}
        # In-flight frames cancelled because their join closed without them, for the host.
        self._cancelled: list[str] = []
        # Frames waiting for a person at a gate, and every gated frame's last request.
        self._waiting: dict[str, Waiting] = {}
        self._gate_history: dict[str, tuple[int, GateOutcome | None]] = {}
        self._args_gates, self._result_gates = _gated_nodes(plan)
        self._barriers: dict[tuple[str, int], Barrier] = {}
        # Maps whose items are running, by their frame's number.
        self._maps: dict[int, MapRun] = {}
        # Open barriers by the region nodes they watch, and those no live frame can reach.
        self._watch: dict[str, list[Barrier]] = {}
        self._unreachable: dict[tuple[str, int], Barrier] = {}
        self._joins_version = 0
        self._snapshot_version = 0
        self._steps = 0
        self._draining: InterruptionCause | None = None
        self._run_cause: InterruptionCause | None = None
        self._outcome: Outcome = "running"
        self._spend = Spend()
        self._node_spend: dict[str, Spend] = {}
        # Distributed maps: when the host runs a long map's items in batches, the batches
        # handed out and not yet taken, and, in a batch's own sub-run, what it runs.
        self._batching: Batching | None = None
        self._batch: BatchSpec | None = None
        self._batch_rows: dict[int, dict[str, object]] = {}
        self._batch_out: list[BatchDispatch] = []
        self._batch_running: dict[str, tuple[MapRun, int]] = {}
        self._batch_turns: deque[MapRun] = deque()
        self._batch_facts: dict[str, BatchFacts | None] = {}

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
        build: str | None = None,
    ) -> RunEngine:
        """Begin a run: check the plan and the input, then record the start and the entry.

        Records ``start``, the entry frame's ``enter``, and its settlement (the whole input
        object as the entry's one output item) with its edges.

        Args:
            view: The frozen plan.
            run_id: The run's id (the plan's one run).
            run_input: The run's input, checked against the entry's declared fields.
            at: ISO-8601 time of the start.
            max_in_flight: The host's cap on frames in flight (the plan's
                ``maxConcurrentFrames`` applies too; the smaller wins).
            build: The interpreter's build, recorded on ``start`` (see ``LogStart``).

        Raises:
            UnrunnablePlanError: the view has no single entry, a dangling edge or a cycle.
            InvalidRunInputError: the input does not satisfy the entry's declared fields.
                Both are raised before any entry exists.

        """
        plan = CompiledPlan(view)
        entry = plan.entry
        assert isinstance(entry, EntryNode)
        check_run_input(entry.definition.input, run_input)
        engine = cls(plan, run_id, view.digest, max_in_flight=max_in_flight)
        engine._record(
            LogStart(run_id=run_id, digest=view.digest, entry=entry.id, at=at, build=build)
        )
        engine._run_entry(dict(run_input), at, count_step=True)
        engine._after(at)
        return engine

    @classmethod
    def refuse(
        cls,
        run_id: str,
        digest: str,
        cause: InterruptionCause,
        at: str,
        *,
        entry: str = "",
        build: str | None = None,
    ) -> RunEngine:
        """A run that starts and ends before any node is entered (a ``deviation_abort``).

        Records ``start`` (with the refusing interpreter's ``build``), ``interrupt{cause}`` and
        ``end``. No plan is needed: a run is refused exactly when its plan cannot be trusted
        or had.
        """
        engine = cls.__new__(cls)
        engine.run_id = run_id
        engine.digest = digest
        engine._log = []
        engine._next = 0
        engine._steps = 0
        engine._running = {}
        engine._halted = {}
        engine._recovered = {}
        engine._waiting = {}
        engine._gate_history = {}
        engine._draining = None
        engine._outcome = "running"
        engine._run_cause = None
        engine._spend = Spend()
        engine._node_spend = {}
        engine._batch = None
        engine._batch_running = {}
        engine._batch_turns = deque()
        engine._record(LogStart(run_id=run_id, digest=digest, entry=entry, at=at, build=build))
        engine._finish(cause, at)
        return engine

    @classmethod
    def resume(
        cls,
        view: RawPlanView,
        log: Sequence[LogEntry],
        *,
        run_input: Mapping[str, Any] | None = None,
        steps: int | None = None,
        at: str | None = None,
        reopen: bool = False,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
    ) -> RunEngine:
        """Rebuild an engine from a run's compact log, to continue it in this process.

        From the frontier (the last ``snapshot`` advanced by the entries after it): frames never
        entered are queued in order; an entered, unsettled frame of any kind but ``call`` is
        queued to be entered again (not a new step); an entered, unsettled ``call`` is
        *recovered*: its side effect may or may not have happened, so it waits in
        :attr:`recovered` for the host's ``onIndeterminate`` decision (:meth:`retry`,
        ``settle(key, Skipped())`` or :meth:`interrupt_frame`), unless the log shows it halted,
        in which case it is :attr:`halted` again. Open barriers come back with their arrivals.
        The new log starts empty; with ``at``, it opens with a ``snapshot``.

        A log that ended (``end``) gives a settled engine, unless ``reopen``: then the run's
        end and its cause are set aside and its frontier runs again (ruling 28's resume: an
        aborted run goes on with the frames that never ran; a run halted by its budget halts
        again at once).

        Raises:
            MalformedRunLogError: the log does not open with ``start``.
            UnrunnablePlanError: the view cannot be walked, or the log names nodes it lacks.
            EngineStateError: the entry never settled and no ``run_input`` (and ``at``) was
                given.

        """
        from orchestration.run.restore import restore_from_log

        plan = CompiledPlan(view)
        state = restore_from_log(log, plan, reopen=reopen)
        return cls._restored(plan, state, run_input, steps, at, max_in_flight)

    @classmethod
    def continued(
        cls,
        view: RawPlanView,
        checkpoint: Checkpoint,
        *,
        at: str,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
    ) -> RunEngine:
        """Continue a run from a :class:`~orchestration.run.checkpoint.Checkpoint`.

        What :meth:`checkpoint` took on the engine before continue-as-new; the new log opens
        with a ``snapshot``.

        Raises:
            MalformedRunLogError: the checkpoint is inconsistent.
            UnrunnablePlanError: the view cannot be walked or lacks a node the checkpoint names.

        """
        from orchestration.run.checkpoint import restore_checkpoint

        plan = CompiledPlan(view)
        state = restore_checkpoint(checkpoint, plan)
        return cls._restored(plan, state, None, None, at, max_in_flight)

    @classmethod
    def batch(
        cls,
        view: RawPlanView,
        spec: BatchSpec,
        *,
        at: str,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
    ) -> RunEngine:
        """The sub-run of one batch of a map's items (see :mod:`orchestration.run.batching`).

        It holds the map's frame (entered in the run, never settled here) and runs the
        batch's items one after another, in index order; it ends once the last item ran,
        without ``end`` (or when stopped). :meth:`batch_result` then says what it came to;
        its log is what :meth:`drain` handed out.

        Raises:
            MalformedRunLogError: the spec's checkpoint is inconsistent.
            UnrunnablePlanError: the view lacks a node the spec names.

        """
        from orchestration.run.checkpoint import restore_checkpoint

        plan = CompiledPlan(view)
        state = restore_checkpoint(spec.checkpoint, plan)
        engine = cls(plan, state.run_id, state.digest, max_in_flight=max_in_flight)
        engine._next = spec.base
        engine._batch = spec
        ((head, _),) = state.frames
        run = MapRun(head, list(spec.items), 1, spec.first)
        run.model = spec.model
        engine._maps[head.number] = run
        engine._batch_rows = run.results  # filled as items finish, however the batch ends
        engine._advance_map(run, at)
        engine._after(at)
        return engine

    def batch_result(self, log: Sequence[LogEntry]) -> BatchResult:
        """What this batch's sub-run came to, with ``log`` (everything it drained).

        Raises:
            EngineStateError: this is not a batch's sub-run, or it has not ended.

        """
        if self._batch is None or not self.done:
            raise EngineStateError("batch_result() is for a batch's sub-run once it ended")
        cause = self._run_cause
        ended = None if cause is None else _describe_cause(cause)
        spent = self._spend.totals() if self._spend.attempts else None
        return BatchResult(
            rows=tuple(row for _, row in sorted(self._batch_rows.items())),
            log=spliceable(log),
            next_frame=self._next,
            steps=self._steps,
            spent=spent,
            ended=ended,
        )

    def use_batches(self, batching: Batching | None) -> None:
        """Run the items of maps longer than ``batching.over`` in batches (``None``: never).

        Both hosts of a run must say the same here (it is in the run's settings), since it
        shapes the log. A batch's own sub-run never batches again.
        """
        self._batching = batching if self._batch is None else None

    def ready_batches(self) -> list[BatchDispatch]:
        """The batches to start now (each exactly once), in order."""
        out, self._batch_out = self._batch_out, []
        return out

    @property
    def batches_running(self) -> tuple[str, ...]:
        """Keys of the batches handed out whose results are not yet taken."""
        return tuple(self._batch_running)

    def batch_ended(self, key: str, result: BatchResult) -> None:
        """Hold a batch's result until its turn (:meth:`take_batch` takes them in order).

        Raises:
            EngineStateError: ``key`` is not a running batch, or it came back already.

        """
        held = self._batch_running.get(key)
        if held is None or self.done or held[1] in held[0].returned:
            raise EngineStateError(
                f'batch "{key}" is not running; hand each batch ready_batches() gave back once'
            )
        run, index = held
        run.returned[index] = (key, result)
        if index == run.taken:
            self._batch_turns.append(run)

    @property
    def batch_waiting(self) -> bool:
        """Whether a batch's result waits to be taken (its turn has come)."""
        return bool(self._batch_turns) and not self.done

    def take_batch(self, at: str) -> int | None:
        """Take the next batch whose turn has come.

        Splices its log in, records its rows, and starts the batches that may start now.
        Returns ``None`` when none waits, else how many log entries it spliced (a host that
        takes many may let the workflow task go between).
        """
        while self._batch_turns and not self.done:
            run = self._batch_turns[0]
            if run.taken not in run.returned:
                self._batch_turns.popleft()
                continue
            key, result = run.returned.pop(run.taken)
            del self._batch_running[key]
            run.taken += 1
            spliced = self._take_batch(run, run.taken - 1, result, at)
            if run.taken not in run.returned:
                self._batch_turns.popleft()
            if self._maps.get(run.head.number) is run:
                self._advance_map(run, at)
            self._after(at)
            return spliced
        return None

    def checkpoint(self, at: str) -> Checkpoint:
        """Record a ``snapshot`` and return what a continued execution needs to go on.

        Raises:
            EngineStateError: the run has settled, frames are in flight (settle them first:
                a checkpoint carries no work in progress), or a map is running its items.

        """
        from orchestration.run.checkpoint import make_checkpoint

        if self._maps and not self.done:
            raise EngineStateError(
                "a checkpoint does not carry a map's run; wait until no map is running its "
                "items (maps_running)"
            )
        if self.done or self._running:
            raise EngineStateError(
                "a checkpoint needs a run with nothing in flight; wait for the frames in "
                "flight to settle"
            )
        self.snapshot(at)
        return make_checkpoint(
            self._plan,
            run_id=self.run_id,
            digest=self.digest,
            next_frame=self._next,
            steps=self._steps,
            frames=self.live_frames(),
            barriers=self.barriers(),
            spent=self._spend.totals() if self._spend.attempts else None,
            node_spent={node: spend.totals() for node, spend in self._node_spend.items()},
            waiting=self._waiting,
            gate_history=self._gate_history,
        )

    @classmethod
    def _restored(
        cls,
        plan: CompiledPlan,
        state: Any,
        run_input: Mapping[str, Any] | None,
        steps: int | None,
        at: str | None,
        max_in_flight: int,
    ) -> RunEngine:
        engine = cls(plan, state.run_id, state.digest, max_in_flight=max_in_flight)
        engine._next = state.next_frame
        engine._steps = state.steps if steps is None else steps
        engine._spend = state.spend
        engine._node_spend = dict(state.node_spend)
        engine._gate_history = dict(state.gate_history)
        if state.outcome != "running":
            engine._outcome = state.outcome
            engine._run_cause = state.cause
            return engine
        for frame, entered in state.frames:
            engine._restore_frame(frame, entered, state.halted, state.gates.get(frame.number), at)
        for barrier in state.barriers:
            engine._open_barrier(barrier)
        if not state.entry_settled:
            if run_input is None or at is None:
                raise EngineStateError(
                    "the log ends before the entry node settled; resume with run_input and at "
                    "so the entry's output can be materialised"
                )
            entry = plan.entry
            assert isinstance(entry, EntryNode)
            check_run_input(entry.definition.input, run_input)
            engine._next = max(engine._next, 1)
            engine._run_entry(dict(run_input), at, count_step=not state.entry_entered)
        elif at is not None:
            engine._record(engine._snapshot_entry(at))
        if at is not None:
            engine._after(at)
        return engine

    def _restore_frame(
        self,
        frame: Frame,
        entered: bool,
        halted: Mapping[int, InterruptionCause],
        gate: Any = None,
        at: str | None = None,
    ) -> None:
        self._add_live(frame)
        if gate is not None:
            frame.approved = gate.approved
            frame.rounds = gate.rounds
            frame.tries_before = gate.tries_before
            if gate.attempt:
                frame.attempt = max(frame.attempt, gate.attempt)
            if gate.open is not None:
                self._restore_waiting(frame, gate.open, again=gate.again, at=at)
                return
        if not entered:
            self._queue.append(frame)
            return
        if frame.kind == "call":
            dispatch = self._dispatch_for(frame)
            if isinstance(dispatch, Dispatch):
                frame.dispatch = dispatch
                self._running[frame.ident] = frame
                cause = halted.get(frame.number)
                if cause is not None:
                    self._halted[frame.ident] = cause
                else:
                    self._recovered[frame.ident] = None
                return
        frame.reentry = True
        self._queue.append(frame)

    # ------------------------------------------------------------------------------------
    # Observation
    # ------------------------------------------------------------------------------------

    @property
    def plan(self) -> CompiledPlan:
        """The plan being walked."""
        return self._plan

    @property
    def done(self) -> bool:
        """Whether ``end`` has been recorded."""
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
    def maps_running(self) -> bool:
        """Whether a map's items are running (a checkpoint waits until none is)."""
        return bool(self._maps)

    @property
    def steps(self) -> int:
        """Node entries so far (the count ``maxSteps`` bounds)."""
        return self._steps

    @property
    def spend(self) -> Spend:
        """What the run's attempts spent on models, so far (continued and resumed included)."""
        return self._spend

    @property
    def node_spend(self) -> Mapping[str, Spend]:
        """What each node's attempts spent on models, by node id.

        Nodes that spent nothing are absent; the map is bounded by the plan's size.
        """
        return self._node_spend

    @property
    def next_frame(self) -> int:
        """The number the next new frame will get."""
        return self._next

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
    def waiting(self) -> tuple[str, ...]:
        """Keys of the frames waiting for a person at a gate, in the order their requests opened.

        Empty once the run is ending or has settled: nothing is decided after a stop.
        """
        if self.done or self._draining is not None:
            return ()
        return tuple(self._waiting)

    def open_gates(self) -> list[Waiting]:
        """The open requests, oldest first (empty once the run is ending or has settled)."""
        if self.done or self._draining is not None:
            return []
        return list(self._waiting.values())

    def gate_status(self, key: str) -> GateStatus:
        """Where frame ``key``'s gates stand: its open request, or how its last one closed."""
        request, outcome = self._gate_history.get(key, (0, None))
        waiting = self._waiting.get(key)
        if waiting is not None and (self.done or self._draining is not None):
            waiting = None
        return GateStatus(waiting=waiting, request=request, outcome=outcome)

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

    def dispatch_of(self, key: str) -> Dispatch | None:
        """What was handed out for the in-flight frame ``key``, or ``None``."""
        frame = self._running.get(key)
        return None if frame is None else frame.dispatch

    def drain_cancelled(self) -> list[str]:
        """Keys of in-flight frames cancelled since the last call, for the host to stop.

        An ``any`` or quorum join that closes settles the frames still on its other routes at
        once (``cancel`` in the log), so the run moves on without them; their work is wasted
        and the host should cancel it. A result that still arrives for such a key is not in
        flight any more and must be dropped (``settle`` refuses it).
        """
        cancelled, self._cancelled = self._cancelled, []
        return cancelled

    def drain(self) -> list[LogEntry]:
        """Hand over the log entries recorded since the last drain, in order.

        The engine keeps no copy: the host owns the log, so the engine's memory does not grow
        with it.
        """
        new = self._log
        self._log = []
        return new

    def live_frames(self) -> list[Frame]:
        """Every live frame (queued, in flight, or parked at a barrier excluded), by number."""
        return sorted(
            (f for bucket in self._live.values() for f in bucket.values()),
            key=lambda f: f.number,
        )

    def barriers(self) -> list[Barrier]:
        """The open barriers, in the order they opened."""
        return list(self._barriers.values())

    def frontier_keys(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The frontier as the contract names it: live frame keys and barrier correlation keys.

        Renders every key (O(depth) each): for inspection and tests, not for the hot path.
        ``fold_run`` of the log so far gives the same two lists. (A loop's until check, like a
        map's item, is not in it: no ``edge_taken`` names it, and the loop's own frame, pending
        until its last check, stands for it.)
        """
        frames = tuple(f"{f.node_id}:{f.route.key}" for f in self.live_frames() if f.check is None)
        joins = tuple(f"{b.facts.node_id}@{b.prefix.key}" for b in self._barriers.values())
        return frames, joins

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
        budgets = self._plan.budgets
        args_gates = self._args_gates
        while queue and len(running) < window:
            frame = queue[0]
            if args_gates and frame.approved is None and frame.node_id in args_gates:
                # Before a gated call runs: resolve its arguments once and ask for approval;
                # the frame is not entered (nothing ran), and does not hold the window.
                pending = self._dispatch_for(frame)
                if type(pending) is Dispatch:
                    queue.popleft()
                    args = dict(pending.args or {})
                    self._open_gate(frame, "arguments", at, args=args, digest=args_digest(args))
                    continue
                # A reference that resolves to nothing fails it, entered, like any call.
            if budgets is not None and frame.kind in _ACTIVITY_KINDS:
                refused = budgets.refusal(
                    frame.node_id, self._spend, frame.spend, frame.started, at, self._steps
                )
                if refused is not None:
                    self._begin_end(refused)
                    break
            if frame.reentry:
                frame.reentry = False
            elif self._steps >= max_steps:
                self._begin_end(BudgetExhausted(settled=self._steps))
                break
            else:
                self._steps += 1
            queue.popleft()
            frame.entered_at = at
            self._log.append(log_enter(frame.number, frame.attempt, at))
            if frame.kind == "join":
                self._arrive(frame, at)
            elif frame.kind == "input":
                self._ask_person(frame, at)
            elif frame.kind == "map":
                self._open_map(frame, at)
            elif frame.kind == "loop":
                self._open_loop(frame, at)
            else:
                dispatch = self._dispatch_for(frame)
                if type(dispatch) is Dispatch:
                    frame.dispatch = dispatch
                    running[frame.ident] = frame
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
            key: The key of a frame handed out by :meth:`ready` or :meth:`retry`.
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
            self._succeed(
                frame, cast(Succeeded, result), at, hold=frame.node_id in self._result_gates
            )
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

        For an indeterminate call retried, a transient failure retried, or an operator's retry
        of a halted one. Records ``enter`` again with the next attempt; it is not a new step.

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
        frame.entered_at = at
        self._log.append(log_enter(frame.number, frame.attempt, at))
        assert frame.dispatch is not None
        frame.dispatch = frame.dispatch.again(frame.attempt)
        return frame.dispatch

    def interrupt_frame(self, key: str, cause: InterruptionCause, at: str) -> None:
        """Halt an in-flight frame whose outcome is unknown (``onIndeterminate: halt``).

        Records ``interrupt{cause, frame}`` without ending the run: nothing new starts until the
        frame is decided by :meth:`retry`, ``settle(key, Skipped())``, or :meth:`stop` (an
        operator's abort).

        Raises:
            EngineStateError: the frame is not in flight.

        """
        frame = self._running.get(key)
        if frame is None or self.done:
            raise EngineStateError(f'frame "{key}" is not in flight; only such a frame halts')
        self._recovered.pop(key, None)
        self._halted.pop(key, None)
        self._halted[key] = cause
        self._record(LogInterrupt(cause=cause, frame=frame.number, at=at))
        self._after(at)

    def attempt_ended(
        self,
        key: str,
        result: AttemptResult,
        started: str,
        at: str,
        *,
        error: ErrorInfo | None = None,
        reason: RetryReason | None = None,
        usage: Usage | None = None,
        origins: dict[str, tuple[ValueOrigin, ...]] | None = None,
    ) -> None:
        """Record that the in-flight frame ``key``'s current attempt ended, and what it spent.

        Records ``attempt`` (before whatever the host then does with the frame: settle, retry
        or halt) and counts its usage against the run's and the frame's budgets.

        Raises:
            EngineStateError: the frame is not in flight.

        """
        frame = self._running.get(key)
        if frame is None or self.done:
            raise EngineStateError(f'frame "{key}" is not in flight; only its attempts end')
        if frame.started is None:
            frame.started = started
        spend = frame.spend
        if spend is None:
            spend = frame.spend = Spend()
        spend.add(usage)
        self._spend.add(usage)
        if usage is not None:
            node_spend = self._node_spend.get(frame.node_id)
            if node_spend is None:
                node_spend = self._node_spend[frame.node_id] = Spend()
            node_spend.add(usage)
        self._log.append(
            log_attempt(
                frame.number, frame.attempt, result, started, error, reason, usage, origins, at
            )
        )

    def refusal(self, key: str, at: str, *, delay: float = 0.0) -> BudgetExhausted | None:
        """Why the in-flight frame ``key`` may not start another attempt, if a budget says so.

        The attempt would start ``delay`` seconds after ``at``; see
        :mod:`orchestration.run.budgets`. ``None`` when it may start.
        """
        budgets = self._plan.budgets
        frame = self._running.get(key)
        if budgets is None or frame is None:
            return None
        return budgets.refusal(
            frame.node_id, self._spend, frame.spend, frame.started, at, self._steps, delay
        )

    def allowance(self, key: str, at: str, *, delay: float = 0.0) -> Allowance | None:
        """What the in-flight frame ``key``'s next attempt may spend (``None``: no budget)."""
        budgets = self._plan.budgets
        frame = self._running.get(key)
        if budgets is None or frame is None:
            return None
        return budgets.allowance(frame.node_id, self._spend, frame.spend, frame.started, at, delay)

    def started_of(self, key: str) -> str | None:
        """When the in-flight frame ``key`` was last entered (its current attempt's entry)."""
        frame = self._running.get(key)
        return None if frame is None else frame.entered_at

    def origins_of(self, key: str) -> dict[str, tuple[ValueOrigin, ...]] | None:
        """Where each argument of the in-flight call ``key`` came from (``None``: not a call)."""
        frame = self._running.get(key)
        if frame is None or frame.kind != "call":
            return None
        return arg_origins(cast(CallNode, frame.node).definition.args, frame.outputs)

    # ------------------------------------------------------------------------------------
    # Gates: a person's decisions, timeouts, a model's questions
    # ------------------------------------------------------------------------------------

    def ask(self, key: str, asked: Asked, at: str) -> None:
        """A reason frame's attempt asked questions: it waits for a person's answers.

        Records ``gate_open`` (``questions``) and moves the frame out of flight.

        Raises:
            EngineStateError: the frame is not an in-flight reason frame.

        """
        frame = self._running.get(key)
        if frame is None or self.done or frame.kind != "reason":
            raise EngineStateError(f'frame "{key}" is not a reason frame in flight; only one asks')
        self._release(key)
        self._open_gate(frame, "questions", at, questions=asked.questions, call=asked.call)
        self._after(at)

    def approve(
        self,
        key: str,
        by: str,
        at: str,
        *,
        automatic: bool = False,
        feedback: str | None = None,
        args: Mapping[str, Any] | None = None,
    ) -> None:
        """Approve frame ``key``'s open request (before a call, or of a result).

        Before a call the frame then runs with the approved arguments (``args``, the
        approver's edit, when given; recorded with the decision beside the proposed ones). A
        held result settles the frame ``ok``. The caller has checked the decision
        (:mod:`orchestration.run.gates`).

        Raises:
            EngineStateError: no approval request of that frame is open.

        """
        waiting = self._take(key, ("arguments", "result"))
        frame, request = waiting.frame, waiting.request
        if request.gate == "arguments":
            proposed = dict(request.args or {})
            approved = dict(args) if args is not None else proposed
            edited = approved if approved != proposed else None
            digest = args_digest(approved)
            self._decided(
                frame, request, "approved", by, at, automatic, feedback, args=edited, digest=digest
            )
            frame.approved = approved
            self._queue.appendleft(frame)
        else:
            self._decided(frame, request, "approved", by, at, automatic, feedback)
            self._settle_ok(frame, request.items or (), request.artifact, at)
        self._after(at)

    def reject(self, key: str, by: str, at: str, *, feedback: str | None = None) -> None:
        """Reject (or, for an input request, decline) frame ``key``'s open request.

        The frame settles ``failed`` (``gate_rejected``, with the feedback as its message), so
        its ``error`` edges apply; without one the run ends ``node_failed``.

        Raises:
            EngineStateError: no request of that frame is open.

        """
        waiting = self._take(key, ("arguments", "result", "input", "questions"))
        frame = waiting.frame
        self._decided(frame, waiting.request, "rejected", by, at, False, feedback)
        reason = f"rejected at its gate by {by}" + (f": {feedback}" if feedback else "")
        self._fail(frame, Failed("gate_rejected", reason), at)
        self._after(at)

    def answer(
        self,
        key: str,
        by: str,
        at: str,
        *,
        item: Mapping[str, Any] | None = None,
        answers: Mapping[str, Any] | None = None,
    ) -> None:
        """Answer frame ``key``'s open input request (``item``) or questions (``answers``).

        An input request's response (already checked against its schema and normalised to
        its item, :func:`orchestration.plan.gates.response_item`) settles the frame with it.
        A reason frame's answers are one more round of its conversation: it runs again
        (a new attempt, not a new step) with every round so far.

        Raises:
            EngineStateError: no input request or questions of that frame are open.

        """
        waiting = self._take(key, ("input", "questions"))
        frame, request = waiting.frame, waiting.request
        if request.gate == "input":
            self._decided(frame, request, "answered", by, at, False, None)
            self._settle_ok(frame, (output_item(dict(item or {})),), None, at)
        else:
            given = dict(answers or {})
            self._decided(frame, request, "answered", by, at, False, None, answers=given)
            round_ = AskedRound(call=request.call, questions=request.questions or (), answers=given)
            frame.rounds = (*frame.rounds, round_)
            frame.tries_before = frame.attempt
            frame.attempt += 1
            frame.reentry = True
            self._queue.appendleft(frame)
        self._after(at)

    def time_out(self, key: str, at: str) -> None:
        """Frame ``key``'s open request reached its deadline: apply its ``onTimeout``.

        Recorded as ``gate_timeout`` (never as consent). ``reject`` settles the frame
        ``failed`` (``gate_timeout``); ``default`` answers an input request with its default
        response; ``halt`` ends the run ``halted`` with ``gate_timeout`` (ruling 18), the frame
        left waiting (a resumed run asks again).

        Raises:
            EngineStateError: no request of that frame is open.

        """
        waiting = self._take(key, ("arguments", "result", "input", "questions"))
        frame, request = waiting.frame, waiting.request
        policy = waiting.policy.on_timeout
        self._record(
            LogGateTimeout(frame=frame.number, request=request.request, policy=policy, at=at)
        )
        self._gate_history[key] = (request.request, "timed_out")
        if policy == "reject":
            message = f"no decision within {waiting.policy.timeout}; its gate rejects on timeout"
            self._fail(frame, Failed("gate_timeout", message), at)
        elif policy == "default" and isinstance(frame.node.definition, InputDefinition):
            definition = frame.node.definition
            try:
                item = response_item(definition.schema_, definition.default)
            except ResponseProblem as exc:
                self._fail(frame, Failed("gate_default_invalid", str(exc)), at)
            else:
                self._settle_ok(frame, (output_item(item),), None, at)
        else:
            self._begin_end(GateTimeout())
        self._after(at)

    def _take(self, key: str, gates: tuple[GateKind, ...]) -> Waiting:
        waiting = self._waiting.get(key)
        if (
            waiting is None
            or self.done
            or self._draining is not None
            or waiting.request.gate not in gates
        ):
            raise EngineStateError(
                f'frame "{key}" has no open {" or ".join(gates)} request; check a decision '
                "against gate_status() before applying it"
            )
        del self._waiting[key]
        return waiting

    def _decided(
        self,
        frame: Frame,
        request: LogGateOpen,
        decision: GateDecision,
        by: str,
        at: str,
        automatic: bool,
        feedback: str | None,
        *,
        args: Mapping[str, Any] | None = None,
        digest: str | None = None,
        answers: Mapping[str, Any] | None = None,
    ) -> None:
        self._record(
            LogGateDecided(
                frame=frame.number,
                request=request.request,
                decision=decision,
                by=by,
                automatic=automatic,
                feedback=feedback,
                args=None if args is None else dict(args),
                digest=digest,
                answers=None if answers is None else dict(answers),
                at=at,
            )
        )
        self._gate_history[frame.ident] = (request.request, decision)

    def _ask_person(self, frame: Frame, at: str) -> None:
        """An entered input frame asks its resolved prompt."""
        definition = frame.node.definition
        assert isinstance(definition, InputDefinition)
        prompt = "".join(resolve_prompt(definition.prompt, frame.outputs))
        self._open_gate(frame, "input", at, prompt=prompt, schema_=definition.schema_)

    def _open_gate(self, frame: Frame, gate: GateKind, at: str, **content: Any) -> None:
        """Record a new request on ``frame`` and park it as waiting."""
        node = frame.node
        policy = wait_policy(node, gate)
        approval = approval_gate(node) if gate in ("arguments", "result") else None
        number = self._gate_history.get(frame.ident, (0, None))[0] + 1
        request = LogGateOpen(
            frame=frame.number,
            request=number,
            gate=gate,
            summary=approval.summary if approval is not None else None,
            editable=approval.editable if approval is not None and gate == "arguments" else None,
            deadline=None if policy.timeout is None else deadline_after(at, policy.timeout),
            at=at,
            **content,
        )
        self._record(request)
        self._park(frame, request, policy, approval)

    def _park(
        self,
        frame: Frame,
        request: LogGateOpen,
        policy: WaitPolicy,
        approval: ApprovalGate | None,
    ) -> None:
        self._waiting[frame.ident] = Waiting(frame, request, policy, approval)
        self._gate_history[frame.ident] = (request.request, None)

    def _restore_waiting(
        self, frame: Frame, request: LogGateOpen, *, again: bool, at: str | None
    ) -> None:
        """A restored frame waits again: at its open request, or (``again``) at a new one.

        A request that timed out with ``halt``, or was abandoned when the run ended, is asked
        again with the same content and a fresh deadline, once the resumed run has a time.
        """
        node = frame.node
        gate = request.gate
        approval = approval_gate(node) if gate in ("arguments", "result") else None
        policy = wait_policy(node, gate)
        if not again or at is None:
            self._park(frame, request, policy, approval)
            return
        number = self._gate_history.get(frame.ident, (request.request, None))[0] + 1
        deadline = None if policy.timeout is None else deadline_after(at, policy.timeout)
        reopened = request.model_copy(update={"request": number, "deadline": deadline, "at": at})
        self._record(reopened)
        self._park(frame, reopened, policy, approval)

    def stop(self, cause: InterruptionCause, at: str) -> None:
        """End the run from outside (``operator_stop``, ``turn_abort``, ...).

        Nothing new starts; frames in flight still settle and are recorded; then
        ``interrupt{cause}`` and ``end`` (outcome by cause) close the log. Halted and recovered
        frames are not waited for. A no-op once the run has settled, and the first cause wins
        if the run is already ending.
        """
        if self.done:
            return
        self._begin_end(cause)
        self._after(at)

    def snapshot(self, at: str) -> LogSnapshot:
        """Record and return a ``snapshot`` of the live frames and open barriers.

        Raises:
            EngineStateError: the run has settled.

        """
        if self.done:
            raise EngineStateError("the run has settled; there is no frontier to snapshot")
        entry = self._snapshot_entry(at)
        self._record(entry)
        return entry

    # ------------------------------------------------------------------------------------
    # Internals: recording, frames, tables
    # ------------------------------------------------------------------------------------

    def _record(self, entry: LogEntry) -> None:
        self._log.append(entry)

    def _invalidate_joins(self) -> None:
        self._joins_version += 1

    def _snapshot_entry(self, at: str) -> LogSnapshot:
        self._snapshot_version = self._joins_version
        return LogSnapshot(at=at)

    def _new_number(self) -> int:
        number = self._next
        self._next = number + 1
        return number

    def _add_live(self, frame: Frame) -> None:
        item = frame.item
        if item is not None:
            item.live += 1
        bucket = self._live.get(frame.node_id)
        if bucket is None:
            self._live[frame.node_id] = {frame.number: frame}
        else:
            bucket[frame.number] = frame
        watchers = self._watch.get(frame.node_id)
        if watchers:
            self._watched(frame, watchers, 1)

    def _remove_live(self, frame: Frame) -> None:
        bucket = self._live.get(frame.node_id)
        if bucket is None or bucket.pop(frame.number, None) is None:
            return
        item = frame.item
        if item is not None:
            item.live -= 1
        if not bucket:
            del self._live[frame.node_id]
        watchers = self._watch.get(frame.node_id)
        if watchers:
            self._watched(frame, watchers, -1)

    def _watched(self, frame: Frame, watchers: list[Barrier], change: int) -> None:
        """A live frame on a watched node came (+1) or went (-1): adjust its barriers' counts."""
        route = frame.route
        for barrier in watchers:
            if route.ancestor_at(barrier.facts.fork) is barrier.prefix:
                barrier.live += change
                if barrier.live <= 0:
                    self._unreachable[barrier.key] = barrier
                else:
                    self._unreachable.pop(barrier.key, None)

    def _model_derived(self, frame: Frame) -> bool:
        """Whether a frame settling ``ok`` produces an output a model contributed to."""
        kind = frame.kind
        if kind == "call":
            refs = self._plan.refs.get(frame.node_id)
            if refs is None:
                args = cast(CallNode, frame.node).definition.args
                refs = self._plan.refs[frame.node_id] = call_refs(args) if args else ()
            return bool(refs) and reads_model(refs, frame.outputs)
        if kind == "reason":
            return True
        if kind == "transform":
            source = entry_for(cast(TransformNode, frame.node).definition.source, frame.artifacts)
            return source is None or source.route.model is not False
        return False

    def _release(self, key: str) -> None:
        del self._running[key]
        self._recovered.pop(key, None)

    def _run_entry(self, run_input: dict[str, Any], at: str, *, count_step: bool) -> None:
        entry = self._plan.entry
        frame = Frame(0, Route.root(entry.id, 0), entry, None, _NO_OUTPUTS, _NO_ARTIFACTS)
        self._next = max(self._next, 1)
        if count_step:
            self._steps += 1
        self._log.append(log_enter(0, 1, at))
        # The input was checked against the value subset before anything was recorded.
        self._settle_ok(frame, (output_item(run_input),), None, at)

    # ------------------------------------------------------------------------------------
    # Internals: what to hand out
    # ------------------------------------------------------------------------------------

    def _dispatch_for(self, frame: Frame) -> Dispatch | Failed:
        """The dispatch of a frame, or the failure that settles it without running."""
        node = frame.node
        kind = frame.kind
        if kind == "call":
            approved = frame.approved
            if approved is not None:
                return Dispatch(
                    frame.ident,
                    frame.number,
                    node,
                    frame.route,
                    frame.via,
                    args=approved,
                    attempt=frame.attempt,
                    args_digest=args_digest(approved),
                )
            definition = cast(CallNode, node).definition
            try:
                args = resolve_args(
                    definition.args, frame.outputs, definition.on_missing_value or "fail"
                )
            except MissingValue as missing:
                return Failed("MissingValueError", missing.message)
            return Dispatch(
                frame.ident,
                frame.number,
                node,
                frame.route,
                frame.via,
                args=args,
                attempt=frame.attempt,
            )
        if kind == "branch" or kind == "select":
            context = _LazyContext(frame)
            return Dispatch(
                frame.ident,
                frame.number,
                node,
                frame.route,
                frame.via,
                context=cast(PredicateContext, context),
                attempt=frame.attempt,
            )
        if kind == "reason":
            parts = resolve_prompt(cast(ReasonNode, node).definition.prompt, frame.outputs)
            return Dispatch(
                frame.ident,
                frame.number,
                node,
                frame.route,
                frame.via,
                prompt_parts=parts,
                attempt=frame.attempt,
                rounds=frame.rounds,
                tries=frame.attempt - frame.tries_before,
            )
        if kind == "transform":
            reads = cast(TransformNode, node).definition.source
            found = entry_for(reads, frame.artifacts)
            if found is None:
                return Failed(
                    "MissingArtifactError",
                    f'transform source "{reads.node}" has no artifact on this '
                    "route; read the output of a call whose tool returns an artifact",
                )
            return Dispatch(
                frame.ident,
                frame.number,
                node,
                frame.route,
                frame.via,
                source=cast(ArtifactHandle, found.value),
                attempt=frame.attempt,
            )
        return Failed(
            "UnrunnableNodeError", f'node "{node.id}" of kind {node.kind} cannot be run here'
        )

    # ------------------------------------------------------------------------------------
    # Internals: settlements
    # ------------------------------------------------------------------------------------

    @staticmethod
    def _refuse(key: str, result: str, kind: str) -> NoReturn:
        raise EngineStateError(f'{result} does not settle frame "{key}" of a {kind} node')

    def _succeed(self, frame: Frame, result: Succeeded, at: str, *, hold: bool = False) -> None:
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
        if hold:
            # Held for a person's approval: recorded with the request, settled once decided.
            self._open_gate(frame, "result", at, items=items, artifact=result.artifact)
            return
        self._settle_ok(frame, cast(Items, items), result.artifact, at)

    def _settle_ok(
        self, frame: Frame, items: Items, artifact: ArtifactHandle | None, at: str
    ) -> None:
        number = frame.number
        kind = frame.kind
        if kind == "call" or kind == "transform":
            frame.route.model = self._model_derived(frame)
        elif kind == "map" or kind == "loop":
            # The items' results may come from anywhere in the body: unknown reads as model.
            frame.route.model = None
        else:
            frame.route.model = kind == "reason"
        outputs = frame.outputs.set(number, frame.node_id, frame.route, items)
        artifacts = frame.artifacts
        if artifact is not None:
            artifacts = artifacts.set(number, frame.node_id, frame.route, artifact)
        self._log.append(
            log_settle(number, "ok", items, artifact, False, None, frame.attempt, None, at)
        )
        hops = self._plan.success_hops.get(frame.node_id, ())
        item = frame.item
        if item is not None and not hops:
            # A body frame with nothing after it: its output is the item's result so far.
            item.result = items[0].json_ if items else None
            item.last, item.outputs, item.artifacts = frame, outputs, artifacts
        self._close_frame(frame, hops, outputs, artifacts, None, at)

    def _decide(self, frame: Frame, result: Decided, at: str) -> None:
        node = frame.node
        # A loop's until check fires no edge: its verdict ends the loop or starts a round.
        hops = () if frame.check is not None else self._plan.verdict_hops(node, result.verdict)
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
        verdict = make_verdict(
            self._plan.verdict_handle(result.verdict),
            evidence,
            verdict_check(evidence, frame.outputs),
        )
        self._log.append(
            log_settle(frame.number, "ok", (), None, False, None, frame.attempt, verdict, at)
        )
        self._close_frame(frame, hops, frame.outputs, frame.artifacts, evidence, at)
        if frame.check is not None:
            self._checked(frame.check, frame, verdict.handle == "match", at)

    def _skip(self, frame: Frame, at: str) -> None:
        self._log.append(
            log_settle(frame.number, "skipped", (), None, False, None, frame.attempt, None, at)
        )
        self._close_frame(
            frame,
            self._plan.success_hops.get(frame.node_id, ()),
            frame.outputs,
            frame.artifacts,
            None,
            at,
        )

    def _fail(self, frame: Frame, failure: Failed, at: str) -> None:
        error = ErrorInfo(name=failure.name, message=failure.message)
        check = frame.check
        hops = () if check is not None else self._plan.error_hops.get(frame.node_id, ())
        item = frame.item
        if not hops and item is not None and item.error is None:
            # Inside a map's body an unhandled failure fails the item, not the run: the map
            # counts it against its tolerance once the item's other frames are done.
            item.error = {"node": frame.node_id, "name": failure.name, "message": failure.message}
        # An error edge takes the failure; without one the batch is the settlement alone (no
        # edge fires, and no barrier changed since the last snapshot), and the run ends.
        self._log.append(
            log_settle(
                frame.number,
                "failed",
                (),
                None,
                bool(hops) or item is not None or check is not None,
                error,
                frame.attempt,
                None,
                at,
            )
        )
        self._close_frame(frame, hops, frame.outputs, frame.artifacts, None, at)
        if check is not None:
            # An until predicate that cannot be evaluated fails the loop (its error edges).
            self._end_loop_failed(
                check,
                "LoopUntilError",
                f"the until predicate of round {len(check.rounds) - 1} could not be evaluated "
                f"({failure.name}: {failure.message})",
                at,
            )
            return
        if hops or item is not None:
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
        hops: Sequence[Hop],
        outputs: FrameTable[Items],
        artifacts: FrameTable[ArtifactHandle],
        evidence: Any,
        at: str,
    ) -> None:
        """The rest of a settlement batch: ``edge`` per fired edge, then a snapshot if needed.

        Each fired edge spawns its successor frame here, sharing ``outputs`` and ``artifacts``
        with its siblings.
        """
        self._halted.pop(frame.ident, None)
        self._remove_live(frame)
        if hops:
            log = self._log
            queue = self._queue
            route = frame.route
            number = frame.number
            item = frame.item
            for hop in hops:
                child_number = self._next
                self._next = child_number + 1
                target = hop.target
                child = Frame(
                    child_number,
                    route.child(hop.segment, hop.token, hop.target_id, child_number),
                    target,
                    hop.edge_id,
                    outputs,
                    artifacts,
                )
                child.item = item
                self._add_live(child)
                queue.append(child)
                log.append(
                    log_edge(
                        hop.edge_id,
                        hop.handle,
                        number,
                        child_number,
                        hop.target_id,
                        target.kind,
                        evidence,
                        at,
                    )
                )
        if self._joins_version != self._snapshot_version:
            # Frames need no snapshot (the fold advances them from settle and edge entries);
            # barriers do, so a snapshot closes a batch only when one changed.
            self._log.append(self._snapshot_entry(at))
        finished = frame.item
        if finished is not None and finished.live <= 0:
            self._item_done(finished, at)

    # ------------------------------------------------------------------------------------
    # Internals: maps
    # ------------------------------------------------------------------------------------

    def _open_map(self, head: Frame, at: str) -> None:
        """A map's frame was entered: read its list, then start its first items.

        The frame stays live (not in flight: nothing is handed to the host) until every item
        ran; :meth:`_finish_map` settles it. A list longer than ``maxItems`` fails it at once.
        """
        node = cast(MapNode, head.node)
        definition = node.definition
        over = definition.over
        values = resolve_ref(over, head.outputs)
        where = over.node if over.path is None else f"{over.node}.{over.path}"
        if values is MISSING or not isinstance(values, list):
            got = "nothing" if values is MISSING else type(values).__name__
            self._fail(
                head,
                Failed(
                    "MapItemsError",
                    f'map "{node.id}" reads `{where}`, which is not a list on this route (got '
                    f"{got}); map over a list",
                ),
                at,
            )
            return
        if len(values) > definition.max_items:
            self._fail(
                head,
                Failed(
                    "MapTooManyItemsError",
                    f'map "{node.id}" got {len(values)} items from `{where}`, more than its '
                    f"maxItems {definition.max_items}; no item ran",
                ),
                at,
            )
            return
        source = entry_for(over, head.outputs)
        run = MapRun(head, values, definition.concurrency or max(1, len(values)))
        run.model = None if source is None else source.route.model
        batching = self._batching
        if batching is not None and len(values) > batching.over:
            facts = self._facts_of(node.id)
            if facts is not None:
                size = batching.size(facts.item_steps)
                total = len(values)
                run.batches = [(lo, min(lo + size, total)) for lo in range(0, total, size)]
                run.limit = min(run.limit, len(run.batches))
        self._maps[head.number] = run
        self._advance_map(run, at)

    def _advance_map(self, run: MapRun, at: str) -> None:
        """Start items while the map's concurrency allows, then settle it if it is done."""
        if run.starting:
            return
        run.starting = True
        try:
            self._start_items(run, at)
        finally:
            run.starting = False
        if run.active == 0 and self._maps.get(run.head.number) is run:
            definition = cast(MapNode, run.head.node).definition
            total = len(run.values)
            batches = run.batches
            started_all = run.next >= run.end if batches is None else run.next_batch >= len(batches)
            if started_all or (self._batch is None and not definition.tolerates(run.failed, total)):
                self._finish_map(run, at)

    def _start_items(self, run: MapRun, at: str) -> None:
        if run.batches is not None:
            self._start_batches(run)
            return
        head = run.head
        map_id = head.node_id
        definition = cast(MapNode, head.node).definition
        total = len(run.values)
        first = run.first
        # A batch runs all its items: the run decides on the tolerance, batch by batch.
        tolerance = self._batch is None
        hops = self._plan.item_hops.get(map_id, ())
        while run.next < run.end and run.active < run.limit:
            if tolerance and not definition.tolerates(run.failed, total):
                return
            index = run.next
            value = {"index": index, "item": run.values[index - first]}
            if not self._start_item(run, hops, value, at):
                return

    def _start_batches(self, run: MapRun) -> None:
        """Hand out batches while the map's concurrency allows (in order, each once)."""
        batches = run.batches
        assert batches is not None
        head = run.head
        definition = cast(MapNode, head.node).definition
        total = len(run.values)
        checkpoint: Checkpoint | None = None
        while run.next_batch < len(batches) and run.active < run.limit:
            if self._draining is not None or self.done:
                return
            if not definition.tolerates(run.failed, total):
                return
            if checkpoint is None:
                checkpoint = self._batch_checkpoint(head)
            index = run.next_batch
            first, end = batches[index]
            run.next_batch = index + 1
            run.next = end
            run.active += 1
            key = f"{head.ident}#batch{index}"
            spec = BatchSpec(
                plan_id=self._plan.plan_id,
                map_frame=head.number,
                batch=index,
                first=first,
                items=tuple(cast(Any, run.values[first:end])),
                model=run.model,
                base=head.number + 1,
                checkpoint=checkpoint,
            )
            self._batch_running[key] = (run, index)
            self._batch_out.append(BatchDispatch(key, head.node_id, spec))

    def _batch_checkpoint(self, head: Frame) -> Checkpoint:
        """The map's frame alone, with the outputs its body reads: what each batch starts from."""
        from orchestration.run.checkpoint import make_checkpoint

        return make_checkpoint(
            self._plan,
            run_id=self.run_id,
            digest=self.digest,
            next_frame=head.number + 1,
            steps=0,
            frames=[head],
            barriers=[],
            needed=cast(BatchFacts, self._facts_of(head.node_id)).reads,
        )

    def _facts_of(self, map_id: str) -> BatchFacts | None:
        known = self._batch_facts
        if map_id not in known:
            known[map_id] = batch_facts(self._plan, map_id, self._args_gates | self._result_gates)
        return known[map_id]

    def _take_batch(self, run: MapRun, index: int, result: BatchResult, at: str) -> int:
        """Splice batch ``index``'s log in at the run's next frame numbers; record its rows.

        Returns how many entries it spliced.
        """
        head = run.head
        base = head.number + 1
        offset = self._next - base
        log = self._log
        entries = result.entries(base, offset)
        log.extend(entries)
        self._next = result.next_frame + offset
        self._steps += result.steps
        first, end = cast(list[tuple[int, int]], run.batches)[index]
        rows = {cast(int, row["index"]): row for row in result.rows}
        if result.ended is not None:
            # The batch stopped early: what it left unsettled fails, as do its items that
            # did not finish; no call of it is repeated.
            for number in unsettled(entries):
                log.append(
                    log_settle(
                        number,
                        "failed",
                        (),
                        None,
                        False,
                        ErrorInfo(name="MapBatchEndedError", message=result.ended),
                        1,
                        None,
                        at,
                    )
                )
        for item in range(first, end):
            row = rows.get(item)
            if row is None:
                row = {
                    "index": item,
                    "ok": False,
                    "error": {
                        "node": head.node_id,
                        "name": "MapBatchEndedError",
                        "message": f"item {item} did not finish: its batch ended early "
                        f"({result.ended or 'no result'})",
                    },
                }
            if not row["ok"]:
                run.failed += 1
            run.results[item] = row
        run.active -= 1
        return len(entries)

    def _start_item(
        self, run: MapRun, hops: Sequence[Hop], value: dict[str, object], at: str
    ) -> bool:
        """Start item (or round) ``run.next`` with ``value`` as its frame's output.

        Returns whether it started (not when the run is ending, or out of steps).
        """
        if self._draining is not None or self.done:
            return False
        if self._steps >= self._plan.max_steps:
            self._begin_end(BudgetExhausted(settled=self._steps))
            return False
        head = run.head
        map_id = head.node_id
        self._steps += 1
        index = run.next
        run.next = index + 1
        run.active += 1
        number = self._new_number()
        route = head.route.child(
            item_segment(map_id, index), item_token(map_id, index), map_id, number
        )
        route.model = run.model
        frame = Frame(number, route, head.node, None, head.outputs, head.artifacts)
        items = (output_item(value),)
        outputs = head.outputs.set(number, map_id, route, items)
        frame.item = ItemRun(run, index, frame, outputs, head.artifacts)
        frame.entered_at = at
        log = self._log
        log.append(LogItem(frame=number, map=head.number, index=index, at=at))
        log.append(log_enter(number, 1, at))
        log.append(log_settle(number, "ok", items, None, False, None, 1, None, at))
        self._close_frame(frame, hops, outputs, head.artifacts, None, at)
        return True

    def _item_done(self, item: ItemRun, at: str) -> None:
        """An item has no live frame left: record its result and move its map on."""
        run = item.map
        if self._maps.get(run.head.number) is not run or item.index in run.results:
            return
        if isinstance(run, LoopRun):
            self._round_done(run, item, at)
            return
        run.active -= 1
        if item.error is not None:
            run.failed += 1
            run.results[item.index] = {"index": item.index, "ok": False, "error": item.error}
        else:
            run.results[item.index] = {"index": item.index, "ok": True, "result": item.result}
        self._advance_map(run, at)

    def _finish_map(self, run: MapRun, at: str) -> None:
        """Every item ran (or too many failed): settle the map's frame once.

        In a batch's sub-run the map's frame is the run's, not the batch's: its rows are kept
        for :meth:`batch_result` instead.
        """
        head = run.head
        del self._maps[head.number]
        if self._batch is not None:
            return
        definition = cast(MapNode, head.node).definition
        total = len(run.values)
        if definition.tolerates(run.failed, total):
            items = tuple(output_item(run.results[i]) for i in range(total))
            self._settle_ok(head, items, None, at)
            return
        failures = [row for _, row in sorted(run.results.items()) if not row["ok"]]
        named = "; ".join(
            f'item {row["index"]} at "{error["node"]}" ({error["name"]}: {error["message"]})'
            for row in failures[:5]
            for error in [cast(dict[str, str], row["error"])]
        )
        more = f"; and {len(failures) - 5} more" if len(failures) > 5 else ""
        self._fail(
            head,
            Failed(
                "MapToleranceExceededError",
                f'map "{head.node_id}": {run.failed} of {total} items failed, more than it '
                f"tolerates ({_tolerance(definition)}): {named}{more}",
            ),
            at,
        )

    # ------------------------------------------------------------------------------------
    # Internals: loops
    # ------------------------------------------------------------------------------------

    def _open_loop(self, head: Frame, at: str) -> None:
        """A loop's frame was entered: start its first round.

        A loop runs as a map of one item at a time whose items are rounds: the frame stays
        live until its last round's check; :meth:`_finish_loop` settles it.
        """
        run = LoopRun(head)
        # Round 0 reads only its index; a later round also the round before's result, which
        # traces back to a model as the frame that ended that round did.
        run.model = False
        self._maps[head.number] = run
        self._next_round(run, at)

    def _next_round(self, run: LoopRun, at: str) -> None:
        previous = run.rounds[-1] if run.rounds else None
        hops = self._plan.item_hops.get(run.head.node_id, ())
        self._start_item(run, hops, {"index": run.next, "previous": previous}, at)

    def _round_done(self, run: LoopRun, item: ItemRun, at: str) -> None:
        """A round has no live frame left: fail the loop, or check its until predicate.

        The check is a frame of the loop node on the route of the body frame that ended the
        round (so it reads the round's outputs), dispatched as a branch with the loop's
        ``until``; it is a step like any frame, and :meth:`_checked` takes its verdict.
        """
        run.active = 0
        run.results[item.index] = {}
        head = run.head
        if item.error is not None:
            error = item.error
            self._end_loop_failed(
                run,
                "LoopRoundFailedError",
                f'round {item.index} failed at "{error["node"]}" ({error["name"]}: '
                f"{error['message']})",
                at,
            )
            return
        run.rounds.append(item.result)
        run.model = item.last.route.model
        node = cast(LoopNode, head.node)
        until = node.definition.until
        check_node = BranchNode(
            id=node.id,
            phase=node.phase,
            definition=BranchDefinition(evaluator=until.evaluator, predicate=until.predicate),
        )
        last = item.last
        loop_id = head.node_id
        number = self._new_number()
        route = last.route.child(
            item_segment(loop_id, item.index), item_token(loop_id, item.index), loop_id, number
        )
        route.model = last.route.model
        frame = Frame(number, route, check_node, None, item.outputs, item.artifacts)
        frame.check = run
        self._log.append(
            LogItem(frame=number, map=head.number, index=item.index, after=last.number, at=at)
        )
        self._add_live(frame)
        self._queue.append(frame)

    def _checked(self, run: LoopRun, check: Frame, met: bool, at: str) -> None:
        """A round's until check decided: end the loop, or start the next round."""
        if self._maps.get(run.head.number) is not run:
            return
        definition = cast(LoopNode, run.head.node).definition
        fingerprint: str | None = None
        if definition.watch is not None:
            watched = resolve_ref(definition.watch, check.outputs)
            if watched is not MISSING:
                fingerprint = args_digest({"watched": watched})
        if met:
            self._finish_loop(run, "until", at)
        elif fingerprint is not None and fingerprint == run.fingerprint:
            self._finish_loop(run, "stuck", at)
        elif len(run.rounds) >= definition.max_iterations:
            self._finish_loop(run, "max_iterations", at)
        else:
            run.fingerprint = fingerprint
            self._next_round(run, at)

    def _finish_loop(self, run: LoopRun, ended: str, at: str) -> None:
        """The loop ended: settle its frame once with how, or fail it if it must meet until."""
        head = run.head
        definition = cast(LoopNode, head.node).definition
        rounds = len(run.rounds)
        if ended != "until" and definition.fail_unless_met:
            why = (
                f"its watched output was the same two rounds in a row (round {rounds - 1})"
                if ended == "stuck"
                else f"it ran its maxIterations {definition.max_iterations} round(s)"
            )
            self._end_loop_failed(run, "LoopUnmetError", f"its until never held: {why}", at)
            return
        del self._maps[head.number]
        row = {
            "ended": ended,
            "rounds": rounds,
            "result": run.rounds[-1] if run.rounds else None,
            "results": list(run.rounds),
        }
        self._settle_ok(head, (output_item(row),), None, at)

    def _end_loop_failed(self, run: LoopRun, name: str, message: str, at: str) -> None:
        head = run.head
        self._maps.pop(head.number, None)
        self._fail(head, Failed(name, f'loop "{head.node_id}": {message}'), at)

    # ------------------------------------------------------------------------------------
    # Internals: joins
    # ------------------------------------------------------------------------------------

    def _arrive(self, frame: Frame, at: str) -> None:
        """A frame reached its join: add it to its barrier; close it or park it."""
        facts = self._plan.join(frame.node_id)
        prefix = frame.route.ancestor_at(facts.fork) or frame.route
        self._remove_live(frame)
        barrier = self._barriers.get((facts.node_id, prefix.frame))
        if barrier is None:
            barrier = Barrier(facts, prefix)
            self._open_barrier(barrier)
        barrier.add(frame)
        self._invalidate_joins()
        if barrier.complete:
            self._close_barrier(barrier, frame, at)
        else:
            self._snapshot_version = self._joins_version
            self._record(
                LogArrive(frame=frame.number, fork=prefix.frame, required=facts.required, at=at)
            )

    def _close_barrier(self, barrier: Barrier, completing: Frame, at: str) -> None:
        self._close_watch(barrier)
        self._invalidate_joins()
        facts = barrier.facts
        if len(barrier.arrivals) < facts.required:
            self._cancel_rest(barrier, at)
        plan = self._plan
        number = self._new_number()
        route = barrier.prefix.child(facts.segment, facts.segment_key, facts.node_id, number)
        rows = sorted((a.via or "", a.route.key) for a in barrier.arrivals)
        items = tuple(
            output_item({"via": via, "from": plan.source_of(via), "branch": b}) for via, b in rows
        )
        merged = Frame(
            number,
            route,
            completing.node,
            completing.via,
            FrameTable.union([a.outputs for a in barrier.arrivals]),
            FrameTable.union([a.artifacts for a in barrier.arrivals]),
        )
        merged.item = completing.item
        self._record(
            LogMerge(
                frame=number,
                node=facts.node_id,
                fork=barrier.prefix.frame,
                of=facts.segment.of,
                via=completing.via,
                arrivals=tuple(a.number for a in barrier.arrivals),
            )
        )
        self._settle_ok(merged, items, None, at)

    def _cancel_rest(self, barrier: Barrier, at: str) -> None:
        """An ``any`` or quorum barrier closed early: cancel every frame still on its routes.

        Those are the live frames on the join's region (the join's own queued arrivals
        included) whose route passes this barrier's fork frame. Each is recorded ``cancel`` and
        fires no edge; an in-flight one is handed to the host to stop (:meth:`drain_cancelled`).
        """
        fork, prefix = barrier.facts.fork, barrier.prefix
        doomed = [
            frame
            for node_id in barrier.facts.region_nodes
            for frame in self._live.get(node_id, {}).values()
            if frame.route.ancestor_at(fork) is prefix
        ]
        # A map running its items on such a route goes too, with every frame of its body.
        heads = [frame.route for frame in doomed if frame.number in self._maps]
        if heads:
            seen = {frame.number for frame in doomed}
            doomed += [
                frame
                for frame in self.live_frames()
                if frame.number not in seen and any(frame.route.extends(h) for h in heads)
            ]
        for frame in doomed:
            key = frame.ident
            if key in self._running:
                self._release(key)
                self._halted.pop(key, None)
                self._cancelled.append(key)
            elif self._maps.pop(frame.number, None) is None:
                self._queue.remove(frame)
            self._remove_live(frame)
            self._record(LogCancel(frame=frame.number, at=at))

    def _open_barrier(self, barrier: Barrier) -> None:
        """Open a barrier: count the live frames that may still arrive, and watch its region."""
        live = self._live
        fork, prefix = barrier.facts.fork, barrier.prefix
        barrier.live = sum(
            1
            for node_id in barrier.facts.region_nodes
            for f in live.get(node_id, {}).values()
            if f.route.ancestor_at(fork) is prefix
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
        if self._batch_running:
            return
        if self._draining is not None:
            if all(k in self._halted or k in self._recovered for k in self._running):
                self._finish(self._draining, at)
            return
        if not self._running and not self._queue and not self._waiting:
            if self._barriers:
                first = next(iter(self._barriers.values()))
                self._finish(JoinUnsatisfiable(node_id=first.facts.node_id), at)
            else:
                self._finish(None, at)

    def _finish(self, cause: InterruptionCause | None, at: str) -> None:
        quiet = self._batch is not None  # a batch's end is the run's to record, not its own
        if cause is not None:
            if not quiet:
                self._record(LogInterrupt(cause=cause, at=at))
            self._run_cause = cause
        outcome = outcome_for(cause)
        if not quiet:
            self._record(LogEnd(outcome=outcome, at=at))
        self._outcome = outcome


def _describe_cause(cause: InterruptionCause) -> str:
    """An interruption in a line: its kind and its fields."""
    fields = cause.model_dump(mode="json", exclude={"kind"}, exclude_none=True)
    said = ", ".join(f"{name}={value}" for name, value in fields.items())
    return f"{cause.kind} ({said})" if said else cause.kind


def _tolerance(definition: MapDefinition) -> str:
    """A map's failure tolerance in words."""
    parts = []
    if definition.tolerated_failures is not None:
        parts.append(f"{definition.tolerated_failures} failed item(s)")
    if definition.tolerated_failure_percent is not None:
        parts.append(f"{definition.tolerated_failure_percent:g}% of the items")
    return " or ".join(parts) if parts else "no failed item"


class _LazyContext:
    """A branch or select frame's ``PredicateContext``, rendered only as far as a cell reads it.

    ``outputs`` is the frame's table seen through contract keys, and ``frame`` its contract
    reference; both cost the route's depth to build, which most cells never pay in full.
    """

    __slots__ = ("_frame", "_outputs", "_ref")

    def __init__(self, frame: Frame) -> None:
        self._frame = frame
        self._outputs: Mapping[str, NodeOutput] | None = None
        self._ref: Any = None

    @property
    def outputs(self) -> Mapping[str, NodeOutput]:
        outputs = self._outputs
        if outputs is None:
            outputs = self._outputs = self._frame.outputs.contract_view(_output_of)
        return outputs

    @property
    def frame(self) -> Any:
        from orchestration.run.engine.builders import frame_ref

        ref = self._ref
        if ref is None:
            f = self._frame
            ref = self._ref = frame_ref(f.node_id, f.kind, f.route.branch_id(), f.via)
        return ref
