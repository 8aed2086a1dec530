"""The JSON Schemas the forged tools advertise, generated from the wire models.

The per-kind definition schemas come from the same pydantic models that validate ops, so a
model reads exactly the shapes the library accepts. They are made self-contained (every
``$defs`` reference inlined) and stripped of pydantic's titles and discriminator hints, since
tool-definition formats (MCP, OpenAI, Anthropic) expect one standalone object schema per tool.
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

from pydantic import BaseModel, TypeAdapter

from orchestration.types import (
    BranchDefinition,
    CallDefinition,
    EntryDefinition,
    InputDefinition,
    JoinDefinition,
    LoopDefinition,
    MapDefinition,
    PlanBounds,
    PlanNodeKind,
    ReasonDefinition,
    SelectDefinition,
    TransformDefinition,
)

__all__ = [
    "DEFINITION_MODELS",
    "EDGE",
    "KINDS",
    "NODE_ID",
    "PLAN_ID",
    "bounds_schema",
    "config_schema",
    "definition_schema",
    "node_schema",
    "obj",
]

KINDS: tuple[PlanNodeKind, ...] = (
    "entry",
    "call",
    "reason",
    "transform",
    "branch",
    "select",
    "join",
    "input",
    "map",
    "loop",
)

DEFINITION_MODELS: dict[PlanNodeKind, type[BaseModel]] = {
    "entry": EntryDefinition,
    "call": CallDefinition,
    "reason": ReasonDefinition,
    "transform": TransformDefinition,
    "branch": BranchDefinition,
    "select": SelectDefinition,
    "join": JoinDefinition,
    "input": InputDefinition,
    "map": MapDefinition,
    "loop": LoopDefinition,
}

PLAN_ID: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "description": "The plan's id, exactly as a tool returned it.",
}
NODE_ID: dict[str, Any] = {
    "type": "string",
    "pattern": "^[a-z0-9_]+$",
    "description": "A node id: snake_case, cited verbatim by references and edges.",
}
EDGE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {
            "type": "string",
            "pattern": "^[A-Za-z0-9_-]{1,64}$",
            "description": "Edge id; default <from>-<to>[-<handle>].",
        },
        "from": {"type": "string", "description": "Source node id."},
        "to": {"type": "string", "description": "Target node id."},
        "handle": {
            "type": "string",
            "description": "When it fires: always (default), match, no_match, default, error, "
            "or case_<label>; which apply depends on the source's kind.",
        },
    },
    "required": ["from", "to"],
    "additionalProperties": False,
}

_CONTAINERS = ("items", "additionalProperties", "not")
_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_DROP = ("title", "discriminator")


def obj(properties: dict[str, Any], required: tuple[str, ...] = (), **extra: Any) -> dict[str, Any]:
    """A closed object schema."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        schema["required"] = list(required)
    schema.update(extra)
    return schema


def _inline(schema: Any, defs: dict[str, Any]) -> Any:
    if not isinstance(schema, dict):
        return schema
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        target = _inline(copy.deepcopy(defs[ref.removeprefix("#/$defs/")]), defs)
        return {**target, **{k: _inline(v, defs) for k, v in rest.items() if k not in _DROP}}
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _DROP or key == "$defs":
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: _inline(sub, defs) for name, sub in value.items()}
        elif key in _CONTAINERS:
            out[key] = _inline(value, defs)
        elif key in _LISTS and isinstance(value, list):
            out[key] = [_inline(sub, defs) for sub in value]
        else:
            out[key] = value
    return out


def _standalone(model: Any) -> dict[str, Any]:
    raw = TypeAdapter(model).json_schema(by_alias=True, mode="validation")
    defs = raw.pop("$defs", {})
    inlined: dict[str, Any] = _inline(raw, defs)
    return inlined


@cache
def _definition(kind: PlanNodeKind) -> dict[str, Any]:
    return _standalone(DEFINITION_MODELS[kind])


def definition_schema(kind: PlanNodeKind) -> dict[str, Any]:
    """The closed schema of a ``kind`` node's definition (a fresh copy)."""
    return copy.deepcopy(_definition(kind))


def bounds_schema() -> dict[str, Any]:
    """The schema of a plan's bounds: all five members required."""
    return _standalone(PlanBounds)


def node_schema() -> dict[str, Any]:
    """A node: ``{id, phase?, kind, definition}``, one alternative per kind."""
    return {
        "anyOf": [
            obj(
                {
                    "id": NODE_ID,
                    "phase": {
                        "type": ["string", "null"],
                        "description": "A label for reading; edges alone order execution.",
                    },
                    "kind": {"const": kind},
                    "definition": definition_schema(kind),
                },
                ("id", "kind") if kind in ("entry", "join") else ("id", "kind", "definition"),
            )
            for kind in KINDS
        ]
    }


def config_schema() -> dict[str, Any]:
    """A definition tagged with its kind: ``{kind, definition}``, one alternative per kind."""
    return {
        "anyOf": [
            obj(
                {"kind": {"const": kind}, "definition": definition_schema(kind)},
                ("kind", "definition"),
            )
            for kind in KINDS
        ]
    }
