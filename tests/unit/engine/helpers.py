"""Compact renderings of run logs, and a synchronous engine driver, for the engine tests."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from orchestration.predicates.structured import StructuredCell
from orchestration.run.engine.machine import Decided, Dispatch, RunEngine, SettleResult, Succeeded
from orchestration.run.expand import LogExpander
from orchestration.run.log import LogEntry
from orchestration.run.routes import branch_key
from orchestration.types import (
    EdgeTaken,
    FrameRef,
    FrontierSnapshot,
    NodeEntered,
    NodeSettled,
    RawPlanView,
    RunEvent,
    RunInterrupted,
    RunProjection,
    RunSettled,
    RunStarted,
)

AT = "2026-01-01T00:00:00Z"


class Engine(RunEngine):
    """The engine with its log kept: compact entries, and their contract events on drain."""

    @property
    def log(self) -> list[LogEntry]:
        return self.__dict__.setdefault("_kept", [])

    @property
    def expander(self) -> LogExpander:
        return self.__dict__.setdefault("_expander", LogExpander())

    def drain_events(self) -> list[RunEvent]:
        new = self.drain()
        self.log.extend(new)
        return self.expander.expand(new)

    @classmethod
    def resume_from(cls, view: RawPlanView, log: list[LogEntry], **options: Any) -> Engine:
        """Resume from ``log``; later drains continue its contract events."""
        engine = cls.resume(view, log, **options)
        assert isinstance(engine, Engine)
        engine.log.extend(log)
        engine.expander.expand(log)
        return engine


def assert_agrees(engine: RunEngine, projection: RunProjection) -> None:
    """The fold's frontier, outcome and interruption are the engine's own."""
    frames, joins = engine.frontier_keys()
    assert tuple(fkey(p.frame) for p in projection.frontier.frames) == frames
    assert tuple(j.correlation_key for j in projection.frontier.joins) == joins
    assert projection.outcome == engine.outcome
    assert projection.interruption == engine.interruption


def fkey(frame: FrameRef) -> str:
    return f"{frame.node_id}:{branch_key(frame.branch_id)}"


def trace(events: list[RunEvent]) -> list[tuple[Any, ...]]:
    """Each event as a short tuple: kind plus the frame keys / ids that identify it."""
    out: list[tuple[Any, ...]] = []
    for e in events:
        if isinstance(e, RunStarted):
            out.append(("run_started",))
        elif isinstance(e, NodeEntered):
            out.append(("entered", fkey(e.frame)))
        elif isinstance(e, NodeSettled):
            out.append(("settled", fkey(e.frame), e.outcome.status))
        elif isinstance(e, EdgeTaken):
            out.append(("edge", e.edge_id, fkey(e.to)))
        elif isinstance(e, FrontierSnapshot):
            out.append(
                (
                    "snapshot",
                    tuple(fkey(p.frame) for p in e.frames),
                    tuple(j.correlation_key for j in e.joins),
                )
            )
        elif isinstance(e, RunInterrupted):
            out.append(("interrupted", e.cause.kind, None if e.frame is None else fkey(e.frame)))
        elif isinstance(e, RunSettled):
            out.append(("run_settled", e.outcome))
    return out


def settled_nodes(events: list[RunEvent]) -> list[str]:
    return [e.frame.node_id for e in events if isinstance(e, NodeSettled)]


Script = Callable[[Dispatch], SettleResult]


def ok(d: Dispatch) -> SettleResult:
    return Succeeded.one({"value": d.node.id})


def drive(
    view: RawPlanView,
    run_input: Mapping[str, Any],
    script: Script = ok,
    *,
    max_in_flight: int = 1000,
    after_each: Callable[[RunEngine, list[RunEvent]], None] | None = None,
) -> tuple[Engine, list[RunEvent]]:
    """Run synchronously, settling every ready frame in dispatch order."""
    cell = StructuredCell()
    engine = Engine.start(view, "run-1", run_input, AT, max_in_flight=max_in_flight)
    events = engine.drain_events()
    if after_each:
        after_each(engine, events)
    while not engine.done:
        ready = engine.ready(AT)
        events += engine.drain_events()
        if after_each:
            after_each(engine, events)
        assert ready or engine.done, "engine stalled"
        for d in ready:
            if d.context is not None:
                result: SettleResult = Decided(cell.decide(d.node, d.context))  # type: ignore[arg-type]
            else:
                result = script(d)
            engine.settle(d.key, result, AT)
            events += engine.drain_events()
            if after_each:
                after_each(engine, events)
    assert isinstance(engine, Engine)
    return engine, events
