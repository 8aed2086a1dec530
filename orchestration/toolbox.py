"""The consumer's tools: a named registry that is both the tier-C allowlist and the executor.

A ``Toolbox`` answers the freeze-time questions of
:class:`~orchestration.contracts.InvocableTools` (is this tool allowed, what does it return) and
holds the functions a worker runs. Tools live on the worker and are registered by name; they
never travel in a plan or a workflow payload.

A tool is a function of its keyword arguments. It may also take a ``context`` parameter to
receive a :class:`ToolContext`: the approved authority claims of the calling node (so the tool
can check the scope of what it is about to touch, where the side effect happens), an
idempotency key stable across retries of the same frame, a heartbeat callback for long work,
and the worker's artifact spool (``context.spool.put(data, SpooledJsonArtifact)``), so a tool
whose result is large returns an artifact the run keeps only a handle of.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from orchestration.artifacts.spool import ArtifactSpool, MemorySpool
from orchestration.contracts import TextReturn, ToolReturn
from orchestration.types import AuthorityClaim, AuthorityVerb

__all__ = ["ToolContext", "ToolSpec", "Toolbox", "UnknownToolError"]


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
    """

    name: str
    fn: ToolFn
    returns: ToolReturn = field(default_factory=TextReturn)
    description: str = ""
    requires: tuple[tuple[str, AuthorityVerb], ...] = ()
    short: bool = False

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
        for spec in specs:
            self.add(spec)

    def add(self, spec: ToolSpec) -> None:
        """Register a tool; a second tool with the same name is refused."""
        if spec.name in self._specs:
            raise ValueError(f"tool {spec.name!r} is registered twice; give each tool one name")
        self._specs[spec.name] = spec

    def tool(
        self,
        name: str,
        *,
        returns: ToolReturn | None = None,
        description: str = "",
        requires: Sequence[tuple[str, AuthorityVerb]] = (),
        short: bool = False,
    ) -> Callable[[ToolFn], ToolFn]:
        """Decorator registering ``fn`` under ``name`` (``short``: see :class:`ToolSpec`)."""

        def register(fn: ToolFn) -> ToolFn:
            self.add(
                ToolSpec(
                    name=name,
                    fn=fn,
                    returns=returns or TextReturn(),
                    description=description or (inspect.getdoc(fn) or "").split("\n")[0],
                    requires=tuple(requires),
                    short=short,
                )
            )
            return fn

        return register

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
