"""The checked-in JSON Schema matches the wire models."""

from __future__ import annotations

import json

from orchestration.schema import default_schema_path, export_schema, schema_text


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
