"""Canonical bytes have one owner: the value subset, references, and the plan digest.

Invariants this module protects:

* **The value subset is closed.** A staged value is ``None``, ``bool``, ``int`` (any size),
  ``float`` (not NaN), ``str``, ``bytes``, ``datetime``, ``timedelta``, a compiled
  ``re.Pattern``, ``list``, ``dict`` (string keys, or any encodable hashable keys), ``set`` or
  ``frozenset``, checked by exact type: subclasses, tuples, functions, enums and other classes
  are refused with :class:`~orchestration.errors.UnencodableValueError` naming what and where.
  A plan must persist and hydrate with no class registry, so nothing else may enter it.
* **References are classes.** :class:`NodeRef` and :class:`ParamRef` are told apart by
  ``isinstance``; a dict that happens to look like one (``{"node": "a", "select": "first"}``)
  stays a literal dict and digests differently.
* **One canonical encoding.** MessagePack with extension types for every non-JSON value; string
  map keys sorted by their UTF-8 bytes (native key sorting in ``ormsgpack``); maps with other
  keys, and sets, as extension types whose entries are sorted by their own canonical bytes.
  Lists keep their order. Decoding gives back equal values of the same types.
* **The digest is lossless**: sha256 over that encoding, so any change of any staged value
  changes it, and equal content gives equal hex in every process (no ``hash()`` or set order is
  ever consulted).

The JSON wire form (what pydantic emits in JSON mode, what the CLI and Temporal payloads carry)
keeps plain JSON values as they are and writes the others as single-key tags: ``{"$ref": ...}``,
``{"$param": ...}``, ``{"$bytes": base64}``, ``{"$datetime": iso}``, ``{"$timedelta": [d, s, us]}``,
``{"$regex": {"pattern", "flags"}}``, ``{"$set": [...]}``, ``{"$frozenset": [...]}``,
``{"$map": [[k, v], ...]}``, ``{"$bigint": "digits"}``, ``{"$float": "inf"}``. A literal dict
whose only key starts with ``$`` is escaped as ``{"$dict": {...}}``, so every value has exactly
one JSON form and no literal can be read as a tag.

**Depth.** A value may nest :data:`MAX_DEPTH` levels, so that a structured predicate nested 256
deep (two levels per ``all``/``any``) fits with room for its leaves' values; deeper input is
refused by name rather than recursed into. Every layer carries that depth without a recursion
error: each walk here takes one interpreter frame per level; the native packer, which stops at
255 levels, packs the parts below :data:`_SPLIT_DEPTH` separately and splices their bytes in
(the same bytes, so the digest does not depend on depth); and the JSON form, which pydantic
parses only 200 levels deep, writes a container found :data:`JSON_CHUNK_DEPTH` JSON levels down
as ``{"$deep": "<its own JSON form, as text>"}``, so no JSON document nests deeper than that
plus the few levels of the model around the value.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import math
import re
import struct
from collections.abc import Callable
from typing import Any, Literal, cast

import ormsgpack
from pydantic import BaseModel, GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import core_schema

from orchestration.errors import UndecodableValueError, UnencodableValueError
from orchestration.run.routes import BranchId, EdgeSegment, JoinSegment

__all__ = [
    "JSON_CHUNK_DEPTH",
    "MAX_DEPTH",
    "NodeRef",
    "ParamRef",
    "RefPolicy",
    "Select",
    "canonical_digest",
    "decode",
    "encode",
    "encode_model",
    "from_json_value",
    "to_json_value",
    "validate_value",
]

MAX_DEPTH = 600
"""Deepest nesting a staged value may have; deeper input is refused rather than recursed.

