"""An engine's state rebuilt from its compact log, for :meth:`RunEngine.resume`.

The log is read forward with :class:`~orchestration.run.trace.LogTrace`, building the engine's
own tables (keyed by frame number), so a resumed engine holds exactly the frames, tables and
barriers the unbroken one held at the same point of the log, what its attempts spent on
models, and (recomputed from the plan, so a log written before provenance was recorded resumes
with it too) which outputs trace back to a model.

Gates come back too (:class:`RestoredGate`): a frame whose request is open waits at it again
(the same request, the same deadline); one whose request timed out with ``halt`` or was
abandoned when the run ended is asked again; a call approved before it ran runs with the
approved arguments, and a reason node goes on with every round of questions answered so far.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from orchestration.errors import UnrunnablePlanError
from orchestration.run.budgets import Spend
from orchestration.run.engine.compiled import CompiledPlan
from orchestration.run.engine.state import Barrier, Frame, Items
from orchestration.run.log import AskedRound, LogEntry, LogGateOpen
from orchestration.run.provenance import call_refs, reads_model
from orchestration.run.resolve import entry_for
from orchestration.run.routes import EdgeSegment, ItemSegment, Route
from orchestration.run.tables import FrameTable
from orchestration.run.trace import LogTrace, TracedFrame, TracedRequest
from orchestration.types import (
    ArtifactHandle,
    CallNode,
    GateOutcome,
    InterruptionCause,
    LoopNode,
    MapNode,
    OutputItem,
    PlanNode,
    TransformNode,
)

__all__ = [
    "ENGINE_TABLES",
    "RestoredGate",
    "RestoredRun",
    "frame_on",
    "gates_of",
    "restore_from_log",
]

Outputs = FrameTable[Items]
Artifacts = FrameTable[ArtifactHandle]
_Traced = TracedFrame[Outputs, Artifacts]
_NO_OUTPUTS: Outputs = FrameTable()
_NO_ARTIFACTS: Artifacts = FrameTable()


class _EngineTables:
    """The engine's tables: keyed by frame number, each entry with its node and route."""

    def empty_outputs(self) -> Outputs:
        return _NO_OUTPUTS

    def empty_artifacts(self) -> Artifacts:
        return _NO_ARTIFACTS

    def add_output(self, table: Outputs, frame: _Traced, items: tuple[OutputItem, ...]) -> Outputs:
        return table.set(frame.number, frame.node, frame.route, items)

    def add_artifact(self, table: Artifacts, frame: _Traced, handle: ArtifactHandle) -> Artifacts:
        return table.set(frame.number, frame.node, frame.route, handle)

    def union_outputs(self, tables: Sequence[Outputs]) -> Outputs:
        return FrameTable.union(tables)

    def union_artifacts(self, tables: Sequence[Artifacts]) -> Artifacts:
        return FrameTable.union(tables)


ENGINE_TABLES = _EngineTables()
"""The table algebra of the engine's own tables."""


@dataclass
class RestoredGate:
    """A frame's gates as a resumed or continued engine takes them up.

    Attributes:
        open: The request the frame waits at (``None``: it waits at none).
        again: Ask ``open`` again as a new request (it timed out with ``halt``, or the run
            ended while it was open) rather than keep waiting at it.
        approved: A call's approved arguments (it runs with these).
        rounds: A reason frame's answered rounds of questions.
        tries_before: Attempts spent before the latest round.
        attempt: The frame's attempt so far (0: unknown).

    """

    open: LogGateOpen | None = None
    again: bool = False
    approved: dict[str, Any] | None = None
    rounds: tuple[AskedRound, ...] = ()
    tries_before: int = 0
    attempt: int = 0


def _outcome(request: TracedRequest) -> GateOutcome | None:
    if request.decided is not None:
        return request.decided.decision
    if request.timed_out is not None:
        return "timed_out"
    return "abandoned" if request.abandoned else None


def gates_of(requests: Sequence[TracedRequest], attempt: int = 0) -> RestoredGate:
    """What a frame's requests, as the log tells them, leave it with."""
    last = requests[-1]
    rounds = tuple(
        AskedRound(
            call=r.opened.call, questions=r.opened.questions or (), answers=r.decided.answers or {}
        )
        for r in requests
        if r.opened.gate == "questions" and r.decided is not None and r.decided.answers is not None
    )
    approved: dict[str, Any] | None = None
    decided = last.decided
    if last.opened.gate == "arguments" and decided is not None and decided.decision == "approved":
        approved = dict(decided.args if decided.args is not None else last.opened.args or {})
    open_request: LogGateOpen | None = None
    again = False
    if last.open:
        open_request = last.opened
    elif last.abandoned or (last.timed_out is not None and last.timed_out.policy == "halt"):
        open_request, again = last.opened, True
    return RestoredGate(
        open=open_request,
        again=again,
        approved=approved,
        rounds=rounds,
        tries_before=attempt - 1 if rounds else 0,
        attempt=attempt,
    )


@dataclass
class RestoredRun:
    """What a resumed engine starts from.

    Attributes:
        run_id: The run's id; ``digest`` the plan digest it started against.
        next_frame: The number the next new frame gets.
        steps: Distinct frames entered so far.
        outcome: ``running``, or how the run ended.
        cause: The run's cause to end, once recorded.
        frames: The frontier, in creation order, each with whether it was entered.
        barriers: The open barriers, in the order they opened.
        halted: Frames whose interruption is unresolved, by number.
        entry_entered: Whether the entry frame was entered; ``entry_settled`` whether it settled.
        spend: What the run's attempts spent on models; ``node_spend`` per node id.
        gates: The frontier frames' gates, by number.
        gate_history: Every gated frame's last request and how it closed, by frame key.

    """

    run_id: str
    digest: str
    next_frame: int
    steps: int
    outcome: str
    cause: InterruptionCause | None
    frames: list[tuple[Frame, bool]] = field(default_factory=list)
    barriers: list[Barrier] = field(default_factory=list)
    halted: dict[int, InterruptionCause] = field(default_factory=dict)
    entry_entered: bool = False
    entry_settled: bool = False
    spend: Spend = field(default_factory=Spend)
    node_spend: dict[str, Spend] = field(default_factory=dict)
    gates: dict[int, RestoredGate] = field(default_factory=dict)
    gate_history: dict[str, tuple[int, GateOutcome | None]] = field(default_factory=dict)


