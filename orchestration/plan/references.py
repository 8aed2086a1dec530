"""Where a plan's nodes read each other: reference sites, and the fields a node declares.

A ``NodeRef`` may sit in four places only: anywhere inside a call's ``args``, as a part of a
reason node's or an input request's ``prompt``, as a transform's ``source``, and as a map's
``over``. (Predicates
and step arguments are plain encodable values by type, so they cannot hold one.) Freeze, taint
and the renderer all walk the same sites through :func:`reference_sites`, so they cannot
disagree on what a node reads.

A reference's ``path`` is checkable at freeze only against what the target *declares*: an
entry's ``input``, a call's or transform's ``output``, a join's provenance fields (``via``,
``from``, ``branch``), the fields an input request's schema yields
(:func:`~orchestration.plan.gates.input_paths`), or the properties of a reason node's output
schema. :func:`field_space`
gives that declaration for any node.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from orchestration.plan.encoding import NodeRef
from orchestration.plan.gates import input_paths
from orchestration.types import (
    CallDefinition,
    EntryDefinition,
    InputDefinition,
    LoopDefinition,
    MapDefinition,
    PlanNode,
    ReasonDefinition,
    TransformDefinition,
)

__all__ = [
    "JOIN_FIELDS",
    "FieldSpace",
    "RefSite",
    "decode_output_schema",
    "field_space",
    "reference_sites",
]

JOIN_FIELDS = ("via", "from", "branch")
"""The fields of every item a join emits: one item per arrival, provenance only."""


class RefSite(NamedTuple):
    """One reference inside a node's definition.

    Attributes:
        location: Where it sits, as a path into the definition (``args.url``, ``prompt[1]``,
            ``source``), so an issue or a taint path can point at it.
        ref: The reference.

    """

    location: str
    ref: NodeRef


def reference_sites(node: PlanNode) -> list[RefSite]:
    """Every reference a node's definition holds, in definition order."""
    definition = node.definition
    if isinstance(definition, CallDefinition):
        sites: list[RefSite] = []
        for key, value in definition.args.items():
            _collect(value, f"args.{key}", sites)
        return sites
    if isinstance(definition, ReasonDefinition | InputDefinition):
        return [
            RefSite(f"prompt[{i}]", part)
            for i, part in enumerate(definition.prompt)
            if isinstance(part, NodeRef)
        ]
    if isinstance(definition, TransformDefinition):
        return [RefSite("source", definition.source)]
    if isinstance(definition, MapDefinition):
        return [RefSite("over", definition.over)]
    if isinstance(definition, LoopDefinition) and definition.watch is not None:
        return [RefSite("watch", definition.watch)]
    return []


def _collect(value: Any, location: str, sites: list[RefSite]) -> None:
    stack: list[tuple[Any, str]] = [(value, location)]
    found: list[RefSite] = []
    while stack:
        item, where = stack.pop()
        kind = type(item)
        if kind is NodeRef:
            found.append(RefSite(where, item))
        elif kind is dict:
            entries = list(item.items())
            for key, child in reversed(entries):
                label = f"{where}.{key}" if type(key) is str else f"{where}[{key!r}]"
                stack.append((child, label))
        elif kind is list:
            for i in range(len(item) - 1, -1, -1):
                stack.append((item[i], f"{where}[{i}]"))
    sites.extend(found)


def decode_output_schema(text: str) -> dict[str, Any] | None:
    """A reason node's output schema as a JSON object, or ``None`` when it does not decode."""
    try:
        decoded = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return decoded if isinstance(decoded, dict) else None


@dataclass(frozen=True)
class FieldSpace:
    """What a node declares, for checking a reference's ``path``.

    Attributes:
        kind: ``fields`` (declared scalar fields), ``schema`` (a reason node's output schema),
            or ``unchecked`` (nothing is declared that a path could be checked against).
        paths: The declared field paths (``fields``) or top-level schema properties (``schema``).
        schema: The decoded schema, for ``schema``.

    """

    kind: str
    paths: tuple[str, ...] = ()
    schema: Mapping[str, Any] | None = None

    def declares(self, path: str) -> bool:
        """Whether ``path`` reads a declared field, or an object holding declared fields."""
        if self.kind == "unchecked":
            return True
        if self.kind == "schema":
            return _schema_declares(self.schema or {}, path.split("."))
        if path in self.paths:
            return True
        prefix = path + "."
        return any(p == path or p.startswith(prefix) for p in self.paths)


def field_space(node: PlanNode) -> FieldSpace:
    """The declaration a reference into ``node`` is checked against."""
    definition = node.definition
    if isinstance(definition, EntryDefinition):
        return FieldSpace("fields", tuple(f.path for f in definition.input))
    if isinstance(definition, CallDefinition | TransformDefinition):
        return FieldSpace("fields", tuple(f.path for f in definition.output))
    if node.kind == "join":
        return FieldSpace("fields", JOIN_FIELDS)
    if isinstance(definition, InputDefinition):
        return FieldSpace("fields", input_paths(definition.schema_))
    if node.kind == "map" or node.kind == "loop":
        # Inside the body: {index, item}, the item as the list held it; after the map: one row
        # per item, {index, ok, result | error}. Neither shape is declared field by field.
        return FieldSpace("unchecked")
    if isinstance(definition, ReasonDefinition):
        schema = decode_output_schema(definition.output_schema)
        properties = schema.get("properties") if schema is not None else None
        if schema is None or not isinstance(properties, dict):
            return FieldSpace("unchecked")
        return FieldSpace("schema", tuple(str(k) for k in properties), schema)
    return FieldSpace("unchecked")


def _schema_declares(schema: Mapping[str, Any], segments: Sequence[str]) -> bool:
    """Walk ``segments`` through nested ``properties``; a free-form object accepts the rest."""
    current: Any = schema
    for segment in segments:
        if not isinstance(current, Mapping):
            return True
        properties = current.get("properties")
        if not isinstance(properties, Mapping):
            kind = current.get("type")
            return kind is None or kind == "object" or (
                isinstance(kind, list) and "object" in kind
            )
        if segment not in properties:
            return False
        current = properties[segment]
    return True
