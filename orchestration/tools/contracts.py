"""Seams the consumer fills: the tool allowlist (tier C) and the predicate cells.

These are behaviour, not data, so they are Protocols rather than wire models: they live on the
worker and in the process that freezes plans, and never travel inside a plan or a payload.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from orchestration.types import (
    BranchNode,
    FrameRef,
    NodeOutput,
    PlanNode,
    SelectNode,
)

if TYPE_CHECKING:  # only an annotation here: the workflow imports this module, not jsonschema
    from orchestration.tools.shapes import ToolShape

__all__ = [
    "ArtifactReturn",
    "BranchVerdict",
    "BytesReturn",
    "DescribedTools",
    "ExplainingEvaluator",
    "InvocableTools",
    "Judgement",
    "MediaReturn",
    "PredicateContext",
    "PredicateEvaluator",
    "PredicateRead",
    "PredicateVerdict",
    "ReadingEvaluator",
    "SelectVerdict",
    "TextReturn",
    "ToolReturn",
    "TypedEvaluator",
]


@dataclass(frozen=True)
class TextReturn:
    """The tool returns a string (or a mapping of declared fields)."""

    kind: Literal["text"] = "text"


@dataclass(frozen=True)
class BytesReturn:
    """The tool returns bytes: not pathable, so it cannot feed declared fields."""

    kind: Literal["bytes"] = "bytes"


@dataclass(frozen=True)
class MediaReturn:
    """The tool returns media: not pathable, so it cannot feed declared fields."""

    kind: Literal["media"] = "media"


@dataclass(frozen=True)
class ArtifactReturn:
    """The tool returns an artifact of ``artifact_class``; transforms may read it."""

    artifact_class: type
    kind: Literal["artifact"] = "artifact"


ToolReturn = TextReturn | BytesReturn | MediaReturn | ArtifactReturn


@runtime_checkable
class InvocableTools(Protocol):
    """The tier-C boundary: which tools a staged call may invoke, and what each returns."""

    def has(self, tool: str) -> bool:
        """Whether a staged call may invoke ``tool`` unattended."""
        ...

    def names(self) -> Sequence[str]:
        """Every allowed tool name, for refusals that name what IS available."""
        ...

    def returns(self, tool: str) -> ToolReturn | None:
        """What ``tool`` returns; ``None`` when undeclared (a transform over it is refused)."""
        ...


@runtime_checkable
class DescribedTools(Protocol):
    """An allowlist that also knows each tool's shape (a :class:`~.toolbox.Toolbox`).

    Freeze checks the arguments of a call to a described tool against its input schema; the
    calls of an allowlist without shapes (names only) are not checked.
    """

    def shape(self, tool: str) -> ToolShape | None:
        """``tool``'s input (and output) shape, or ``None`` when it has none."""
        ...


@dataclass(frozen=True)
class BranchVerdict:
    """A branch's decision."""

    matched: bool
    kind: Literal["branch"] = "branch"


@dataclass(frozen=True)
class SelectVerdict:
    """A select's decision: a case label, or ``None`` for the default edge."""

    case_label: str | None
    kind: Literal["select"] = "select"


PredicateVerdict = BranchVerdict | SelectVerdict


@dataclass(frozen=True)
class PredicateContext:
    """What a cell may read: the frame's branch-local outputs and the frame. Nothing live."""

    outputs: Mapping[str, NodeOutput]
    frame: FrameRef


@runtime_checkable
class PredicateEvaluator(Protocol):
    """A predicate cell: interprets a branch/select node's own predicate form.

    ``deterministic`` cells (no clock, no I/O, no randomness) are evaluated inside workflow
    code; others run in a local activity.
    """

    @property
    def id(self) -> str:
        """How a node names this cell in ``evaluator``."""
        ...

    @property
    def deterministic(self) -> bool:
        """Whether ``evaluate`` is pure enough to run inside a workflow."""
        ...

    async def load(self) -> None:
        """Acquire what the cell needs; a missing dependency fails here, at construction."""
        ...

    async def validate(self, node: BranchNode | SelectNode) -> None:
        """Raise ``ValueError`` naming the fix when the predicate shape is unusable."""
        ...

    async def evaluate(
        self, node: BranchNode | SelectNode, ctx: PredicateContext
    ) -> PredicateVerdict:
        """Decide the node's outcome for one frame."""
        ...


