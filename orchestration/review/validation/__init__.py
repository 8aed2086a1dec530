"""Freeze validation: ``validate(view, inputs) -> list[PlanIssue]``.

Nothing reaches ``reviewable`` (and so nothing can be approved or run) unless it is structurally
sound, references only what exists and always runs first, calls only allowlisted tools with the
arguments each takes, decides what has no safe default, keeps tainted input out of tool
arguments, and stays inside its bounds (a call claiming no authority is reported, and refused
only under ``strict_authority``). Every finding is a :class:`~orchestration.types.PlanIssue` with a
stable ``code`` and a message addressed to the model that authored the plan, naming the fix.

Issues come in a fixed order, so two freezes of one plan report identically: the fold's own
issues (passed in), then topology (entry, cycle), identity, handles and select wiring,
reachability, joins, maps (bodies and the worst case), declared fields, references, taint,
calls, call arguments against their tool's shape, reason nodes, transforms, gates (approvals,
input requests, questions), cells, scaffold text, and bounds. Checks that need the single
entry (reachability, dominance, routes) run only when there is exactly one; route counting
also needs an acyclic graph. Every check runs on every plan otherwise, so an author sees all of
a plan's problems at once.

``validate`` never raises on a folded view: whatever a check or a cell raises becomes a
blocking issue (``internal_error``), so an unchecked plan can never be frozen by accident.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from orchestration.review.validation.arguments import check_arguments
from orchestration.review.validation.budgets import check_budgets
from orchestration.review.validation.calls import check_calls
from orchestration.review.validation.cells import check_cells
from orchestration.review.validation.content import check_bounds, check_scaffold
from orchestration.review.validation.context import CheckContext
from orchestration.review.validation.dataflow import check_references
from orchestration.review.validation.fields import check_declared_fields
from orchestration.review.validation.gates import check_gates
from orchestration.review.validation.inputs import (
    FreezeInputs,
    FreezeOverrides,
    merge_evaluators,
    resolve_inputs,
)
from orchestration.review.validation.issues import advisory, blocking, has_blocking
from orchestration.review.validation.maps import check_maps
from orchestration.review.validation.reason import check_reasons
from orchestration.review.validation.taint import check_taint
from orchestration.review.validation.topology import (
    check_handles,
    check_ids,
    check_joins,
    check_reachability,
    check_topology,
)
from orchestration.review.validation.transforms import check_transforms
from orchestration.types import PlanIssue, RawPlanView

__all__ = [
    "FreezeInputs",
    "FreezeOverrides",
    "advisory",
    "blocking",
    "has_blocking",
    "merge_evaluators",
    "resolve_inputs",
    "validate",
]

_BEFORE_CELLS: tuple[Callable[[CheckContext], list[PlanIssue]], ...] = (
    check_topology,
    check_ids,
    check_handles,
    check_reachability,
    check_joins,
    check_maps,
    check_declared_fields,
    check_references,
    check_taint,
    check_calls,
    check_arguments,
    check_reasons,
    check_transforms,
    check_budgets,
    check_gates,
)
_AFTER_CELLS: tuple[Callable[[CheckContext], list[PlanIssue]], ...] = (
    check_scaffold,
    check_bounds,
)


async def validate(
    view: RawPlanView,
    inputs: FreezeInputs,
    *,
    fold_issues: Sequence[PlanIssue] = (),
) -> list[PlanIssue]:
    """Every freeze finding for ``view``, fold issues first. Never raises on a folded view.

    Args:
        view: The folded plan.
        inputs: The allowlist and the wired cells (already resolved; see
            :func:`resolve_inputs`).
        fold_issues: What the fold reported for this view, surfaced first as they are (a
            same-id edge collision stays advisory and names both edges).

    Returns:
        The issues; the plan may be frozen when none is ``blocking``.

    """
    issues = list(fold_issues)
    try:
        ctx = CheckContext(view, inputs)
    except Exception as exc:  # noqa: BLE001 - see the module docstring
        issues.append(_internal("analyse the graph", exc))
        return issues
    for check in _BEFORE_CELLS:
        issues.extend(_guarded(check, ctx))
    try:
        issues.extend(await check_cells(ctx))
    except Exception as exc:  # noqa: BLE001
        issues.append(_internal("check the predicate cells", exc))
    for check in _AFTER_CELLS:
        issues.extend(_guarded(check, ctx))
    return issues


Check = Callable[[CheckContext], list[PlanIssue]]


def _guarded(check: Check, ctx: CheckContext) -> list[PlanIssue]:
    try:
        return check(ctx)
    except Exception as exc:  # noqa: BLE001
        return [_internal(check.__name__.removeprefix("check_").replace("_", " "), exc)]


def _internal(what: str, exc: BaseException) -> PlanIssue:
    return blocking(
        "internal_error",
        f"Freeze could not {what} ({type(exc).__name__}: {exc}); the plan stays editable. Fix "
        "the plan shape around this error or report it; freeze refuses what it cannot check.",
    )
