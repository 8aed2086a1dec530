"""The structured predicate cell (``id = "structured"``): the one cell every deployment has.

A predicate is plain data, so it digests with the plan and needs no parser:

* a **leaf** ``{"path": str, "op": op, "value": v}``, where ``op`` is one of ``eq ne lt lte gt
  gte in contains truthy exists``; ``truthy`` and ``exists`` take no ``value`` key, every other
  op requires one (its presence counts, so ``"value": None`` is a value);
* a **combinator** ``{"all": [P, ...]}``, ``{"any": [P, ...]}`` or ``{"not": P}``.

An object is exactly one form (a leaf mixed with a combinator key, or two combinator keys, is
refused, as are unknown keys), and nesting deeper than :data:`MAX_PREDICATE_DEPTH` is refused.

A leaf's ``path`` reads the frame's branch-local outputs as one record per table key:
``"<nodeId>:<branchKey>.<field>..."`` (``"entry:.topic"``, ``"fetch:e2:e0.status"``), where the
record is the node's items merged in order (a later item's field wins). The rest of the path
reads into it like a ``NodeRef`` path.

Operators follow the reference's (JavaScript) value semantics, so a predicate means the same
in every implementation: ``eq``/``ne`` are strict (a bool is not a number; numbers compare by
value; strings, ``None`` and datetimes by value; lists, dicts, sets, bytes and other containers
are never equal); ``lt``/``lte``/``gt``/``gte`` compare only number with number, string with
string (by UTF-16 code unit) or datetime with datetime, and are false otherwise; ``in`` needs a
list ``value`` holding an element ``eq`` to the actual value; ``contains`` is substring for
strings or membership (by ``eq``) for lists; ``truthy`` is false only for a missing value,
``None``, ``False``, zero and ``""`` (an empty list or dict is truthy); ``exists`` is "not
missing" (``None`` exists). Evaluation never raises.

The cell is deterministic (no clock, no I/O), so a workflow may evaluate it inline.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from orchestration.contracts import BranchVerdict, PredicateContext, SelectVerdict
from orchestration.resolve import MISSING, read_segments
from orchestration.types import BranchNode, NodeOutput, SelectNode

__all__ = [
    "LEGAL_OPS",
    "MAX_PREDICATE_DEPTH",
    "StructuredCell",
    "StructuredPredicate",
    "evaluate_predicate",
    "parse_structured_predicate",
]

MAX_PREDICATE_DEPTH: Final = 256
"""The deepest nesting a predicate may have (the top level is depth 0)."""

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


def _type_name(value: object) -> str:
    return "null" if value is None else type(value).__name__


def parse_structured_predicate(value: Any) -> StructuredPredicate:
    """Parse a staged predicate.

    Raises:
        ValueError: a model-addressed reason naming the fix.

    """
    try:
        return _parse(value, 0)
    except _Invalid as invalid:
        raise ValueError(invalid.reason) from None


def _parse(value: Any, depth: int) -> StructuredPredicate:
    if depth > MAX_PREDICATE_DEPTH:
        raise _Invalid(
            f"predicate nests deeper than {MAX_PREDICATE_DEPTH} levels; flatten it (an 'all' "
            "or 'any' of leaves says the same with one level)"
        )
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
            "predicate leaf needs a string 'path' such as \"<nodeId>:<branchKey>.<field>\" "
            f'(e.g. "entry:.topic"), got {_type_name(path)}'
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


def _truthy(value: Any) -> bool:
    if value is MISSING or value is None or value is False:
        return False
    if _number(value):
        return bool(value != 0)
    if type(value) is str:
        return value != ""
    return True


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
        return _truthy(actual)
    if op == "exists":
        return actual is not MISSING
    return False  # pragma: no cover - ops are checked when parsed


def _record(output: NodeOutput) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for item in output.items:
        merged.update(item.json_)
    return merged


def _read(outputs: Mapping[str, NodeOutput], path: str) -> Any:
    if path == "":
        return {key: _record(outputs[key]) for key in outputs}
    segments = path.split(".")
    head = segments[0]
    output = outputs.get(head) if head else None
    if output is None:
        return MISSING
    return read_segments(_record(output), segments[1:])


def evaluate_predicate(predicate: StructuredPredicate, outputs: Mapping[str, NodeOutput]) -> bool:
    """Whether ``predicate`` holds over a frame's branch-local outputs. Never raises."""
    if isinstance(predicate, Leaf):
        return _apply(predicate.op, _read(outputs, predicate.path), predicate.value)
    if isinstance(predicate, AllOf):
        return all(evaluate_predicate(m, outputs) for m in predicate.members)
    if isinstance(predicate, AnyOf):
        return any(evaluate_predicate(m, outputs) for m in predicate.members)
    return not evaluate_predicate(predicate.member, outputs)


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
            _parse(predicate[label], 0)
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
                _parse(node.definition.predicate, 0)
            except _Invalid as invalid:
                raise ValueError(f'branch "{node.id}": {invalid.reason}') from None
            return
        raise ValueError(
            f"the structured cell decides branch and select nodes only, not {_type_name(node)}"
        )

    async def evaluate(
        self, node: BranchNode | SelectNode, ctx: PredicateContext
    ) -> BranchVerdict | SelectVerdict:
        """Decide one frame (see :meth:`decide`)."""
        return self.decide(node, ctx)

    def decide(
        self, node: BranchNode | SelectNode, ctx: PredicateContext
    ) -> BranchVerdict | SelectVerdict:
        """The verdict, synchronously.

        A branch matches when its predicate holds (an unparseable one does not); a select takes
        the first case, in ``cases`` order, whose predicate holds (unparseable ones are
        skipped), else ``None`` (the default edge).
        """
        if isinstance(node, SelectNode):
            table = node.definition.predicate
            if type(table) is not dict:
                return SelectVerdict(case_label=None)
            for label in node.definition.cases:
                parsed = self._parsed(table.get(label)) if label in table else None
                if parsed is not None and evaluate_predicate(parsed, ctx.outputs):
                    return SelectVerdict(case_label=label)
            return SelectVerdict(case_label=None)
        parsed = self._parsed(node.definition.predicate)
        return BranchVerdict(matched=parsed is not None and evaluate_predicate(parsed, ctx.outputs))

    def _parsed(self, predicate: Any) -> StructuredPredicate | None:
        cached = self._cache.get(id(predicate))
        if cached is not None and cached[0] is predicate:
            return cached[1]
        try:
            parsed: StructuredPredicate | None = _parse(predicate, 0)
        except _Invalid:
            parsed = None
        self._cache[id(predicate)] = (predicate, parsed)
        return parsed
