"""Reading values at run time: ``NodeRef`` resolution, dot paths, and prompt rendering.

A reference reads the **frame's own branch-local table**, never the run-wide outputs: after a
fan-out each branch must see exactly what its own route produced. Resolution is:

1. the output: with ``branch_id``, the entry keyed ``<node>:<branchKey(branch_id)>``; without,
   the node's entry in this table (the smallest key of that node; a table built from a valid
   plan holds at most one, since a route passes a node at most once and a join unites disjoint
   branches);
2. the items: ``first`` / ``last`` give that item's fields, ``all`` a list of every item's
   fields, an index that item's fields (out of range, negative included, is missing);
3. the path: :func:`read_path`.

"Missing" is :data:`MISSING`, distinct from ``None`` (a present null). Nothing here raises on a
value it cannot read: absence is a value, and the caller decides (a call's ``onMissingValue``,
a prompt's ``[unresolved: <node>]`` marker, a predicate's ``exists``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final, TypeVar, cast

from orchestration.plan.encoding import NodeRef, to_json_value
from orchestration.run.routes import branch_key
from orchestration.run.tables import FrameEntry, FrameTable
from orchestration.types import NodeOutput, OutputItem, TextPart

__all__ = [
    "MISSING",
    "MissingValue",
    "entry_for",
    "output_for",
    "read_path",
    "read_segments",
    "render_prompt_value",
    "resolve_args",
    "resolve_prompt",
    "resolve_ref",
]


V = TypeVar("V")


class _Missing:
    """The type of :data:`MISSING`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Final = _Missing()
"""What an unreadable reference or path yields: distinct from ``None``, which is a value."""


class MissingValue(Exception):
    """A call argument's reference resolved to nothing, under ``onMissingValue: fail``.

    Attributes:
        ref: The reference.
        location: Where it sits in the arguments (``args.url``, ``args.items[2]``).

    """

    def __init__(self, ref: NodeRef, location: str) -> None:
        super().__init__(location)
        self.ref = ref
        self.location = location

    @property
    def message(self) -> str:
        """Model-addressed text naming what was missing and the fix."""
        what = f'node "{self.ref.node}"'
        if self.ref.path:
            what += f' at path "{self.ref.path}"'
        return (
            f"{self.location} reads {what}, which produced no such value on this route; make "
            "sure that node runs (and declares the field) before this one, or set "
            "onMissingValue to 'omit' to drop the argument"
        )


def _is_index(segment: str) -> bool:
    return segment.isdigit() and segment.isascii() and (segment == "0" or segment[0] != "0")


def read_path(value: Any, path: str | None) -> Any:
    """Follow a dot path into ``value``; :data:`MISSING` where it leads nowhere.

    ``''`` (or ``None``) is the value itself. Each segment reads a dict key, or a list index
    written in canonical decimal; an empty segment, or any other container or scalar on the
    way, is missing.
    """
    if not path:
        return value
    return read_segments(value, path.split("."))


def read_segments(value: Any, segments: Sequence[str]) -> Any:
    """:func:`read_path` over a path already split into segments."""
    for segment in segments:
        if not segment:
            return MISSING
        kind = type(value)
        if kind is dict:
            value = value.get(segment, MISSING)
        elif kind is list and _is_index(segment):
            index = int(segment)
            value = value[index] if index < len(value) else MISSING
        else:
            return MISSING
        if value is MISSING:
            return MISSING
    return value


def output_for(ref: NodeRef, table: Mapping[str, V]) -> V | None:
    """The entry a reference addresses in a contract table (outputs or artifacts), or ``None``."""
    if ref.branch_id is not None:
        return table.get(f"{ref.node}:{branch_key(ref.branch_id)}")
    first_key = getattr(table, "first_key", None)
    if first_key is not None:
        key = first_key(ref.node)
    else:
        prefix = f"{ref.node}:"
        key = min((k for k in table if k.startswith(prefix)), default=None)
    return None if key is None else table.get(key)


