"""The ``PlanStore`` protocol and its result values: the battery validates, the store commits.

A store persists, per plan: the op log (append-only), the lifecycle state, the approval record,
the provenance, the one run id the plan may ever have, and a durable copy of that run's event
log. Every method is async. **Expected precondition failures are returned as values**, never
raised: a stale revision, a plan that is no longer editable, a transition whose state or digest
moved, a second claim of the run. Misuse raises (an unknown plan id, a revision out of range).

Rules every implementation keeps (the conformance suite in
:mod:`orchestration.store.conformance` checks each):

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
* **One run, ever.** ``claim_run`` records the plan's run id once; claiming again with the same
  id is idempotent (``resumed=True``, so a starter that crashed between claim and start may
  retry), any other id is refused with the existing one.
* **The digest is the fold's**: ``read_state().digest`` equals
  ``fold_ops(plan_id, read_ops(plan_id), read_provenance(plan_id)).view.digest``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal, Protocol, runtime_checkable

from pydantic import Field

from orchestration.ops import FoldResult
from orchestration.types import (
    ApprovalRecord,
    PlanOp,
    PlanProvenance,
    PlanState,
    PlanSummary,
    RunEvent,
    StateDigest,
    TemplateProvenance,
    WireModel,
)

__all__ = [
    "AppendOk",
    "AppendRefused",
    "AppendResult",
    "ClaimOk",
    "ClaimRefused",
    "ClaimRunResult",
    "CreateOk",
    "CreateRefused",
    "CreateResult",
    "PlanStateRecord",
    "PlanStore",
    "RevisionState",
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
    """The run id is the plan's one run; ``resumed`` when it was already claimed with this id."""

    ok: Literal[True] = True
    run_id: str
    resumed: bool


class ClaimRefused(WireModel):
    """Why a run claim was refused."""

    ok: Literal[False] = False
    reason: Literal["not_executable", "digest_mismatch", "run_already_claimed"]
    existing_run_id: str | None = None


ClaimRunResult = Annotated[ClaimOk | ClaimRefused, Field(discriminator="ok")]


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
        its run had settled ``ok`` (``completedAtClone``). No approval or run is carried over.
        Refusals, in check order: ``source_missing``, ``duplicate_id``, ``revision_missing``.
        """
        ...

    async def append_ops(
        self,
        plan_id: str,
        ops: Sequence[PlanOp],
        *,
        expected_revision: int | None = None,
    ) -> AppendOk | AppendRefused:
        """Append ops atomically, only while ``editable`` and (if given) at that revision."""
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
        """The plan's lineage, or ``None`` when it was authored from scratch."""
        ...

    async def read_state(self, plan_id: str) -> PlanStateRecord:
        """The lifecycle state now, with the current digest and revision."""
        ...

    async def fold(self, plan_id: str, *, revision: int | None = None) -> FoldResult:
        """The plan folded at ``revision`` (default: current), with its current provenance."""
        ...

    async def transition(
        self, plan_id: str, request: TransitionRequest
    ) -> TransitionOk | TransitionRefused:
        """Compare-and-set the lifecycle state. Checks state, then digest, then legality."""
        ...

    async def read_approval(self, plan_id: str) -> ApprovalRecord | None:
        """The approval persisted with ``reviewable → executable``, or ``None``."""
        ...

    async def claim_run(
        self, plan_id: str, expected_digest: str, run_id: str
    ) -> ClaimOk | ClaimRefused:
        """Record ``run_id`` as the plan's one run; atomic compare-and-set."""
        ...

    async def read_run_id(self, plan_id: str) -> str | None:
        """The plan's run id, once claimed."""
        ...

    async def append_run_events(
        self, plan_id: str, run_id: str, events: Sequence[RunEvent]
    ) -> None:
        """Append a batch of run events atomically.

        Raises:
            PlanNotFoundError: unknown plan.
            RunNotFoundError: ``run_id`` is not the plan's run.

        """
        ...

    async def read_run_events(self, plan_id: str, run_id: str | None = None) -> list[RunEvent]:
        """The run's events in append order.

        Raises:
            PlanNotFoundError: unknown plan.
            RunNotFoundError: the plan has no run, or not ``run_id``.

        """
        ...

    async def list_plans(self, *, state: PlanState | None = None) -> list[PlanSummary]:
        """Summaries in creation order, optionally only those in ``state``."""
        ...

    async def close(self) -> None:
        """Release connections; the store is unusable afterwards."""
        ...