600 holds a structured predicate at its 256-level cap in its widest form (``{"all": [...]}``
is two levels per predicate level, a select's label map one more) and leaves each leaf's value
about 80 levels, while every walk over a value (one frame per level) stays well inside the
interpreter's default recursion limit of 1,000 frames.
"""

JSON_CHUNK_DEPTH = 96
"""JSON nesting after which a container is written as a ``$deep`` text chunk (see above).

pydantic refuses JSON nested deeper than 200 levels; 96 leaves the documents around a value
(an op, a run event, a workflow payload) over 100 levels of their own."""

_SPLIT_DEPTH = 128
"""Levels the native packer is given at once (it stops at 255)."""

Select = Literal["first", "last", "all"] | int
"""Which item of a node's output a reference reads: ``first``, ``last``, ``all`` or an index."""

RefPolicy = Literal["none", "node", "template"]
"""Which reference classes a value may hold: none (plain values), NodeRef, or NodeRef+ParamRef."""


# --------------------------------------------------------------------------------------------
# Reference classes
# --------------------------------------------------------------------------------------------


class NodeRef:
    """A reference to another node's output, resolved when the reading frame runs.

    Attributes:
        node: The node whose output is read.
        select: ``"first"``, ``"last"``, ``"all"`` or an item index.
        path: A dot path into the selected item's fields (``None`` reads the whole item).
        branch_id: Which execution of ``node`` to read. ``None`` means "the only one"; a node
            reached by more than one route (anything at or after a join) needs it.

    """

    __slots__ = ("_packed", "branch_id", "node", "path", "select")

    node: str
    select: Select
    path: str | None
    branch_id: BranchId | None
    _packed: bytes | None

    def __init__(
        self,
        node: str,
        select: Select | dict[str, int] = "first",
        path: str | None = None,
        branch_id: BranchId | None = None,
    ) -> None:
        if type(node) is not str or not node:
            raise UnencodableValueError(f"NodeRef.node must be a non-empty string, got {node!r}")
        sel: Select
        if isinstance(select, dict):
            if set(select) != {"index"} or type(select["index"]) is not int:
                raise UnencodableValueError(
                    f"NodeRef.select {select!r} is not valid; use 'first', 'last', 'all' "
                    "or {'index': <int>}"
                )
            sel = select["index"]
        elif select in ("first", "last", "all") or type(select) is int:
            sel = select
        else:
            raise UnencodableValueError(
                f"NodeRef.select {select!r} is not valid; use 'first', 'last', 'all' "
                "or {'index': <int>}"
            )
        if path is not None and type(path) is not str:
            raise UnencodableValueError(f"NodeRef.path must be a string, got {path!r}")
        if branch_id is not None and not isinstance(branch_id, BranchId):
            raise UnencodableValueError("NodeRef.branch_id must be a BranchId")
        object.__setattr__(self, "node", node)
        object.__setattr__(self, "select", sel)
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "branch_id", branch_id)
        object.__setattr__(self, "_packed", None)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("NodeRef is immutable")

    def _identity(self) -> tuple[object, ...]:
        return (self.node, self.select, self.path, self.branch_id)

    def __copy__(self) -> NodeRef:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> NodeRef:
        return self

    def __reduce__(self) -> tuple[type[NodeRef], tuple[object, ...]]:
        return (NodeRef, self._identity())

    def __eq__(self, other: object) -> bool:
        return type(other) is NodeRef and self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(("NodeRef", self.node, self.select, self.path, self.branch_id))

    def __repr__(self) -> str:
        extra = "" if self.path is None else f", path={self.path!r}"
        extra += "" if self.branch_id is None else f", branch_id={self.branch_id.key!r}"
        return f"NodeRef({self.node!r}, {self.select!r}{extra})"

    def to_wire(self) -> dict[str, Any]:
        """The model-facing form: ``{"node", "select", "path"?, "branchId"?}``."""
        out: dict[str, Any] = {
            "node": self.node,
            "select": {"index": self.select} if type(self.select) is int else self.select,
        }
        if self.path is not None:
            out["path"] = self.path
        if self.branch_id is not None:
            out["branchId"] = self.branch_id.model_dump(mode="json")
        return out

    @classmethod
    def from_wire(cls, wire: object) -> NodeRef:
        """Build from the wire form (the value under a ``$ref`` tag)."""
        if not isinstance(wire, dict) or "node" not in wire:
            raise UndecodableValueError(
                f"a $ref needs an object with at least 'node', got {wire!r}"
            )
        unknown = set(wire) - {"node", "select", "path", "branchId"}
        if unknown:
            raise UndecodableValueError(
                f"a $ref has unknown keys {sorted(unknown)}; allowed: node, select, path, branchId"
            )
        branch = wire.get("branchId")
        try:
            branch_id = None if branch is None else BranchId.model_validate(branch)
            return cls(wire["node"], wire.get("select", "first"), wire.get("path"), branch_id)
        except UnencodableValueError as exc:
            raise UndecodableValueError(exc.message) from exc
        except ValueError as exc:  # pydantic ValidationError of branchId
            raise UndecodableValueError(f"a $ref has an invalid branchId: {exc}") from exc

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: type[Any], handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        def from_json(value: object) -> NodeRef:
            if isinstance(value, dict) and set(value) == {"$ref"}:
                return cls.from_wire(value["$ref"])
            raise UndecodableValueError('expected a reference as {"$ref": {"node": ...}}')

        return _json_or_python(
            python=core_schema.is_instance_schema(cls),
            json_validate=from_json,
            to_json=lambda ref: {"$ref": ref.to_wire()},
        )

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return _NODE_REF_SCHEMA


