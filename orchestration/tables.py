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
from typing import Any, TypeVar, cast, get_args

from immutables import Map
from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema

__all__ = ["Table", "TableSchema"]

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
