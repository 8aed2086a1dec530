"""Models to column values and back, for the SQLite and PostgreSQL stores.

Both stores keep records as the JSON text the pydantic models emit and read them back with
``validate_json``: only JSON mode decodes the value tags (``{"$ref": ...}``, ``{"$bytes": ...}``),
so a round trip gives back the same values of the same types. Parameter tuples are in the column
order of the matching statement in :mod:`._sql`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from orchestration.errors import PlanNotFoundError
from orchestration.types import (
    ApprovalRecord,
    PlanOp,
    PlanProvenance,
    PlanSummary,
    RawPlanView,
    RunEvent,
    WireModel,
)

from . import _rules
from .base import TransitionRequest

SUMMARY_COLUMNS = "plan_id, state, digest, revision, node_count, label, provenance, updated_at"
"""The columns :func:`summary` reads, in its order."""


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


def events(rows: Iterable[Sequence[str]]) -> list[RunEvent]:
    """Rows of run-event ``body`` alone, parsed."""
    return [_rules.EVENT_JSON.validate_json(body) for (body,) in rows]


def summary(row: Sequence[Any]) -> PlanSummary:
    """A row of :data:`SUMMARY_COLUMNS` as a listing entry."""
    plan_id, state, digest, revision, node_count, label, provenance_text, updated_at = row
    return PlanSummary(
        plan_id=plan_id,
        state=state,
        digest=digest,
        revision=revision,
        node_count=node_count,
        label=label,
        provenance=provenance(provenance_text),
        updated_at=updated_at,
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


def new_events(plan_id: str, start: int, bodies: Sequence[str]) -> list[tuple[object, ...]]:
    """The parameters of ``insert_events``: event bodies from position ``start``."""
    return [(plan_id, start + i, body) for i, body in enumerate(bodies)]


def new_state(plan_id: str, request: TransitionRequest, updated_at: str) -> tuple[object, ...]:
    """The parameters of ``set_state`` for an admitted move.

    Only ``reviewable → executable`` records its approval; any other move keeps the column as it
    is (the statement coalesces a ``NULL``).
    """
    approval = request.approval if request.to == "executable" else None
    return (request.to, dump(approval), updated_at, plan_id)