def _node(plan: CompiledPlan, node_id: str) -> PlanNode:
    node = plan.nodes.get(node_id)
    if node is None:
        raise UnrunnablePlanError(
            f'the run log names node "{node_id}", which this plan does not have; resume with '
            "the plan the run started with"
        )
    return node


def frame_on(
    plan: CompiledPlan, route: Route, outputs: Outputs, artifacts: Artifacts
) -> Frame:
    """The engine frame a route identifies (an edge-produced frame: its edge is its ``via``)."""
    segment = route.segment
    via = segment.edge if isinstance(segment, EdgeSegment) else None
    return Frame(route.frame, route, _node(plan, route.node), via, outputs, artifacts)


def _frame(plan: CompiledPlan, traced: _Traced) -> Frame:
    frame = Frame(
        traced.number,
        traced.route,
        _node(plan, traced.node),
        traced.via,
        traced.outputs,
        traced.artifacts,
    )
    frame.attempt = max(1, traced.attempt)
    frame.spend = traced.spend
    frame.started = traced.started
    frame.entered_at = traced.entered_at
    return frame


def _mark_models(plan: CompiledPlan, trace: LogTrace[Outputs, Artifacts]) -> None:
    """Mark each settled output traced to a model or not, in the order frames came to exist.

    A frame reads only outputs of frames on its route, all of which came to exist (and settled)
    before it, so one pass in frame-number order sees every input marked.
    """
    for number in sorted(trace.frames):
        traced = trace.frames[number]
        if traced.status != "ok" or traced.after is None:
            continue
        node = plan.nodes.get(traced.node)
        if isinstance(node, CallNode):
            refs = call_refs(node.definition.args)
            traced.route.model = bool(refs) and reads_model(refs, traced.outputs)
        elif isinstance(node, TransformNode):
            source = entry_for(node.definition.source, traced.artifacts)
            traced.route.model = source is None or source.route.model is not False
        elif isinstance(node, MapNode):
            # As the engine marks them: an item as its list, the map's rows as unknown.
            if isinstance(traced.route.segment, ItemSegment):
                source = entry_for(node.definition.over, traced.outputs)
                traced.route.model = None if source is None else source.route.model
            else:
                traced.route.model = None
        elif isinstance(node, LoopNode):
            # As the engine marks them: a round and the loop's row as unknown.
            traced.route.model = None
        else:
            traced.route.model = traced.kind == "reason"


def _in_map_body(route: Route | None) -> bool:
    while route is not None:
        if isinstance(route.segment, ItemSegment):
            return True
        route = route.parent
    return False


def _map_of(traced: _Traced) -> str:
    route: Route | None = traced.route
    while route is not None:
        if isinstance(route.segment, ItemSegment):
            return route.segment.map
        route = route.parent
    return traced.node


def restore_from_log(
    log: Sequence[LogEntry], plan: CompiledPlan, *, reopen: bool = False
) -> RestoredRun:
    """The engine state the log leads to (with ``reopen``, as if it had not ended).

    Raises:
        MalformedRunLogError: the log does not open with ``start``, or is out of order.
        UnrunnablePlanError: the log names a node the plan does not have.

    """
    trace: LogTrace[Outputs, Artifacts] = LogTrace(ENGINE_TABLES)
    trace.feed_all(log)
    _mark_models(plan, trace)
    if reopen:
        trace.reopen()
    start = trace.start
    assert start is not None
    entry = trace.frames[0]
    restored = RestoredRun(
        run_id=start.run_id,
        digest=start.digest,
        next_frame=trace.next_frame,
        steps=trace.steps,
        outcome=trace.outcome,
        cause=trace.cause,
        halted=dict(trace.halted),
        entry_entered=entry.entered,
        entry_settled=entry.status is not None,
        spend=trace.spend,
        node_spend=dict(trace.node_spend),
    )
    for number, requests in trace.gates.items():
        traced_frame = trace.frames[number]
        ident = traced_frame.route.ident(traced_frame.node)
        restored.gate_history[ident] = (requests[-1].opened.request, _outcome(requests[-1]))
        if number in trace.frontier:
            restored.gates[number] = gates_of(requests, traced_frame.attempt)
    if trace.outcome != "running":
        return restored
    for traced in trace.frontier.values():
        if traced.number == 0:
            continue
        if (traced.kind in ("map", "loop") and traced.entered) or _in_map_body(traced.route):
            kind = plan.nodes[_map_of(traced)].kind
            raise UnrunnablePlanError(
                f'the run stopped while {kind} "{_map_of(traced)}" was running its '
                f"{'rounds' if kind == 'loop' else 'items'}, and a {kind}'s run is not carried "
                "across a resume yet; start a clone of the plan instead"
            )
        restored.frames.append((_frame(plan, traced), traced.entered))
    for barrier in trace.barriers.values():
        facts = plan.join(barrier.node)
        opened = Barrier(facts, barrier.fork.route)
        for arrival in barrier.arrivals:
            opened.add(_frame(plan, arrival))
        restored.barriers.append(opened)
    return restored
