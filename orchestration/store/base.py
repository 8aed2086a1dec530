"""The ``PlanStore`` protocol and its result values: the battery validates, the store commits.

A store persists, per plan: the op log (append-only), the lifecycle state, the approval record,
the provenance, the one run the plan may ever have (its id, the execution that holds it, its
outcome) and a durable copy of that run's compact log (:mod:`orchestration.run.log`). Every
method is async. **Expected precondition failures are returned as values**, never raised: a
stale revision, a plan that is no longer editable, a transition whose state or digest moved, a
claim of the run that is not this caller's to make. Misuse raises (an unknown plan id, a
revision out of range, a run-log write that contradicts the stored log).

The contract is written here, once: the bundled stores (:mod:`.memory`, and :mod:`.sql` with
its SQLite and PostgreSQL databases) subclass :class:`PlanStore`, mark each method they
implement with ``@override`` and document only what is their own, so ``help()`` on any of them
shows the protocol's text.

Rules every implementation keeps (the conformance suite in
:mod:`orchestration.store.conformance` checks each; the deciding code every bundled store runs
is :mod:`orchestration.store._rules`):

* **Edits only while editable.** ``append_ops`` checks the state in the same atomic step as the
  append, which is what keeps a frozen plan frozen.
* **Compare-and-set everywhere.** An append may carry the revision it was made against; a
  transition carries the digest it was decided on. Of two writers racing on one expected
  revision exactly one wins, and nothing either wrote is half-visible.
* **Only ops that read back are stored.** Every op of a batch passes through its JSON wire form
  (dumped, validated strictly, dumped again to the same bytes) before anything is decided, and
  the store keeps those validated copies. An op that was never validated (``model_construct``,
  ``model_copy(update=...)``) and would not survive the trip refuses the whole batch with the
  value ``invalid_op`` naming the op and the field, so nothing is ever stored that would make
  later reads, folds or appends of the plan fail.
* **Ops are idempotent by identity.** Re-appending an op whose ``opId`` is already in the log
  with identical content is a no-op (a retried delivery); different content under a known
  ``opId`` is refused with ``conflicting_op``. So the revision is the number of distinct ops, and
  equals the fold's revision.
* **Transitions only go forward**: ``editable → reviewable`` (freeze) and ``reviewable →
  executable`` (approval, which must carry the record, persisted in the same commit). Anything
  else is ``illegal_transition``. Recovery from a rejected or spent plan is ``clone_plan``.
* **One run, ever, held by one execution at a time** (rulings 28 and 30). At most once is the
  worker's promise, so the claim is made by whatever runs the plan, and it names the
  *execution* that runs it (on Temporal, the execution chain of ``plan/<planId>``); a client
  may reserve the run first with no execution. ``claim_run`` is one compare-and-set:

  - *fresh* (``resume=False``): no run yet records ``run_id`` (``resumed=False``); the recorded
    ``run_id`` again is ``resumed=True`` when it binds an execution to a reservation that no
    host has run yet (its log is empty), or when it is an idempotent retry (no execution given,
    or the recorded one); another execution, or a reservation whose log already has entries, is
    ``run_already_claimed``, and so is any other ``run_id``.
  - *resume* (``resume=True``): a new execution continues a run whose log ends with an ``end``
    entry. An unknown ``run_id`` is ``run_not_found``; a ``completed`` run is
    ``run_already_settled``; a run that is still going (or whose execution died without closing
    its log, or that another resume already took) is ``run_not_ended``. Otherwise the execution
    is bound, the run is running again, and ``log_length`` says where its log continues. The
    execution that a resume bound may repeat its claim (an idempotent retry).

  So two executions can never both hold a run: of two racing claims, fresh or resume, exactly
  one wins.
* **The run log is written by position** (``append_run_log``): entry ``i`` of a batch goes to
  position ``start + i``; a position already held must hold the same entry (by canonical JSON),
  so re-mirroring a prefix is harmless and two histories of one run cannot be interleaved. A
  gap is refused. The store keeps the run's outcome: the last entry's, when it is ``end``.
* **Listings page by plan id.** ``list_plans`` gives plans in creation order and ``list_runs``
  gives runs newest claim first; each takes ``limit`` and ``after``, the id of the last plan of
  the previous page, and continues right after it in its order whatever was written since
  (keyset paging: nothing is skipped or shown twice).
* **The digest is the fold's**: ``read_state().digest`` equals
  ``fold_ops(plan_id, read_ops(plan_id), read_provenance(plan_id)).view.digest``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal, Protocol, runtime_checkable

from pydantic import Field

from orchestration.plan.ops import FoldResult
from orchestration.run.log import LogEntry
from orchestration.types import (
    ApprovalRecord,
    PlanOp,
    PlanProvenance,
    PlanState,
    PlanSummary,
    RunOutcome,
    RunSummary,
    StateDigest,
    TemplateProvenance,
    WireModel,
)

__all__ = [
    "AppendOk",
    "AppendRefused",
    "AppendResult",
    "ClaimOk",
    "ClaimRefusal",
    "ClaimRefused",
    "ClaimRunResult",
    "CreateOk",
    "CreateRefused",
    "CreateResult",
    "PlanStateRecord",
    "PlanStore",
    "RevisionState",
    "RunOutcomeFilter",
    "RunRecord",
    "StateDigest",
    "TransitionOk",
    "TransitionRefused",
    "TransitionRequest",
    "TransitionResult",
]


class CreateOk(WireModel):
    """The plan exists now, ``editable``."""

    ok: Literal[True] = True
    plan_id: str
    revision: int
    digest: str


class CreateRefused(WireModel):
    """Why a create or clone was refused."""

    ok: Literal[False] = False
    reason: Literal["duplicate_id", "source_missing", "revision_missing"]


CreateResult = Annotated[CreateOk | CreateRefused, Field(discriminator="ok")]


class RevisionState(WireModel):
    """The state and revision a refused append met."""

    state: PlanState
    revision: int


class AppendOk(WireModel):
    """The ops are in the log."""

    ok: Literal[True] = True
    revision: int
    digest: str


class AppendRefused(WireModel):
    """Why an append was refused; nothing was written.

    Attributes:
        reason: ``not_editable`` (the plan is frozen), ``invalid_op`` (an op of the batch is
            not what the wire would deliver: see :attr:`op_id` and :attr:`field`),
            ``conflicting_op`` (a known ``opId`` with other content) or ``revision_moved``
            (the plan is not at the expected revision).
        actual: The state and revision the append met.
        detail: What is wrong, naming the fix.
        op_id: For ``invalid_op``: the refused op's ``opId``, when it has a readable one.
        field: For ``invalid_op``: the dotted path of the field at fault, when one is.

    """

    ok: Literal[False] = False
    reason: Literal["not_editable", "invalid_op", "revision_moved", "conflicting_op"]
    actual: RevisionState
    detail: str = ""
    op_id: str | None = None
    field: str | None = None


AppendResult = Annotated[AppendOk | AppendRefused, Field(discriminator="ok")]


class TransitionRequest(WireModel):
    """A compare-and-set lifecycle move, decided against ``expected_digest``."""

    from_: PlanState = Field(alias="from")
    to: PlanState
    expected_digest: str
    approval: ApprovalRecord | None = None
    """Required for ``reviewable → executable``; persisted in the same commit."""


class TransitionOk(WireModel):
    """The plan moved."""

    ok: Literal[True] = True
    revision: int


class TransitionRefused(WireModel):
    """Why a transition was refused; the plan is untouched."""

    ok: Literal[False] = False
    reason: Literal["state_mismatch", "digest_mismatch", "illegal_transition", "approval_missing"]
    actual: StateDigest | None = None
    detail: str = ""


TransitionResult = Annotated[TransitionOk | TransitionRefused, Field(discriminator="ok")]


class ClaimOk(WireModel):
    """The caller holds the plan's one run.

    Attributes:
        resumed: ``False`` only when this claim recorded the run; ``True`` when the run was
            already recorded (a bind, a retry, a resume).
        log_length: How many log entries the store holds for the run now: where the caller's
            own log continues (``append_run_log``'s ``start``).

    """

    ok: Literal[True] = True
    run_id: str
    resumed: bool
    log_length: int = 0


ClaimRefusal = Literal[
    "not_executable",
    "digest_mismatch",
    "run_already_claimed",
    "run_not_found",
    "run_already_settled",
    "run_not_ended",
]
"""Why a claim was refused; see :meth:`PlanStore.claim_run` for when each applies."""


class ClaimRefused(WireModel):
    """Why a run claim was refused; nothing was written.

    Attributes:
        existing_run_id: The plan's run id, when it has one.
        detail: What to do about it.

    """

    ok: Literal[False] = False
    reason: ClaimRefusal
    existing_run_id: str | None = None
    detail: str = ""


ClaimRunResult = Annotated[ClaimOk | ClaimRefused, Field(discriminator="ok")]


class RunRecord(WireModel):
    """The plan's one run as the store holds it.

    Attributes:
        run_id: The id it was claimed with.
        execution: The execution that holds it; ``None`` when a client reserved it and no
            worker has bound it yet, or the host that runs it has no executions.
        outcome: The ``end`` entry's outcome when the log ends with one and no resume has
            taken the run since; ``None`` while it is running.
        log_length: How many log entries the store holds.

    """

    run_id: str
    execution: str | None = None
    outcome: RunOutcome | None = None
    log_length: int = 0


RunOutcomeFilter = Literal["completed", "halted", "aborted", "running"]
"""What ``list_runs`` may filter on: an outcome, or ``running`` (no outcome yet)."""


class PlanStateRecord(WireModel):
    """A plan's state now, with its current digest and revision."""

    state: PlanState
    digest: str
    revision: int


@runtime_checkable
class PlanStore(Protocol):
    """Durable plans: op logs, lifecycle, approval, provenance, the one run and its log."""

    async def create_plan(
        self,
        plan_id: str,
        *,
        label: str | None = None,
        provenance: TemplateProvenance | None = None,
    ) -> CreateOk | CreateRefused:
        """Create an empty ``editable`` plan (revision 0); ``duplicate_id`` if it exists."""
        ...

    async def clone_plan(
        self, source_id: str, new_id: str, *, at_revision: int | None = None
    ) -> CreateOk | CreateRefused:
        """Copy the source's first ``at_revision`` ops (default: all) into a new editable plan.

        Provenance is a clone record with the parent's digest at that revision and the node ids
        its run had settled ``ok`` (``completedAtClone``: read from the run's compact log, in
        log order, each once). No approval or run is carried over.
        Refusals, in check order: ``source_missing``, ``duplicate_id``, ``revision_missing``.

        Raises:
            MalformedRunLogError: the source's stored run log cannot be read forward (it does
                not open with ``start``, or names a frame before defining it); nothing is
                written.

        """
        ...

    async def append_ops(
        self,
        plan_id: str,
        ops: Sequence[PlanOp],
        *,
        expected_revision: int | None = None,
    ) -> AppendOk | AppendRefused:
        """Append ops atomically, only while ``editable`` and (if given) at that revision.

        Raises:
            PlanNotFoundError: unknown plan.

        """
        ...

    async def read_ops(
        self,
        plan_id: str,
        *,
        through_revision: int | None = None,
        since_lamport: int | None = None,
    ) -> list[PlanOp]:
        """The log in append order: the first ``through_revision`` ops, then ``lamport >`` filter.

        Raises:
            PlanNotFoundError: unknown plan.
            RevisionOutOfRangeError: ``through_revision`` outside ``[0, revision]``.

        """
        ...

    async def read_provenance(self, plan_id: str) -> PlanProvenance | None:
        """The plan's lineage, or ``None`` when it was authored from scratch.

        Raises:
            PlanNotFoundError: unknown plan.

        """
        ...

    async def read_state(self, plan_id: str) -> PlanStateRecord:
        """The lifecycle state now, with the current digest and revision.

        Raises:
            PlanNotFoundError: unknown plan.

        """
        ...

    async def fold(self, plan_id: str, *, revision: int | None = None) -> FoldResult:
        """The plan folded at ``revision`` (default: current), with its current provenance.

        Raises:
            PlanNotFoundError: unknown plan.
            RevisionOutOfRangeError: ``revision`` outside ``[0, current]``.

        """
        ...

    async def transition(
        self, plan_id: str, request: TransitionRequest
    ) -> TransitionOk | TransitionRefused:
        """Compare-and-set the lifecycle state. Checks state, then digest, then legality.

        The approval of ``reviewable → executable`` is written in the same commit as the state,
        so no reader ever sees an executable plan without its approval.

        Raises:
            PlanNotFoundError: unknown plan.

        """
        ...

    async def read_approval(self, plan_id: str) -> ApprovalRecord | None:
        """The approval persisted with ``reviewable → executable``, or ``None``.

        Raises:
            PlanNotFoundError: unknown plan.

        """
        ...

    async def claim_run(
        self,
        plan_id: str,
        expected_digest: str,
        run_id: str,
        *,
        execution: str | None = None,
        resume: bool = False,
    ) -> ClaimOk | ClaimRefused:
        """Claim the plan's one run for ``execution``; one atomic compare-and-set.

        Checks, in order: the plan is ``executable`` (``not_executable``), at
        ``expected_digest`` (``digest_mismatch``); then the run.

        A fresh claim (``resume=False``): with no run recorded, records ``run_id`` and
        ``execution`` (``None``: a client reserving the run before any worker runs it) and
        answers ``resumed=False``. With ``run_id`` recorded: binds ``execution`` to a
        reservation no host has run yet (an empty log), or acknowledges a retry (``execution``
        ``None`` or the recorded one), answering ``resumed=True``; another execution (a second
        start of the run) or a reservation whose log has entries is ``run_already_claimed``,
        as is any other ``run_id``.

        A resume (``resume=True``, ruling 28): ``run_not_found`` unless ``run_id`` is the
        plan's run; ``run_already_settled`` when its log ends ``completed``; ``run_not_ended``
        while it is running (its log does not end with ``end``, or another resume took it),
        unless ``execution`` already holds it (a retry). Otherwise binds ``execution``, marks
        the run running (no outcome) and answers ``resumed=True`` with ``log_length``.

        Raises:
            PlanNotFoundError: unknown plan.

        """
        ...

    async def read_run_id(self, plan_id: str) -> str | None:
        """The plan's run id, once claimed.

        Raises:
            PlanNotFoundError: unknown plan.

        """
        ...

    async def read_run(self, plan_id: str) -> RunRecord | None:
        """The plan's run (id, execution, outcome, log length), or ``None`` before any claim.

        Raises:
            PlanNotFoundError: unknown plan.

        """
        ...

    async def append_run_log(
        self,
        plan_id: str,
        run_id: str,
        start: int,
        entries: Sequence[LogEntry],
        *,
        replace_tail: bool = False,
    ) -> int:
        """Write ``entries`` at positions ``start, start + 1, ...`` of the run's log, atomically.

        Idempotent by position, so a host may mirror its log again from any earlier point: a
        position the store already holds must hold the same entry (compared by canonical
        JSON), and only the entries past the stored log are written. After a write, the run's
        outcome is the last entry's when it is ``end``, else none (the run is running); an
        append that writes nothing changes nothing.

        ``replace_tail`` is for a host whose log is kept elsewhere and only mirrored here (a
        Temporal run: its history is the log). Its mirror can run inside a workflow task that
        never completes (the worker dies, the task times out); the task is tried again and
        writes the same positions with other times. Then the first held position that holds
        another entry is not a conflict: the stored log is cut there and the batch written in
        its place (the run's outcome following the batch's last entry). Only the run's own
        claimed execution mirrors, so nothing but its own unrecorded work is replaced.

        Returns:
            The length of the log after the append.

        Raises:
            PlanNotFoundError: unknown plan.
            RunNotFoundError: ``run_id`` is not the plan's run.
            RunLogConflictError: a held position holds a different entry (without
                ``replace_tail``), ``start`` is past the end of the log (a gap), or negative;
                nothing is written.

        """
        ...

    async def read_run_log(
        self, plan_id: str, run_id: str | None = None, *, start: int = 0, limit: int | None = None
    ) -> list[LogEntry]:
        """The run's log from position ``start``, at most ``limit`` entries (default: all).

        ``run_id=None`` reads the plan's run, whichever it is. A ``start`` at or past the end
        gives an empty page, so a reader can poll a live run from where it stopped.

        Raises:
            PlanNotFoundError: unknown plan.
            RunNotFoundError: the plan has no run, or not ``run_id``.
            RunLogConflictError: ``start`` or ``limit`` is negative.

        """
        ...

    async def list_plans(
        self,
        *,
        state: PlanState | None = None,
        limit: int | None = None,
        after: str | None = None,
    ) -> list[PlanSummary]:
        """Summaries in creation order, optionally only those in ``state``.

        Each carries the plan's run id and outcome, once it has a run. At most ``limit``
        summaries (default: all); ``after`` continues right after that plan (the last one of
        the previous page) in creation order.

        Raises:
            InvalidListingError: ``limit`` is negative, or ``after`` names no plan.

        """
        ...

    async def list_runs(
        self,
        *,
        outcome: RunOutcomeFilter | None = None,
        prefix: str = "",
        limit: int | None = None,
        after: str | None = None,
    ) -> list[RunSummary]:
        """The plans' runs, newest claim first.

        Only runs that ended ``outcome`` (``running``: those with no outcome yet) and whose
        plan id starts with ``prefix``, when given. At most ``limit`` runs (default: all);
        ``after`` continues with the runs claimed before that plan's run, so paging by the
        last plan id of each page neither skips nor repeats a run while others are claimed.
        Start and end times come from the stored log (``start`` first, ``end`` last), the
        claim's time from the store's clock.

        Raises:
            InvalidListingError: ``limit`` is negative, ``outcome`` is none of
                :data:`RunOutcomeFilter`, or ``after`` names no plan with a run.

        """
        ...

    async def close(self) -> None:
        """Release connections; the store is unusable afterwards."""
        ...
