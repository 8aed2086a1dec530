"""The checked-in JSON Schema matches the wire models."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import jsonschema

from orchestration.review.approval import approval_record
from orchestration.run.messages import PlanRef, PlanRunInput, RunSettings
from orchestration.schema import default_schema_path, export_schema, schema_text
from orchestration.testing import PlanSketch


def test_checked_in_schema_matches_the_models() -> None:
    """Regenerating the schema gives the checked-in file byte for byte."""
    assert default_schema_path().read_text() == schema_text(), (
        "schema/orchestration.schema.json drifted from orchestration/types.py; regenerate it with "
        "`orch schema --write schema/orchestration.schema.json`"
    )


def test_schema_uses_contract_names() -> None:
    """The wire form uses the contract's camelCase names."""
    defs = export_schema()["$defs"]
    assert "onIndeterminate" in defs["CallDefinition"]["properties"]
    assert "from" in defs["PlanEdge"]["properties"]
    assert {"PlanOp", "RawPlanView", "RunEvent", "RunProjection"} <= set(defs)
    json.dumps(defs)


def _validator(root: str) -> Any:
    document = export_schema()
    schema = {"$defs": document["$defs"], "$ref": f"#/$defs/{root}"}
    return jsonschema.Draft202012Validator(schema)


def test_a_plan_run_input_validates_against_the_exported_schema() -> None:
    """What `orch run input` prints (by reference or inline) is what the schema describes.

    Another service builds this document in its own language from the schema; a drift between
    the model and the exported shape would start runs the worker then refuses.
    """
    view = PlanSketch("p-schema").entry().call("c", "noop").chain("entry", "c").view()
    approval = approval_record(view, "alice", "2026-01-01T00:00:00Z")
    by_ref = PlanRunInput(
        plan_ref=PlanRef(plan_id=view.plan_id, digest=view.digest),
        approval=approval,
        run_input={"s": "x", "when": datetime(2026, 1, 1, tzinfo=UTC)},
        settings=RunSettings(task_queue="plans"),
    )
    inline = PlanRunInput(plan=view, approval=approval)
    validator = _validator("PlanRunInput")
    for document in (by_ref, inline):
        wire = json.loads(document.model_dump_json(by_alias=True))
        validator.validate(wire)
        assert PlanRunInput.model_validate_json(json.dumps(wire)) == document
    assert "planRef" in json.loads(by_ref.model_dump_json(by_alias=True))


def test_the_schema_refuses_a_plan_run_input_without_its_approval() -> None:
    """A hand-built input missing the approval, or with a bad setting, fails validation."""
    validator = _validator("PlanRunInput")
    errors = list(validator.iter_errors({"planRef": {"planId": "p", "digest": "d"}}))
    assert any("approval" in error.message for error in errors)
    settings = _validator("RunSettings")
    assert list(settings.iter_errors({"maxInFlight": 5000}))
    settings.validate({"taskQueue": "plans", "maxInFlight": 10})
