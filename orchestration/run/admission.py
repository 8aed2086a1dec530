"""Admission: everything that can refuse a run, checked before its one claim.

A claim is for ever (a plan runs at most once), so every check that does not need the claim
comes first and refuses with a :class:`~orchestration.errors.RunRefusedError` that leaves the
plan runnable: the plan is ``executable``; it has an approval that binds its digest and its
authority set; the run input satisfies the entry's declared fields (ruling 7); the per-run
cells load (rulings 8 and 21). For a resume (ruling 28) the run must exist and must not have
completed (its input is the one it started with: a resume's input is not checked); for a fresh
start the plan must have no run yet.

Both hosts admit through :func:`admit`: the in-process host before it claims, and the
Temporal client before it starts ``PlanRun`` (whose worker then claims, ruling 30).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from orchestration.errors import InvalidRunInputError, RunRefusedError
from orchestration.review.approval import authority_refusal
from orchestration.run.inputs import check_run_input
from orchestration.store.base import PlanStore
from orchestration.tools.contracts import PredicateEvaluator
from orchestration.types import ApprovalRecord, EntryNode, RawPlanView

__all__ = ["Admitted", "admit", "approval_problem"]


@dataclass(frozen=True)
class Admitted:
    """A run that may be claimed: the frozen plan, its approval, the input, and the run id."""

    view: RawPlanView
    approval: ApprovalRecord
    run_input: dict[str, Any]
    run_id: str
    resume: bool


def approval_problem(view: RawPlanView, approval: ApprovalRecord) -> str | None:
    """Why ``approval`` does not approve exactly ``view``, or ``None``.

    The authority set is compared as a set (ruling 26), by the approval gate's own comparison
    (:func:`~orchestration.review.approval.authority_refusal`).
    """
    if approval.plan_id != view.plan_id:
        return f"the approval is for plan {approval.plan_id!r}, not {view.plan_id!r}"
    if approval.digest != view.digest:
        return (
            f"the approval binds digest {approval.digest}, but the plan's digest is "
            f"{view.digest}"
        )
    refusal = authority_refusal(view, approval)
    return None if refusal is None else refusal.message


async def admit(
    store: PlanStore,
    plan_id: str,
    run_input: Mapping[str, Any],
    *,
    run_id: str,
    resume_run_id: str | None = None,
    cells: Sequence[PredicateEvaluator] = (),
) -> Admitted:
    """Every check before the claim; the plan, its approval and the input when all pass.

    Args:
        store: Where the plan, its approval and its run live.
        plan_id: The plan.
        run_input: The run's input (checked against the entry's declared fields).
        run_id: The id the plan's one run has on this host.
        resume_run_id: Resume this run instead of starting one (ruling 28).
        cells: Per-run predicate cells: each is loaded here, so one that cannot load refuses
            the run before it is claimed (ruling 21).

    Raises:
        RunRefusedError: ``not_executable``, ``approval_missing``, ``approval_mismatch``,
            ``invalid_run_input``, ``cell_unavailable``, ``run_already_claimed`` (a fresh start
            of a plan that has a run), ``run_not_found`` or ``run_already_settled`` (a resume).
        PlanNotFoundError: no such plan.

    """
    state = await store.read_state(plan_id)
    if state.state != "executable":
        raise RunRefusedError(
            "not_executable",
            f"plan {plan_id!r} is {state.state}; freeze it, have an operator approve it, "
            "then run it",
        )
    view = (await store.fold(plan_id)).view
    approval = await store.read_approval(plan_id)
    if approval is None:
        raise RunRefusedError(
            "approval_missing", f"plan {plan_id!r} has no approval record; approve it first"
        )
    problem = approval_problem(view, approval)
    if problem is not None:
        raise RunRefusedError(
            "approval_mismatch", f"{problem}; clone the plan and have it approved again"
        )
    record = await store.read_run(plan_id)
    if resume_run_id is not None:
        if record is None or record.run_id != resume_run_id:
            raise RunRefusedError(
                "run_not_found",
                f"plan {plan_id!r} has no run {resume_run_id!r}"
                + (f"; its run is {record.run_id!r}" if record is not None else ""),
                None if record is None else record.run_id,
            )
        if record.outcome == "completed":
            raise RunRefusedError(
                "run_already_settled",
                f"run {resume_run_id!r} completed; there is nothing to resume (read it with "
                "`orch run show`)",
                record.run_id,
            )
    elif record is not None and record.run_id != run_id:
        raise RunRefusedError(
            "run_already_claimed",
            f"plan {plan_id!r} already has its one run {record.run_id!r}; a plan runs at most "
            "once: clone it (`orch plan clone`) to run its content again",
            record.run_id,
        )
    elif record is not None and record.execution is not None:
        raise RunRefusedError(
            "run_already_claimed",
            f"plan {plan_id!r} already ran as {record.run_id!r}; a plan runs at most once: "
            "clone it to run its content again, or resume the run if it did not complete",
            record.run_id,
        )
    entry = next((n for n in view.nodes if isinstance(n, EntryNode)), None)
    if entry is not None and resume_run_id is None:
        try:
            check_run_input(entry.definition.input, run_input)
        except InvalidRunInputError as exc:
            raise RunRefusedError("invalid_run_input", exc.message) from exc
    for cell in cells:
        try:
            await cell.load()
        except Exception as exc:  # noqa: BLE001 - any failure to load refuses the run alike
            raise RunRefusedError(
                "cell_unavailable",
                f"the per-run cell {cell.id!r} cannot load ({exc}); install what it needs or "
                "run without it",
            ) from exc
    return Admitted(
        view=view,
        approval=approval,
        run_input=dict(run_input),
        run_id=resume_run_id or run_id,
        resume=resume_run_id is not None,
    )
