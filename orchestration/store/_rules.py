"""The decisions every bundled store makes, in one place so the stores cannot drift apart.

A store's job splits in two: *deciding* whether a write is admissible, given the plan's record
as it is now, and *committing* it atomically. The deciding is pure and lives here; each store
reads its record inside its own critical section (an ``asyncio.Lock``, a ``BEGIN IMMEDIATE``
transaction), asks these functions, and writes exactly what they admitted. The Hypothesis test
that runs the memory and SQLite stores side by side then checks the committing, which is
where they really differ.

Identity of an op's *content* is its canonical digest, never ``==``: pydantic equality says
``1 == 1.0 == True``, while the plan digest tells them apart, so two ops that compare equal
may still fold to different plans. A run-log entry's identity is its canonical JSON body
(:func:`log_body`) for the same reason, and because that body is what the SQL stores keep.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from pydantic import TypeAdapter, ValidationError

from orchestration.errors import (
    MalformedRunLogError,
    RevisionOutOfRangeError,
    RunLogConflictError,
    RunNotFoundError,
)
from orchestration.plan.encoding import canonical_digest
from orchestration.plan.ops import fold_ops
from orchestration.run.log import LogEnd, LogEntry
from orchestration.run.trace import settled_ok_nodes
from orchestration.types import (
    CloneProvenance,
    PlanOp,
    PlanProvenance,
    PlanState,
    RunOutcome,
)

from .base import (
    AppendRefused,
    ClaimOk,
    ClaimRefusal,
    ClaimRefused,
    CreateRefused,
    RevisionState,
    RunRecord,
    StateDigest,
    TransitionRefused,
    TransitionRequest,
)

OP_JSON: TypeAdapter[PlanOp] = TypeAdapter(PlanOp)
LOG_ENTRY_JSON: TypeAdapter[LogEntry] = TypeAdapter(LogEntry)
PROVENANCE_JSON: TypeAdapter[PlanProvenance] = TypeAdapter(PlanProvenance)

VERSION_1_EXECUTION = "version-1"
"""The execution a schema upgrade binds to a run claimed before runs named their execution.

Such a run was claimed by the client that started it, so it may have run, and its events are
not in the compact log: binding it to an execution no worker has keeps every other execution
out (``run_already_claimed``), and with no outcome it is never resumed (``run_not_ended``).
"""

LEGAL_TRANSITIONS: frozenset[tuple[PlanState, PlanState]] = frozenset(
    {("editable", "reviewable"), ("reviewable", "executable")}
)
"""Forward only: there is no path back from ``reviewable`` or ``executable``."""


def utc_now() -> str:
    """The current UTC time as ISO-8601 with microseconds (a fixed width, so it sorts as text)."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="microseconds")


def op_fingerprint(op: PlanOp) -> str:
    """The identity of an op's content: the sha256 of its canonical encoding."""
    return canonical_digest(op)


def plan_not_found_message(method: str, plan_id: str) -> str:
    """The message of a ``PlanNotFoundError``."""
    return f'{method}: no plan "{plan_id}"'


def checked_revision(plan_id: str, current: int, revision: int | None) -> int:
    """``revision`` (default ``current``), refused unless it is in ``[0, current]``.

    Raises:
        RevisionOutOfRangeError: the plan never reached ``revision``.

    """
    if revision is None:
        return current
    if not 0 <= revision <= current:
        raise RevisionOutOfRangeError(
            f'plan "{plan_id}" never reached revision {revision} (it is at {current})'
        )
    return revision


def ops_since(ops: Iterable[PlanOp], since_lamport: int | None) -> list[PlanOp]:
    """A fresh list of ``ops``, only those with ``lamport > since_lamport`` when it is given."""
    if since_lamport is None:
        return list(ops)
    return [op for op in ops if op.lamport > since_lamport]


def screen_clone(source_revision: int, at_revision: int | None) -> CreateRefused | int:
    """The revision a clone copies (default: the source's), or ``revision_missing``.

    The store checks ``source_missing`` and ``duplicate_id`` first, in that order.
    """
    revision = source_revision if at_revision is None else at_revision
    if not 0 <= revision <= source_revision:
        return CreateRefused(reason="revision_missing")
    return revision


