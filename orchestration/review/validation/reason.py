"""Reason checks: the output schema is a usable object schema, and the retry bound is positive.

The output schema becomes the forced tool's input schema, so the model can only answer in that
shape; a schema that does not decode, is not a JSON Schema, or does not describe an object
would fail every attempt at run time. ``maxAttempts`` bounds the retry loop and has no default.
"""

from __future__ import annotations

from orchestration.plan.references import decode_output_schema
from orchestration.review.validation.context import CheckContext
from orchestration.review.validation.issues import blocking
from orchestration.review.validation.schemas import schema_problem
from orchestration.types import PlanIssue, ReasonDefinition

__all__ = ["check_reasons"]


def check_reasons(ctx: CheckContext) -> list[PlanIssue]:
    """Every reason node, in node order."""
    issues: list[PlanIssue] = []
    checked: dict[str, str | None] = {}
    for node in ctx.view.nodes:
        d = node.definition
        if not isinstance(d, ReasonDefinition):
            continue
        if d.output_schema not in checked:
            schema = decode_output_schema(d.output_schema)
            checked[d.output_schema] = (
                "it does not decode to a JSON object"
                if schema is None
                else schema_problem(schema, object_only=True)
            )
        problem = checked[d.output_schema]
        if problem is not None:
            issues.append(
                blocking(
                    "invalid_output_schema",
                    f'Reason node "{node.id}" has an outputSchema that is unusable: {problem}; '
                    'set it to a JSON-encoded object schema, e.g. {"type": "object", '
                    '"properties": {"answer": {"type": "string"}}, "required": ["answer"]}.',
                    node_id=node.id,
                )
            )
        if d.max_attempts < 1:
            issues.append(
                blocking(
                    "invalid_max_attempts",
                    f'Reason node "{node.id}" sets maxAttempts {d.max_attempts}; it bounds the '
                    "retry loop and must be at least 1: set it to 1 or more.",
                    node_id=node.id,
                )
            )
    return issues
