"""Declared-field shapes: what an entry accepts and what a call or transform promises.

A declared field is a scalar leaf at a dot path. Freeze checks references against these
declarations and the executor validates values against them, so a malformed declaration (an
empty path segment, an enum with no values, two declarations of one path, a scalar that is also
the parent of another field) would make both checks meaningless.
"""

from __future__ import annotations

from collections.abc import Sequence

from orchestration.review.validation.context import CheckContext
from orchestration.review.validation.issues import blocking, quote_list
from orchestration.types import (
    CallDefinition,
    DeclaredField,
    EntryDefinition,
    EnumField,
    PlanIssue,
    StringField,
    TransformDefinition,
)

__all__ = ["check_declared_fields"]


def check_declared_fields(ctx: CheckContext) -> list[PlanIssue]:
    """Every entry input, call output and transform output declaration, in node order."""
    issues: list[PlanIssue] = []
    for node in ctx.view.nodes:
        definition = node.definition
        if isinstance(definition, EntryDefinition):
            issues.extend(_check(node.id, "input", definition.input))
        elif isinstance(definition, CallDefinition | TransformDefinition):
            issues.extend(_check(node.id, "output", definition.output))
    return issues


def _check(node_id: str, where: str, fields: Sequence[DeclaredField]) -> list[PlanIssue]:
    if not fields:
        return []
    issues: list[PlanIssue] = []
    paths = [f.path for f in fields]
    dotted = [p for p in paths if "." in p]
    for field in fields:
        problem = _shape_problem(field)
        if problem is None and dotted and field.path:
            below = [p for p in dotted if p.startswith(field.path + ".")]
            if below:
                problem = (
                    f'"{field.path}" is a scalar field and also the parent of '
                    f"{quote_list(below)}; declare only the leaves"
                )
        if problem is not None:
            issues.append(
                blocking(
                    "invalid_declared_field",
                    f'Node "{node_id}" declares {where} field "{field.path}" badly: {problem}.',
                    node_id=node_id,
                )
            )
    if len(set(paths)) < len(paths):
        repeated = [p for i, p in enumerate(paths) if p in paths[:i]]
        for path in dict.fromkeys(repeated):
            issues.append(
                blocking(
                    "duplicate_declared_field",
                    f'Node "{node_id}" declares {where} field "{path}" more than once; keep one '
                    "declaration per path.",
                    node_id=node_id,
                )
            )
    return issues


def _shape_problem(field: DeclaredField) -> str | None:
    path = field.path
    if not path:
        return "the path is empty; give the field a name such as \"title\""
    if path[0] == "." or path[-1] == "." or ".." in path:
        return 'a path segment is empty; write dot paths like "user.name", with no empty part'
    if isinstance(field, StringField) and field.max_bytes is not None and field.max_bytes < 1:
        return "maxBytes must be at least 1; raise it or drop it"
    if isinstance(field, EnumField):
        if not field.values:
            return "an enum needs at least one value; list the allowed values"
        repeated = sorted({v for v in field.values if field.values.count(v) > 1})
        if repeated:
            return f"enum values repeat ({quote_list(repeated)}); list each value once"
    return None
