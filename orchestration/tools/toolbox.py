"""The consumer's tools: a named registry that is both the tier-C allowlist and the executor.

A ``Toolbox`` answers the freeze-time questions of
:class:`~orchestration.tools.contracts.InvocableTools` (is this tool allowed, what does it return)
and holds the functions a worker runs. Tools live on the worker and are registered by name; they
never travel in a plan or a workflow payload.

A tool is a function of its keyword arguments. It may also take a ``context`` parameter to
receive a :class:`ToolContext`: the approved authority claims of the calling node (so the tool
can check the scope of what it is about to touch, where the side effect happens), an
idempotency key stable across retries of the same frame, a heartbeat callback for long work,
and the worker's artifact spool (``context.spool.put(data, SpooledJsonArtifact)``), so a tool
whose result is large returns an artifact the run keeps only a handle of.

Every registered tool has a shape (:class:`~orchestration.tools.shapes.ToolShape`): its input
JSON Schema, given by the author or derived from the signature with pydantic (each keyword
parameter is an argument, required unless it has a default; ``context`` is the worker's, not
an argument; ``**kwargs`` accepts any other argument; ``*args`` cannot be staged and is left
out), and optionally its output schema. Freeze checks each call's arguments against it.

:func:`tool_catalog` lists the tools of any allowlist with their shapes; it feeds both ``orch
tools list`` and the forge's ``list_tools``, so a person at a shell and a model authoring plans
see the same names, signatures and schemas. A tool of an allowlist without shapes is listed
without a signature or input schema: its calls' arguments are not checked at freeze.
"""

from __future__ import annotations

import inspect
import json
import typing
import warnings
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import TypeAdapter

from orchestration.artifacts.spool import ArtifactSpool, MemorySpool
from orchestration.tools.contracts import (
    ArtifactReturn,
    DescribedTools,
    InvocableTools,
    TextReturn,
    ToolReturn,
)
from orchestration.tools.shapes import ToolShape
from orchestration.types import AuthorityClaim, AuthorityVerb, WireModel

__all__ = [
    "ToolContext",
    "ToolEntry",
    "ToolShape",
    "ToolSpec",
    "Toolbox",
    "UnknownToolError",
    "catalog_lines",
    "derive_input_schema",
    "tool_catalog",
]


class UnknownToolError(LookupError):
    """A call named a tool this worker does not have."""


@dataclass(frozen=True)
class ToolContext:
    """What a running tool may know about the call it serves.

    Attributes:
        plan_id: The plan whose run made the call.
        node_id: The calling node.
        frame_key: The frame (node + route) being executed.
        idempotency_key: ``<planId>/<frameKey>``: the same for every attempt of this frame, and
            different for every other frame, so a tool can deduplicate its side effect.
        claims: The calling node's authority claims, each one inside the approved set.
        heartbeat: Report progress; keeps a long call from being declared dead.
        spool: Where to put an artifact's bytes (the worker's file-system spool, or in memory).
    """

    plan_id: str
    node_id: str
    frame_key: str
    idempotency_key: str
    claims: tuple[AuthorityClaim, ...] = ()
    heartbeat: Callable[..., None] = field(default=lambda *details: None, compare=False)
    spool: ArtifactSpool = field(default_factory=MemorySpool, compare=False)

    def allows(self, capability: str, verb: AuthorityVerb, scope: str | None = None) -> bool:
        """Whether a claim grants ``verb`` on ``capability`` (and on ``scope`` when given).

        A claim's scope matches exactly, as ``*``, or as a prefix ending in ``/`` or ``*``
        (``reports/`` covers ``reports/x.txt``).
        """
        for c in self.claims:
            if c.capability != capability or c.verb != verb:
                continue
            if scope is None or _scope_covers(c.scope, scope):
                return True
        return False


def _scope_covers(granted: str, wanted: str) -> bool:
    if granted in ("*", wanted):
        return True
    if granted.endswith("*"):
        return wanted.startswith(granted[:-1])
    if granted.endswith("/"):
        return wanted.startswith(granted)
    return False


ToolFn = Callable[..., Any | Awaitable[Any]]


