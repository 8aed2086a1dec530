"""Live progress of a run, and its summary, as people read them (``orch run``, the demo).

Frames are named by :mod:`orchestration.cli.labels` (``write #2 (via e6)``, never a raw route
key); a join's arrivals print nothing of their own, and the join prints once, when its merged
frame settles, with how many arrivals its barrier took. Each settle line opens with a count,
``[7/12 settled]``: frames settled so far out of the frames the run has *created* so far
(each an execution of a node: the entry's, each fired edge's, each closed barrier's). The
denominator grows as edges fire; the plan's node count would be no honest total, since a
fan-out runs a node several times and an untaken branch never runs its nodes.

While it follows a run, it also reports each change of a call's liveness (about once a second:
``stalling`` after half its heartbeat timeout without a heartbeat, ``stalled`` after all of it,
healthy again), read from the server; a stall is only reported, never acted on.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable
from typing import Any

from orchestration.cli.attempts import frame_detail, liveness_lines, usage_lines
from orchestration.cli.labels import (
    FrameLabels,
    barrier_arrivals,
    format_duration,
    frame_timings,
    frames_of,
    is_join_arrival,
)
from orchestration.run.budgets import seconds_between
from orchestration.run.liveness import StallChange, StallWatch
from orchestration.types import (
    EdgeTaken,
    FrameRef,
    NodeEntered,
    NodeSettled,
    OutcomeFailed,
    OutcomeOk,
    RunEvent,
    RunInterrupted,
    RunProjection,
    RunSettled,
    RunStarted,
)

__all__ = ["ProgressLines", "describe_events", "describe_run", "follow_run", "stall_line"]


def stall_line(change: StallChange, labels: FrameLabels) -> str:
    """A watcher's line for a call whose liveness changed (``  ⚠ fetch stalling: ...``)."""
    live = change.now
    node = change.key.split(":", 1)[0]
    name = node if labels.instances(node) <= 1 else change.key
    if live.status == "healthy":
        return f"  ✓ {name:<24} healthy again (attempt {live.attempt})"
    silent = ""
    if live.last_activity is not None:
        silent = f"no heartbeat for {seconds_between(live.last_activity, live.observed_at):.1f}s"
    timeout = live.heartbeat_timeout_seconds
    limit = f" of its {timeout:g}s heartbeat timeout" if timeout else ""
    then = (
        "; its onIndeterminate decides once the timeout resolves it"
        if live.status == "stalled"
        else ""
    )
    return f"  ⚠ {name:<24} {live.status}: {silent}{limit} (attempt {live.attempt}){then}"


def _fields(outcome: OutcomeOk) -> str:
    items = outcome.output.items
    if not items:
        return ""
    shown = ", ".join(f"{k}={v!r}" for k, v in list(items[0].json_.items())[:3])
    more = f" (+{len(items) - 1} items)" if len(items) > 1 else ""
    return f"  {shown[:90]}{more}" if shown or more else ""


class ProgressLines:
    """Turns a run's events, fed in log order, into the lines a person reads.

    Stateful: it numbers frames as they appear, counts attempts, settlements and a join's
    arrivals. Fed the same events it gives the same lines, so a reader that catches up on a
    log it partly printed feeds a fresh one everything and prints only the new lines.

    Args:
        labels: Frame names to use; default: live ones (see :mod:`orchestration.cli.labels`).
            Pass ``FrameLabels.of_events(events)`` for a whole log.

    """

    def __init__(self, labels: FrameLabels | None = None) -> None:
        self.labels = labels if labels is not None else FrameLabels()
        self._known: set[str] = set()
        self._settled: set[str] = set()
        self._attempts: dict[str, int] = {}
        self._arrivals: list[FrameRef] = []

    def line(self, event: RunEvent) -> str | None:  # noqa: C901 - one branch per event kind
        """The line for ``event``, or ``None`` (bookkeeping, and a join's arrivals)."""
        for frame in frames_of(event):
            self.labels.see(frame)
            self._known.add(frame.key)
        if isinstance(event, RunStarted):
            return f"run {event.run_id} started (digest {event.digest[:12]})"
        if isinstance(event, NodeEntered):
            frame = event.frame
            if is_join_arrival(frame):
                self._arrivals.append(frame)
                return None
            attempt = self._attempts[frame.key] = self._attempts.get(frame.key, 0) + 1
            again = f", attempt {attempt}" if attempt > 1 else ""
            return f"  ▶ {self.labels.label(frame):<24} {frame.kind}{again}"
        if isinstance(event, NodeSettled):
            return self._settled_line(event)
        if isinstance(event, EdgeTaken):
            if is_join_arrival(event.to):
                return None
            return f"    → {event.edge_id} ({event.handle}) to {self.labels.label(event.to)}"
        if isinstance(event, RunInterrupted):
            where = f" at {self.labels.label(event.frame)}" if event.frame is not None else ""
            return f"  ! interrupted: {event.cause.kind}{where}"
        if isinstance(event, RunSettled):
            return f"run settled: {event.outcome}"
        return None

    def _settled_line(self, event: NodeSettled) -> str:
        frame = event.frame
        self._settled.add(frame.key)
        count = f"[{len(self._settled)}/{len(self._known)} settled]"
        name = self.labels.label(frame)
        outcome = event.outcome
        if frame.kind == "join":
            # Its output is the arrivals' routes and tables: the count says what matters.
            arrived = len(barrier_arrivals(frame, self._arrivals))
            if isinstance(outcome, OutcomeOk):
                return f"{count} ✓ {name:<24} ok ({arrived}/{arrived} arrived)"
        if isinstance(outcome, OutcomeOk):
            return f"{count} ✓ {name:<24} ok{_fields(outcome)}"
        if isinstance(outcome, OutcomeFailed):
            handled = "handled by an error edge" if outcome.handled else "unhandled"
            return (
                f"{count} ✗ {name:<24} failed ({handled}): {outcome.error.name}: "
                f"{outcome.error.message[:80]}"
            )
        return f"{count} ⤼ {name:<24} skipped (outcome unknown)"