@dataclass(frozen=True)
class Judgement:
    """A verdict and the evidence for it (an encodable value, or ``None``).

    Every verdict, a no-match included, carries evidence, so an operator reading the run sees
    why a branch went the way it did. The bundled cells all give a ``dict``:

    * ``cell``: the cell's id.
    * ``result``: what the predicate produced: ``True``/``False`` for a structured branch, the
      label picked (or ``None``) for a structured select, the expression's value for a source
      cell (CEL, jexl, Lua). Absent when the predicate could not be evaluated.
    * ``error``: why the cell fell back to its safe verdict (``no_match`` / ``default``), when
      it did; ``result`` is then absent.
    * ``checks`` (structured): each leaf evaluated, in order (combinators short-circuit, so a
      leaf that was not needed is not listed): ``path``, ``op``, ``value`` (when the op takes
      one), ``actual`` (the value read; absent, with ``missing: true``, when the path read
      nothing), ``holds``, and for a select the ``case`` it belongs to. At most
      :data:`~orchestration.predicates.evidence.MAX_CHECKS` are listed; ``omitted`` counts the
      rest.
    * ``reads`` (jexl): the node fields the source names and the values they had on this frame,
      as ``{"<nodeId>.<field>": value}`` (a field that was not there is absent).

    Values are shown bounded (long strings and large containers are cut, see
    :func:`~orchestration.predicates.evidence.shown`), so evidence stays small in history.
    """

    verdict: PredicateVerdict
    evidence: Any = None


@runtime_checkable
class ExplainingEvaluator(Protocol):
    """A cell that can say why: ``judge`` returns the verdict with its evidence."""

    async def judge(self, node: BranchNode | SelectNode, ctx: PredicateContext) -> Judgement:
        """Decide the node's outcome for one frame, with evidence."""
        ...


@runtime_checkable
class TypedEvaluator(Protocol):
    """A cell that type-checks a predicate against what the plan declares it can read.

    Freeze calls ``validate_reads`` after ``validate`` with every node that runs before the
    branch or select on EVERY route (it dominates the node, or lies inside a diamond whose join
    does), in plan order: only those are sure to be in the frame's table, so a predicate reading
    anything else, a field no such node declares, or comparing it with the wrong type, is
    refused before approval.
    """

    async def validate_reads(
        self, node: BranchNode | SelectNode, readable: Sequence[PlanNode]
    ) -> None:
        """Raise ``ValueError`` naming the fix when the predicate does not type-check."""
        ...


@dataclass(frozen=True)
class PredicateRead:
    """One node field a predicate reads, as its cell finds it without running it.

    Attributes:
        node: The node id the read names.
        path: The dot path under that node's record (``None`` reads the whole record).
        location: Where the read sits in the predicate, for the issue message (``all[0]``,
            ``case "big" › any[1]``, or the source text of the read).
        table_key: The ``<nodeId>:<branchKey>`` the read names, when it names a raw table key
            instead of a node id.

    """

    node: str
    path: str | None
    location: str
    table_key: str | None = None


@runtime_checkable
class ReadingEvaluator(Protocol):
    """A cell that can list the node fields a predicate reads, statically.

    Freeze checks each read like a ``NodeRef``: the node exists, runs before the branch or
    select on every route, and declares the field; anything else is a blocking issue. A cell
    lists only what it can identify for certain (a read computed at run time is not listed).
    """

    def predicate_reads(self, node: BranchNode | SelectNode) -> Sequence[PredicateRead]:
        """Every read the predicate makes that can be known before it runs, in order."""
        ...
