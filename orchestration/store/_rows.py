"""Models to column values and back, for the SQL store.

It keeps records as the JSON text the pydantic models emit and read them back with
``validate_json``: only JSON mode decodes the value tags (``{"$ref": ...}``, ``{"$bytes": ...}``),
so a round trip gives back the same values of the same types. Parameter tuples are in the column
order of the matching statement in :mod:`._sql`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from orchestration.errors import PlanNotFoundError
from orchestration.run.log import LogEntry
from orchestration.types import (
    ApprovalRecord,
    PlanOp,
    PlanProvenance,
    PlanSummary,
    RawPlanView,
    RunSummary,
    WireModel,
)

from . import _listing, _rules
from .base import RunRecord, TransitionRequest

SUMMARY_COLUMNS = (
    "plan_id, state, digest, revision, node_count, label, provenance, updated_at, run_id,"
    " run_outcome"
)
"""The columns :func:`summary` reads, in its order."""

RUN_COLUMNS = "run_id, run_execution, run_outcome"
"""The ``plans`` columns :func:`run` reads, in its order (the log's length comes beside them)."""


def found(row: Sequence[Any] | None, method: str, plan_id: str) -> tuple[Any, ...]:
    """The plan's row as read, or ``PlanNotFoundError`` when there was none."""
    if row is None:
        raise PlanNotFoundError(_rules.plan_not_found_message(method, plan_id))
    return tuple(row)


def dump(model: WireModel | None) -> str | None:
    """A record as stored in a nullable column."""
    return None if model is None else model.model_dump_json()


def provenance(text: str | None) -> PlanProvenance | None:
    """The ``provenance`` column as a model."""
    return None if text is None else _rules.PROVENANCE_JSON.validate_json(text)


def approval(text: str | None) -> ApprovalRecord | None:
    """The ``approval`` column as a model."""
    return None if text is None else ApprovalRecord.model_validate_json(text)


def ops(rows: Iterable[Sequence[str]]) -> list[PlanOp]:
    """Rows of op ``body`` alone, parsed."""
    return [_rules.OP_JSON.validate_json(body) for (body,) in rows]


def log(rows: Iterable[Sequence[str]]) -> list[LogEntry]:
    """Rows of run-log ``body`` alone, parsed."""
    return [_rules.LOG_ENTRY_JSON.validate_json(body) for (body,) in rows]


def run(columns: Sequence[Any], log_length: int) -> RunRecord | None:
    """The :data:`RUN_COLUMNS` of a plan and its log's length, as its run (``None``: no run)."""
    run_id, execution, outcome = columns
    if run_id is None:
        return None
    return RunRecord(run_id=run_id, execution=execution, outcome=outcome, log_length=log_length)


def summary(row: Sequence[Any]) -> PlanSummary:
    """A row of :data:`SUMMARY_COLUMNS` as a listing entry."""
    (
        plan_id,
        state,
        digest,
        revision,
        node_count,
        label,
        provenance_text,
        updated_at,
        run_id,
        run_outcome,
    ) = row
    return PlanSummary(
        plan_id=plan_id,
        state=state,
        digest=digest,
        revision=revision,
        node_count=node_count,
        label=label,
        provenance=provenance(provenance_text),
        updated_at=updated_at,
        run_id=run_id,
        run_outcome=run_outcome,
    )


def run_summary(row: Sequence[Any]) -> RunSummary:
    """A row of the ``list_runs`` statement as a listing entry."""
    plan_id, run_id, execution, outcome, claimed_at, first, last, length = row
    return _listing.run_summary_of_bodies(
        plan_id, run_id, execution, outcome, claimed_at, first, last, length
    )


def new_plan(
    plan_id: str,
    revision: int,
    view: RawPlanView,
    *,
    label: str | None,
    provenance: PlanProvenance | None,
    updated_at: str,
) -> tuple[object, ...]:
    """The parameters of ``insert_plan``: an ``editable`` plan of ``revision`` ops, as folded."""
    return (plan_id, revision, view.digest, len(view.nodes), label, dump(provenance), updated_at)


def new_ops(
    plan_id: str, start: int, admitted: Sequence[tuple[PlanOp, str]]
) -> list[tuple[object, ...]]:
    """The parameters of ``insert_ops``: admitted ``(op, fingerprint)`` pairs from ``start``."""
    return [
        (plan_id, start + i, op.op_id, fingerprint, op.model_dump_json())
        for i, (op, fingerprint) in enumerate(admitted)
    ]


def new_run(plan_id: str, record: RunRecord, updated_at: str) -> tuple[object, ...]:
    """The parameters of ``set_run``: the run a claim admitted (claimed now, if first)."""
    return (record.run_id, record.execution, record.outcome, updated_at, updated_at, plan_id)


def new_log(plan_id: str, write: _rules.LogWrite) -> list[tuple[object, ...]]:
    """The parameters of ``insert_run_log``: the bodies an admitted append writes."""
    return [(plan_id, write.position + i, body) for i, body in enumerate(write.bodies)]


def new_state(plan_id: str, request: TransitionRequest, updated_at: str) -> tuple[object, ...]:
    """The parameters of ``set_state`` for an admitted move.

    Only ``reviewable → executable`` records its approval; any other move keeps the column as it
    is (the statement coalesces a ``NULL``).
    """
    approval = request.approval if request.to == "executable" else None
    return (request.to, dump(approval), updated_at, plan_id)