def entry_for(ref: NodeRef, table: FrameTable[Any]) -> FrameEntry | None:
    """The entry a reference addresses in an engine table, or ``None``."""
    if ref.branch_id is not None:
        return table.find(ref.node, branch_key(ref.branch_id))
    return table.first(ref.node)


Readable = Mapping[str, NodeOutput] | FrameTable[tuple[OutputItem, ...]]
"""What references read: a contract table, or the engine's table of output items."""


def _items(ref: NodeRef, table: Readable) -> tuple[OutputItem, ...] | None:
    if type(table) is FrameTable:
        entry = entry_for(ref, table)
        return None if entry is None else cast(tuple[OutputItem, ...], entry.value)
    output = output_for(ref, cast(Mapping[str, NodeOutput], table))
    return None if output is None else output.items


def resolve_ref(ref: NodeRef, table: Readable) -> Any:
    """The value a reference reads from a branch-local table, or :data:`MISSING`."""
    items = _items(ref, table)
    if items is None:
        return MISSING
    select = ref.select
    if select == "first":
        if not items:
            return MISSING
        base: Any = items[0].json_
    elif select == "last":
        if not items:
            return MISSING
        base = items[-1].json_
    elif select == "all":
        base = [item.json_ for item in items]
    else:
        index = int(select)
        if not 0 <= index < len(items):
            return MISSING
        base = items[index].json_
    return read_path(base, ref.path)


def resolve_args(args: Mapping[str, Any], table: Readable, on_missing: str) -> dict[str, Any]:
    """A call's arguments with every reference replaced by what it reads.

    Lists map element-wise and dicts key-wise (rebuilt, so the plan's own values are never
    handed out); other values pass through. A reference that reads nothing is dropped (its
    dict key, or its list element) under ``on_missing == "omit"``.

    Raises:
        MissingValue: for the first unresolvable reference, under any other policy.

    """
    omit = on_missing == "omit"
    out: dict[str, Any] = {}
    for key, value in args.items():
        resolved = _resolve(value, table, omit, f"args.{key}")
        if resolved is not MISSING:
            out[key] = resolved
    return out


def _resolve(value: Any, table: Readable, omit: bool, location: str) -> Any:
    kind = type(value)
    if kind is NodeRef:
        resolved = resolve_ref(value, table)
        if resolved is MISSING and not omit:
            raise MissingValue(value, location)
        return resolved
    if kind is list:
        items = (_resolve(v, table, omit, f"{location}[{i}]") for i, v in enumerate(value))
        return [v for v in items if v is not MISSING]
    if kind is dict:
        out: dict[Any, Any] = {}
        for k, v in value.items():
            resolved = _resolve(v, table, omit, f"{location}.{k}")
            if resolved is not MISSING:
                out[k] = resolved
        return out
    return value


def render_prompt_value(value: Any) -> str:
    """How a resolved value reads inside a prompt.

    A string is itself; ``None``, booleans and numbers read as in JSON (``null``, ``true``,
    ``3.5``); anything else is its compact JSON wire form (tags such as ``$datetime`` included),
    so a prompt shows structure instead of a Python repr.
    """
    if type(value) is str:
        return value
    return json.dumps(to_json_value(value), ensure_ascii=False, separators=(",", ":"))


def resolve_prompt(parts: Sequence[TextPart | NodeRef], table: Readable) -> tuple[str, ...]:
    """Each prompt part as text.

    Literal text is kept as is, a reference is rendered by :func:`render_prompt_value`, or reads
    ``[unresolved: <node>]`` when it resolves to nothing.
    """
    out: list[str] = []
    for part in parts:
        if isinstance(part, NodeRef):
            value = resolve_ref(part, table)
            out.append(
                f"[unresolved: {part.node}]" if value is MISSING else render_prompt_value(value)
            )
        else:
            out.append(part.text)
    return tuple(out)
