"""The liveness monitor: reports the node activities of a task queue's runs that stall.

A worker that stops heartbeating (frozen, its event loop blocked, its machine gone) cannot say
so itself; another process watching the server can. :class:`LivenessMonitor` runs in every
worker (``python -m workers --liveness-every SECONDS``; 0 turns it off): every so often it lists
the running ``PlanRun`` executions of its task queue, reads each one's pending node activities
(``describe``: no worker of theirs is needed), judges each by its heartbeat timeout
(:mod:`orchestration.run.liveness`) and reports each change of status once:

* a log line, ``frame liveness changed`` (warning when stalling or stalled), with the plan, the
  frame, its attempt, its last activity and the timeout;
* the metrics ``plan_frame_liveness_changes`` (a counter, by ``status``) and
  ``plan_frames_by_liveness`` (a gauge of the frames currently in each status).

It never acts on what it sees: the heartbeat timeout alone resolves a stalled attempt, under
the frame's ``onIndeterminate`` (ruling 1). Several workers on one task queue each report what
they see (their metrics carry the worker's own labels).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter

import structlog
from temporalio.client import Client
from temporalio.common import MetricMeter
from temporalio.runtime import Runtime

from orchestration.run.liveness import StallChange, StallWatch
from orchestration.run.local import utc_now
from orchestration.types import FrameLiveness
from workers.runs import pending_liveness, unresolved_timeouts

__all__ = ["LivenessMonitor"]

_log = structlog.get_logger("workers.liveness")
_STATUSES = ("healthy", "stalling", "stalled")


class LivenessMonitor:
    """Watches the running ``PlanRun`` executions of one task queue (see the module docstring).

    Args:
        client: A client of the server the runs are on.
        task_queue: The task queue whose runs are watched.
        every: Seconds between sweeps.
        meter: Where the metrics go (default: the client's runtime's).

    """

    def __init__(
        self,
        client: Client,
        task_queue: str,
        *,
        every: float = 5.0,
        meter: MetricMeter | None = None,
    ) -> None:
        self.client = client
        self.task_queue = task_queue
        self.every = every
        runtime = client.service_client.config.runtime or Runtime.default()
        self.meter = meter or runtime.metric_meter
        self.watch = StallWatch()

    async def sweep(self) -> list[StallChange]:
        """Look once at every running run of the task queue; report and return the changes."""
        query = (
            f"WorkflowType = 'PlanRun' AND ExecutionStatus = 'Running' "
            f"AND TaskQueue = '{self.task_queue}'"
        )
        now = utc_now()
        observed: dict[str, FrameLiveness] = {}
        async for execution in self.client.list_workflows(query):
            handle = self.client.get_workflow_handle(execution.id, run_id=execution.run_id)
            with contextlib.suppress(Exception):  # a run that closed meanwhile: nothing to see
                description = await handle.describe()
                raw = description.raw_description
                live = pending_liveness(raw.pending_activities, now)
                if raw.HasField("pending_workflow_task"):
                    late = await unresolved_timeouts(
                        self.client, execution.id, execution.run_id, now
                    )
                    live = {**late, **live}
                for key, each in live.items():
                    observed[f"{execution.id}|{key}"] = each
        changes = self.watch.observe(observed)
        for change in changes:
            self._report(change)
        counts: Counter[str] = Counter(live.status for live in observed.values())
        gauge = self.meter.create_gauge("plan_frames_by_liveness", "frames in flight by status")
        for status in _STATUSES:
            gauge.set(counts[status], {"status": status})
        return changes

    def _report(self, change: StallChange) -> None:
        workflow_id, _, key = change.key.partition("|")
        live = change.now
        report = _log.warning if live.status != "healthy" else _log.info
        report(
            "frame liveness changed",
            plan_id=workflow_id.removeprefix("plan/"),
            run_id=workflow_id,
            frame_key=key,
            node_id=key.split(":", 1)[0],
            attempt=live.attempt,
            status=live.status,
            was=change.before,
            last_activity=live.last_activity,
            heartbeat_timeout=live.heartbeat_timeout_seconds,
        )
        self.meter.create_counter(
            "plan_frame_liveness_changes", "frames whose liveness changed, by new status"
        ).add(1, {"status": live.status})

    async def run(self, stop: asyncio.Event) -> None:
        """Sweep every ``every`` seconds until ``stop`` is set (a failed sweep is logged)."""
        while not stop.is_set():
            try:
                await self.sweep()
            except Exception as exc:  # noqa: BLE001 - a monitor must outlive a bad sweep
                _log.warning("liveness sweep failed", error=f"{type(exc).__name__}: {exc}")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=self.every)
