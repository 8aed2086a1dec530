"""Seams the consumer fills: the tool allowlist (tier C) and the predicate cells.

These are behaviour, not data, so they are Protocols rather than wire models: they live on the
worker and in the process that freezes plans, and never travel inside a plan or a payload.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from orchestration.types import (
    BranchNode,
    FrameRef,
    NodeOutput,
    PlanNode,
    RunEvent,
    SelectNode,
)

__all__ = [
    "ArtifactReturn",
    "BranchVerdict",
    "BytesReturn",
    "ExplainingEvaluator",
    "InvocableTools",
    "Judgement",
    "MediaReturn",
    "PredicateContext",
    "PredicateEvaluator",
    "PredicateVerdict",
    "RunLogReader",
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

    The evidence is recorded on every ``edge_taken`` the verdict fires, so an operator reading
    the run sees why a branch went the way it did (an expression's value, or the error that
    made a cell fall back to its safe verdict).
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

    Freeze calls ``validate_reads`` after ``validate`` with every node that may precede the
    branch or select on some route (its ancestors, in plan order), so a predicate reading a
    field no ancestor declares, or comparing it with the wrong type, is refused before approval.
    """

    async def validate_reads(
        self, node: BranchNode | SelectNode, readable: Sequence[PlanNode]
    ) -> None:
        """Raise ``ValueError`` naming the fix when the predicate does not type-check."""
        ...


@runtime_checkable
class RunLogReader(Protocol):
    """Reads a plan's run-event log (``workers.runs.TemporalRuns`` is one).

    The facade folds what it returns (``fold_run``) for the as-executed view; it never talks
    to Temporal itself.
    """

    async def read_log(self, plan_id: str) -> list[RunEvent]:
        """The whole log of the plan's run.

        Raises:
            RunRefusedError: ``run_not_found`` when the plan has no started run.

        """
        ...
