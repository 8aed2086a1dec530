"""Run input checked against the entry node's declared fields, before anything is recorded.

The input is the one place outside data enters a run, so it is refused whole, up front, with
every problem named at once: a refused input must leave nothing behind (no ``run_started``, no
claimed run). Each declared field must be present (its ``path`` may be a dot path into nested
objects) and of its declared type: ``string`` (with ``maxBytes`` counted in UTF-8), ``number``
(an int or float, never a bool), ``boolean``, or ``enum`` (one of its ``values``). Undeclared
keys are allowed: they ride along in the entry's output, as they do in the reference. The whole
input must also be in the encodable value subset, since it becomes the entry frame's output.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from orchestration.errors import InvalidRunInputError, UnencodableValueError
from orchestration.plan.encoding import validate_value
from orchestration.run.resolve import MISSING, read_path
from orchestration.types import BooleanField, DeclaredField, EnumField, NumberField, StringField

__all__ = ["check_run_input", "run_input_problems"]


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def run_input_problems(fields: Sequence[DeclaredField], run_input: Any) -> list[str]:
    """Every way ``run_input`` fails ``fields``, one sentence each naming the fix."""
    if type(run_input) is not dict or not all(type(k) is str for k in run_input):
        return [
            f"the run input must be an object with string keys, got {_type_name(run_input)}; "
            "pass the entry node's declared fields as a dict"
        ]
    problems: list[str] = []
    try:
        validate_value(run_input)
    except UnencodableValueError as exc:
        problems.append(f"the run input is not encodable: {exc.message}")
    for field in fields:
        value = read_path(run_input, field.path)
        if value is MISSING:
            problems.append(
                f'input is missing required declared field "{field.path}" for the entry node; '
                "supply it"
            )
            continue
        problem = _field_problem(field, value)
        if problem is not None:
            problems.append(f'input field "{field.path}" {problem}')
    return problems


def _field_problem(field: DeclaredField, value: Any) -> str | None:
    if isinstance(field, StringField):
        if type(value) is not str:
            return f"must be a string, got {_type_name(value)}"
        if field.max_bytes is not None:
            size = len(value.encode("utf-8"))
            if size > field.max_bytes:
                return (
                    f"is {size} bytes in UTF-8, over its maxBytes of {field.max_bytes}; shorten it"
                )
        return None
    if isinstance(field, NumberField):
        if type(value) is bool or not isinstance(value, int | float):
            return f"must be a number, got {_type_name(value)}"
        return None
    if isinstance(field, BooleanField):
        if type(value) is not bool:
            return f"must be true or false, got {_type_name(value)}"
        return None
    if isinstance(field, EnumField):
        if type(value) is not str or value not in field.values:
            allowed = ", ".join(repr(v) for v in field.values)
            return f"must be one of {allowed}, got {value!r}"
        return None
    return None  # pragma: no cover - DeclaredField is closed


def check_run_input(fields: Sequence[DeclaredField], run_input: Mapping[str, Any]) -> None:
    """Refuse ``run_input`` unless it satisfies ``fields``.

    Raises:
        InvalidRunInputError: listing every problem in ``problems``.

    """
    problems = run_input_problems(fields, run_input)
    if problems:
        raise InvalidRunInputError(
            "the run input was refused: " + "; ".join(problems), tuple(problems)
        )
