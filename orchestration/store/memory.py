"""``MemoryPlanStore``: the in-process :class:`~orchestration.store.base.PlanStore`, for tests.

Every method reads and writes its plan's record inside one ``asyncio.Lock``, so concurrent
coroutines on one event loop see each compare-and-set as atomic.

An append keeps validated copies of the ops (each passed through its wire form, like every
store), so nothing the caller still holds is shared with the log; reads hand the stored objects
back in fresh lists. The models are frozen, but a staged value inside one (a call's ``args``
dict) is an ordinary container: mutating one that a read returned would change the stored plan
behind its digest. Nothing in the library does that; a test must not either.

The current digest, revision and node count are kept beside the log and recomputed by folding
when the log changes, so reads never refold.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from typing_extensions import override

from orchestration.errors import PlanNotFoundError
from orchestration.plan.ops import FoldResult, fold_ops
from orchestration.run.log import LogEntry
from orchestration.types import (
    ApprovalRecord,
    PlanOp,
    PlanProvenance,
    PlanState,
    PlanSummary,
    RunOutcome,
    RunSummary,
    TemplateProvenance,
)

from . import _listing, _rules
from .base import (
    AppendOk,
    AppendRefused,
    ClaimOk,
    ClaimRefused,
    CreateOk,
    CreateRefused,
    PlanStateRecord,
    PlanStore,
    RunOutcomeFilter,
    RunRecord,
    TransitionOk,
    TransitionRefused,
    TransitionRequest,
)

__all__ = ["MemoryPlanStore"]


@dataclass(eq=False)
class _Plan:
    plan_id: str
    label: str | None
    provenance: PlanProvenance | None
    digest: str
    node_count: int
    updated_at: str
    state: PlanState = "editable"
    ops: list[PlanOp] = field(default_factory=list)
    fingerprints: dict[str, str] = field(default_factory=dict)
    approval: ApprovalRecord | None = None
    run_id: str | None = None
    run_execution: str | None = None
    run_outcome: RunOutcome | None = None
    run_seq: int | None = None
    """The run's place in claim order (a store-wide counter), once claimed."""
    run_claimed_at: str | None = None
    log: list[LogEntry] = field(default_factory=list)
    log_bodies: list[str] = field(default_factory=list)
    """The canonical body of each entry of ``log``, which a held position is compared by."""

    def refold(self) -> None:
        view = fold_ops(self.plan_id, self.ops, self.provenance).view
        self.digest = view.digest
        self.node_count = len(view.nodes)

    def summary(self) -> PlanSummary:
        return PlanSummary(
            plan_id=self.plan_id,
            state=self.state,
            digest=self.digest,
            revision=len(self.ops),
            node_count=self.node_count,
            label=self.label,
            provenance=self.provenance,
            updated_at=self.updated_at,
            run_id=self.run_id,
            run_outcome=self.run_outcome,
        )

    def run_summary(self) -> RunSummary:
        assert self.run_id is not None
        return _listing.run_summary(
            self.plan_id,
            self.run_id,
            self.run_execution,
            self.run_outcome,
            self.run_claimed_at,
            self.log[0] if self.log else None,
            self.log[-1] if self.log else None,
            len(self.log),
        )

    def run(self) -> RunRecord | None:
        if self.run_id is None:
            return None
        return RunRecord(
            run_id=self.run_id,
            execution=self.run_execution,
            outcome=self.run_outcome,
            log_length=len(self.log),
        )