class ParamRef:
    """A hole in a template's staged values, filled when the template is instantiated.

    Attributes:
        path: The name of the template parameter whose argument replaces this hole.

    """

    __slots__ = ("path",)

    path: str

    def __init__(self, path: str) -> None:
        if type(path) is not str or not path:
            raise UnencodableValueError(f"ParamRef.path must be a non-empty string, got {path!r}")
        object.__setattr__(self, "path", path)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("ParamRef is immutable")

    def __eq__(self, other: object) -> bool:
        return type(other) is ParamRef and self.path == other.path

    def __copy__(self) -> ParamRef:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> ParamRef:
        return self

    def __reduce__(self) -> tuple[type[ParamRef], tuple[str]]:
        return (ParamRef, (self.path,))

    def __hash__(self) -> int:
        return hash(("ParamRef", self.path))

    def __repr__(self) -> str:
        return f"ParamRef({self.path!r})"

    def to_wire(self) -> dict[str, Any]:
        """The model-facing form: ``{"path": ...}``."""
        return {"path": self.path}


_NODE_REF_SCHEMA: JsonSchemaValue = {
    "type": "object",
    "title": "NodeRef",
    "description": "A reference to another node's output.",
    "properties": {
        "$ref": {
            "type": "object",
            "properties": {
                "node": {"type": "string"},
                "select": {
                    "anyOf": [
                        {"enum": ["first", "last", "all"]},
                        {
                            "type": "object",
                            "properties": {"index": {"type": "integer"}},
                            "required": ["index"],
                        },
                    ]
                },
                "path": {"type": "string"},
                "branchId": {"type": "object"},
            },
            "required": ["node"],
            "additionalProperties": False,
        }
    },
    "required": ["$ref"],
    "additionalProperties": False,
}


# --------------------------------------------------------------------------------------------
# Validation of the value subset
# --------------------------------------------------------------------------------------------

_SCALARS: frozenset[type] = frozenset(
    {type(None), bool, int, str, bytes, dt.datetime, dt.timedelta, re.Pattern}
)


def _describe(value: object) -> str:
    kind = type(value)
    if callable(value) and not isinstance(value, type):
        return f"a callable ({kind.__name__})"
    if kind is float:
        return "NaN"
    if kind is tuple:
        return "a tuple (use a list)"
    if kind in (bytearray, memoryview):
        return f"a {kind.__name__} (use bytes)"
    return f"an object of type {kind.__module__}.{kind.__qualname__}"


def _child(path: str, key: object) -> str:
    if type(key) is int:
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def validate_value(value: Any, refs: RefPolicy = "none", path: str = "") -> Any:
    """Check that ``value`` is in the encodable subset; return it unchanged.

    Args:
        value: The value to check.
        refs: Which reference classes may appear (as list items or dict values).
        path: Where ``value`` sits, for the error message.

    Raises:
        UnencodableValueError: naming the first refused part and its path.

    """
    _check(value, refs, path, 0, set())
    return value


def _check(value: Any, refs: RefPolicy, path: str, depth: int, active: set[int]) -> None:
    kind = type(value)
    if kind in _SCALARS:
        return
    if kind is float:
        if value != value:
            raise UnencodableValueError(
                f"{path or 'value'}: NaN has no canonical encoding; stage a number or null",
                path,
            )
        return
    if depth >= MAX_DEPTH:
        raise UnencodableValueError(
            f"{path or 'value'}: nested deeper than {MAX_DEPTH} levels; flatten the value", path
        )
    if kind is NodeRef:
        if refs == "none":
            raise UnencodableValueError(
                f"{path or 'value'}: a NodeRef is not allowed here; stage a plain value", path
            )
        return
    if kind is ParamRef:
        if refs != "template":
            raise UnencodableValueError(
                f"{path or 'value'}: a ParamRef only belongs in a template; "
                "substitute the parameter's value",
                path,
            )
        return
    if kind is list or kind is dict or kind is set or kind is frozenset:
        ident = id(value)
        if ident in active:
            raise UnencodableValueError(
                f"{path or 'value'}: the value contains itself; break the cycle", path
            )
        active.add(ident)
        try:
            if kind is list:
                for i, item in enumerate(value):
                    _check(item, refs, _child(path, i), depth + 1, active)
            elif kind is dict:
                for key, item in value.items():
                    if type(key) is not str:
                        _check(key, "none", _child(path, f"<key {key!r}>"), depth + 1, active)
                    _check(item, refs, _child(path, key), depth + 1, active)
            else:
                for item in value:
                    _check(item, "none", _child(path, "<member>"), depth + 1, active)
        finally:
            active.discard(ident)
        return
    raise UnencodableValueError(
        f"{path or 'value'}: {_describe(value)} is outside the encodable value subset; stage "
        "None, bool, int, float, str, bytes, datetime, timedelta, re.Pattern, list, dict, set "
        "or frozenset",
        path,
    )


