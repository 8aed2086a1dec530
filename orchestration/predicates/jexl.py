"""The jexl predicate cell (``id = "jexl"``): JEXL expressions, for parity with the reference.

A predicate is a JEXL source string (the JavaScript Expression Language of the reference's jexl
cell, through ``pyjexl-extended``; install ``pip install 'orchestration[jexl]'``). It reads:

* each node on the frame's route by its bare id, as its merged record (``fetch.count >= 10``;
  see :mod:`orchestration.predicates.snapshot`);
* ``outputs``: every table key's merged record (``outputs['fetch:e2:e1'].count``), the
  reference's form.

* **branch**: the value's JavaScript truthiness (``0``, ``""``, ``null`` and ``false`` are
  false; an empty list or map is true), as the reference's ``Boolean(value)``.
* **select**: the value must be, exactly, one of the case labels, else ``default`` (the same
  rule as every other cell: no coercion, so ``1`` never selects case ``"1"``).

**Host transforms** (``value|name(args)``) are registered at construction, and only those: the
allowlist is the security boundary. No JEXL functions are registered (the extended package's
built-ins, ``now()`` and ``random()`` among them, are never loaded), so an expression can call
nothing but the transforms it was given. Transforms must be pure and cheap: the workflow records
their result, but a transform that reads the clock or the network makes a predicate that means
different things on different runs.

**Validate** (at freeze), in the reference's order: a source string; no ``===`` (JEXL's
equality is ``==``); no ``ctx.`` prefix; the source parses; every transform is registered; and
no function is called. :meth:`JexlCell.predicate_reads` lists the node fields the expression
names (identifier chains such as ``fetch.count``, and ``outputs['<key>'].<field>``), so freeze
checks them like ``NodeRef`` reads.

**Bounded work.** Evaluation counts its steps (each node of the expression it visits, each
element a filter walks, and the size of what an operator or transform builds or scans), and a
predicate past ``work_limit`` raises :class:`~orchestration.predicates.errors.
PredicateLimitExceeded` (the run stops ``predicate_unevaluatable``). Strings and lists an
operator builds are capped at ``max_size`` elements, and ``^`` refuses a result wider than
``max_size`` bits before computing it. The count is deterministic, so the same predicate over
the same outputs stops at the same step on every worker.

Operators follow Python's semantics for the value types (``==`` is Python equality, ``+`` does
not concatenate a string with a number); an error while evaluating (a type mismatch, a missing
transform, division by zero) gives the safe verdict with the error as evidence.

**Where it runs.** The evaluation itself is deterministic and pure Python (the parser's
``regex`` dependency is compiled, and deterministic too), so it could run inside workflow code;
but the transforms are host code registered on the worker, so the cell runs where they live:
the ``plan.evaluate`` local activity, like Lua (``deterministic`` is ``False``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from orchestration.predicates.errors import PredicateLimitExceeded, import_optional
from orchestration.predicates.evidence import shown
from orchestration.predicates.snapshot import merged_record, node_records
from orchestration.predicates.verdicts import (
    DecidingCell,
    js_truthy,
    safe_verdict,
    select_verdict,
)
from orchestration.run.resolve import MISSING, read_segments
from orchestration.tools.contracts import (
    BranchVerdict,
    Judgement,
    PredicateContext,
    PredicateRead,
)
from orchestration.types import BranchNode, NodeOutput, SelectNode

__all__ = ["DEFAULT_MAX_SIZE", "DEFAULT_WORK_LIMIT", "JEXL_INSTALL", "JexlCell"]

JEXL_INSTALL = "pip install 'orchestration[jexl]'  (pyjexl-extended)"
DEFAULT_WORK_LIMIT = 100_000
DEFAULT_MAX_SIZE = 1_000_000

_PARSED_CACHE = 1024
_CTX = re.compile(r"\bctx\s*\.")
_IDENT = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")


class _WorkExceeded(Exception):
    """Raised inside the evaluator when the budget or a size cap is passed."""


def _load_module() -> Any:
    return import_optional(
        "jexl", JEXL_INSTALL, "pyjexl", "pyjexl.evaluator", "pyjexl.exceptions", "pyjexl.parser"
    )


def _size(value: Any) -> int:
    return len(value) if isinstance(value, str | bytes | list | tuple | dict) else 1


class _Meter:
    """One evaluation's work count, shared by the evaluator, the operators and the transforms."""

    __slots__ = ("limit", "max_size", "used")

    def __init__(self, limit: int, max_size: int) -> None:
        self.limit = limit
        self.max_size = max_size
        self.used = 0

    def charge(self, units: int) -> None:
        self.used += units
        if self.used > self.limit:
            raise _WorkExceeded(f"work budget exceeded ({self.limit} steps)")

    def built(self, value: Any) -> Any:
        size = _size(value)
        if size > self.max_size:
            raise _WorkExceeded(f"a value of {size} elements exceeds the {self.max_size} cap")
        self.charge(size)
        return value