def describe_events(events: Iterable[RunEvent]) -> list[str]:
    """The progress lines of a whole log, with every repeated node numbered from the start."""
    events = list(events)
    lines = ProgressLines(FrameLabels.of_events(events))
    return [line for event in events if (line := lines.line(event)) is not None]


def describe_run(
    projection: RunProjection, events: Iterable[RunEvent], nodes: Iterable[str] = ()
) -> str:
    """A run's text summary: outcome, then each executed frame with status, time and attempts.

    ``projection`` is ``fold_run(events)``; statuses come from it, times and attempts from the
    events (see :func:`orchestration.cli.labels.frame_timings`). Beneath a frame, what is worth
    reading about it (:func:`orchestration.cli.attempts.frame_detail`: its attempts, a model's
    reach into its arguments, its verdict's provenance). Then every node of ``nodes`` (the
    plan's node ids) that the run never reached, so the summary accounts for the whole plan,
    and what the run spent on models and the liveness of its calls in flight, when known.
    """
    events = list(events)
    lines = [f"run {projection.run_id}: {projection.outcome}"]
    if projection.interruption is not None:
        lines.append(f"interruption: {projection.interruption.model_dump_json()}")
    lines.append("nodes:")
    timings = frame_timings(events)
    width = max([24, *(len(t.label) + 1 for t in timings)])
    for timing in timings:
        status = projection.frame_status.get(timing.frame.key, "pending")
        took = "—" if timing.seconds is None else format_duration(timing.seconds)
        if timing.frame.kind == "join":
            tries = f"{timing.arrivals}/{timing.arrivals} arrived"
        else:
            tries = f"{timing.attempts} attempt" + ("" if timing.attempts == 1 else "s")
        lines.append(f"  {timing.label:<{width}} {status:<8} {took:>7}  {tries}")
        lines += frame_detail(projection, timing.frame.key)
    ran = {timing.frame.node_id for timing in timings}
    for node_id in dict.fromkeys([*projection.node_status_by_id, *nodes]):
        if node_id not in ran:
            status = projection.node_status_by_id.get(node_id, "pending")
            lines.append(f"  {node_id:<{width}} {'not reached' if status == 'pending' else status}")
    if projection.indeterminate:
        names = FrameLabels.of_events(events)
        lines.append(
            "indeterminate calls: " + ", ".join(names.label(f) for f in projection.indeterminate)
        )
    lines += usage_lines(projection)
    lines += liveness_lines(projection, ((t.frame.key, t.label) for t in timings))
    lines.append(f"outputs: {len(projection.outputs)}, edges taken: {len(projection.edges_taken)}")
    return "\n".join(lines)


async def follow_run(
    runs: Any, plan_id: str, emit: Callable[[str], None], *, poll_seconds: float = 0.2
) -> list[RunEvent]:
    """Print each new event of the run until it settles; return the whole log's events.

    Reads pages of the live execution's ``events`` query (compact entries, expanded here);
    once the run has closed, or has continued as new past what was read, reads the rest of
    the whole log (the plan store's copy, no worker needed).
    """
    from temporalio.client import WorkflowExecutionStatus

    from orchestration.run.expand import LogExpander
    from orchestration.run.messages import LogPage, workflow_id_for

    expander = LogExpander()
    live = ProgressLines()
    seen = 0
    handle = runs.client.get_workflow_handle(workflow_id_for(plan_id))
    stalls = StallWatch()
    looked = 0.0
    loop = asyncio.get_running_loop()
    while True:
        description = await handle.describe()
        if description.status != WorkflowExecutionStatus.RUNNING:
            break
        liveness = getattr(runs, "liveness", None)
        if liveness is not None and loop.time() - looked >= 1.0:
            looked = loop.time()
            with contextlib.suppress(Exception):  # liveness is a courtesy; the log is the run
                for change in stalls.observe(await liveness(plan_id)):
                    emit(stall_line(change, live.labels))
        try:
            page: LogPage = await handle.query("events", args=[seen, 2000], result_type=LogPage)
        except Exception:  # noqa: BLE001 - the run may close between describe and query
            await asyncio.sleep(poll_seconds)
            continue
        if page.segment_offset > seen:
            break  # an execution we did not read from the start: read the whole log below
        for entry in page.entries:
            seen += 1
            event = expander.feed(entry)
            line = live.line(event) if event is not None else None
            if line:
                emit(line)
        if page.done and seen >= page.total:
            break
        if not page.entries:
            await asyncio.sleep(poll_seconds)
    # The same lines for the same events: a fresh reader fed the whole log prints the rest.
    whole = LogExpander()
    again = ProgressLines()
    full: list[RunEvent] = []
    for index, entry in enumerate(await runs.read_log(plan_id)):
        event = whole.feed(entry)
        if event is None:
            continue
        full.append(event)
        line = again.line(event)
        if line and index >= seen:
            emit(line)
    return full