# --------------------------------------------------------------------------------------------
# Canonical MessagePack
# --------------------------------------------------------------------------------------------

EXT_NODE_REF = 1
EXT_PARAM_REF = 2
EXT_BIGINT = 3
EXT_DATETIME = 4
EXT_TIMEDELTA = 5
EXT_PATTERN = 6
EXT_SET = 7
EXT_FROZENSET = 8
EXT_MAP = 9

_BASE_OPTS = (
    ormsgpack.OPT_SORT_KEYS
    | ormsgpack.OPT_PASSTHROUGH_BIG_INT
    | ormsgpack.OPT_PASSTHROUGH_DATETIME
    | ormsgpack.OPT_PASSTHROUGH_SUBCLASS
    | ormsgpack.OPT_PASSTHROUGH_DATACLASS
    | ormsgpack.OPT_PASSTHROUGH_ENUM
    | ormsgpack.OPT_PASSTHROUGH_UUID
)
_STRICT_OPTS = _BASE_OPTS | ormsgpack.OPT_PASSTHROUGH_TUPLE
"""For arbitrary values: a tuple is refused (it would decode as a list)."""
_MODEL_OPTS = _BASE_OPTS
"""For dumps of validated models, whose own sequence fields are tuples packed as arrays."""

_NAN_MARK = re.compile(rb"\xcb[\x7f\xff][\xf0-\xff]")


class _NonStrMap:
    """Marks a dict with a non-string key so ``_default`` packs it as an extension."""

    __slots__ = ("items",)

    def __init__(self, items: dict[Any, Any]) -> None:
        self.items = items


def _header(n: int, fix: int, wide: bytes, widest: bytes) -> bytes:
    if n < 16:
        return bytes([fix | n])
    if n < 0x10000:
        return wide + struct.pack(">H", n)
    return widest + struct.pack(">I", n)


def _array_header(n: int) -> bytes:
    return _header(n, 0x90, b"\xdc", b"\xdd")


def _pack(value: Any, opts: int) -> bytes:
    try:
        packed: bytes = ormsgpack.packb(value, default=_default, option=opts)
    except ormsgpack.MsgpackEncodeError as exc:
        if "Recursion limit" not in str(exc):
            raise
        # Deeper than the native packer goes (255 levels): write the top levels here and pack
        # what lies below them natively, which gives the very bytes one deeper pass would.
        return _pack_deep(value, opts, 0)
    return packed


def _map_header(n: int) -> bytes:
    return _header(n, 0x80, b"\xde", b"\xdf")


def _pack_deep(value: Any, opts: int, depth: int) -> bytes:
    """MessagePack for a value deeper than the native packer goes, one frame per level.

    The top :data:`_SPLIT_DEPTH` levels of lists, tuples (where the options pack them as
    arrays), models and string-keyed maps are written here, keys in the native packer's
    order (their UTF-8 bytes); everything else, and everything below, is packed natively
    (and split again if it is still too deep).
    """
    if isinstance(value, BaseModel):
        value = _default(value)
    kind = type(value)
    splittable = (
        kind is list
        or (kind is tuple and not opts & ormsgpack.OPT_PASSTHROUGH_TUPLE)
        or (kind is dict and all(type(k) is str for k in value))
    )
    if depth >= _SPLIT_DEPTH or not splittable:
        return _pack(value, opts)
    if kind is dict:
        parts = [_map_header(len(value))]
        for key in sorted(value, key=lambda k: k.encode("utf-8", "surrogatepass")):
            parts.append(_msgpack_str(key))
            parts.append(_pack_deep(value[key], opts, depth + 1))
        return b"".join(parts)
    parts = [_array_header(len(value))]
    for item in value:
        parts.append(_pack_deep(item, opts, depth + 1))
    return b"".join(parts)