def _operation_size(symbol: str, a: Any, b: Any) -> int:
    """The work one binary operation does, in elements (or 64-bit words of an integer)."""
    if symbol == "+":
        if isinstance(a, str | list) and type(a) is type(b):
            return _size(a) + _size(b)
        return 1
    if symbol == "*":
        for seq, n in ((a, b), (b, a)):
            if isinstance(seq, str | list) and type(n) is int:
                return len(seq) * max(n, 0)
        if type(a) is int and type(b) is int:
            return (a.bit_length() + b.bit_length()) // 64 + 1
        return 1
    if symbol == "^":
        if type(a) is int and type(b) is int and b > 0:
            return max(a.bit_length(), 1) * b // 64 + 1
        return 1
    return _size(a) + _size(b)


def _metered_evaluator(pyjexl: Any) -> Any:
    """An evaluator class that charges every step to its own :class:`_Meter`.

    One instance per evaluation, so concurrent evaluations on a worker never share a count.
    """

    class Metered(pyjexl.evaluator.Evaluator):  # type: ignore[misc]
        def __init__(self, config: Any, meter: _Meter) -> None:
            super().__init__(config)
            self.meter = meter

        def evaluate(self, expression: Any, context: Any = None) -> Any:
            self.meter.charge(1)
            return super().evaluate(expression, context)

        def visit_BinaryExpression(self, exp: Any, context: Any) -> Any:  # noqa: N802
            symbol = exp.operator.symbol
            if symbol in ("&&", "||"):
                return super().visit_BinaryExpression(exp, context)
            left = self.evaluate(exp.left, context)
            right = self.evaluate(exp.right, context)
            size = _operation_size(symbol, left, right)
            if symbol in ("+", "*", "^") and size > self.meter.max_size:
                raise _WorkExceeded(
                    f"'{symbol}' would build a value of {size} elements, over the "
                    f"{self.meter.max_size} cap"
                )
            self.meter.charge(size)
            return exp.operator.evaluate(left, right)

        def visit_Transform(self, transform: Any, context: Any) -> Any:  # noqa: N802
            func = self.config.transforms.get(transform.name)
            if func is None:
                return super().visit_Transform(transform, context)
            args = [self.evaluate(arg, context) for arg in transform.args]
            subject = self.evaluate(transform.subject, context)
            self.meter.charge(1 + _size(subject) + sum(_size(a) for a in args))
            return self.meter.built(func(subject, *args))

    return Metered