def clone_provenance(
    source_id: str,
    ops: Sequence[PlanOp],
    source_provenance: PlanProvenance | None,
    run_log: Iterable[LogEntry],
) -> CloneProvenance:
    """A clone's lineage: the source's digest over ``ops``, the prefix the clone copies.

    Args:
        source_id: The plan cloned.
        ops: The source's first ``revision`` ops, which the clone starts from.
        source_provenance: The source's own lineage, which its digest folds in.
        run_log: The source's run log (empty when it never ran); the node ids it settled
            ``ok`` become ``completedAtClone``, in log order, each once.

    Raises:
        MalformedRunLogError: the source's run log cannot be read forward.

    """
    try:
        completed = settled_ok_nodes(run_log)
    except MalformedRunLogError as exc:
        raise MalformedRunLogError(
            f'clone_plan: the run log of plan "{source_id}" cannot be read ({exc.message}); '
            "only a log its run's host wrote, entry by entry from its start, can be cloned from"
        ) from exc
    return CloneProvenance(
        parent=source_id,
        parent_digest=fold_ops(source_id, ops, source_provenance).view.digest,
        parent_revision=len(ops),
        completed_at_clone=completed,
    )


@dataclass(frozen=True)
class InvalidOp:
    """Why one op of a batch cannot be stored: it is not what the wire would deliver.

    Attributes:
        index: Its position in the batch.
        op_id: Its ``opId``, when it has a readable one.
        field: The dotted path of the first field at fault (``lamport``, ``node.definition``),
            or ``None`` when the op as a whole has no wire form.
        problem: What is wrong with that field.

    """

    index: int
    op_id: str | None
    field: str | None
    problem: str

    def refusal(self, actual: RevisionState) -> AppendRefused:
        """The ``invalid_op`` refusal naming this op and field."""
        who = f'op #{self.index} (opId "{self.op_id}")' if self.op_id else f"op #{self.index}"
        where = f"field {self.field}" if self.field else "the op"
        return AppendRefused(
            reason="invalid_op",
            actual=actual,
            detail=(
                f"{who}: {where}: {self.problem}; nothing was written. Build ops with their "
                "model constructors (or PlanAuthor), never with model_construct or "
                "model_copy(update=...), and append the batch again"
            ),
            op_id=self.op_id,
            field=self.field,
        )


def wire_checked(ops: Sequence[object]) -> list[PlanOp] | InvalidOp:
    """Each op as it would arrive off the wire, or the first one that would not arrive intact.

    An op object may never have been validated (``model_construct``, ``model_copy(update=...)``,
    an object of another type): its fields can hold a string where the log orders by integer,
    an unreadable time, a value outside the encodable subset. Storing one would make every
    later read, fold and append of the plan fail, so every store passes every op through its
    JSON wire form first: dumped, validated strictly (no coercion, as a reader would), and
    dumped again to the same bytes. The copies returned are what the store keeps, so nothing
    the caller still holds (a mutable ``args`` dict) is shared with the log either.
    """
    checked: list[PlanOp] = []
    for index, op in enumerate(ops):
        op_id = getattr(op, "op_id", None)
        label = op_id if isinstance(op_id, str) and op_id else None
        try:
            wire = OP_JSON.dump_json(op, warnings=False)  # type: ignore[arg-type]
        except Exception as exc:  # noqa: BLE001 - whatever stops the dump, the op is unstorable
            return InvalidOp(index, label, None, f"it has no JSON wire form ({_first_line(exc)})")
        try:
            clean = OP_JSON.validate_json(wire, strict=True)
        except ValidationError as exc:
            error = exc.errors(include_url=False)[0]
            loc = tuple(str(part) for part in error["loc"])
            # The first segment is the op union's tag ("add_node"), not a field of the op.
            field = ".".join(loc[1:] if len(loc) > 1 else loc) or None
            return InvalidOp(index, label, field, str(error["msg"]))
        if OP_JSON.dump_json(clean) != wire:  # pragma: no cover - strict validation is exact
            return InvalidOp(index, label, None, "its wire form does not read back unchanged")
        checked.append(clean)
    return checked


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def screen_append(
    state: PlanState,
    revision: int,
    ops: Sequence[PlanOp] | InvalidOp,
    known: Mapping[str, str],
    expected_revision: int | None,
) -> AppendRefused | list[tuple[PlanOp, str]]:
    """Decide an append against the plan as it is now.

    Args:
        state: The plan's state.
        revision: The plan's revision (the length of its log).
        ops: The batch as :func:`wire_checked` returned it, in append order.
        known: ``opId -> fingerprint`` for (at least) every op id of the batch already in the log.
        expected_revision: The revision the writer decided against, if it said.

    Returns:
        The refusal (checked in order: ``not_editable``, ``invalid_op``, ``conflicting_op``,
        ``revision_moved``), or the ops to write (with their fingerprints): the batch minus the
        ops already in the log and minus repeats inside the batch. ``expected_revision`` guards
        writes only: a batch that adds nothing (a retried delivery that already landed) is
        acknowledged whatever revision it expected, since it cannot lose anyone's update.

    """
    actual = RevisionState(state=state, revision=revision)
    if state != "editable":
        return AppendRefused(
            reason="not_editable",
            actual=actual,
            detail=f"the plan is {state}; only an editable plan takes ops (clone it to edit)",
        )
    if isinstance(ops, InvalidOp):
        return ops.refusal(actual)
    fresh: dict[str, tuple[PlanOp, str]] = {}
    for op in ops:
        fingerprint = op_fingerprint(op)
        seen = known.get(op.op_id)
        if seen is None:
            earlier = fresh.get(op.op_id)
            if earlier is None:
                fresh[op.op_id] = (op, fingerprint)
                continue
            seen = earlier[1]
        if seen != fingerprint:
            return AppendRefused(
                reason="conflicting_op",
                actual=actual,
                detail=(
                    f'opId "{op.op_id}" already names an op with different content; '
                    "give the new edit an opId of its own"
                ),
            )
    if fresh and expected_revision is not None and expected_revision != revision:
        return AppendRefused(
            reason="revision_moved",
            actual=actual,
            detail=(
                f"the ops were made against revision {expected_revision} but the plan is at "
                f"{revision}; re-read it and decide again"
            ),
        )
    return list(fresh.values())