def _pattern_source(p: re.Pattern[Any]) -> Any:
    return p.pattern


_FIELD_NAMES: dict[type[BaseModel], dict[str, str]] = {}


def _model_fields(kind: type[BaseModel]) -> dict[str, str]:
    names = _FIELD_NAMES.get(kind)
    if names is None:
        names = {
            name: (info.serialization_alias or info.alias or name)
            for name, info in kind.model_fields.items()
        }
        _FIELD_NAMES[kind] = names
    return names


def _msgpack_str(text: str) -> bytes:
    raw = text.encode("utf-8")
    n = len(raw)
    if n < 32:
        return bytes((0xA0 | n,)) + raw
    if n < 0x100:
        return b"\xd9" + bytes((n,)) + raw
    if n < 0x10000:
        return b"\xda" + n.to_bytes(2, "big") + raw
    return b"\xdb" + n.to_bytes(4, "big") + raw


def _node_ref_payload(ref: NodeRef) -> bytes:
    """``[node, select, path, segments]`` as MessagePack, cached on the (immutable) ref."""
    packed: bytes | None = ref._packed
    if packed is None:
        select = (
            _msgpack_str(ref.select)
            if type(ref.select) is str
            else _pack({"index": ref.select}, _MODEL_OPTS)
        )
        path = b"\xc0" if ref.path is None else _msgpack_str(ref.path)
        segments = (
            b"\xc0"
            if ref.branch_id is None
            else _pack([seg.model_dump() for seg in ref.branch_id.segments], _MODEL_OPTS)
        )
        packed = b"\x94" + _msgpack_str(ref.node) + select + path + segments
        object.__setattr__(ref, "_packed", packed)
    return packed


def _default(value: Any) -> Any:
    kind = type(value)
    if kind is NodeRef:
        return ormsgpack.Ext(EXT_NODE_REF, _node_ref_payload(value))
    if isinstance(value, BaseModel):
        # A validated model packs as a map of its wire names to the fields that are set to
        # something other than None: "absent" and None are one state, so adding an optional
        # field to a model later leaves every existing digest unchanged.
        names = _model_fields(type(value))
        return {names[k]: v for k, v in value.__dict__.items() if v is not None}
    if kind is ParamRef:
        return ormsgpack.Ext(EXT_PARAM_REF, _pack([value.path], _MODEL_OPTS))
    if kind is int:
        return ormsgpack.Ext(EXT_BIGINT, str(value).encode("ascii"))
    if kind is dt.datetime:
        return ormsgpack.Ext(EXT_DATETIME, value.isoformat().encode("ascii"))
    if kind is dt.timedelta:
        return ormsgpack.Ext(
            EXT_TIMEDELTA, _pack([value.days, value.seconds, value.microseconds], _MODEL_OPTS)
        )
    if kind is re.Pattern:
        return ormsgpack.Ext(
            EXT_PATTERN, _pack([_pattern_source(value), value.flags], _STRICT_OPTS)
        )
    if kind is set or kind is frozenset:
        members = sorted(_pack(item, _STRICT_OPTS) for item in value)
        return ormsgpack.Ext(
            EXT_SET if kind is set else EXT_FROZENSET,
            _array_header(len(members)) + b"".join(members),
        )
    if kind is _NonStrMap:
        pairs = sorted(
            (_pack(k, _STRICT_OPTS), _pack(v, _STRICT_OPTS)) for k, v in value.items.items()
        )
        return ormsgpack.Ext(
            EXT_MAP, _array_header(2 * len(pairs)) + b"".join(k + v for k, v in pairs)
        )
    raise TypeError(kind.__name__)


def _prepare(value: Any) -> Any:
    """Rebuild ``value`` for the slow path: models become maps, non-string-key dicts are marked."""
    kind = type(value)
    if kind is list or kind is tuple:
        items: list[Any] = []
        for item in value:
            items.append(_prepare(item))
        return items
    if kind is dict:
        inner: dict[Any, Any] = {}
        for key, item in value.items():
            inner[key] = _prepare(item)
        if all(type(k) is str for k in value):
            return inner
        return _NonStrMap(inner)
    if isinstance(value, BaseModel):
        return _prepare(_default(value))
    return value


def encode(value: Any, refs: RefPolicy = "template") -> bytes:
    """The canonical MessagePack bytes of an encodable value.

    Args:
        value: Any value in the subset (see the module docstring).
        refs: Which reference classes may appear.

    Raises:
        UnencodableValueError: for anything outside the subset, naming what and where.

    """
    # Checked up front: the native packer would silently accept a few near-misses
    # (bytearray, memoryview) that would decode as another type.
    validate_value(value, refs)
    return _encode(value, refs, _STRICT_OPTS)


