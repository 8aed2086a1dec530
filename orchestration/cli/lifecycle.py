"""``orch run show --lifecycle``: each frame's steps with their times, as a person reads them.

One block per frame, named as the summary names it, each step on a line with its time and
(from the frame's first step) how long after it: ``entered``, each attempt ``dispatched`` and
``ended`` (with its result), ``waiting`` (and for what) and ``resumed``, ``settled``. The steps
are :func:`orchestration.run.history.frame_lifecycles`'.
"""

from __future__ import annotations

from collections.abc import Iterable

from orchestration.cli.labels import FrameLabels, format_duration, seconds_between
from orchestration.run.history import frame_lifecycles
from orchestration.types import FrameRef, RunEvent

__all__ = ["describe_lifecycles"]

_SAID = {
    "entered": "entered",
    "dispatched": "attempt {attempt} dispatched",
    "attempt_ended": "attempt {attempt} ended",
    "waiting": "waiting",
    "resumed": "resumed",
    "settled": "settled",
}


def describe_lifecycles(events: Iterable[RunEvent]) -> str:
    """Every frame's lifecycle, frame by frame in the order they appear."""
    events = list(events)
    labels = FrameLabels.of_events(events)
    frames: dict[str, FrameRef] = {}
    for event in events:
        frame = getattr(event, "frame", None)
        if isinstance(frame, FrameRef):
            frames.setdefault(frame.key, frame)
    lines = ["lifecycle:"]
    for key, steps in frame_lifecycles(events).items():
        frame = frames.get(key)
        lines.append(f"  {labels.label(frame) if frame is not None else key}")
        first = steps[0].at if steps else None
        for step in steps:
            said = _SAID[step.step].format(attempt=step.attempt)
            if step.step == "entered" and step.attempt is not None:
                said = f"entered again (attempt {step.attempt})"
            if step.detail:
                said += f": {step.detail}"
            offset = "" if first is None else f"+{format_duration(seconds_between(first, step.at))}"
            lines.append(f"    {step.at}  {offset:>8}  {said}")
    return "\n".join(lines)
