"""The structured predicate cell (``id = "structured"``): the one cell every deployment has.

A predicate is plain data, so it digests with the plan and needs no parser:

* a **leaf** ``{"path": str, "op": op, "value": v}``, where ``op`` is one of ``eq ne lt lte gt
  gte in contains truthy exists``; ``truthy`` and ``exists`` take no ``value`` key, every other
  op requires one (its presence counts, so ``"value": None`` is a value);
* a **combinator** ``{"all": [P, ...]}``, ``{"any": [P, ...]}`` or ``{"not": P}``.

An object is exactly one form (a leaf mixed with a combinator key, or two combinator keys, is
refused, as are unknown keys), and nesting deeper than :data:`MAX_PREDICATE_DEPTH` is refused
with the depth it reaches.

A leaf's ``path`` reads the frame's branch-local outputs. Its first segment says what:

* ``"<nodeId>.<field>..."`` (``"fetch.count"``, ``"fetch.user.name"``): the node's output on
  this frame's own route, read like a ``NodeRef`` with ``select: "first"`` (the first item's
  fields). The frame's table holds that node under one key ``"<nodeId>:<branchKey>"``; the
  smallest is taken, as a reference without a ``branchId`` does. Freeze checks these paths:
  the node must run before the branch on every route and declare the field.
* ``"<nodeId>:<branchKey>.<field>..."`` (``"entry:.topic"``, ``"fetch:e2:e0.status"``): one raw
  table key, read as the merge of that output's items (a later item's field wins), as the
  reference does. Node ids and edge ids hold no ``.``, so a table key is one segment.
* ``""``: the whole table, one merged record per key.

The rest of the path reads into the record like a ``NodeRef`` path (a dict key, or a list index
in canonical decimal). The segments ``__proto__``, ``prototype`` and ``constructor`` are refused
anywhere in a path, for parity with the reference, whose objects carry them.

Operators follow the reference's (JavaScript) value semantics, so a predicate means the same
in every implementation: ``eq``/``ne`` are strict (a bool is not a number; numbers compare by
value; strings, ``None`` and datetimes by value; lists, dicts, sets, bytes and other containers
are never equal); ``lt``/``lte``/``gt``/``gte`` compare only number with number, string with
string (by UTF-16 code unit) or datetime with datetime, and are false otherwise; ``in`` needs a
list ``value`` holding an element ``eq`` to the actual value; ``contains`` is substring for
strings or membership (by ``eq``) for lists; ``truthy`` is false only for a missing value,
``None``, ``False``, zero and ``""`` (an empty list or dict is truthy); ``exists`` is "not
missing" (``None`` exists). Evaluation never raises.

:meth:`StructuredCell.judge` gives the verdict with evidence: each leaf it evaluated, with the
value it read (see :class:`~orchestration.tools.contracts.Judgement`).

The cell is deterministic (no clock, no I/O), so a workflow may evaluate it inline.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from orchestration.predicates.evidence import MAX_CHECKS, shown
from orchestration.predicates.snapshot import merged_record
from orchestration.predicates.verdicts import js_truthy
from orchestration.run.resolve import MISSING, read_segments
from orchestration.tools.contracts import (
    BranchVerdict,
    Judgement,
    PredicateContext,
    PredicateRead,
    SelectVerdict,
)
from orchestration.types import BranchNode, NodeOutput, SelectNode

__all__ = [
    "AUTHORING_GUIDE",
    "GUARDED_SEGMENTS",
    "LEGAL_OPS",
    "MAX_PREDICATE_DEPTH",
    "StructuredCell",
    "StructuredPredicate",
    "evaluate_predicate",
    "parse_structured_predicate",
]

MAX_PREDICATE_DEPTH: Final = 256
"""The deepest nesting a predicate may have (the top level is depth 0)."""

GUARDED_SEGMENTS: Final = frozenset({"__proto__", "prototype", "constructor"})
"""Path segments refused anywhere in a leaf's path (the reference's prototype guard)."""

PATH_FORMS: Final = (
    '"<nodeId>.<field>" (e.g. "fetch.count": that node\'s output on this route, first item), '
    '"<nodeId>:<branchKey>.<field>" (a raw table key, e.g. "entry:.topic"), or "" (the whole '
    "table)"
)
"""The accepted path forms, as the refusals and the tool descriptions name them."""

AUTHORING_GUIDE: Final = (
    'a leaf {"path": P, "op": eq|ne|lt|lte|gt|gte|in|contains|truthy|exists, "value": v} '
    "(truthy and exists take no value), or {\"all\": [...]}, {\"any\": [...]}, "
    '{"not": <predicate>}, nested at most 256 deep. P is one of: "<nodeId>.<field>" such as '
    '"fetch.count" or "fetch.user.name" (that node\'s output on the branch\'s own route, its '
    'first item; the entry\'s input is "entry.<field>"); a raw table key '
    '"<nodeId>:<branchKey>.<field>" such as "entry:.topic" (the merge of that output\'s items); '
    'or "" (the whole table). Freeze refuses a path whose node does not run before the branch on '
    "every route, or does not declare the field (an entry's input, a call's or transform's "
    "output). The segments __proto__, prototype and constructor are refused in every path."
)
"""How to write a structured predicate, for CLI help, tool descriptions and docs."""

Op = Literal["eq", "ne", "lt", "lte", "gt", "gte", "in", "contains", "truthy", "exists"]
LEGAL_OPS: Final[tuple[str, ...]] = (
    "eq",
    "ne",
    "lt",
    "lte",
    "gt",
    "gte",
    "in",
    "contains",
    "truthy",
    "exists",
)
_LEGAL_TEXT = " | ".join(f"'{op}'" for op in LEGAL_OPS)
_NO_VALUE = frozenset({"truthy", "exists"})
_COMBINATORS = ("all", "any", "not")
_LEAF_KEYS = ("path", "op", "value")
_FORMS = "a leaf {path, op, value?}, {all: [...]}, {any: [...]} or {not: <predicate>}"


@dataclass(frozen=True, slots=True)
class Leaf:
    """``{path, op, value?}``."""

    path: str
    op: str
    value: Any


@dataclass(frozen=True, slots=True)
class AllOf:
    """``{all: [...]}``: true when every member is (an empty ``all`` is true)."""

    members: tuple[StructuredPredicate, ...]


@dataclass(frozen=True, slots=True)
class AnyOf:
    """``{any: [...]}``: true when some member is (an empty ``any`` is false)."""

    members: tuple[StructuredPredicate, ...]


@dataclass(frozen=True, slots=True)
class Not:
    """``{not: P}``."""

    member: StructuredPredicate


StructuredPredicate = Leaf | AllOf | AnyOf | Not
"""A parsed structured predicate."""


class _Invalid(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _TooDeep(Exception):
    """Raised at the first level past the cap; reported once, at the top, with the depth."""


def _too_deep(value: Any) -> str:
    return (
        f"predicate nests {nesting_depth(value)} levels deep, deeper than the "
        f"{MAX_PREDICATE_DEPTH} allowed; flatten it (an 'all' or 'any' of leaves says the same "
        "with one level)"
    )


def _type_name(value: object) -> str:
    return "null" if value is None else type(value).__name__


def parse_structured_predicate(value: Any) -> StructuredPredicate:
    """Parse a staged predicate.

    Raises:
        ValueError: a model-addressed reason naming the fix.

    """
    try:
        return _parse_top(value)
    except _Invalid as invalid:
        raise ValueError(invalid.reason) from None


def _parse_top(value: Any) -> StructuredPredicate:
    """Parse from the top level; too deep a predicate is refused naming its depth."""
    try:
        return _parse(value, 0)
    except _TooDeep:
        raise _Invalid(_too_deep(value)) from None


def nesting_depth(value: Any) -> int:
    """How deep a staged predicate nests (the top level is 0), counting combinator levels.

    Iterative, so a predicate far deeper than the cap is measured without recursing.
    """
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if type(item) is not dict:
            continue
        for key in _COMBINATORS:
            body = item.get(key)
            if key == "not" and key in item:
                stack.append((body, depth + 1))
            elif type(body) is list:
                stack.extend((member, depth + 1) for member in body)
    return deepest


def _parse(value: Any, depth: int) -> StructuredPredicate:
    if depth > MAX_PREDICATE_DEPTH:
        raise _TooDeep()
    if type(value) is not dict:
        raise _Invalid(f"predicate must be an object: {_FORMS}; got {_type_name(value)}")
    forms = [k for k in ("path", "op", *_COMBINATORS) if k in value]
    combinators = [k for k in _COMBINATORS if k in value]
    leafish = "path" in value or "op" in value
    if (leafish and combinators) or len(combinators) > 1:
        carried = ", ".join(f"'{k}'" for k in forms)
        raise _Invalid(
            f"predicate mixes more than one form: it carries {carried}. A predicate must be "
            f"exactly one form: {_FORMS}"
        )
    if not forms:
        keys = ", ".join(f"'{k}'" for k in value) or "no keys"
        raise _Invalid(f"predicate has {keys}, which is none of the forms; write {_FORMS}")
    if combinators:
        return _parse_combinator(value, combinators[0], depth)
    return _parse_leaf(value)


def _parse_combinator(value: dict[Any, Any], key: str, depth: int) -> StructuredPredicate:
    extra = [k for k in value if k != key]
    if extra:
        raise _Invalid(
            f"predicate combinator '{key}' carries unknown keys "
            f"{', '.join(repr(k) for k in extra)}; a combinator object has exactly one key"
        )
    body = value[key]
    if key == "not":
        try:
            return Not(_parse(body, depth + 1))
        except _Invalid as invalid:
            raise _Invalid(
                f"predicate combinator 'not' member is invalid: {invalid.reason}"
            ) from None
    if type(body) is not list:
        raise _Invalid(
            f"predicate combinator '{key}' takes a list of predicates, got {_type_name(body)}"
        )
    members: list[StructuredPredicate] = []
    for index, member in enumerate(body):
        try:
            members.append(_parse(member, depth + 1))
        except _Invalid as invalid:
            raise _Invalid(
                f"predicate combinator '{key}' member {index} is invalid: {invalid.reason}"
            ) from None
    return AllOf(tuple(members)) if key == "all" else AnyOf(tuple(members))


def _parse_leaf(value: dict[Any, Any]) -> Leaf:
    extra = [k for k in value if k not in _LEAF_KEYS]
    if extra:
        raise _Invalid(
            f"predicate leaf carries unknown keys {', '.join(repr(k) for k in extra)}; a leaf "
            "carries only 'path', 'op' and (for most ops) 'value'"
        )
    path = value.get("path")
    if type(path) is not str:
        raise _Invalid(
            f"predicate leaf needs a string 'path': {PATH_FORMS}; got {_type_name(path)}"
        )
    guarded = [segment for segment in path.split(".") if segment in GUARDED_SEGMENTS]
    if guarded:
        raise _Invalid(
            f"predicate leaf path {path!r} has the segment '{guarded[0]}', which is refused in "
            "every path ('__proto__', 'prototype' and 'constructor' are guarded); read a field "
            "with another name"
        )
    op = value.get("op")
    if op not in LEGAL_OPS:
        raise _Invalid(f"predicate leaf op {op!r} is not one of {_LEGAL_TEXT}")
    if op in _NO_VALUE and "value" in value:
        raise _Invalid(f"predicate leaf op '{op}' takes no 'value'; remove it")
    if op not in _NO_VALUE and "value" not in value:
        raise _Invalid(f"predicate leaf op '{op}' needs a 'value' to compare with; add one")
    return Leaf(path=path, op=str(op), value=value.get("value"))


# ------------------------------------------------------------------------------------------
# Evaluation
# ------------------------------------------------------------------------------------------


def _number(value: Any) -> bool:
    kind = type(value)
    return kind is int or kind is float


def _strict_eq(a: Any, b: Any) -> bool:
    """JavaScript ``===`` over the value subset (datetimes by value)."""
    if a is MISSING or b is MISSING:
        return a is b
    if a is None or b is None:
        return a is b
    ka, kb = type(a), type(b)
    if ka is bool or kb is bool:
        return ka is kb and a == b
    if _number(a) and _number(b):
        return bool(a == b)
    if ka is str and kb is str:
        return bool(a == b)
    if ka is dt.datetime and kb is dt.datetime:
        try:
            return bool(a == b)
        except TypeError:  # pragma: no cover - datetime equality does not raise
            return False
    return False


def _order(a: Any, b: Any) -> int:
    return -1 if a < b else (1 if a > b else 0)


def _compare(a: Any, b: Any) -> int | None:
    """-1, 0 or 1 when ``a`` and ``b`` are comparable, else ``None``."""
    if _number(a) and _number(b):
        return _order(a, b)
    if type(a) is str and type(b) is str:
        if a.isascii() and b.isascii():
            return _order(a, b)
        # UTF-16 code unit order, as the reference compares strings.
        return _order(a.encode("utf-16-be"), b.encode("utf-16-be"))
    if type(a) is dt.datetime and type(b) is dt.datetime:
        try:
            return _order(a, b)
        except TypeError:  # a naive against an aware datetime
            return None
    return None


def _apply(op: str, actual: Any, expected: Any) -> bool:
    if op == "eq":
        return _strict_eq(actual, expected)
    if op == "ne":
        return not _strict_eq(actual, expected)
    if op in ("lt", "lte", "gt", "gte"):
        order = _compare(actual, expected)
        if order is None:
            return False
        return {"lt": order < 0, "lte": order <= 0, "gt": order > 0, "gte": order >= 0}[op]
    if op == "in":
        return type(expected) is list and any(_strict_eq(actual, e) for e in expected)
    if op == "contains":
        if type(actual) is str and type(expected) is str:
            return expected in actual
        if type(actual) is list:
            return any(_strict_eq(e, expected) for e in actual)
        return False
    if op == "truthy":
        return actual is not MISSING and js_truthy(actual)
    if op == "exists":
        return actual is not MISSING
    return False  # pragma: no cover - ops are checked when parsed


class _Reader:
    """Reads leaf paths from one frame's table, through its public ``Mapping`` interface only.

    A node-id head is resolved to its table key once per reader (the smallest key of that node,
    as a ``NodeRef`` without a ``branchId`` resolves), so a predicate with many leaves over one
    node scans the table's keys once.
    """

    __slots__ = ("_keys", "outputs")

    def __init__(self, outputs: Mapping[str, NodeOutput]) -> None:
        self.outputs = outputs
        self._keys: dict[str, str | None] | None = None

    def _key_of(self, node_id: str) -> str | None:
        keys = self._keys
        if keys is None:
            keys = {}
            for key in self.outputs:
                head = key.split(":", 1)[0]
                known = keys.get(head)
                if known is None or key < known:
                    keys[head] = key
            self._keys = keys
        return keys.get(node_id)

    def read(self, path: str) -> Any:
        outputs = self.outputs
        if path == "":
            return {key: merged_record(outputs[key]) for key in outputs}
        segments = path.split(".")
        head = segments[0]
        if not head:
            return MISSING
        if ":" in head:
            output = outputs.get(head)
            if output is None:
                return MISSING
            return read_segments(merged_record(output), segments[1:])
        key = self._key_of(head)
        output = None if key is None else outputs.get(key)
        if output is None or not output.items:
            return MISSING
        return read_segments(output.items[0].json_, segments[1:])


def evaluate_predicate(predicate: StructuredPredicate, outputs: Mapping[str, NodeOutput]) -> bool:
    """Whether ``predicate`` holds over a frame's branch-local outputs. Never raises."""
    return _holds(predicate, _Reader(outputs), None)