def screen_transition(
    plan_id: str, state: PlanState, digest: str, request: TransitionRequest
) -> TransitionRefused | None:
    """Decide a lifecycle move: state, then digest, then legality, then the approval.

    An approval carried by a request other than ``reviewable → executable`` is ignored. The
    approval of the gate must name this plan and the digest being approved: the store is the
    last place where "what was approved" and "what becomes executable" are compared in the same
    commit.

    Returns:
        The refusal, or ``None`` when the move is admitted.

    """
    actual = StateDigest(state=state, digest=digest)
    source, target = request.from_, request.to
    if state != source:
        return TransitionRefused(
            reason="state_mismatch",
            actual=actual,
            detail=f"the request moves from {source}, but the plan is {state}",
        )
    if digest != request.expected_digest:
        return TransitionRefused(
            reason="digest_mismatch",
            actual=actual,
            detail="the plan's content changed since the request was decided; re-read it",
        )
    if (source, target) not in LEGAL_TRANSITIONS:
        return TransitionRefused(
            reason="illegal_transition",
            actual=actual,
            detail=(
                f"{source} → {target} is not a lifecycle move; the only moves are editable → "
                "reviewable and reviewable → executable (clone the plan to change it)"
            ),
        )
    if target == "executable":
        approval = request.approval
        if approval is None:
            return TransitionRefused(
                reason="approval_missing",
                actual=actual,
                detail="reviewable → executable must carry the approval record",
            )
        if approval.plan_id != plan_id or approval.digest != digest:
            return TransitionRefused(
                reason="approval_missing",
                actual=actual,
                detail=(
                    f'the approval is for plan "{approval.plan_id}" at digest {approval.digest}, '
                    f'not for plan "{plan_id}" at {digest}'
                ),
            )
    return None