@dataclass(frozen=True)
class ToolSpec:
    """One registered tool.

    Attributes:
        name: What a call node names in ``tool``.
        fn: The function (sync or async) invoked with the resolved arguments.
        returns: What it returns, for freeze (``TextReturn`` covers strings and field maps).
        description: Shown to authors and models choosing a tool.
        requires: (capability, verb) pairs the calling node must claim; checked by the call
            activity before the tool runs.
        short: The tool answers within seconds and holds no lock worth a heartbeat: its
            replay-safe calls may run as local activities (the fast path), which skip the
            task queue. Its attempts and outcomes are the same either way.
        input_schema: The JSON Schema of its arguments; derived from ``fn``'s signature when
            ``None`` (see the module docstring).
        output_schema: The JSON Schema of what it returns, when declared.
    """

    name: str
    fn: ToolFn
    returns: ToolReturn = field(default_factory=TextReturn)
    description: str = ""
    requires: tuple[tuple[str, AuthorityVerb], ...] = ()
    short: bool = False
    input_schema: Mapping[str, Any] | None = field(default=None, compare=False)
    output_schema: Mapping[str, Any] | None = field(default=None, compare=False)

    def shape(self) -> ToolShape:
        """The tool's shape: :attr:`input_schema` as given, else derived from :attr:`fn`.

        Raises:
            ValueError: a parameter other than ``context`` is annotated ``ToolContext`` (the
                worker passes the context only as ``context``, so that parameter could never
                be supplied).

        """
        if self.input_schema is not None:
            return ToolShape(
                input_schema=self.input_schema,
                output_schema=self.output_schema,
                description=self.description,
            )
        schema, annotations = derive_input_schema(self.fn, self.name)
        return ToolShape(
            input_schema=schema,
            output_schema=self.output_schema,
            description=self.description,
            annotations=annotations,
        )

    @property
    def wants_context(self) -> bool:
        """Whether ``fn`` takes a ``context`` parameter."""
        return "context" in inspect.signature(self.fn).parameters


class Toolbox:
    """A registry of tools by name; implements ``InvocableTools``.

    Example::

        tools = Toolbox()

        @tools.tool("text.upper", description="Upper-case a string")
        def upper(s: str) -> str:
            return s.upper()
    """

    def __init__(self, specs: Iterable[ToolSpec] = ()) -> None:
        self._specs: dict[str, ToolSpec] = {}
        self._shapes: dict[str, ToolShape] = {}
        for spec in specs:
            self.add(spec)

    def add(self, spec: ToolSpec) -> None:
        """Register a tool; a second tool with the same name is refused.

        Raises:
            ValueError: the name is taken, or the shape cannot be derived (see
                :meth:`ToolSpec.shape`).

        """
        if spec.name in self._specs:
            raise ValueError(f"tool {spec.name!r} is registered twice; give each tool one name")
        self._shapes[spec.name] = spec.shape()
        self._specs[spec.name] = spec

    def tool(
        self,
        name: str,
        *,
        returns: ToolReturn | None = None,
        description: str = "",
        requires: Sequence[tuple[str, AuthorityVerb]] = (),
        short: bool = False,
        input_schema: Mapping[str, Any] | None = None,
        output_schema: Mapping[str, Any] | None = None,
    ) -> Callable[[ToolFn], ToolFn]:
        """Decorator registering ``fn`` under ``name``.

        Args:
            name: What a call node names in ``tool``.
            returns: What it returns (default: text or fields).
            description: For authors (default: the first line of ``fn``'s docstring).
            requires: (capability, verb) pairs a calling node must claim.
            short: Its replay-safe calls may run as local activities (see :class:`ToolSpec`).
            input_schema: The JSON Schema of its arguments (default: derived from ``fn``).
            output_schema: The JSON Schema of what it returns, if you declare one.

        """

        def register(fn: ToolFn) -> ToolFn:
            self.add(
                ToolSpec(
                    name=name,
                    fn=fn,
                    returns=returns or TextReturn(),
                    description=description or (inspect.getdoc(fn) or "").split("\n")[0],
                    requires=tuple(requires),
                    short=short,
                    input_schema=input_schema,
                    output_schema=output_schema,
                )
            )
            return fn

        return register

    def shape(self, tool: str) -> ToolShape | None:
        """The shape of ``tool`` (its input schema, output schema and description), or ``None``."""
        return self._shapes.get(tool)

    def has(self, tool: str) -> bool:
        """Whether ``tool`` is registered."""
        return tool in self._specs

    def names(self) -> Sequence[str]:
        """Every registered name, sorted."""
        return sorted(self._specs)

    def short_tools(self) -> tuple[str, ...]:
        """The tools declared ``short`` (their replay-safe calls may run as local activities)."""
        return tuple(name for name in self.names() if self._specs[name].short)

    def returns(self, tool: str) -> ToolReturn | None:
        """The declared return of ``tool``, or ``None`` when unknown."""
        spec = self._specs.get(tool)
        return None if spec is None else spec.returns

    def get(self, tool: str) -> ToolSpec:
        """The spec of ``tool``.

        Raises:
            UnknownToolError: naming the tools this toolbox does have.
        """
        spec = self._specs.get(tool)
        if spec is None:
            raise UnknownToolError(
                f"tool {tool!r} is not in this worker's toolbox; available: "
                f"{', '.join(self.names()) or '(none)'}"
            )
        return spec

    def __iter__(self) -> Any:
        return iter(self._specs.values())

    def __len__(self) -> int:
        return len(self._specs)