def _encode(value: Any, refs: RefPolicy, opts: int) -> bytes:
    try:
        data = _pack(value, opts)
    except ormsgpack.MsgpackEncodeError:
        # The native packer refuses dicts with non-string keys (it cannot sort them); such
        # maps are rare, so only then is the value rebuilt in Python with those maps marked.
        try:
            data = _pack(_prepare(value), opts)
        except ormsgpack.MsgpackEncodeError as exc:
            raise UnencodableValueError(f"value outside the encodable subset: {exc}") from exc
    if _NAN_MARK.search(data) is not None:
        # The bytes of a float64 NaN (or infinity) appear somewhere, maybe inside a string or
        # bytes: look for a real NaN only now, so the common case pays nothing for the check.
        _refuse_nan(value, "")
    return data


def _refuse_nan(value: Any, path: str) -> None:
    """Raise on the first NaN in ``value`` (models and containers included), naming its path."""
    kind = type(value)
    if kind is float:
        if value != value:
            raise UnencodableValueError(
                f"{path or 'value'}: NaN has no canonical encoding; stage a number or null", path
            )
    elif kind is list or kind is tuple:
        for i, item in enumerate(value):
            _refuse_nan(item, _child(path, i))
    elif kind is dict:
        for key, item in value.items():
            _refuse_nan(key, path)
            _refuse_nan(item, _child(path, key))
    elif kind is set or kind is frozenset:
        for item in value:
            _refuse_nan(item, path)
    elif isinstance(value, BaseModel):
        for name, item in value.__dict__.items():
            _refuse_nan(item, _child(path, name))


def _ext_hook(code: int, data: bytes) -> Any:
    if code == EXT_NODE_REF:
        node, select, path, segments = _unpack(data)
        branch = None
        if segments is not None:
            branch = BranchId(
                segments=tuple(
                    JoinSegment(join=s["join"], of=tuple(s["of"]))
                    if "join" in s
                    else EdgeSegment(edge=s["edge"])
                    for s in segments
                )
            )
        return NodeRef(node, select, path, branch)
    if code == EXT_PARAM_REF:
        return ParamRef(_unpack(data)[0])
    if code == EXT_BIGINT:
        return int(data.decode("ascii"))
    if code == EXT_DATETIME:
        return dt.datetime.fromisoformat(data.decode("ascii"))
    if code == EXT_TIMEDELTA:
        days, seconds, micros = _unpack(data)
        return dt.timedelta(days=days, seconds=seconds, microseconds=micros)
    if code == EXT_PATTERN:
        source, flags = _unpack(data)
        return re.compile(source, flags)
    if code == EXT_SET:
        return set(_unpack(data))
    if code == EXT_FROZENSET:
        return frozenset(_unpack(data))
    if code == EXT_MAP:
        flat = _unpack(data)
        return {flat[i]: flat[i + 1] for i in range(0, len(flat), 2)}
    raise UndecodableValueError(f"unknown extension type {code} in encoded value")


def _unpack(data: bytes) -> Any:
    return ormsgpack.unpackb(data, ext_hook=_ext_hook)


def decode(data: bytes) -> Any:
    """Decode canonical bytes back to an equal value of the same types.

    Raises:
        UndecodableValueError: when the bytes are not a canonical encoding.

    """
    try:
        return _unpack(data)
    except UndecodableValueError:
        raise
    except (ormsgpack.MsgpackDecodeError, ValueError, TypeError) as exc:
        raise UndecodableValueError(f"bytes do not decode to an encodable value: {exc}") from exc


def encode_model(model: BaseModel) -> bytes:
    """Canonical bytes of a validated model: a map of wire names to its non-None fields.

    The model's staged values were checked when it was built, so no second walk is made.
    """
    return _encode(model, "template", _MODEL_OPTS)


def canonical_digest(model: BaseModel) -> str:
    """Lowercase hex sha256 of :func:`encode_model`."""
    return hashlib.sha256(encode_model(model)).hexdigest()


# --------------------------------------------------------------------------------------------
# Tagged JSON form
# --------------------------------------------------------------------------------------------

_I64_MIN = -(2**63)
_U64_MAX = 2**64 - 1