class _Trace:
    """The leaves one verdict evaluated, for its evidence (bounded by ``MAX_CHECKS``)."""

    __slots__ = ("case", "checks", "omitted")

    def __init__(self) -> None:
        self.checks: list[dict[str, Any]] = []
        self.omitted = 0
        self.case: str | None = None

    def record(self, leaf: Leaf, actual: Any, holds: bool) -> None:
        if len(self.checks) >= MAX_CHECKS:
            self.omitted += 1
            return
        check: dict[str, Any] = {"path": leaf.path, "op": leaf.op}
        if leaf.op not in _NO_VALUE:
            check["value"] = shown(leaf.value)
        if actual is MISSING:
            check["missing"] = True
        else:
            check["actual"] = shown(actual)
        check["holds"] = holds
        if self.case is not None:
            check["case"] = self.case
        self.checks.append(check)

    def evidence(self, result: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"cell": "structured", "result": result, "checks": self.checks}
        if self.omitted:
            out["omitted"] = self.omitted
        return out


def _holds(predicate: StructuredPredicate, reader: _Reader, trace: _Trace | None) -> bool:
    """Evaluate one level; with ``trace``, record each leaf evaluated.

    One frame per nesting level (explicit loops, no generators), so the deepest predicate the
    parser accepts evaluates well inside the interpreter's recursion limit.
    """
    if isinstance(predicate, Leaf):
        actual = reader.read(predicate.path)
        result = _apply(predicate.op, actual, predicate.value)
        if trace is not None:
            trace.record(predicate, actual, result)
        return result
    if isinstance(predicate, AllOf):
        for member in predicate.members:
            if not _holds(member, reader, trace):
                return False
        return True
    if isinstance(predicate, AnyOf):
        for member in predicate.members:
            if _holds(member, reader, trace):
                return True
        return False
    return not _holds(predicate.member, reader, trace)