class JexlCell(DecidingCell):
    """The ``jexl`` predicate cell (see the module docstring).

    Args:
        transforms: The host transforms an expression may call, by name (``value|name(a)`` is
            ``transforms[name](value, a)``). The closed allowlist: nothing else is callable.
        work_limit: Steps one evaluation may take (see the module docstring).
        max_size: The largest string or list an operator may build, and the widest integer
            (in bits) ``^`` may compute.

    """

    def __init__(
        self,
        transforms: Mapping[str, Callable[..., Any]] | None = None,
        *,
        work_limit: int = DEFAULT_WORK_LIMIT,
        max_size: int = DEFAULT_MAX_SIZE,
    ) -> None:
        if work_limit < 1 or max_size < 1:
            raise ValueError("work_limit and max_size must be positive")
        self.transforms = dict(transforms or {})
        for name, func in self.transforms.items():
            if not _IDENT.match(name) or not callable(func):
                raise ValueError(
                    f"transform {name!r} must be an identifier naming a callable; rename it or "
                    "pass a function"
                )
        self.work_limit = work_limit
        self.max_size = max_size
        self._pyjexl: Any = None
        self._engine: Any = None
        self._evaluator_class: Any = None
        self._parsed: dict[str, Any] = {}

    @property
    def id(self) -> str:
        """``"jexl"``."""
        return "jexl"

    @property
    def deterministic(self) -> bool:
        """``False``: its host transforms live on the worker, so it runs in a local activity."""
        return False

    def _module(self) -> Any:
        if self._engine is None:
            pyjexl = _load_module()
            engine = pyjexl.JEXL()
            for name, func in self.transforms.items():
                engine.add_transform(name, func)
            self._evaluator_class = _metered_evaluator(pyjexl)
            self._pyjexl = pyjexl
            self._engine = engine
        return self._pyjexl

    async def load(self) -> None:
        """Import ``pyjexl-extended`` and build the engine with the registered transforms.

        Raises:
            CellUnavailableError: the package is not installed.

        """
        self._module()

    def _parse(self, source: str) -> Any:
        parsed = self._parsed.get(source)
        if parsed is None:
            self._module()
            parsed = self._engine.parse(source)
            if len(self._parsed) >= _PARSED_CACHE:
                self._parsed.clear()
            self._parsed[source] = parsed
        return parsed

    async def validate(self, node: BranchNode | SelectNode) -> None:
        """Refuse a predicate that is not a usable JEXL expression (nothing is evaluated).

        Raises:
            ValueError: naming the fix.

        """
        pyjexl = self._module()
        source = node.definition.predicate
        if not isinstance(source, str) or not source.strip():
            raise ValueError(
                f"jexl cell: node '{node.id}' must carry a JEXL expression SOURCE STRING as its "
                f"predicate, but got {type(source).__name__}. Write e.g. \"fetch.count >= 10\"."
            )
        if "===" in source:
            raise ValueError(
                f"jexl cell: node '{node.id}' predicate uses '===' which JEXL does not support. "
                "JEXL's equality operator is '=='. Replace '===' with '=='."
            )
        if _CTX.search(source):
            raise ValueError(
                f"jexl cell: node '{node.id}' predicate prefixes an identifier with 'ctx.'. "
                "Name a node directly (\"fetch.count\") or use outputs['<nodeId>:<branchKey>']."
            )
        if isinstance(node, SelectNode) and not node.definition.cases:
            raise ValueError(f"jexl cell: select '{node.id}' declares no cases")
        try:
            parsed = self._parse(source)
        except (pyjexl.exceptions.JEXLException, RecursionError, ValueError) as exc:
            raise ValueError(
                f"jexl cell: node '{node.id}' predicate is not valid JEXL: {exc}"
            ) from None
        allowed = ", ".join(sorted(self.transforms))
        for kind, name in _calls(pyjexl, parsed):
            if kind == "function":
                raise ValueError(
                    f"jexl cell: node '{node.id}' predicate calls function '{name}()', but this "
                    "cell registers no functions; use a registered transform (value|name) "
                    f"instead{': ' + allowed if allowed else ''}."
                )
            if name not in self.transforms:
                raise ValueError(
                    f"jexl cell: node '{node.id}' predicate calls transform '{name}', which is "
                    "not in this cell's registered allowlist"
                    + (f": {allowed}." if allowed else " (the allowlist is empty).")
                    + " Register it on the cell, or compute the value another way."
                )

    def predicate_reads(self, node: BranchNode | SelectNode) -> list[PredicateRead]:
        """The node fields the expression names, so freeze can check them (see the module)."""
        source = node.definition.predicate
        if not isinstance(source, str):
            return []
        pyjexl = self._module()
        try:
            parsed = self._parse(source)
        except (pyjexl.exceptions.JEXLException, RecursionError, ValueError):
            return []
        return _reads(pyjexl, parsed, source)

    def decide(self, node: BranchNode | SelectNode, ctx: PredicateContext) -> Judgement:
        """The verdict and its evidence: the value and the fields it read (see the module).

        Blocking (pure Python work up to ``work_limit`` steps), so call it off the event loop.

        Raises:
            PredicateLimitExceeded: the evaluation ran past ``work_limit`` or ``max_size``.

        """
        pyjexl = self._module()
        safe = safe_verdict(node)
        source = node.definition.predicate
        if not isinstance(source, str):
            return Judgement(safe, {"cell": "jexl", "error": "the predicate is not a string"})
        try:
            parsed = self._parse(source)
        except (pyjexl.exceptions.JEXLException, RecursionError, ValueError) as exc:
            return Judgement(safe, {"cell": "jexl", "error": f"not valid JEXL: {exc}"})
        records = node_records(ctx.outputs)
        snapshot: dict[str, Any] = {k: v for k, v in records.items() if _IDENT.match(k)}
        snapshot["outputs"] = {key: merged_record(ctx.outputs[key]) for key in ctx.outputs}
        reads = _read_values(_reads(pyjexl, parsed, source), records, ctx.outputs)
        evaluator = self._evaluator_class(
            self._engine.config, _Meter(self.work_limit, self.max_size)
        )
        try:
            value = evaluator.evaluate(parsed, pyjexl.evaluator.Context(snapshot))
        except _WorkExceeded as exc:
            raise PredicateLimitExceeded("work", f"jexl-cell: {exc}") from None
        except RecursionError:
            return Judgement(safe, _evidence(reads, error="the expression nests too deeply"))
        except Exception as exc:  # noqa: BLE001 - any evaluation error is the safe verdict
            return Judgement(safe, _evidence(reads, error=f"{type(exc).__name__}: {exc}"))
        evidence = _evidence(reads, result=shown(value))
        if isinstance(node, BranchNode):
            return Judgement(BranchVerdict(matched=js_truthy(value)), evidence)
        return Judgement(select_verdict(node, value), evidence)