def to_json_value(value: Any, _depth: int = 0) -> Any:
    """The JSON wire form of a valid value (see the module docstring for the tags).

    ``_depth`` is the JSON nesting already around ``value`` within this value; a container
    reached at :data:`JSON_CHUNK_DEPTH` is written as a ``$deep`` chunk.
    """
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return value
    if kind is int:
        return value if _I64_MIN <= value <= _U64_MAX else {"$bigint": str(value)}
    if kind is float:
        if math.isinf(value):
            return {"$float": "inf" if value > 0 else "-inf"}
        return value
    if (kind is list or kind is dict or kind is set or kind is frozenset) and (
        _depth >= JSON_CHUNK_DEPTH
    ):
        text = json.dumps(
            to_json_value(value), ensure_ascii=False, separators=(",", ":"), allow_nan=False
        )
        return {"$deep": text}
    if kind is list:
        items: list[Any] = []
        for item in value:
            items.append(to_json_value(item, _depth + 1))
        return items
    if kind is dict:
        if all(type(k) is str for k in value):
            body: dict[str, Any] = {}
            for key, item in value.items():
                body[key] = to_json_value(item, _depth + 2)
            if len(body) == 1 and next(iter(body)).startswith("$"):
                return {"$dict": body}
            return body
        pairs = sorted(value.items(), key=lambda kv: encode(kv[0], "none"))
        entries: list[Any] = []
        for key, item in pairs:
            entries.append([to_json_value(key, _depth + 3), to_json_value(item, _depth + 3)])
        return {"$map": entries}
    if kind is NodeRef:
        return {"$ref": value.to_wire()}
    if kind is ParamRef:
        return {"$param": value.to_wire()}
    if kind is bytes:
        return {"$bytes": base64.b64encode(value).decode("ascii")}
    if kind is dt.datetime:
        return {"$datetime": value.isoformat()}
    if kind is dt.timedelta:
        return {"$timedelta": [value.days, value.seconds, value.microseconds]}
    if kind is re.Pattern:
        return {"$regex": {"pattern": to_json_value(value.pattern), "flags": value.flags}}
    if kind is set or kind is frozenset:
        members = sorted(value, key=lambda m: encode(m, "none"))
        tag = "$set" if kind is set else "$frozenset"
        shown: list[Any] = []
        for member in members:
            shown.append(to_json_value(member, _depth + 2))
        return {tag: shown}
    raise UnencodableValueError(f"value: {_describe(value)} has no JSON wire form")


def _tag_error(path: str, message: str) -> UndecodableValueError:
    return UndecodableValueError(f"{path or 'value'}: {message}", path)


def from_json_value(value: Any, refs: RefPolicy = "none", path: str = "") -> Any:
    """Decode the tagged JSON wire form back to a value, refusing unknown tags by name."""
    kind = type(value)
    if kind is str or kind is bool or kind is int or value is None:
        return value
    if kind is float:
        if value != value:
            raise _tag_error(path, "NaN has no canonical encoding; stage a number or null")
        return value
    if kind is list:
        items: list[Any] = []
        for i, item in enumerate(value):
            items.append(from_json_value(item, refs, _child(path, i)))
        return items
    if kind is not dict:
        raise _tag_error(path, f"{_describe(value)} is not JSON")
    if len(value) == 1:
        ((tag, body),) = value.items()
        if type(tag) is str and tag.startswith("$"):
            return _decode_tag(tag, body, refs, path)
    out: dict[str, Any] = {}
    for key, item in value.items():
        out[key] = from_json_value(item, refs, _child(path, key))
    return out


