"""Holes: where a template's ``ParamRef`` s sit, whether they may sit there, and filling them.

Filling is structural: a hole is replaced by its argument, walking dicts and lists and leaving
every other value as it is (a ``NodeRef`` is never descended into, so a reference's fields can
never be rewritten by an argument). A hole that is a whole reason-prompt part becomes a text
part holding the argument as text, because a prompt is a sequence of parts, never bare values.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import TypeAdapter

from orchestration.plan.encoding import ParamRef
from orchestration.types import (
    BooleanField,
    DeclaredField,
    EnumField,
    NumberField,
    PlanNode,
    PlanNodeKind,
    StringField,
)

__all__ = [
    "HOLE_PLACES",
    "build_node",
    "fill_definition",
    "hole_allowed",
    "hole_sites",
    "sample_args",
]

HOLE_PLACES: dict[PlanNodeKind, str] = {
    "entry": "nowhere (an entry declares input; a run supplies it)",
    "call": "inside args",
    "reason": "in prompt (a whole part, or a part's text)",
    "transform": "inside a step's args",
    "branch": "inside predicate",
    "select": "inside predicate",
    "join": "nowhere (a join has nothing to configure)",
    "input": "in prompt (a whole part, or a part's text)",
    "map": "nowhere (a map's list and bounds are literal)",
    "loop": "nowhere (a loop's predicate and bounds are literal)",
}
"""Where each kind of node may hold a hole, for messages."""

_ALLOWED: dict[PlanNodeKind, re.Pattern[str]] = {
    "call": re.compile(r"args(\.|\[|$)"),
    "reason": re.compile(r"prompt\[\d+\](\.text)?$"),
    "input": re.compile(r"prompt\[\d+\](\.text)?$"),
    "transform": re.compile(r"steps\[\d+\]\.args(\.|\[|$)"),
    "branch": re.compile(r"predicate(\.|\[|$)"),
    "select": re.compile(r"predicate(\.|\[|$)"),
}

_NODE = TypeAdapter[PlanNode](PlanNode)


def hole_sites(value: Any, location: str = "") -> Iterator[tuple[str, ParamRef]]:
    """Every hole in ``value`` with its location (``args.url``, ``prompt[1].text``)."""
    stack: list[tuple[str, Any]] = [(location, value)]
    while stack:
        where, item = stack.pop()
        kind = type(item)
        if kind is ParamRef:
            yield where, item
        elif kind is dict:
            for key, child in reversed(list(item.items())):
                name = key if type(key) is str else repr(key)
                stack.append((f"{where}.{name}" if where else name, child))
        elif kind is list:
            for index in range(len(item) - 1, -1, -1):
                stack.append((f"{where}[{index}]", item[index]))


def hole_allowed(kind: PlanNodeKind, location: str) -> bool:
    """Whether a node of ``kind`` may hold a hole at ``location`` (see :data:`HOLE_PLACES`)."""
    pattern = _ALLOWED.get(kind)
    return pattern is not None and pattern.match(location) is not None


def _as_text(value: Any) -> str:
    return value if type(value) is str else json.dumps(value)


def _fill(value: Any, args: Mapping[str, Any]) -> Any:
    kind = type(value)
    if kind is ParamRef:
        return args[value.path]
    if kind is dict:
        return {key: _fill(child, args) for key, child in value.items()}
    if kind is list:
        return [_fill(child, args) for child in value]
    return value


def fill_definition(
    kind: PlanNodeKind, definition: Mapping[str, Any], args: Mapping[str, Any]
) -> dict[str, Any]:
    """A copy of ``definition`` with every hole replaced by its argument.

    Raises:
        KeyError: a hole names a param missing from ``args`` (validation rules this out).

    """
    filled: dict[str, Any] = {}
    for key, value in definition.items():
        if kind == "reason" and key == "prompt" and type(value) is list:
            filled[key] = [
                {"text": _as_text(args[part.path])} if type(part) is ParamRef else _fill(part, args)
                for part in value
            ]
        else:
            filled[key] = _fill(value, args)
    return filled


def build_node(
    node_id: str, kind: PlanNodeKind, phase: str | None, definition: Mapping[str, Any]
) -> PlanNode:
    """The plan node a filled template node stands for.

    Raises:
        pydantic.ValidationError: the definition does not fit its kind.

    """
    return _NODE.validate_python(
        {"id": node_id, "kind": kind, "phase": phase, "definition": dict(definition)}
    )


def _sample(param: DeclaredField) -> Any:
    if isinstance(param, StringField):
        return "x" if param.max_bytes is None or param.max_bytes >= 1 else ""
    if isinstance(param, NumberField):
        return 0
    if isinstance(param, BooleanField):
        return False
    if isinstance(param, EnumField):
        return param.values[0] if param.values else ""
    return None  # pragma: no cover - DeclaredField is closed


def sample_args(params: tuple[DeclaredField, ...]) -> dict[str, Any]:
    """One valid argument per param: what a construction check fills the holes with."""
    return {param.path: _sample(param) for param in params}