def _evidence(reads: Mapping[str, Any], **fields: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"cell": "jexl", **fields}
    if reads:
        out["reads"] = dict(reads)
    return out


def _children(pyjexl: Any, node: Any) -> list[Any]:
    parser = pyjexl.parser
    if isinstance(node, parser.ObjectLiteral):
        return list(node.value.values())
    if isinstance(node, parser.ArrayLiteral):
        return list(node.value)
    return [child for child in node.children if child is not None]


def _walk(pyjexl: Any, root: Any) -> list[Any]:
    """Every node of a parsed expression, parents before children, in source order."""
    out: list[Any] = []
    stack = [root]
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(reversed(_children(pyjexl, node)))
    return out


def _calls(pyjexl: Any, parsed: Any) -> list[tuple[str, str]]:
    parser = pyjexl.parser
    calls: list[tuple[str, str]] = []
    for node in _walk(pyjexl, parsed):
        if isinstance(node, parser.Transform):
            calls.append(("transform", node.name))
        elif isinstance(node, parser.Function):
            calls.append(("function", node.name))
    return calls


def _chain(pyjexl: Any, node: Any) -> tuple[str, list[str], str | None] | None:
    """``(root, fields, table_key)`` for an identifier chain rooted at a context name.

    ``None`` when the chain does not start at a name (a relative identifier, a literal, a
    filter other than ``outputs['<key>']``): such a chain's subject is walked on its own.
    """
    parser = pyjexl.parser
    fields: list[str] = []
    current = node
    while isinstance(current, parser.Identifier) and current.subject is not None:
        if current.relative:
            return None
        fields.append(current.value)
        current = current.subject
    if isinstance(current, parser.Identifier):
        if current.relative:
            return None
        fields.reverse()
        return current.value, fields, None
    if (
        isinstance(current, parser.FilterExpression)
        and not current.relative
        and isinstance(current.expression, parser.Literal)
        and isinstance(current.expression.value, str)
        and isinstance(current.subject, parser.Identifier)
        and current.subject.subject is None
        and current.subject.value == "outputs"
    ):
        fields.reverse()
        key = current.expression.value
        return key.split(":", 1)[0], fields, key
    return None


def _reads(pyjexl: Any, parsed: Any, source: str) -> list[PredicateRead]:
    """The longest identifier chains rooted at a node id (or an ``outputs['<key>']``).

    A chain ends at a filter (``fetch.rows[.v > 1].name`` reads ``fetch.rows``); what a relative
    identifier inside a filter reads is an element's field, which nothing declares.
    """
    parser = pyjexl.parser
    reads: list[PredicateRead] = []
    inside: set[int] = set()
    for node in _walk(pyjexl, parsed):
        if id(node) in inside or not isinstance(node, parser.Identifier):
            continue
        chain = _chain(pyjexl, node)
        current = node
        while isinstance(current, parser.Identifier):
            inside.add(id(current))
            current = current.subject
        if chain is None:
            continue
        root, fields, key = chain
        if key is None and root == "outputs":
            continue
        path = ".".join(fields) or None
        text = (f"outputs['{key}']" if key else root) + "".join(f".{f}" for f in fields)
        reads.append(PredicateRead(node=root, path=path, location=text, table_key=key))
    return reads


def _read_values(
    reads: Sequence[PredicateRead],
    records: Mapping[str, Any],
    outputs: Mapping[str, NodeOutput],
) -> dict[str, Any]:
    """Each read's value on this frame, shown bounded; a read that finds nothing is left out."""
    values: dict[str, Any] = {}
    for read in reads:
        if read.table_key is not None:
            output = outputs.get(read.table_key)
            base: Any = MISSING if output is None else merged_record(output)
        else:
            base = records.get(read.node, MISSING)
        value = base if base is MISSING else read_segments(base, (read.path or "").split("."))
        if read.path is None:
            value = base
        if value is not MISSING:
            values[read.location] = shown(value)
    return values
