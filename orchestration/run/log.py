"""The compact run log: what the engine records, hosts keep, stores persist and queries page.

The contract's ``RunEvent`` carries whole routes and branch-local tables: a frame's
``BranchId`` grows by one segment per step, and every ``edge_taken`` carries its source's
whole output table. Held or shipped as is, a chain of ``n`` calls costs O(n²) routes and O(n³)
table entries. This log records the same run with O(1) per entry:

* **Frames are numbered** in the order they come to exist (the entry's frame is 0), and every
  entry names frames by number.
* **Routes are implied.** A frame produced by an edge has its source's route plus that edge
  (:class:`LogEdge` names both frames); a join's merged frame has its fork frame's route plus
  the join segment (:class:`LogMerge`), which is exactly the contract's correlation prefix.
* **The frontier is implied.** Frames come to exist at ``edge`` (and ``merge``) and leave it at
  ``settle`` or, for a join arrival, at ``arrive``/``merge``; barriers open and fill at
  ``arrive`` and close at ``merge``. So a ``snapshot`` entry marks where the contract's
  ``frontier_snapshot`` stands and carries nothing: no entry grows with the width of the run.
* **Tables are implied.** A frame's branch-local table is its source's table plus the
  source's own output when it settled ``ok`` (a branch or select adds nothing; a failed or
  skipped frame adds nothing); a merged frame's table is the union of its arrivals' tables.
  Artifact handles follow the same rule.

So :func:`orchestration.run.expand.expand_log` rebuilds every contract event exactly, with no
graph and no store, and a prefix of the log expands to a prefix of the events.

Gates add three entries (``gate_open``, ``gate_decided``, ``gate_timeout``), each expanded to
an additive event of its own (``gate_opened``, ``gate_decided``, ``gate_timed_out``); a log
without them reads as before. Entries are
in one-to-one order with the contract's events, except ``merge``, which maps to none (it only
names the merged frame the next ``settle`` settles), and ``item``, which maps to none either (it
names a map item's frame, whose route is the map frame's plus ``{map, index}``, entered and
settled by the next entries).

One entry is additive to the contract: ``attempt`` (:class:`LogAttempt`), one per attempt of a
call, reason or transform frame, expanded to the additive ``attempt_ended`` event. A log written
before it existed has none, and folds to frames with empty attempt histories.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import Field, TypeAdapter

from orchestration.types import (
    ArtifactHandle,
    AttemptResult,
    EdgeHandle,
    EncodableValue,
    ErrorInfo,
    GateDecision,
    GateKind,
    GateRequest,
    InputSchema,
    InterruptionCause,
    OutputItem,
    PlanNodeKind,
    Question,
    RetryReason,
    RunOutcome,
    Usage,
    ValueMap,
    ValueOrigin,
    Verdict,
    WireModel,
)

__all__ = [
    "LOG_ADAPTER",
    "AskedRound",
    "LogArrive",
    "LogCancel",
    "LogAttempt",
    "LogEdge",
    "LogEnd",
    "LogEnter",
    "LogEntry",
    "LogGateDecided",
    "LogGateOpen",
    "LogGateTimeout",
    "LogInterrupt",
    "LogItem",
    "LogMerge",
    "LogSettle",
    "LogSnapshot",
    "LogStart",
    "started_build",
]


class LogStart(WireModel):
    """``run_started``; frame 0 is the entry node's frame, on the empty route.

    ``build`` names the interpreter the run started on: the Temporal worker deployment version
    (``<deploymentName>.<buildId>``) whose worker ran the run's first workflow task, or ``None``
    on an unversioned worker and in the in-process host. The contract's ``run_started`` has no
    such field, so :func:`~orchestration.run.expand.expand_log` does not carry it; it is read
    from the compact log (:func:`started_build`), the ``status`` query and the ``PlanBuild``
    search attribute. Optional and last, so logs written before it existed read unchanged.
    """

    kind: Literal["start"] = "start"
    run_id: str
    digest: str
    entry: str
    at: str
    build: str | None = None


class LogEnter(WireModel):
    """``node_entered``: recorded before the frame's work is handed out (again, on a retry)."""

    kind: Literal["enter"] = "enter"
    frame: int
    attempt: int = 1
    at: str


class LogEdge(WireModel):
    """``edge_taken``: ``edge`` fired from frame ``source``, producing ``frame`` at ``node``."""

    kind: Literal["edge"] = "edge"
    edge: str
    handle: EdgeHandle
    source: int
    frame: int
    node: str
    node_kind: PlanNodeKind
    evidence: EncodableValue = None
    at: str