def _leaf_reads(predicate: StructuredPredicate, where: str) -> list[PredicateRead]:
    """Every leaf's read, in predicate order, with where it sits (iterative)."""
    reads: list[PredicateRead] = []
    stack: list[tuple[StructuredPredicate, str]] = [(predicate, where)]
    while stack:
        item, location = stack.pop()
        if isinstance(item, Leaf):
            read = _path_read(item.path, location)
            if read is not None:
                reads.append(read)
        elif isinstance(item, Not):
            stack.append((item.member, f"{location}.not" if location else "not"))
        else:
            key = "all" if isinstance(item, AllOf) else "any"
            prefix = f"{location}.{key}" if location else key
            for index in range(len(item.members) - 1, -1, -1):
                stack.append((item.members[index], f"{prefix}[{index}]"))
    return reads


def _path_read(path: str, location: str) -> PredicateRead | None:
    if path == "":
        return None
    head, _, rest = path.partition(".")
    field = rest if "." in path else None
    if ":" in head:
        return PredicateRead(
            node=head.split(":", 1)[0], path=field, location=location, table_key=head
        )
    return PredicateRead(node=head, path=field, location=location)


# ------------------------------------------------------------------------------------------
# The cell
# ------------------------------------------------------------------------------------------


def _select_problems(node: SelectNode) -> str | None:
    predicate = node.definition.predicate
    if type(predicate) is not dict:
        return (
            f'select "{node.id}": its predicate must map each case label to a structured '
            f'predicate, e.g. {{"{(node.definition.cases or ("x",))[0]}": '
            f'{{"path": "...", "op": "eq", "value": ...}}}}; got {_type_name(predicate)}'
        )
    for label in node.definition.cases:
        if label not in predicate:
            return (
                f'select "{node.id}": its predicate has no entry for case "{label}"; add '
                f'"{label}": <predicate>'
            )
        try:
            _parse_top(predicate[label])
        except _Invalid as invalid:
            return f'select "{node.id}": case "{label}": {invalid.reason}'
    unknown = [k for k in predicate if k not in node.definition.cases]
    if unknown:
        names = ", ".join(f'"{k}"' for k in unknown)
        return (
            f'select "{node.id}": its predicate has entries for {names}, which are not among '
            "its cases; remove them or add them to cases"
        )
    return None


