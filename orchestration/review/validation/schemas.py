"""JSON Schema checks: a reason node's output schema, and transform step arguments.

Both are checked with a real JSON Schema implementation against the dialect the schema names
(``$schema``; Draft 2020-12 when absent). Remote ``$ref``s are never fetched: freeze is pure,
so an unresolvable reference is reported rather than followed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

__all__ = ["SchemaProblem", "args_problem", "schema_problem"]

SchemaProblem = str


def _validator_class(schema: Mapping[str, Any]) -> type[Validator]:
    # Imported here: most plans have no reason node or step args, and the import is not free.
    import jsonschema

    return jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)


def schema_problem(schema: Any, *, object_only: bool) -> SchemaProblem | None:
    """Why ``schema`` is not a usable JSON Schema (an object schema, if ``object_only``)."""
    if not isinstance(schema, Mapping):
        return "it does not decode to a JSON object"
    from jsonschema.exceptions import SchemaError

    try:
        _validator_class(schema).check_schema(dict(schema))
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.path)
        return f"it is not a valid JSON Schema ({exc.message}{' at ' + where if where else ''})"
    except Exception as exc:  # noqa: BLE001 - a broken schema must be a finding, never a crash
        return f"it could not be checked as a JSON Schema ({type(exc).__name__}: {exc})"
    if object_only:
        kind = schema.get("type")
        if kind != "object":
            return (
                'its "type" is not "object"; a forced tool call\'s arguments are an object, so '
                'declare {"type": "object", "properties": {...}}'
            )
    return None


def args_problem(schema: Mapping[str, Any], args: Mapping[str, Any]) -> SchemaProblem | None:
    """Why ``args`` fails ``schema``: the first error, with where it is; ``None`` when valid."""
    from jsonschema.exceptions import best_match

    try:
        validator = _validator_class(schema)(schema)
        first = best_match(validator.iter_errors(dict(args)))
    except Exception as exc:  # noqa: BLE001 - a broken descriptor schema is reported, not raised
        return f"the method's args schema could not be applied ({type(exc).__name__}: {exc})"
    if first is None:
        return None
    where = ".".join(str(p) for p in first.path)
    return f"{where + ': ' if where else ''}{first.message}"