def screen_claim(
    state: PlanState,
    digest: str,
    run: RunRecord | None,
    expected_digest: str,
    run_id: str,
    execution: str | None,
    *,
    resume: bool,
) -> tuple[ClaimOk | ClaimRefused, RunRecord | None]:
    """Decide a run claim: state, then digest, then the run (see ``PlanStore.claim_run``).

    Args:
        state: The plan's state.
        digest: The plan's current digest.
        run: The plan's run as stored, or ``None`` before any claim.
        expected_digest: The digest the claimant decided on.
        run_id: The run claimed.
        execution: The execution claiming it (``None``: a reservation, or a host without
            executions).
        resume: Whether this is a resume (a new execution of an ended run).

    Returns:
        The answer, and the run record to store (``None``: write nothing).

    """
    if state != "executable":
        return _refused(
            "not_executable",
            run,
            f"the plan is {state}; only an approved (executable) plan can be run",
        ), None
    if digest != expected_digest:
        return _refused(
            "digest_mismatch",
            run,
            "the plan's content is not the content the claim was decided on; re-read the plan "
            "and check its approval",
        ), None
    if resume:
        return _screen_resume(run, run_id, execution)
    if run is None:
        record = RunRecord(run_id=run_id, execution=execution)
        return ClaimOk(run_id=run_id, resumed=False), record
    if run.run_id != run_id:
        return _refused(
            "run_already_claimed",
            run,
            f'the plan already has its one run "{run.run_id}"; a plan runs at most once, so '
            "clone it to run its content again",
        ), None
    held = ClaimOk(run_id=run_id, resumed=True, log_length=run.log_length)
    if execution is None or execution == run.execution:
        return held, None  # a retry: the claimant already holds the run, or reserved it
    if run.execution is None and run.log_length == 0:
        return held, run.model_copy(update={"execution": execution})  # a reservation's bind
    holder = (
        f'execution "{run.execution}"'
        if run.execution is not None
        else f"a host that bound no execution (its log has {run.log_length} entries)"
    )
    return _refused(
        "run_already_claimed",
        run,
        f'run "{run_id}" is held by {holder}; a second start of a run never runs it again '
        "(resume it with resume=True once its log has ended)",
    ), None


def _screen_resume(
    run: RunRecord | None, run_id: str, execution: str | None
) -> tuple[ClaimOk | ClaimRefused, RunRecord | None]:
    if run is None or run.run_id != run_id:
        its = "" if run is None else f'; its run is "{run.run_id}"'
        return _refused(
            "run_not_found", run, f'the plan has no run "{run_id}" to resume{its}'
        ), None
    if run.outcome == "completed":
        return _refused(
            "run_already_settled",
            run,
            f'run "{run_id}" completed; a completed run is never resumed (clone the plan to '
            "run its content again)",
        ), None
    if run.outcome is None:
        if execution is not None and execution == run.execution:
            return ClaimOk(run_id=run_id, resumed=True, log_length=run.log_length), None
        return _refused(
            "run_not_ended",
            run,
            f'run "{run_id}" has not ended: its log does not end with an end entry (it is '
            "running, another resume took it, or its execution died without closing its log); "
            "wait for it to settle, or stop it, then resume",
        ), None
    record = run.model_copy(update={"execution": execution, "outcome": None})
    return ClaimOk(run_id=run_id, resumed=True, log_length=run.log_length), record


def _refused(reason: ClaimRefusal, run: RunRecord | None, detail: str) -> ClaimRefused:
    existing = None if run is None else run.run_id
    return ClaimRefused(reason=reason, existing_run_id=existing, detail=detail)


# --------------------------------------------------------------------------------------------
# The run log
# --------------------------------------------------------------------------------------------


def log_body(entry: LogEntry) -> str:
    """An entry's canonical JSON: its wire form with sorted keys and no spaces.

    Equal entries have equal bodies whatever the order of a staged map's keys, and ``1`` and
    ``1.0`` stay apart; it is what the SQL stores keep, and what a held position is compared by.
    """
    return json.dumps(
        entry.model_dump(mode="json"), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )


def held_run(method: str, plan_id: str, run: RunRecord | None, run_id: str | None) -> RunRecord:
    """The plan's run, when it is ``run_id`` (``None``: whichever run the plan has).

    Raises:
        RunNotFoundError: the plan has no run, or not ``run_id``.

    """
    if run is None:
        raise RunNotFoundError(
            f'{method}: plan "{plan_id}" has no run; claim it (claim_run) before writing or '
            "reading its log"
        )
    if run_id is not None and run_id != run.run_id:
        raise RunNotFoundError(
            f'{method}: plan "{plan_id}" has no run "{run_id}"; its run is "{run.run_id}"'
        )
    return run