class LogMerge(WireModel):
    """A join's barrier closed: names the merged frame that the next ``settle`` settles.

    Its route is frame ``fork``'s route plus ``{join: node, of}``; its table is the union of
    the ``arrivals``' tables; ``via`` is the edge of the arrival that completed it.
    """

    kind: Literal["merge"] = "merge"
    frame: int
    node: str
    fork: int
    of: tuple[str, ...]
    via: str | None = None
    arrivals: tuple[int, ...]


class LogItem(WireModel):
    """One item of a map's run begins: defines frame ``frame``, the item's own frame.

    Its node is the map node of frame ``map`` (the map's frame, entered and not yet settled),
    its route that frame's route plus ``{map, index}``, and its tables the map frame's. The
    ``enter`` and ``settle`` (``ok``, the item as its one output) that follow are the item
    frame's; the body's frames come from its ``item`` edges. Like ``merge`` it maps to no
    contract event: it only names the frame the next entries speak of.

    A loop's rounds are recorded the same way (``map`` is the loop's frame, ``index`` the
    round). With ``after``, it defines instead the round's ``until`` check: a frame of the
    loop node whose route is frame ``after``'s (the body frame that ended the round) plus
    ``{map, index}`` and whose tables are that frame's after it settled; the entries that
    follow enter and settle it with the predicate's verdict.
    """

    kind: Literal["item"] = "item"
    frame: int
    map: int
    index: int
    after: int | None = Field(default=None, exclude_if=lambda v: v is None)
    at: str


class LogSettle(WireModel):
    """``node_settled``: ``ok`` with the output items (and an artifact handle), or not.

    A branch or select frame that decided carries its ``verdict`` (and the cell's evidence),
    whether or not an edge fires for it.
    """

    kind: Literal["settle"] = "settle"
    frame: int
    status: Literal["ok", "failed", "skipped"]
    items: tuple[OutputItem, ...] = ()
    artifact: ArtifactHandle | None = None
    handled: bool = False
    error: ErrorInfo | None = None
    attempt: int = 1
    verdict: Verdict | None = None
    at: str


class LogCancel(WireModel):
    """``node_settled`` ``skipped``, reason ``join_cancelled``: a route its join gave up on.

    An ``any`` or quorum join closes before all its routes arrive; every frame still on the
    other routes of that barrier (queued, in flight or halted) is cancelled at that moment and
    fires no edge. A call already in flight may have had its effect: the host asks for its
    cancellation, and whatever it reports afterwards is not recorded.
    """

    kind: Literal["cancel"] = "cancel"
    frame: int
    at: str


class LogArrive(WireModel):
    """A join arrival parked at its open barrier; also a ``frontier_snapshot`` point.

    The barrier is the one of join ``node`` (the frame's node) for the execution of its fork
    that frame ``fork`` is; it closes when ``required`` arrivals have landed. The arrival that
    completes a barrier is recorded by :class:`LogMerge` instead.
    """

    kind: Literal["arrive"] = "arrive"
    frame: int
    fork: int
    required: int
    at: str


class LogSnapshot(WireModel):
    """A ``frontier_snapshot`` point: the frontier is whatever the log implies here.

    The contract's snapshot lists every live frame and every partial barrier; the log implies
    both (frames come from ``edge`` and go at ``settle`` or ``arrive``; barriers open and fill
    at ``arrive`` and close at ``merge``), so this entry carries nothing but its time.
    """

    kind: Literal["snapshot"] = "snapshot"
    at: str


class LogInterrupt(WireModel):
    """``run_interrupted``: why the run stops short, or a frame halted (with ``frame``)."""

    kind: Literal["interrupt"] = "interrupt"
    cause: InterruptionCause
    frame: int | None = None
    at: str


class LogAttempt(WireModel):
    """``attempt_ended`` (additive): one attempt of a call, reason or transform frame ended.

    Written by the hosts' shared run loop (:class:`~orchestration.run.driver.RunDriver`) when it
    learns an attempt's outcome, before it acts on it, so the entries of one frame read
    ``enter(1) attempt(1) [enter(2) attempt(2) ...] settle`` (or end in a halt). Every attempt
    is one execution of the frame's work (one activity execution on Temporal, whose own retry
    policy allows one attempt: the loop retries, and records each attempt here).

    Attributes:
        frame: The frame; ``attempt`` the attempt's number (its ``enter``'s).
        result: ``ok``, ``failed``, ``lost`` (no outcome: a timeout after it started, a worker
            that died, or found unsettled on resume) or ``skipped`` (a scripted double).
        started: When the host started the attempt (after its backoff pause); ``at`` when it
            learned the outcome.
        error: A failed attempt's error (ruling 29's name and message), or what was lost.
        reason: Why this attempt was made (``None`` for the first): see
            :data:`~orchestration.types.RetryReason`.
        usage: Tokens and cost the attempt spent on a model, with each model turn.
        origins: On a call's first attempt, where each resolved argument came from.

    Optional fields are left out of the wire form when absent, so the entry of a plain call's
    successful first attempt is a few dozen bytes whatever the run's size.
    """

    kind: Literal["attempt"] = "attempt"
    frame: int
    attempt: int
    result: AttemptResult
    started: str
    error: ErrorInfo | None = Field(default=None, exclude_if=lambda v: v is None)
    reason: RetryReason | None = Field(default=None, exclude_if=lambda v: v is None)
    usage: Usage | None = Field(default=None, exclude_if=lambda v: v is None)
    origins: dict[str, tuple[ValueOrigin, ...]] | None = Field(
        default=None, exclude_if=lambda v: v is None
    )
    at: str