class StructuredCell:
    """The ``structured`` predicate cell (see the module docstring for the grammar).

    Parsed predicates are cached per predicate object, so a node evaluated on many frames is
    parsed once.
    """

    def __init__(self) -> None:
        self._cache: dict[int, tuple[object, StructuredPredicate | None]] = {}

    @property
    def id(self) -> str:
        """``"structured"``."""
        return "structured"

    @property
    def deterministic(self) -> bool:
        """Always ``True``: evaluation reads only its arguments."""
        return True

    async def load(self) -> None:
        """Nothing to load: the cell has no dependencies."""

    async def validate(self, node: BranchNode | SelectNode) -> None:
        """Refuse a predicate this cell cannot evaluate.

        Raises:
            ValueError: naming the fix.

        """
        if isinstance(node, SelectNode):
            problem = _select_problems(node)
            if problem is not None:
                raise ValueError(problem)
            return
        if isinstance(node, BranchNode):
            try:
                _parse_top(node.definition.predicate)
            except _Invalid as invalid:
                raise ValueError(f'branch "{node.id}": {invalid.reason}') from None
            return
        raise ValueError(
            f"the structured cell decides branch and select nodes only, not {_type_name(node)}"
        )

    def predicate_reads(self, node: BranchNode | SelectNode) -> list[PredicateRead]:
        """Every leaf's node read, so freeze can check each like a ``NodeRef``.

        A node-id head (``fetch.count``) names the node and the field; a raw table key
        (``fetch:e1.count``) names its node too, with the key. The whole-table path ``""``
        reads no one node and is not listed. Unparseable predicates list nothing (``validate``
        refuses them).
        """
        if isinstance(node, SelectNode):
            table = node.definition.predicate
            if type(table) is not dict:
                return []
            reads: list[PredicateRead] = []
            for label in node.definition.cases:
                parsed = self._parsed(table.get(label)) if label in table else None
                if parsed is not None:
                    reads.extend(_leaf_reads(parsed, f'case "{label}"'))
            return reads
        parsed = self._parsed(node.definition.predicate)
        return [] if parsed is None else _leaf_reads(parsed, "")

    async def evaluate(
        self, node: BranchNode | SelectNode, ctx: PredicateContext
    ) -> BranchVerdict | SelectVerdict:
        """Decide one frame (see :meth:`decide`)."""
        return self.decide(node, ctx)

    async def judge(self, node: BranchNode | SelectNode, ctx: PredicateContext) -> Judgement:
        """The verdict of :meth:`decide` with its evidence, match or not.

        The evidence lists each leaf evaluated with the value its path read (see
        :class:`~orchestration.tools.contracts.Judgement`); an unparseable predicate's evidence says
        so under ``error``.
        """
        return self._run(node, ctx, _Trace())

    def decide(
        self, node: BranchNode | SelectNode, ctx: PredicateContext
    ) -> BranchVerdict | SelectVerdict:
        """The verdict, synchronously, without evidence.

        A branch matches when its predicate holds (an unparseable one does not); a select takes
        the first case, in ``cases`` order, whose predicate holds (unparseable ones are
        skipped), else ``None`` (the default edge).
        """
        return self._run(node, ctx, None).verdict

    def _run(
        self, node: BranchNode | SelectNode, ctx: PredicateContext, trace: _Trace | None
    ) -> Judgement:
        reader = _Reader(ctx.outputs)
        if isinstance(node, SelectNode):
            table = node.definition.predicate
            if type(table) is not dict:
                return self._unparseable(SelectVerdict(case_label=None), trace)
            skipped: list[str] = []
            for label in node.definition.cases:
                parsed = self._parsed(table.get(label)) if label in table else None
                if parsed is None:
                    skipped.append(label)
                    continue
                if trace is not None:
                    trace.case = label
                if _holds(parsed, reader, trace):
                    return self._judged(SelectVerdict(case_label=label), label, trace, skipped)
            return self._judged(SelectVerdict(case_label=None), None, trace, skipped)
        parsed = self._parsed(node.definition.predicate)
        if parsed is None:
            return self._unparseable(BranchVerdict(matched=False), trace)
        matched = _holds(parsed, reader, trace)
        return self._judged(BranchVerdict(matched=matched), matched, trace, [])

    @staticmethod
    def _judged(
        verdict: BranchVerdict | SelectVerdict,
        result: Any,
        trace: _Trace | None,
        skipped: list[str],
    ) -> Judgement:
        if trace is None:
            return Judgement(verdict)
        evidence = trace.evidence(result)
        if skipped:
            evidence["unparseable"] = skipped
        return Judgement(verdict, evidence)

    @staticmethod
    def _unparseable(verdict: BranchVerdict | SelectVerdict, trace: _Trace | None) -> Judgement:
        if trace is None:
            return Judgement(verdict)
        return Judgement(
            verdict, {"cell": "structured", "error": "the predicate is not a valid structured one"}
        )

    def _parsed(self, predicate: Any) -> StructuredPredicate | None:
        cached = self._cache.get(id(predicate))
        if cached is not None and cached[0] is predicate:
            return cached[1]
        try:
            parsed: StructuredPredicate | None = _parse_top(predicate)
        except _Invalid:
            parsed = None
        self._cache[id(predicate)] = (predicate, parsed)
        return parsed
