"""What the engine hands a host (``Dispatch``) and what the host hands back (a settle result).

These are plain frozen values, built and read in the host's own process: a workflow builds a
result from an activity's response and passes it to ``RunEngine.settle``; they never travel in a
payload themselves, so they are dataclasses rather than wire models.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from orchestration.contracts import PredicateContext, PredicateVerdict
from orchestration.types import (
    ArtifactHandle,
    CallNode,
    FrameRef,
    OutputItem,
    PlanNode,
)

__all__ = [
    "Decided",
    "Dispatch",
    "Failed",
    "FailureKind",
    "SettleResult",
    "Skipped",
    "Succeeded",
]


class Dispatch(NamedTuple):
    """One frame the host must run now, with everything it reads already resolved.

    Immutable (a named tuple, so building one per frame stays cheap).

    Attributes:
        key: The frame key ``<nodeId>:<branchKey>``: unique in the run and stable across
            replays, so it is the right seed for an activity id and an idempotency key.
        frame: The frame.
        node: The frame's node, as frozen in the plan.
        args: For a ``call``, its arguments with every reference resolved (read-only).
        prompt_parts: For a ``reason`` node, each prompt part as text, in order.
        source: For a ``transform``, the handle of the artifact it reads.
        context: For a ``branch`` or ``select``, what its predicate cell may read.
        attempt: 1 for the first dispatch of this frame, then one more per ``retry``.

    """

    key: str
    frame: FrameRef
    node: PlanNode
    args: Mapping[str, Any] | None = None
    prompt_parts: tuple[str, ...] = ()
    source: ArtifactHandle | None = None
    context: PredicateContext | None = None
    attempt: int = 1

    @property
    def kind(self) -> str:
        """The node kind: ``call``, ``reason``, ``transform``, ``branch`` or ``select``."""
        return self.node.kind

    @property
    def prompt(self) -> str:
        """A reason node's prompt: its parts joined with no separator."""
        return "".join(self.prompt_parts)

    @property
    def tool(self) -> str | None:
        """A call's tool name."""
        return self.node.definition.tool if isinstance(self.node, CallNode) else None


@dataclass(frozen=True, slots=True)
class Succeeded:
    """A ``call``, ``reason`` or ``transform`` produced its output.

    Attributes:
        items: The output items, in order: ``OutputItem``s, or mappings of field values
            (checked against the encodable subset when settled).
        artifact: For a call whose tool returned an artifact, its handle; it joins the
            branch-local artifact table under the frame's key.

    """

    items: tuple[OutputItem | Mapping[str, Any], ...]
    artifact: ArtifactHandle | None = None

    @classmethod
    def one(
        cls, fields: Mapping[str, Any] | None = None, artifact: ArtifactHandle | None = None
    ) -> Succeeded:
        """A single item of ``fields``."""
        return cls(items=(dict(fields or {}),), artifact=artifact)


@dataclass(frozen=True, slots=True)
class Decided:
    """A ``branch`` or ``select`` cell's verdict, and the evidence it offers for it.

    ``evidence`` (an encodable value, or ``None``) is recorded on every edge the verdict fires.
    """

    verdict: PredicateVerdict
    evidence: Any = None


FailureKind = Literal["error", "predicate", "output_schema"]
"""What failed: the node's own work, its predicate cell, or a reason node's schema attempts."""


@dataclass(frozen=True, slots=True)
class Failed:
    """The frame failed.

    An ``error`` edge, if the node has one, takes the failure (``handled``). Without one the
    run ends, and ``kind`` picks the cause it ends with: ``error`` → ``node_failed``
    (aborted), ``predicate`` → ``predicate_unevaluatable`` (halted), ``output_schema`` →
    ``output_schema_violation`` (aborted).

    Attributes:
        name: The error's name (an exception class name or a stable code).
        message: What happened, for the operator.
        kind: See above.

    """

    name: str
    message: str
    kind: FailureKind = "error"

    @classmethod
    def of(cls, error: BaseException, kind: FailureKind = "error") -> Failed:
        """A failure named after an exception's class."""
        return cls(name=type(error).__name__, message=str(error), kind=kind)


@dataclass(frozen=True, slots=True)
class Skipped:
    """An indeterminate call resolved by ``onIndeterminate: skip`` (or an operator's skip).

    The frame settles ``skipped`` with no output, and its success edges fire: the plan goes on
    without it, and a later reference to its output reads nothing.
    """


SettleResult = Succeeded | Decided | Failed | Skipped
"""What ``RunEngine.settle`` accepts."""