class MemoryPlanStore(PlanStore):
    """An in-process plan store; everything is lost when the object is.

    Args:
        clock: Returns the ``updatedAt`` stamp of a write (ISO-8601). Defaults to UTC now;
            inject a fixed clock for reproducible summaries.

    """

    def __init__(self, *, clock: Callable[[], str] = _rules.utc_now) -> None:
        self._plans: dict[str, _Plan] = {}
        self._run_seq = 0
        self._lock = asyncio.Lock()
        self._clock = clock

    def _get(self, method: str, plan_id: str) -> _Plan:
        plan = self._plans.get(plan_id)
        if plan is None:
            raise PlanNotFoundError(_rules.plan_not_found_message(method, plan_id))
        return plan

    @override
    async def create_plan(
        self,
        plan_id: str,
        *,
        label: str | None = None,
        provenance: TemplateProvenance | None = None,
    ) -> CreateOk | CreateRefused:
        async with self._lock:
            if plan_id in self._plans:
                return CreateRefused(reason="duplicate_id")
            view = fold_ops(plan_id, (), provenance).view
            self._plans[plan_id] = _Plan(
                plan_id=plan_id,
                label=label,
                provenance=provenance,
                digest=view.digest,
                node_count=0,
                updated_at=self._clock(),
            )
            return CreateOk(plan_id=plan_id, revision=0, digest=view.digest)

    @override
    async def clone_plan(
        self, source_id: str, new_id: str, *, at_revision: int | None = None
    ) -> CreateOk | CreateRefused:
        async with self._lock:
            source = self._plans.get(source_id)
            if source is None:
                return CreateRefused(reason="source_missing")
            if new_id in self._plans:
                return CreateRefused(reason="duplicate_id")
            revision = _rules.screen_clone(len(source.ops), at_revision)
            if isinstance(revision, CreateRefused):
                return revision
            ops = source.ops[:revision]
            clone = _Plan(
                plan_id=new_id,
                label=source.label,
                provenance=_rules.clone_provenance(source_id, ops, source.provenance, source.log),
                digest="",
                node_count=0,
                updated_at=self._clock(),
                ops=ops,
                fingerprints={op.op_id: source.fingerprints[op.op_id] for op in ops},
            )
            clone.refold()
            self._plans[new_id] = clone
            return CreateOk(plan_id=new_id, revision=revision, digest=clone.digest)

    @override
    async def append_ops(
        self,
        plan_id: str,
        ops: Sequence[PlanOp],
        *,
        expected_revision: int | None = None,
    ) -> AppendOk | AppendRefused:
        batch = _rules.wire_checked(ops)
        async with self._lock:
            plan = self._get("append_ops", plan_id)
            decision = _rules.screen_append(
                plan.state, len(plan.ops), batch, plan.fingerprints, expected_revision
            )
            if isinstance(decision, AppendRefused):
                return decision
            if decision:
                for op, fingerprint in decision:
                    plan.ops.append(op)
                    plan.fingerprints[op.op_id] = fingerprint
                plan.refold()
                plan.updated_at = self._clock()
            return AppendOk(revision=len(plan.ops), digest=plan.digest)

    @override
    async def read_ops(
        self,
        plan_id: str,
        *,
        through_revision: int | None = None,
        since_lamport: int | None = None,
    ) -> list[PlanOp]:
        async with self._lock:
            plan = self._get("read_ops", plan_id)
            ops = plan.ops[: _rules.checked_revision(plan_id, len(plan.ops), through_revision)]
        return _rules.ops_since(ops, since_lamport)

    @override
    async def read_provenance(self, plan_id: str) -> PlanProvenance | None:
        async with self._lock:
            return self._get("read_provenance", plan_id).provenance

    @override
    async def read_state(self, plan_id: str) -> PlanStateRecord:
        async with self._lock:
            plan = self._get("read_state", plan_id)
            return PlanStateRecord(state=plan.state, digest=plan.digest, revision=len(plan.ops))

    @override
    async def fold(self, plan_id: str, *, revision: int | None = None) -> FoldResult:
        async with self._lock:
            plan = self._get("fold", plan_id)
            ops = plan.ops[: _rules.checked_revision(plan_id, len(plan.ops), revision)]
            provenance = plan.provenance
        return fold_ops(plan_id, ops, provenance)

    @override
    async def transition(
        self, plan_id: str, request: TransitionRequest
    ) -> TransitionOk | TransitionRefused:
        async with self._lock:
            plan = self._get("transition", plan_id)
            refusal = _rules.screen_transition(plan_id, plan.state, plan.digest, request)
            if refusal is not None:
                return refusal
            plan.state = request.to
            if request.to == "executable":
                plan.approval = request.approval
            plan.updated_at = self._clock()
            return TransitionOk(revision=len(plan.ops))

    @override
    async def read_approval(self, plan_id: str) -> ApprovalRecord | None:
        async with self._lock:
            return self._get("read_approval", plan_id).approval

    @override
    async def claim_run(
        self,
        plan_id: str,
        expected_digest: str,
        run_id: str,
        *,
        execution: str | None = None,
        resume: bool = False,
    ) -> ClaimOk | ClaimRefused:
        async with self._lock:
            plan = self._get("claim_run", plan_id)
            answer, record = _rules.screen_claim(
                plan.state,
                plan.digest,
                plan.run(),
                expected_digest,
                run_id,
                execution,
                resume=resume,
            )
            if record is not None:
                plan.run_id = record.run_id
                plan.run_execution = record.execution
                plan.run_outcome = record.outcome
                plan.updated_at = self._clock()
                if plan.run_seq is None:
                    self._run_seq += 1
                    plan.run_seq = self._run_seq
                    plan.run_claimed_at = plan.updated_at
            return answer

    @override
    async def read_run_id(self, plan_id: str) -> str | None:
        async with self._lock:
            return self._get("read_run_id", plan_id).run_id

    @override
    async def read_run(self, plan_id: str) -> RunRecord | None:
        async with self._lock:
            return self._get("read_run", plan_id).run()

    @override
    async def append_run_log(
        self,
        plan_id: str,
        run_id: str,
        start: int,
        entries: Sequence[LogEntry],
        *,
        replace_tail: bool = False,
    ) -> int:
        async with self._lock:
            plan = self._get("append_run_log", plan_id)
            append = _rules.screen_log_append(plan_id, plan.run(), run_id, start, entries)
            first, stop = append.held
            write = append.write(plan.log_bodies[first:stop], replace_tail=replace_tail)
            if write.cut:
                del plan.log[write.position :]
                del plan.log_bodies[write.position :]
            if write.entries:
                plan.log.extend(write.entries)
                plan.log_bodies.extend(write.bodies)
                plan.run_outcome = write.outcome
                plan.updated_at = self._clock()
            return write.length

    @override
    async def read_run_log(
        self, plan_id: str, run_id: str | None = None, *, start: int = 0, limit: int | None = None
    ) -> list[LogEntry]:
        async with self._lock:
            plan = self._get("read_run_log", plan_id)
            first, stop = _rules.screen_log_read(plan_id, plan.run(), run_id, start, limit)
            return plan.log[first:stop]

    @override
    async def list_plans(
        self,
        *,
        state: PlanState | None = None,
        limit: int | None = None,
        after: str | None = None,
    ) -> list[PlanSummary]:
        count = _listing.screen_limit("list_plans", limit)
        async with self._lock:
            plans = list(self._plans.values())
            if after is not None:
                if after not in self._plans:
                    raise _listing.cursor_not_found("list_plans", after, needs_run=False)
                plans = plans[[p.plan_id for p in plans].index(after) + 1 :]
            chosen = [p for p in plans if state is None or p.state == state]
            return [plan.summary() for plan in chosen[:count]]

    @override
    async def list_runs(
        self,
        *,
        outcome: RunOutcomeFilter | None = None,
        prefix: str = "",
        limit: int | None = None,
        after: str | None = None,
    ) -> list[RunSummary]:
        count = _listing.screen_limit("list_runs", limit)
        wanted = _listing.screen_outcome(outcome)
        async with self._lock:
            claimed = {p.run_seq: p for p in self._plans.values() if p.run_seq is not None}
            before = max(claimed, default=0) + 1
            if after is not None:
                cursor = self._plans.get(after)
                if cursor is None or cursor.run_seq is None:
                    raise _listing.cursor_not_found("list_runs", after, needs_run=True)
                before = cursor.run_seq
            runs = [claimed[seq] for seq in sorted(claimed, reverse=True) if seq < before]
            chosen = [
                p
                for p in runs
                if p.plan_id.startswith(prefix)
                and (wanted is None or (p.run_outcome or "running") == wanted)
            ]
            return [plan.run_summary() for plan in chosen[:count]]

    @override
    async def close(self) -> None:
        """Nothing to release: the plans live as long as the object."""