class LogEnd(WireModel):
    """``run_settled``."""

    kind: Literal["end"] = "end"
    outcome: RunOutcome
    at: str


class AskedRound(WireModel):
    """One round of a reason node's questions: what the model asked, and what it was answered.

    ``call`` is the id of the model's ``ask_questions`` tool call, so the conversation goes on
    from that very call (its answers are that call's result).
    """

    call: str | None = None
    questions: tuple[Question, ...]
    answers: ValueMap


class LogGateOpen(WireModel):
    """``gate_opened``: frame ``frame`` waits for a person at its gate (request ``request``).

    What the person is shown travels with the request, so every reader (the fold, the command
    line, a resumed run) sees exactly what was asked: before a call (``gate: arguments``, the
    frame not yet entered) its resolved ``args`` and their ``digest``; of a result, the held
    output ``items`` (and ``artifact``); an input request's resolved ``prompt`` and ``schema``;
    a reason node's ``questions`` (and ``call``, the model's tool-call id, so the conversation
    goes on from it). ``deadline`` is when the request times out.
    """

    kind: Literal["gate_open"] = "gate_open"
    frame: int
    request: int = 1
    gate: GateKind
    summary: str | None = None
    args: ValueMap | None = None
    digest: str | None = None
    editable: tuple[str, ...] | None = None
    items: tuple[OutputItem, ...] | None = None
    artifact: ArtifactHandle | None = None
    prompt: str | None = None
    schema_: InputSchema | None = Field(default=None, alias="schema")
    questions: tuple[Question, ...] | None = None
    call: str | None = None
    deadline: str | None = None
    at: str

    def as_request(self) -> GateRequest:
        """The request as the contract's events and the projection show it (still open)."""
        return GateRequest(
            request=self.request,
            gate=self.gate,
            requested_at=self.at,
            summary=self.summary,
            args=self.args,
            digest=self.digest,
            editable=self.editable,
            items=self.items,
            prompt=self.prompt,
            schema_=self.schema_,
            questions=self.questions,
            deadline=self.deadline,
        )


class LogGateDecided(WireModel):
    """``gate_decided``: a request of frame ``frame`` was decided, by ``by``.

    ``automatic`` when autonomous mode approved it. ``args`` are the approver's edited
    arguments and ``digest`` the digest of what runs; ``answers`` a question round's answers.
    An input request's response is the frame's output, recorded by the ``settle`` that
    follows, not here.
    """

    kind: Literal["gate_decided"] = "gate_decided"
    frame: int
    request: int = 1
    decision: GateDecision
    by: str
    automatic: bool = False
    feedback: str | None = None
    args: ValueMap | None = None
    digest: str | None = None
    answers: ValueMap | None = None
    at: str


class LogGateTimeout(WireModel):
    """``gate_timed_out``: a request reached its deadline; ``policy`` is what that meant."""

    kind: Literal["gate_timeout"] = "gate_timeout"
    frame: int
    request: int = 1
    policy: Literal["reject", "default", "halt"]
    at: str


LogEntry = Annotated[
    LogStart
    | LogEnter
    | LogEdge
    | LogArrive
    | LogMerge
    | LogItem
    | LogSettle
    | LogCancel
    | LogSnapshot
    | LogInterrupt
    | LogEnd
    | LogAttempt
    | LogGateOpen
    | LogGateDecided
    | LogGateTimeout,
    Field(discriminator="kind"),
]
"""One entry of the compact run log."""

LOG_ADAPTER: TypeAdapter[list[LogEntry]] = TypeAdapter(list[LogEntry])
"""Validates and serialises a list of entries (stores and pages use it)."""


def started_build(entries: Sequence[LogEntry]) -> str | None:
    """The build a run started on (its ``start`` entry's ``build``), if the log records one."""
    first = entries[0] if entries else None
    return first.build if isinstance(first, LogStart) else None