@dataclass(frozen=True)
class LogWrite:
    """What an admitted run-log append writes: the entries past the stored log, from ``position``.

    ``entries`` and ``bodies`` are empty when the log already held the whole batch (a retry);
    then nothing is written, the outcome included.
    """

    position: int
    entries: Sequence[LogEntry]
    bodies: Sequence[str]
    outcome: RunOutcome | None
    length: int
    """The log's length after the append."""
    cut: bool = False
    """The stored log from ``position`` on is dropped before the entries are written (an
    append with ``replace_tail`` that met another entry there)."""


@dataclass(frozen=True)
class LogAppend:
    """A run-log append admitted so far: it is for the plan's run and leaves no gap.

    The store reads its bodies at :attr:`held` and asks :meth:`write` what to write.
    """

    plan_id: str
    run: RunRecord
    start: int
    entries: Sequence[LogEntry]
    bodies: Sequence[str]

    @property
    def held(self) -> tuple[int, int]:
        """The stored positions ``[first, stop)`` the batch overlaps."""
        return self.start, min(self.start + len(self.entries), self.run.log_length)

    def write(self, held: Sequence[str], *, replace_tail: bool = False) -> LogWrite:
        """What to write, given the stored bodies at :attr:`held`, in order.

        With ``replace_tail``, the first held position that holds another entry cuts the
        stored log there and the rest of the batch is written in its place.

        Raises:
            RunLogConflictError: a held position holds another entry (without
                ``replace_tail``).

        """
        for offset, (stored, body) in enumerate(zip(held, self.bodies, strict=False)):
            if stored != body:
                if replace_tail:
                    last = self.entries[-1]
                    return LogWrite(
                        position=self.start + offset,
                        entries=self.entries[offset:],
                        bodies=self.bodies[offset:],
                        outcome=last.outcome if isinstance(last, LogEnd) else None,
                        length=self.start + len(self.entries),
                        cut=True,
                    )
                raise RunLogConflictError(
                    f"append_run_log: position {self.start + offset} of run "
                    f'"{self.run.run_id}" (plan "{self.plan_id}") already holds another entry; '
                    "a run has one log, so re-read it (read_run_log) and continue from its end "
                    "rather than writing a second history"
                )
        skip = len(held)
        entries = self.entries[skip:]
        if not entries:
            return LogWrite(self.run.log_length, (), (), self.run.outcome, self.run.log_length)
        last = entries[-1]
        return LogWrite(
            position=self.start + skip,
            entries=entries,
            bodies=self.bodies[skip:],
            outcome=last.outcome if isinstance(last, LogEnd) else None,
            length=self.start + len(self.entries),
        )


def screen_log_append(
    plan_id: str, run: RunRecord | None, run_id: str, start: int, entries: Sequence[LogEntry]
) -> LogAppend:
    """Admit a run-log append of ``entries`` at ``start`` to the plan's ``run``, so far.

    Raises:
        RunNotFoundError: the plan has no run, or not ``run_id``.
        RunLogConflictError: ``start`` is negative or past the end of the log (a gap).

    """
    held = held_run("append_run_log", plan_id, run, run_id)
    length = held.log_length
    if start < 0:
        raise RunLogConflictError(
            f'append_run_log: position {start} of run "{run_id}" (plan "{plan_id}") does not '
            "exist; positions count from 0"
        )
    if start > length:
        raise RunLogConflictError(
            f'append_run_log: the log of run "{run_id}" (plan "{plan_id}") holds {length} '
            f"entries, so writing from position {start} would leave a gap; append from "
            f"position {length} or earlier (a claim reports the length)"
        )
    batch = tuple(entries)
    return LogAppend(plan_id, held, start, batch, tuple(log_body(entry) for entry in batch))


def screen_log_read(
    plan_id: str, run: RunRecord | None, run_id: str | None, start: int, limit: int | None
) -> tuple[int, int]:
    """The positions ``[first, stop)`` a read of the run's log from ``start`` covers.

    At most ``limit`` entries (default: to the end); empty at or past the end.

    Raises:
        RunNotFoundError: the plan has no run, or not ``run_id``.
        RunLogConflictError: ``start`` or ``limit`` is negative.

    """
    length = held_run("read_run_log", plan_id, run, run_id).log_length
    if start < 0 or (limit is not None and limit < 0):
        raise RunLogConflictError(
            f"read_run_log: start ({start}) and limit ({limit}) must not be negative; "
            "positions count from 0"
        )
    first = min(start, length)
    stop = length if limit is None else min(length, first + limit)
    return first, stop
