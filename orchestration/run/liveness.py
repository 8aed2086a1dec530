"""Liveness of the frames in flight: healthy, stalling or stalled, from their heartbeats.

A run's log is history; whether an attempt still makes progress is not, so ``fold_run`` never
says. A reader that can observe the host does (Temporal: each pending activity's last heartbeat
in ``describe()``; the in-process host: its own record of each attempt's activity), and this
module turns an observation into a status, the same way for both:

* ``healthy`` while less than half the attempt's heartbeat timeout has passed since its last
  activity (its last heartbeat, else its start);
* ``stalling`` from half of it;
* ``stalled`` once all of it has passed. From there the host's own heartbeat timeout resolves
  the attempt as lost, and the frame's ``onIndeterminate`` (ruling 1) takes over.

An attempt without a heartbeat timeout is always ``healthy`` (nothing says how long silence
may last). A stall is reported (:class:`StallWatch` says when the status changes: a log line, a
metric, ``orch run watch``), **never acted on**: only the timeout decides.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from orchestration.run.budgets import seconds_between
from orchestration.types import FrameLiveness, RunProjection

__all__ = [
    "StallChange",
    "StallStatus",
    "StallWatch",
    "liveness_of",
    "stall_status",
    "with_liveness",
]

StallStatus = Literal["healthy", "stalling", "stalled"]


def stall_status(
    last_activity: str | None, now: str, heartbeat_timeout: float | None
) -> StallStatus:
    """``healthy``, ``stalling`` or ``stalled`` (see the module docstring)."""
    if not heartbeat_timeout or last_activity is None:
        return "healthy"
    silent = seconds_between(last_activity, now)
    if silent >= heartbeat_timeout:
        return "stalled"
    if silent >= heartbeat_timeout / 2:
        return "stalling"
    return "healthy"


def liveness_of(
    attempt: int,
    last_activity: str | None,
    now: str,
    heartbeat_timeout: float | None,
    source: Literal["temporal", "in_process"],
) -> FrameLiveness:
    """One frame's observed liveness."""
    return FrameLiveness(
        attempt=attempt,
        last_activity=last_activity,
        observed_at=now,
        heartbeat_timeout_seconds=heartbeat_timeout,
        status=stall_status(last_activity, now, heartbeat_timeout),
        source=source,
    )


def with_liveness(
    projection: RunProjection, observed: Mapping[str, FrameLiveness]
) -> RunProjection:
    """The projection with the liveness of those observed frames it still has running."""
    running = {
        key: live
        for key, live in observed.items()
        if projection.frame_status.get(key) == "running"
    }
    return projection.model_copy(update={"liveness": running})


@dataclass(frozen=True, slots=True)
class StallChange:
    """A frame's status changed since it was last observed (``before`` is ``None`` at first)."""

    key: str
    before: str | None
    now: FrameLiveness


@dataclass
class StallWatch:
    """Remembers each frame's last status, to report each change once (not each observation).

    A frame first seen ``healthy`` is not a change worth a line; first seen stalling or
    stalled, it is. A frame no longer observed is forgotten.
    """

    statuses: dict[str, str] = field(default_factory=dict)

    def observe(self, observed: Mapping[str, FrameLiveness]) -> list[StallChange]:
        """The frames whose status changed, in key order."""
        changes: list[StallChange] = []
        for key in sorted(observed):
            live = observed[key]
            before = self.statuses.get(key)
            if before != live.status and not (before is None and live.status == "healthy"):
                changes.append(StallChange(key, before, live))
            self.statuses[key] = live.status
        for key in list(self.statuses):
            if key not in observed:
                del self.statuses[key]
        return changes
