"""Branch-local tables: persistent maps keyed ``"<nodeId>:<branchKey>"``.

Every live frame carries its own ``outputs`` and ``artifacts`` table (what the nodes on its route
produced), and a fan-out hands each successor a *clone* of its parent's table. Copying a dict per
successor would make a fan-out of width ``w`` over a table of ``n`` entries cost ``O(w·n)`` in
time and memory. The invariant this module protects is that a table is **never mutated**:
``set`` and ``union`` return new tables that share structure with their inputs (a hash array
mapped trie from ``immutables``), so a clone is the same object, a fan-out costs ``O(w)``, and
each later settlement on a branch costs ``O(log n)``.

A trie iterates in hash order, and string hashes change with ``PYTHONHASHSEED``. So a
:class:`Table` iterates (and therefore serialises) in **sorted key order**, which every process
agrees on; nothing may depend on the trie's own order. For the same reason the "first key of a
node" a reference without a ``branchId`` reads is the *smallest* such key, kept in a second trie
as entries arrive, rather than whichever was inserted first.

:class:`TableSchema` lets the wire models hold a table as is: in Python it accepts a
:class:`Table` without copying (and validates a plain dict as before); on the wire it is a JSON
object like any other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Generic, NamedTuple, TypeVar, cast, get_args

from immutables import Map
from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema

from orchestration.run.routes import Route

__all__ = ["FrameEntry", "FrameTable", "Table", "TableSchema"]

V = TypeVar("V")


def _node_of(key: str) -> str:
    cut = key.find(":")
    return key if cut < 0 else key[:cut]


class Table(Mapping[str, V]):
    """An immutable, structurally shared mapping from table keys to values.

    Iteration is in sorted key order. Equality is mapping equality, so a table equals a dict
    with the same entries.
    """

    __slots__ = ("_entries", "_first", "_order")

    _entries: Map[str, V]
    _first: Map[str, str]
    _order: tuple[str, ...] | None

    def __init__(self, entries: Mapping[str, V] | Iterable[tuple[str, V]] = ()) -> None:
        items = entries.items() if isinstance(entries, Mapping) else entries
        built: Map[str, V] = Map()
        first: Map[str, str] = Map()
        with built.mutate() as m, first.mutate() as f:
            for key, value in items:
                m[key] = value
                node = _node_of(key)
                current = f.get(node)
                if current is None or key < current:
                    f[node] = key
            built, first = m.finish(), f.finish()
        self._entries = built
        self._first = first
        self._order = None

    @classmethod
    def _of(cls, entries: Map[str, V], first: Map[str, str]) -> Table[V]:
        table: Table[V] = cls.__new__(cls)
        table._entries = entries
        table._first = first
        table._order = None
        return table

    def __getitem__(self, key: str) -> V:
        return self._entries[key]

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def get(self, key: str, default: Any = None) -> Any:
        """The value at ``key``, or ``default``."""
        return self._entries.get(key, default)

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys_sorted())

    def keys_sorted(self) -> tuple[str, ...]:
        """Every key in sorted order (computed once per table)."""
        order = self._order
        if order is None:
            order = self._order = tuple(sorted(self._entries.keys()))
        return order

    def __repr__(self) -> str:
        body = ", ".join(f"{k!r}: {self._entries[k]!r}" for k in self.keys_sorted())
        return f"Table({{{body}}})"

    def set(self, key: str, value: V, node: str | None = None) -> Table[V]:
        """A table with ``key`` bound to ``value``; this one is unchanged. ``O(log n)``.

        ``node`` is the key's node id when the caller knows it (it saves parsing the key).
        """
        if node is None:
            node = _node_of(key)
        first = self._first
        current = first.get(node)
        if current is None or key < current:
            first = first.set(node, key)
        return Table._of(self._entries.set(key, value), first)

    def first_key(self, node_id: str) -> str | None:
        """The smallest key of ``node_id`` in this table (the one an unqualified ref reads)."""
        return self._first.get(node_id)

    def to_dict(self) -> dict[str, V]:
        """A plain dict of the entries, in sorted key order."""
        entries = self._entries
        return {key: entries[key] for key in self.keys_sorted()}

    @classmethod
    def of(cls, entries: Mapping[str, V]) -> Table[V]:
        """``entries`` as a table: the same object when it already is one."""
        if type(entries) is Table:
            return cast(Table[V], entries)
        return cls(entries)

    @classmethod
    def union(cls, tables: Sequence[Mapping[str, V]]) -> Table[V]:
        """The union of ``tables``; on a repeated key the later table wins.

        Keys are path-unique, so a repeated key holds the same value in every table that has
        it; the rule only makes the result deterministic whatever the input. The merge runs in
        the trie's native code; only when two tables disagree on a node's key (which a valid
        plan never produces) is the node index rebuilt to keep the smallest key.
        """
        if not tables:
            return cls()
        head = cls.of(tables[0])
        entries, first = head._entries, head._first
        for other in tables[1:]:
            table = cls.of(other)
            if table._entries is not entries:
                entries = entries.update(table._entries)
                first = first.update(table._first)
        if len(first) != len(entries):
            first = _smallest_keys(entries)
        return cls._of(entries, first)


def _smallest_keys(entries: Map[str, Any]) -> Map[str, str]:
    first: dict[str, str] = {}
    for key in entries.keys():
        node = _node_of(key)
        current = first.get(node)
        if current is None or key < current:
            first[node] = key
    return Map(first)


def _as_dict(value: Mapping[str, Any]) -> dict[str, Any]:
    if type(value) is dict:
        return value
    if type(value) is Table:
        return value.to_dict()
    return {key: value[key] for key in sorted(value)}


class TableSchema:
    """pydantic marker for a table field: ``Annotated[Mapping[str, V], TableSchema()]``.

    Python mode keeps a :class:`Table` as is (its values were validated when they were built)
    and validates anything else as a ``dict[str, V]``; JSON mode reads a plain object into a
    dict. Serialisation writes a plain object, a table's keys in sorted order.
    """

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        key_type, value_type = get_args(source)
        dict_schema = handler.generate_schema(dict[key_type, value_type])  # type: ignore[valid-type]

        def keep_table(value: Any, validate_dict: Callable[[Any], Any]) -> Any:
            if type(value) is Table:
                return value
            return validate_dict(value)

        return core_schema.json_or_python_schema(
            json_schema=dict_schema,
            python_schema=core_schema.no_info_wrap_validator_function(keep_table, dict_schema),
            serialization=core_schema.plain_serializer_function_ser_schema(
                _as_dict, return_schema=dict_schema
            ),
        )


class FrameEntry(NamedTuple):
    """One entry of a :class:`FrameTable`: the producing frame's node and route, and the value."""

    node: str
    route: Route
    value: Any