def _decode_tag(tag: str, body: Any, refs: RefPolicy, path: str) -> Any:  # noqa: C901
    try:
        if tag == "$dict":
            if type(body) is not dict:
                raise _tag_error(path, "$dict wraps an object")
            out: dict[str, Any] = {}
            for key, item in body.items():
                out[key] = from_json_value(item, refs, _child(path, key))
            return out
        if tag == "$deep":
            if type(body) is not str:
                raise _tag_error(path, "$deep holds the JSON text of a value")
            return from_json_value(json.loads(body), refs, path)
        if tag == "$ref":
            if refs == "none":
                raise _tag_error(path, "a $ref is not allowed here; stage a plain value")
            return NodeRef.from_wire(body)
        if tag == "$param":
            if refs != "template":
                raise _tag_error(path, "a $param only belongs in a template; substitute the value")
            if type(body) is not dict or set(body) != {"path"}:
                raise _tag_error(path, '$param needs {"path": <param name>}')
            return ParamRef(body["path"])
        if tag == "$bytes":
            return base64.b64decode(body, validate=True)
        if tag == "$datetime":
            return dt.datetime.fromisoformat(body)
        if tag == "$timedelta":
            days, seconds, micros = body
            return dt.timedelta(days=days, seconds=seconds, microseconds=micros)
        if tag == "$regex":
            source = from_json_value(body["pattern"], "none", path)
            return re.compile(source, int(body.get("flags", 0)))
        if tag == "$set" or tag == "$frozenset":
            members = [from_json_value(m, "none", _child(path, i)) for i, m in enumerate(body)]
            return set(members) if tag == "$set" else frozenset(members)
        if tag == "$map":
            return {
                from_json_value(k, "none", path): from_json_value(v, refs, _child(path, i))
                for i, (k, v) in enumerate(body)
            }
        if tag == "$bigint":
            return int(body)
        if tag == "$float":
            if body in ("inf", "-inf"):
                return float(body)
            raise _tag_error(path, '$float holds "inf" or "-inf"')
    except UndecodableValueError:
        raise
    except UnencodableValueError as exc:
        raise _tag_error(path, exc.message) from exc
    except (TypeError, ValueError, KeyError, re.error, RecursionError) as exc:
        raise _tag_error(path, f"malformed {tag} value ({exc})") from exc
    raise _tag_error(
        path,
        f"unknown tag {tag!r}; to stage a literal object whose only key starts with '$', "
        'wrap it as {"$dict": {...}}',
    )


# --------------------------------------------------------------------------------------------
# pydantic integration
# --------------------------------------------------------------------------------------------


def _json_or_python(
    *,
    python: core_schema.CoreSchema,
    json_validate: Callable[[Any], Any],
    to_json: Callable[[Any], Any],
) -> core_schema.CoreSchema:
    return core_schema.json_or_python_schema(
        json_schema=core_schema.no_info_plain_validator_function(json_validate),
        python_schema=python,
        serialization=core_schema.plain_serializer_function_ser_schema(to_json, when_used="json"),
    )


class ValueSchema:
    """pydantic marker for a staged-value field: ``Annotated[Any, ValueSchema("node")]``.

    In Python mode the value is checked against the subset and kept as is (no copy); in JSON
    mode it is read from, and written to, the tagged JSON form. With ``mapping=True`` the field
    is a ``dict[str, value]`` checked in one call (argument tables: the keys are names, so they
    are never read as tags).
    """

    def __init__(self, refs: RefPolicy, *, mapping: bool = False) -> None:
        self.refs: RefPolicy = refs
        self.mapping = mapping

    def __get_pydantic_core_schema__(
        self, source: type[Any], handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        refs = self.refs
        if not self.mapping:
            return _json_or_python(
                python=core_schema.no_info_plain_validator_function(
                    lambda v: validate_value(v, refs)
                ),
                json_validate=lambda v: from_json_value(v, refs),
                to_json=to_json_value,
            )

        def check_mapping(value: Any) -> dict[str, Any]:
            if type(value) is not dict:
                raise UnencodableValueError(f"expected a dict of named values, got {value!r}")
            for key, item in value.items():
                if type(key) is not str:
                    raise UnencodableValueError(f"names must be strings, got {key!r}")
                _check(item, refs, key, 1, set())
            return cast(dict[str, Any], value)

        def read_mapping(value: Any) -> dict[str, Any]:
            if type(value) is not dict:
                raise UndecodableValueError(f"expected an object of named values, got {value!r}")
            return {k: from_json_value(v, refs, k) for k, v in value.items()}

        return _json_or_python(
            python=core_schema.no_info_plain_validator_function(check_mapping),
            json_validate=read_mapping,
            to_json=lambda value: {k: to_json_value(v) for k, v in value.items()},
        )

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        refs = {
            "none": "",
            "node": ' A {"$ref": {...}} reads another node\'s output.',
            "template": ' {"$ref": ...} reads a node\'s output; {"$param": {"path"}} is a hole.',
        }[self.refs]
        text = (
            "An encodable value. JSON values stand for themselves; others are single-key tags "
            "($bytes, $datetime, $timedelta, $regex, $set, $frozenset, $map, $bigint, $float; "
            "$dict escapes a literal object whose only key starts with '$'; $deep holds, as "
            "JSON text, a part nested deeper than the JSON form nests at once)." + refs
        )
        if self.mapping:
            return {"type": "object", "additionalProperties": {"description": text}}
        return {"description": text}