def derive_input_schema(fn: ToolFn, name: str = "") -> tuple[dict[str, Any], dict[str, Any]]:
    """The JSON Schema of ``fn``'s arguments, and each argument's Python annotation.

    Each parameter that can be passed by keyword is an argument, typed by its annotation (any
    value when it has none) and required unless it has a default; ``context`` is left out (the
    worker passes the :class:`ToolContext` there); ``**kwargs`` lets other arguments through
    (typed by its annotation); ``*args`` is left out, since a call stages keyword arguments
    only. An annotation pydantic cannot describe accepts any value rather than failing the
    registration.

    Raises:
        ValueError: a parameter other than ``context`` is annotated :class:`ToolContext`.

    """
    hints = _hints(fn)
    properties: dict[str, Any] = {}
    defs: dict[str, Any] = {}
    annotations: dict[str, Any] = {}
    required: list[str] = []
    extra: Any = False
    for param in inspect.signature(fn).parameters.values():
        annotation = hints.get(param.name, Any)
        if param.name == "context":
            continue
        if annotation is ToolContext or (
            isinstance(annotation, type) and issubclass(annotation, ToolContext)
        ):
            raise ValueError(
                f"tool {name or fn!r}: parameter {param.name!r} is annotated ToolContext, but "
                "the worker passes the context only as `context`; rename the parameter to "
                "`context`"
            )
        if param.kind is inspect.Parameter.VAR_POSITIONAL:
            continue
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            extra = _schema_of(annotation, defs) if annotation is not Any else True
            continue
        schema = _schema_of(annotation, defs)
        if param.default is inspect.Parameter.empty:
            required.append(param.name)
        elif _is_json(param.default):
            schema = {**schema, "default": param.default}
        properties[param.name] = schema
        annotations[param.name] = annotation
    schema_out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema_out["required"] = required
    schema_out["additionalProperties"] = extra
    if defs:
        schema_out["$defs"] = defs
    return schema_out, annotations


def _hints(fn: ToolFn) -> dict[str, Any]:
    """``fn``'s resolved annotations; one that cannot be resolved counts as ``Any``."""
    try:
        return typing.get_type_hints(fn, include_extras=True)
    except Exception:  # noqa: BLE001 - a forward reference that does not resolve, a partial
        pass
    hints: dict[str, Any] = {}
    namespace = getattr(fn, "__globals__", {})
    for param in inspect.signature(fn).parameters.values():
        annotation = param.annotation
        if annotation is inspect.Parameter.empty:
            continue
        if isinstance(annotation, str):
            try:
                annotation = eval(annotation, dict(namespace))  # noqa: S307 - the tool's own
            except Exception:  # noqa: BLE001
                annotation = Any
        hints[param.name] = annotation
    return hints


def _schema_of(annotation: Any, defs: dict[str, Any]) -> dict[str, Any]:
    """The JSON Schema of one annotation, its definitions moved into ``defs``."""
    if annotation is Any:
        return {}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            schema = dict(TypeAdapter(annotation).json_schema())
    except Exception:  # noqa: BLE001 - a type pydantic cannot describe accepts anything
        return {"description": f"a {getattr(annotation, '__name__', annotation)!s}; not checked"}
    defs.update(schema.pop("$defs", {}))
    return schema


def _is_json(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


# -- the catalogue ---------------------------------------------------------------------------


class ToolEntry(WireModel):
    """One allowed tool.

    Attributes:
        name: What a call node names in ``tool``.
        description: What it does (empty when the allowlist does not say).
        returns: ``text``, ``bytes``, ``media``, ``artifact:<class>``, or ``undeclared``.
        signature: ``name(arg: type, optional?: type)``, or ``None`` without a shape.
        input_schema: The JSON Schema of its arguments, or ``None`` without a shape.
        output_schema: The JSON Schema of what it returns, when declared.

    """

    name: str
    description: str = ""
    returns: str
    signature: str | None = None
    input_schema: dict[str, Any] | None = None
    output_schema: dict[str, Any] | None = None


def tool_catalog(invocable: InvocableTools) -> list[ToolEntry]:
    """Every tool ``invocable`` allows, sorted by name, with its shape when it has one."""
    entries = []
    for name in sorted(invocable.names()):
        shape = invocable.shape(name) if isinstance(invocable, DescribedTools) else None
        entries.append(
            ToolEntry(
                name=name,
                description=shape.description if shape is not None else "",
                returns=_returns(invocable, name),
                signature=shape.signature(name) if shape is not None else None,
                input_schema=dict(shape.input_schema) if shape is not None else None,
                output_schema=(
                    dict(shape.output_schema)
                    if shape is not None and shape.output_schema is not None
                    else None
                ),
            )
        )
    return entries


def catalog_lines(entries: list[ToolEntry]) -> list[str]:
    """The catalogue as text: a signature line per tool, its returns and description below."""
    if not entries:
        return ["No tools are allowed."]
    lines = []
    for entry in entries:
        head = entry.signature or f"{entry.name}(...)  [no declared shape: arguments unchecked]"
        lines.append(f"{head} -> {entry.returns}")
        if entry.description:
            lines.append(f"    {entry.description}")
    return lines


def _returns(invocable: InvocableTools, name: str) -> str:
    returned = invocable.returns(name)
    if returned is None:
        return "undeclared"
    if isinstance(returned, ArtifactReturn):
        cls = returned.artifact_class
        label = getattr(cls, "artifact_class", None)
        return f"artifact:{label if isinstance(label, str) else cls.__name__}"
    return returned.kind