class FrameTable(Generic[V]):
    """The engine's branch-local table: keyed by frame id, structurally shared, never mutated.

    The contract keys a table ``<nodeId>:<branchKey>``, and a branch key is as long as its
    route; keying the engine's tables by it would make every step cost the depth of the plan.
    The engine keys them by the producing frame's id instead (its route rides along in the
    entry), and renders contract keys only at a boundary (:meth:`contract_view`).

    What a reference reads without a ``branchId`` is the node's entry with the *smallest* branch
    key, as the contract's tables order it; a table from a valid plan holds one entry per node,
    so keys are compared only in the rare table that holds two.
    """

    __slots__ = ("_entries", "_first")

    _entries: Map[int, FrameEntry]
    _first: Map[str, int]

    def __init__(self) -> None:
        self._entries = Map()
        self._first = Map()

    @classmethod
    def _of(cls, entries: Map[int, FrameEntry], first: Map[str, int]) -> FrameTable[V]:
        table: FrameTable[V] = cls.__new__(cls)
        table._entries = entries
        table._first = first
        return table

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, frame: object) -> bool:
        return frame in self._entries

    def entry(self, frame: int) -> FrameEntry | None:
        """The entry of frame ``frame``, or ``None``."""
        return self._entries.get(frame)

    def entries(self) -> list[tuple[int, FrameEntry]]:
        """Every ``(frame id, entry)``, in frame-id order."""
        return sorted(self._entries.items())

    def unordered(self) -> Iterator[FrameEntry]:
        """Every entry, in no promised order (sort what you keep: see the module docstring)."""
        return iter(self._entries.values())

    def set(self, frame: int, node: str, route: Route, value: V) -> FrameTable[V]:
        """A table with ``frame``'s entry; this one is unchanged. ``O(log n)``."""
        first = self._first
        current = first.get(node)
        if current is None or (current != frame and route.key < self._entries[current].route.key):
            first = first.set(node, frame)
        return FrameTable._of(self._entries.set(frame, FrameEntry(node, route, value)), first)

    def first(self, node: str) -> FrameEntry | None:
        """The node's entry with the smallest branch key (what an unqualified reference reads)."""
        frame = self._first.get(node)
        return None if frame is None else self._entries[frame]

    def find(self, node: str, branch_key: str) -> FrameEntry | None:
        """The node's entry on the route whose branch key is ``branch_key``, or ``None``."""
        head = self.first(node)
        if head is None:
            return None
        if head.route.key == branch_key:
            return head
        for entry in self._entries.values():
            if entry.node == node and entry.route.key == branch_key:
                return entry
        return None

    @classmethod
    def union(cls, tables: Sequence[FrameTable[V]]) -> FrameTable[V]:
        """The union of ``tables`` (entries are frame-unique, so no value conflicts)."""
        if not tables:
            return cls()
        head = tables[0]
        entries, first = head._entries, head._first
        for other in tables[1:]:
            if other._entries is not entries:
                entries = entries.update(other._entries)
                first = first.update(other._first)
        if len(first) != len(entries):
            first = _first_frames(entries)
        return cls._of(entries, first)

    def contract_view(self, value: Callable[[FrameEntry], Any]) -> Mapping[str, Any]:
        """The table as the contract keys it, ``<nodeId>:<branchKey>`` → ``value(entry)``.

        A read-only view: keys are rendered only when iterated, and a lookup by key finds its
        entry through the node's index, so a cell that reads one node's output pays for that
        node alone.
        """
        return _ContractView(self, value)


