"""Each frame's life, step by step with its times, derived from the run's events.

The log already holds every fact; this reads them per frame, so an operator sees when a frame
was entered, when each attempt started and how it ended, when it waited and for what, and when
it settled:

* ``entered``: each ``node_entered`` of the frame (a retry's carries its attempt number);
* ``dispatched`` and ``attempt_ended``: each ``attempt_ended`` (its ``started`` and its end);
* ``waiting``: the run waits on the frame: a ``run_interrupted`` naming it (a halted call waits
  for an operator's decision). **Other waits** (an approval or input gate on a node) are
  ``waiting`` steps too: list their events in :data:`WAITS`, and ``resumed`` where the wait
  ends (here: the frame entered again, or settled, after a wait);
* ``settled``: its ``node_settled``.

Pure and total: no clock, no graph. It reads the contract's events, so it works on any log,
including one written before attempts were recorded (no ``dispatched`` or ``attempt_ended``
steps then).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from orchestration.types import (
    AttemptEnded,
    FrameRef,
    LifecycleStep,
    NodeEntered,
    NodeSettled,
    RunEvent,
    RunInterrupted,
)

__all__ = ["WAITS", "frame_lifecycles"]


def _interrupted(event: RunEvent) -> tuple[FrameRef, str] | None:
    """A halted frame waits for an operator: ``orch run resolve`` (retry, skip or abort)."""
    if isinstance(event, RunInterrupted) and event.frame is not None:
        return event.frame, f"an operator's decision ({event.cause.kind})"
    return None


WAITS: tuple[Callable[[RunEvent], tuple[FrameRef, str] | None], ...] = (_interrupted,)
"""Readers of the events that make a frame wait: each returns the frame and what it waits for,
or ``None``. A new kind of wait (a gate) adds its reader here."""


def frame_lifecycles(events: Iterable[RunEvent]) -> dict[str, tuple[LifecycleStep, ...]]:
    """Every frame's steps, by frame key, in the order the log records them."""
    steps: dict[str, list[LifecycleStep]] = {}
    waiting: set[str] = set()

    def add(frame: FrameRef, step: LifecycleStep) -> None:
        steps.setdefault(frame.key, []).append(step)

    def resume(frame: FrameRef, at: str) -> None:
        if frame.key in waiting:
            waiting.discard(frame.key)
            add(frame, LifecycleStep(step="resumed", at=at))

    for event in events:
        if isinstance(event, NodeEntered):
            resume(event.frame, event.at)
            entered = sum(1 for s in steps.get(event.frame.key, ()) if s.step == "entered")
            attempt = None if entered == 0 else entered + 1
            add(event.frame, LifecycleStep(step="entered", at=event.at, attempt=attempt))
        elif isinstance(event, AttemptEnded):
            add(
                event.frame,
                LifecycleStep(step="dispatched", at=event.started, attempt=event.attempt),
            )
            detail: str = event.result
            if event.error is not None:
                detail += f": {event.error.name}"
            add(
                event.frame,
                LifecycleStep(
                    step="attempt_ended", at=event.at, attempt=event.attempt, detail=detail
                ),
            )
        elif isinstance(event, NodeSettled):
            resume(event.frame, event.at)
            settled = LifecycleStep(step="settled", at=event.at, detail=event.outcome.status)
            add(event.frame, settled)
        else:
            for reader in WAITS:
                found = reader(event)
                if found is not None:
                    frame, what = found
                    waiting.add(frame.key)
                    add(frame, LifecycleStep(step="waiting", at=event.at, detail=what))
    return {key: tuple(value) for key, value in steps.items()}
