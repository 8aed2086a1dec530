"""What the engine hands a host (``Dispatch``) and what the host hands back (a settle result).

These are plain frozen values, built and read in the host's own process: a workflow builds a
result from an activity's response and passes it to ``RunEngine.settle``; they never travel in a
payload themselves, so they are dataclasses rather than wire models.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from orchestration.run.log import AskedRound
from orchestration.run.routes import Route
from orchestration.tools.contracts import PredicateContext, PredicateVerdict
from orchestration.types import (
    ArtifactHandle,
    CallNode,
    FrameRef,
    OutputItem,
    PlanNode,
    Question,
    Usage,
)

__all__ = [
    "TRANSIENT_NAMES",
    "Asked",
    "Decided",
    "Dispatch",
    "Failed",
    "FailureKind",
    "SettleResult",
    "Skipped",
    "Succeeded",
    "is_transient",
]


class Dispatch:
    """One frame the host must run now, with everything it reads already resolved.

    Built once per dispatched frame and never changed (a retry hands out a copy with the next
    attempt number).

    Attributes:
        key: The frame's name: its contract key ``<nodeId>:<branchKey>`` while that is at most
            200 characters, else ``<nodeId>:~<digest>`` (see ``Route.ident``). Unique in the run
            and stable across replays, so it seeds activity ids and idempotency keys.
        number: The frame's number in the compact log.
        node: The frame's node, as frozen in the plan.
        args: For a ``call``, its arguments with every reference resolved (read-only).
        prompt_parts: For a ``reason`` node, each prompt part as text, in order.
        source: For a ``transform``, the handle of the artifact it reads.
        context: For a ``branch`` or ``select``, what its predicate cell may read.
        attempt: 1 for the first dispatch of this frame, then one more per ``retry`` (and per
            round of a reason node's questions).
        rounds: For a ``reason`` node that asked, each round's questions and answers: the
            conversation goes on from them.
        tries: Attempts of the current round (what the retry budget counts): ``attempt``
            less the attempts spent before the latest round of questions.
        args_digest: For a call approved at its gate, the digest of the approved arguments
            (the call re-checks it before the tool runs).

    """

    __slots__ = (
        "_route",
        "_via",
        "args",
        "args_digest",
        "attempt",
        "context",
        "key",
        "node",
        "number",
        "prompt_parts",
        "rounds",
        "source",
        "tries",
    )

    def __init__(
        self,
        key: str,
        number: int,
        node: PlanNode,
        route: Route,
        via: str | None,
        *,
        args: Mapping[str, Any] | None = None,
        prompt_parts: tuple[str, ...] = (),
        source: ArtifactHandle | None = None,
        context: PredicateContext | None = None,
        attempt: int = 1,
        rounds: tuple[AskedRound, ...] = (),
        tries: int | None = None,
        args_digest: str | None = None,
    ) -> None:
        self.key = key
        self.number = number
        self.node = node
        self._route = route
        self._via = via
        self.args = args
        self.prompt_parts = prompt_parts
        self.source = source
        self.context = context
        self.attempt = attempt
        self.rounds = rounds
        self.tries = attempt if tries is None else tries
        self.args_digest = args_digest

    def again(self, attempt: int) -> Dispatch:
        """The same dispatch for attempt ``attempt``."""
        return Dispatch(
            self.key,
            self.number,
            self.node,
            self._route,
            self._via,
            args=self.args,
            prompt_parts=self.prompt_parts,
            source=self.source,
            context=self.context,
            attempt=attempt,
            rounds=self.rounds,
            tries=self.tries + attempt - self.attempt,
            args_digest=self.args_digest,
        )

    @property
    def frame(self) -> FrameRef:
        """The contract's reference to this frame (its route rendered on first use)."""
        return FrameRef(
            node_id=self.node.id,
            kind=self.node.kind,
            branch_id=self._route.branch_id(),
            via_edge_id=self._via,
        )

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

    def __repr__(self) -> str:
        return f"Dispatch({self.key!r}, attempt={self.attempt})"


TRANSIENT_NAMES = frozenset(
    {
        # builtins
        "ConnectionError",
        "ConnectionResetError",
        "ConnectionRefusedError",
        "ConnectionAbortedError",
        "BrokenPipeError",
        "TimeoutError",
        # httpx / httpcore transport failures
        "TransportError",
        "NetworkError",
        "TimeoutException",
        # a model provider that is overloaded or unreachable
        "ReasonerUnavailableError",
        "reasoner_unavailable",
    }
)
"""Exception classes (anywhere in an error's class hierarchy) that make a failure transient."""


def is_transient(error: BaseException) -> bool:
    """Whether an exception is worth trying again: a network or timeout error, or so marked.

    A tool marks an error transient with a true ``transient`` attribute (or raises
    :class:`~orchestration.tools.toolbox.TransientToolError`). ``TypeError`` never is: it is how a
    misspelt or missing argument fails, and trying again cannot fix it.
    """
    if isinstance(error, TypeError):
        return False
    if getattr(error, "transient", False) is True:
        return True
    return any(cls.__name__ in TRANSIENT_NAMES for cls in type(error).__mro__)


@dataclass(frozen=True, slots=True)
class Succeeded:
    """A ``call``, ``reason`` or ``transform`` produced its output.

    Attributes:
        items: The output items, in order: ``OutputItem``s, or mappings of field values
            (checked against the encodable subset when settled).
        artifact: For a call whose tool returned an artifact, its handle; it joins the
            branch-local artifact table under the frame's key.
        usage: What the attempt spent on a model (recorded with the attempt, not settled).

    """

    items: tuple[OutputItem | Mapping[str, Any], ...]
    artifact: ArtifactHandle | None = None
    usage: Usage | None = None
    """What the attempt spent on a model (a reason frame's), recorded on its ``attempt``."""

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


FailureKind = Literal["error", "predicate", "output_schema", "budget"]
"""What failed: the node's own work, its predicate cell, a reason node's schema attempts, or an
attempt that stopped because a budget it counts against was spent (the run halts
``budget_exhausted``: see :mod:`orchestration.run.budgets`)."""


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
        transient: Worth trying again (a network or timeout error, or so marked); a host
            retries a transient failure of a frame that may be repeated (see
            :func:`is_transient`, :mod:`orchestration.run.policy`), and the engine ignores it.

    """

    name: str
    message: str
    kind: FailureKind = "error"
    transient: bool = False
    usage: Usage | None = None
    """What the attempt spent on a model before it failed (recorded with the attempt)."""

    @classmethod
    def of(cls, error: BaseException, kind: FailureKind = "error") -> Failed:
        """A failure named after an exception's class (transient when the error is)."""
        return cls(
            name=type(error).__name__, message=str(error), kind=kind, transient=is_transient(error)
        )


@dataclass(frozen=True, slots=True)
class Skipped:
    """An indeterminate call resolved by ``onIndeterminate: skip`` (or an operator's skip).

    The frame settles ``skipped`` with no output, and its success edges fire: the plan goes on
    without it, and a later reference to its output reads nothing.
    """


@dataclass(frozen=True, slots=True)
class Asked:
    """A reason frame's attempt asked a person questions instead of answering.

    Not a settlement: the frame waits for the answers (``RunEngine.ask``), and then the same
    conversation goes on with them.

    Attributes:
        questions: What the model asked, each with the widget its answer needs.
        call: The id of the model's ``ask_questions`` tool call.
        usage: What the attempt's model turns spent (its attempt is recorded ``asked``).

    """

    questions: tuple[Question, ...]
    call: str | None = None
    usage: Usage | None = None


SettleResult = Succeeded | Decided | Failed | Skipped
"""What ``RunEngine.settle`` accepts."""