class _ContractView(Mapping[str, Any]):
    """A :class:`FrameTable` seen through contract keys (see ``FrameTable.contract_view``)."""

    __slots__ = ("_keys", "_table", "_value")

    def __init__(self, table: FrameTable[Any], value: Callable[[FrameEntry], Any]) -> None:
        self._table = table
        self._value = value
        self._keys: tuple[str, ...] | None = None

    def __getitem__(self, key: str) -> Any:
        node, sep, branch = key.partition(":")
        entry = self._table.find(node, branch) if sep else None
        if entry is None:
            raise KeyError(key)
        return self._value(entry)

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        node, sep, branch = key.partition(":")
        return bool(sep) and self._table.find(node, branch) is not None

    def __len__(self) -> int:
        return len(self._table)

    def __iter__(self) -> Iterator[str]:
        keys = self._keys
        if keys is None:
            keys = self._keys = tuple(
                sorted(f"{e.node}:{e.route.key}" for _, e in self._table.entries())
            )
        return iter(keys)

    def first_key(self, node_id: str) -> str | None:
        """The smallest key of ``node_id`` (what an unqualified reference reads)."""
        entry = self._table.first(node_id)
        return None if entry is None else f"{node_id}:{entry.route.key}"


def _first_frames(entries: Map[int, FrameEntry]) -> Map[str, int]:
    best: dict[str, tuple[int, FrameEntry]] = {}
    for frame, entry in entries.items():
        current = best.get(entry.node)
        if current is None or entry.route.key < current[1].route.key:
            best[entry.node] = (frame, entry)
    return Map({node: frame for node, (frame, _) in best.items()})
