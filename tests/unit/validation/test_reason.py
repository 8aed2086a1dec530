"""Reason checks: a usable object output schema, and at least one attempt."""

from __future__ import annotations

from orchestration.plan.authoring import text

from .helpers import SCHEMA, author, check, only


def _reason(schema: str = SCHEMA, attempts: int = 2):  # type: ignore[no-untyped-def]
    a = author()
    return [a.entry(), a.reason("think", prompt=[text("hi")], output_schema=schema,
                                max_attempts=attempts), a.edge("entry", "think", edge_id="e1")]


def test_schema_that_is_not_json() -> None:
    """An output schema that does not decode is refused with an example of a good one."""
    issue = only(check(_reason("{type: object")), "invalid_output_schema")
    assert issue.node_id == "think" and '"type": "object"' in issue.message


def test_schema_that_is_not_an_object_schema() -> None:
    """A forced tool's arguments are an object, so the schema must describe one."""
    issue = only(check(_reason('{"type": "string"}')), "invalid_output_schema")
    assert 'is not "object"' in issue.message


def test_schema_that_is_not_valid_json_schema() -> None:
    """A JSON object that breaks the JSON Schema meta-schema is refused."""
    ops = _reason('{"type": "object", "required": "verdict"}')
    issue = only(check(ops), "invalid_output_schema")
    assert "not a valid JSON Schema" in issue.message


def test_zero_attempts() -> None:
    """maxAttempts below one is refused."""
    issue = only(check(_reason(attempts=0)), "invalid_max_attempts")
    assert issue.node_id == "think" and "1 or more" in issue.message
