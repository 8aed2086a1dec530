"""The exported JSON Schema of the plan IR and the run log.

The schema is generated from the wire models (the one source of truth) and checked in at
``schema/orchestration.schema.json``, so another service, in any language, can validate what
it sends and reads; a test regenerates it and fails when the checked-in copy drifts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from orchestration.run.messages import PlanRunInput, PlanRunResult, RunSettings
from orchestration.types import (
    ApprovalRecord,
    PlanDiff,
    PlanIssue,
    PlanOp,
    PlanSummary,
    RawPlanView,
    RunEvent,
    RunProjection,
    RunSummary,
)

__all__ = ["SCHEMA_ID", "default_schema_path", "export_schema", "schema_text"]

SCHEMA_ID = "https://schemas.invalid/orchestration/v1"

_ROOTS: dict[str, Any] = {
    "PlanOp": PlanOp,
    "RawPlanView": RawPlanView,
    "PlanSummary": PlanSummary,
    "RunSummary": RunSummary,
    "PlanIssue": PlanIssue,
    "PlanDiff": PlanDiff,
    "ApprovalRecord": ApprovalRecord,
    "RunEvent": RunEvent,
    "RunProjection": RunProjection,
    "PlanRunInput": PlanRunInput,
    "RunSettings": RunSettings,
    "PlanRunResult": PlanRunResult,
}


def export_schema() -> dict[str, Any]:
    """One JSON Schema document whose ``$defs`` hold every root type and what it uses."""
    defs: dict[str, Any] = {}
    for name, root in _ROOTS.items():
        schema = TypeAdapter(root).json_schema(
            by_alias=True, mode="serialization", ref_template="#/$defs/{model}"
        )
        defs.update(schema.pop("$defs", {}))
        defs[name] = schema
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "Plan IR, run log and the PlanRun workflow's input and result",
        "description": "Wire form (JSON) of plans, ops, approvals, run events and the PlanRun "
        "workflow's input and result. Non-JSON "
        "values are single-key tags: $ref, $param, $bytes, $datetime, $timedelta, $regex, $set, "
        "$frozenset, $map, $bigint, $float, $dict.",
        "$defs": dict(sorted(defs.items())),
    }


def schema_text() -> str:
    """The schema as the checked-in file holds it (stable key order, trailing newline)."""
    return json.dumps(export_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def default_schema_path() -> Path:
    """Where the checked-in schema lives in a source checkout."""
    return Path(__file__).resolve().parent.parent / "schema" / "orchestration.schema.json"
