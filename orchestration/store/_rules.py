"""The decisions every bundled store makes, in one place so the stores cannot drift apart.

A store's job splits in two: *deciding* whether a write is admissible, given the plan's record
as it is now, and *committing* it atomically. The deciding is pure and lives here; each store
reads its record inside its own critical section (an ``asyncio.Lock``, a ``BEGIN IMMEDIATE``
transaction), asks these functions, and writes exactly what they admitted. The Hypothesis test
that runs the memory and SQLite stores side by side then checks the committing, which is
where they really differ.

Identity of an op's *content* is its canonical digest, never ``==``: pydantic equality says
``1 == 1.0 == True``, while the plan digest tells them apart, so two ops that compare equal
may still fold to different plans.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from pydantic import TypeAdapter, ValidationError

from orchestration.encoding import canonical_digest
from orchestration.errors import RevisionOutOfRangeError, RunNotFoundError
from orchestration.ops import fold_ops
from orchestration.types import (
    CloneProvenance,
    NodeSettled,
    OutcomeOk,
    PlanOp,
    PlanProvenance,
    PlanState,
    RunEvent,
)

from .base import (
    AppendRefused,
    ClaimOk,
    ClaimRefused,
    CreateRefused,
    RevisionState,
    StateDigest,
    TransitionRefused,
    TransitionRequest,
)

OP_JSON: TypeAdapter[PlanOp] = TypeAdapter(PlanOp)
EVENT_JSON: TypeAdapter[RunEvent] = TypeAdapter(RunEvent)
PROVENANCE_JSON: TypeAdapter[PlanProvenance] = TypeAdapter(PlanProvenance)

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


def settled_ok_node_ids(events: Iterable[RunEvent]) -> tuple[str, ...]:
    """Node ids of every ``node_settled`` with status ``ok``, in log order, repeats kept.

    A node reached by several routes settles once per route, so it may appear more than once.
    """
    return tuple(
        event.frame.node_id
        for event in events
        if isinstance(event, NodeSettled) and isinstance(event.outcome, OutcomeOk)
    )


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


def check_run_to_append(plan_id: str, claimed: str | None, run_id: str) -> None:
    """Admit events for ``run_id`` only if it is the plan's claimed run.

    Raises:
        RunNotFoundError: the plan has no run, or another one.

    """
    if claimed is None or claimed != run_id:
        raise RunNotFoundError(f'append_run_events: no run "{run_id}" on plan "{plan_id}"')


def check_run_to_read(plan_id: str, claimed: str | None, run_id: str | None) -> None:
    """Admit a read of ``run_id``'s events (``None``: whichever run the plan claimed).

    Raises:
        RunNotFoundError: the plan has no run, or not ``run_id``.

    """
    if claimed is None:
        raise RunNotFoundError(f'read_run_events: no run on plan "{plan_id}"')
    if run_id is not None and run_id != claimed:
        raise RunNotFoundError(f'read_run_events: no run "{run_id}" on plan "{plan_id}"')


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
    completed: Iterable[str],
) -> CloneProvenance:
    """A clone's lineage: the source's digest over ``ops``, the prefix the clone copies.

    Args:
        source_id: The plan cloned.
        ops: The source's first ``revision`` ops, which the clone starts from.
        source_provenance: The source's own lineage, which its digest folds in.
        completed: The node ids the source's run settled ``ok``, in log order.

    """
    return CloneProvenance(
        parent=source_id,
        parent_digest=fold_ops(source_id, ops, source_provenance).view.digest,
        parent_revision=len(ops),
        completed_at_clone=tuple(completed),
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
    existing_run_id: str | None,
    expected_digest: str,
    run_id: str,
) -> ClaimOk | ClaimRefused | None:
    """Decide a run claim: state, then digest, then the one-run rule.

    Returns:
        The answer when nothing is to be written (a refusal, or ``resumed=True`` for the run
        already recorded), or ``None`` when ``run_id`` is to be recorded as the plan's run.

    """
    if state != "executable":
        return ClaimRefused(reason="not_executable")
    if digest != expected_digest:
        return ClaimRefused(reason="digest_mismatch")
    if existing_run_id is None:
        return None
    if existing_run_id == run_id:
        return ClaimOk(run_id=run_id, resumed=True)
    return ClaimRefused(reason="run_already_claimed", existing_run_id=existing_run_id)
