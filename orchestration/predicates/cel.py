"""The CEL predicate cell (``id = "cel"``): type-checked expressions, evaluated in the workflow.

A predicate is a CEL source string (Common Expression Language, through ``cel-expr-python``,
the Python binding of the C++ implementation). Each node whose output is on the frame's route
is a variable named by its node id, holding its merged record (see
:mod:`orchestration.predicates.snapshot`)::

    count_orders.count >= 10 && scan_files.names.contains("report")

* **branch**: the expression must be a ``bool``; ``true`` takes ``match``.
* **select**: the expression yields a case label (a ``string``, or ``null`` for ``default``),
  e.g. ``size.bytes > 1000000 ? "large" : "small"``; a string that is not a case takes
  ``default``.

**Freeze type-checks** (``validate_reads``) against what the plan declares: each ancestor's
declared fields become typed variables (``count_orders.count``), so a field no ancestor declares,
or a comparison of a string with a number, is refused before approval. Declared ``number`` fields
are ``dyn`` (a JSON number is an int or a double at run time, and CEL compares the two
numerically), ``string``/``enum`` are ``string``, ``boolean`` is ``bool``; a reason node's
schema properties are typed from their JSON Schema ``type``; a node that declares nothing is a
``map(string, dyn)``.

**Evaluation** is deterministic (CEL has no clock, I/O or randomness), so the workflow runs it
inline. Any evaluation error (a node not on this route, a missing key, a result of the wrong
type) gives the safe verdict (``no_match`` / ``default``) with the error as evidence; a value
gives its verdict with the value as evidence. Work is bounded by CEL itself: there are no
loops, and comprehensions (``all``, ``exists``, ``map``, ...) share the runtime's iteration
budget; a predicate that exhausts it raises
:class:`~orchestration.predicates.errors.PredicateLimitExceeded` (the run stops
``predicate_unevaluatable``), because such a predicate is broken rather than false.

``load()`` fails with ``E_ORCH_CELL_UNAVAILABLE`` and the install command when the package is
missing.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from typing import Any

from orchestration.errors import CellUnavailableError
from orchestration.plan.references import JOIN_FIELDS, decode_output_schema
from orchestration.predicates.errors import PredicateLimitExceeded
from orchestration.predicates.evidence import shown
from orchestration.predicates.snapshot import node_records
from orchestration.predicates.verdicts import DecidingCell, safe_verdict, select_verdict
from orchestration.tools.contracts import (
    BranchVerdict,
    Judgement,
    PredicateContext,
)
from orchestration.types import (
    BooleanField,
    BranchNode,
    CallDefinition,
    DeclaredField,
    EntryDefinition,
    JoinNode,
    NumberField,
    PlanNode,
    ReasonDefinition,
    SelectNode,
    TransformDefinition,
)

__all__ = ["CEL_INSTALL", "CelCell"]

CEL_INSTALL = "pip install 'orchestration[cel]'  (cel-expr-python)"

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_RESERVED = frozenset(
    "as break const continue else false for function if import in let loop package namespace "
    "null return true var void while".split()
)


def _load_module() -> Any:
    # A plain import statement, not importlib: inside workflow code the sandbox passes modules
    # through only on the import statement, and importlib would re-import the C++ extension
    # in every workflow instance (it refuses a second load), making the cell unavailable.
    try:
        from cel_expr_python import cel
    except ImportError as exc:
        raise CellUnavailableError("cel", CEL_INSTALL, str(exc)) from exc
    return cel


def _field_type(cel: Any, declared: DeclaredField) -> Any:
    if isinstance(declared, NumberField):
        return cel.Type.DYN
    if isinstance(declared, BooleanField):
        return cel.Type.BOOL
    return cel.Type.STRING


def _schema_type(cel: Any, schema: Any) -> Any:
    kind = schema.get("type") if isinstance(schema, Mapping) else None
    t = cel.Type
    simple = {"string": t.STRING, "integer": t.INT, "boolean": t.BOOL, "null": t.NULL}
    if isinstance(kind, str) and kind in simple:
        return simple[kind]
    if kind == "array":
        return t.List(t.DYN)
    if kind == "object":
        return t.Map(t.STRING, t.DYN)
    return t.DYN


def declarations(cel: Any, readable: Sequence[PlanNode]) -> dict[str, Any]:
    """The typed variables a predicate may read, from what its ancestors declare."""
    out: dict[str, Any] = {}
    loose = cel.Type.Map(cel.Type.STRING, cel.Type.DYN)
    for node in readable:
        nid = node.id
        if not _IDENT.match(nid) or nid in _RESERVED or node.kind in ("branch", "select"):
            continue
        d = node.definition
        fields: dict[str, Any] = {}
        if isinstance(d, EntryDefinition):
            fields = {f.path: _field_type(cel, f) for f in d.input}
        elif isinstance(d, CallDefinition | TransformDefinition):
            fields = {f.path: _field_type(cel, f) for f in d.output}
        elif isinstance(node, JoinNode):
            fields = dict.fromkeys(JOIN_FIELDS, cel.Type.STRING)
        elif isinstance(d, ReasonDefinition):
            schema = decode_output_schema(d.output_schema) or {}
            properties = schema.get("properties")
            if isinstance(properties, Mapping):
                fields = {str(k): _schema_type(cel, v) for k, v in properties.items()}
        if fields:
            for path, kind in fields.items():
                out[f"{nid}.{path}"] = kind
        else:
            out[nid] = loose
    return out


def to_cel(value: Any) -> Any:
    """An encodable value as CEL reads it.

    Datetimes and timedeltas become protobuf ``Timestamp``/``Duration`` (CEL's own types; a
    naive datetime is read as UTC), sets become sorted lists, patterns their source, and an
    integer outside int64 a double (CEL has no wider integer).
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if -(2**63) <= value < 2**63 else float(value)
    if isinstance(value, dt.datetime):
        from google.protobuf.timestamp_pb2 import Timestamp

        stamp = Timestamp()
        stamp.FromDatetime(value if value.tzinfo else value.replace(tzinfo=dt.UTC))
        return stamp
    if isinstance(value, dt.timedelta):
        from google.protobuf.duration_pb2 import Duration

        duration = Duration()
        duration.FromTimedelta(value)
        return duration
    if isinstance(value, dict):
        return {
            (k if isinstance(k, str | int | bool) else str(k)): to_cel(v) for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [to_cel(v) for v in value]
    if isinstance(value, set | frozenset):
        return [to_cel(v) for v in sorted(value, key=repr)]
    if isinstance(value, re.Pattern):
        return value.pattern
    return value


def _one_line(error: BaseException) -> str:
    return " ".join(line.strip() for line in str(error).splitlines() if line.strip())


def _plain(value: Any) -> Any:
    """A CEL result as an encodable evidence value."""
    if value is None or isinstance(value, str | bool | int | float | bytes):
        return value
    if isinstance(value, bytearray):
        return bytes(value)
    if isinstance(value, dt.datetime | dt.timedelta):
        return value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return str(value)


class CelCell(DecidingCell):
    """The ``cel`` predicate cell (see the module docstring)."""

    def __init__(self) -> None:
        self._cel: Any = None
        self._env: Any = None
        self._compiled: dict[str, Any] = {}

    @property
    def id(self) -> str:
        """``"cel"``."""
        return "cel"

    @property
    def deterministic(self) -> bool:
        """``True``: CEL reads only its variables."""
        return True

    def _module(self) -> Any:
        if self._cel is None:
            self._cel = _load_module()
            self._env = self._cel.NewEnv()
        return self._cel

    async def load(self) -> None:
        """Import ``cel-expr-python``.

        Raises:
            CellUnavailableError: the package is not installed.

        """
        self._module()

    @staticmethod
    def _source(node: BranchNode | SelectNode) -> str:
        source = node.definition.predicate
        if not isinstance(source, str) or not source.strip():
            raise ValueError(
                f'cel cell: node "{node.id}" must carry a CEL expression SOURCE STRING as its '
                f'predicate, e.g. "count_orders.count >= 1"; got {type(source).__name__}'
            )
        return source

    async def validate(self, node: BranchNode | SelectNode) -> None:
        """Refuse a predicate that is not a CEL expression (syntax only; see ``validate_reads``).

        Raises:
            ValueError: naming the fix.

        """
        self._module()
        source = self._source(node)
        if isinstance(node, SelectNode) and not node.definition.cases:
            raise ValueError(f'cel cell: select "{node.id}" declares no cases')
        try:
            self._env.compile(source, disable_check=True)
        except RuntimeError as exc:
            raise ValueError(
                f'cel cell: node "{node.id}" predicate is not valid CEL: {_one_line(exc)}'
            ) from None

    async def validate_reads(
        self, node: BranchNode | SelectNode, readable: Sequence[PlanNode]
    ) -> None:
        """Type-check the predicate against what the nodes before it declare.

        Raises:
            ValueError: an undeclared variable or field, a type error, or a result type the node
                kind cannot use.

        """
        cel = self._module()
        source = self._source(node)
        env = cel.NewEnv(variables=declarations(cel, readable))
        try:
            expression = env.compile(source)
        except RuntimeError as exc:
            readable_ids = ", ".join(n.id for n in readable) or "(none)"
            raise ValueError(
                f'cel cell: node "{node.id}" predicate does not type-check against the outputs '
                f"it can read (nodes before it: {readable_ids}): {_one_line(exc)}"
            ) from None
        result = expression.return_type()
        wanted = cel.Type.BOOL if isinstance(node, BranchNode) else cel.Type.STRING
        allowed = (
            (wanted, cel.Type.DYN)
            if isinstance(node, BranchNode)
            else (wanted, cel.Type.DYN, cel.Type.NULL)
        )
        if not any(result == t for t in allowed):
            what = "a bool" if isinstance(node, BranchNode) else "a case label string"
            raise ValueError(
                f'cel cell: node "{node.id}" predicate yields {result.name()}, but a '
                f"{node.kind} needs {what}"
            )

    def _compiled_expression(self, source: str) -> Any:
        expression = self._compiled.get(source)
        if expression is None:
            self._module()
            expression = self._env.compile(source, disable_check=True)
            self._compiled[source] = expression
        return expression

    def decide(self, node: BranchNode | SelectNode, ctx: PredicateContext) -> Judgement:
        """The verdict and its evidence, synchronously (see the module docstring).

        Raises:
            PredicateLimitExceeded: the predicate exhausted CEL's iteration budget.

        """
        safe = safe_verdict(node)
        source = node.definition.predicate
        if not isinstance(source, str):
            return Judgement(safe, {"cell": "cel", "error": "the predicate is not a string"})
        try:
            expression = self._compiled_expression(source)
            data = {k: to_cel(v) for k, v in node_records(ctx.outputs).items()}
            result = expression.eval(data=data)
            kind = result.type().name()
            value = result.value()
        except RuntimeError as exc:
            message = _one_line(exc)
            if "budget exceeded" in message:
                raise PredicateLimitExceeded("work", f"cel-cell: {message}") from None
            return Judgement(safe, {"cell": "cel", "error": message})
        if kind in ("ERROR", "UNKNOWN"):
            return Judgement(safe, {"cell": "cel", "error": str(value)})
        if isinstance(node, BranchNode):
            if not isinstance(value, bool):
                return Judgement(
                    safe, {"cell": "cel", "error": f"the predicate yielded {kind}, not a bool"}
                )
            return Judgement(BranchVerdict(matched=value), {"cell": "cel", "result": value})
        evidence = {"cell": "cel", "result": shown(_plain(value))}
        return Judgement(select_verdict(node, value), evidence)
