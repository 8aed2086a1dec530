"""Live progress of a run, one line per event, for ``orch run watch`` and the demo."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from orchestration.types import (
    EdgeTaken,
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

__all__ = ["describe_event", "describe_projection", "follow_run"]


def _fields(outcome: OutcomeOk) -> str:
    items = outcome.output.items
    if not items:
        return ""
    shown = ", ".join(f"{k}={v!r}" for k, v in list(items[0].json_.items())[:3])
    more = f" (+{len(items) - 1} items)" if len(items) > 1 else ""
    return f"  {shown[:90]}{more}"


def describe_event(event: RunEvent) -> str | None:
    """One human line for an event (``None`` for bookkeeping such as snapshots)."""
    if isinstance(event, RunStarted):
        return f"run {event.run_id} started (digest {event.digest[:12]})"
    if isinstance(event, NodeEntered):
        return f"  ▶ {event.frame.node_id:<20} {event.frame.kind}"
    if isinstance(event, NodeSettled):
        outcome = event.outcome
        if isinstance(outcome, OutcomeOk):
            return f"  ✓ {event.frame.node_id:<20} ok{_fields(outcome)}"
        if isinstance(outcome, OutcomeFailed):
            handled = "handled by an error edge" if outcome.handled else "unhandled"
            return (
                f"  ✗ {event.frame.node_id:<20} failed ({handled}): {outcome.error.name}: "
                f"{outcome.error.message[:80]}"
            )
        return f"  ⤼ {event.frame.node_id:<20} skipped (outcome unknown)"
    if isinstance(event, EdgeTaken):
        return f"    → {event.edge_id} ({event.handle}) to {event.to.node_id}"
    if isinstance(event, RunInterrupted):
        where = f" at {event.frame.node_id}" if event.frame is not None else ""
        return f"  ! interrupted: {event.cause.kind}{where}"
    if isinstance(event, RunSettled):
        return f"run settled: {event.outcome}"
    return None


def describe_projection(projection: RunProjection) -> str:
    """A compact text summary of a projection."""
    lines = [f"run {projection.run_id}: {projection.outcome}"]
    if projection.interruption is not None:
        lines.append(f"interruption: {projection.interruption.model_dump_json()}")
    lines.append("nodes:")
    for node_id, status in projection.node_status_by_id.items():
        lines.append(f"  {node_id:<24} {status}")
    if projection.indeterminate:
        lines.append(
            "indeterminate calls: " + ", ".join(f.node_id for f in projection.indeterminate)
        )
    lines.append(f"outputs: {len(projection.outputs)}, edges taken: {len(projection.edges_taken)}")
    return "\n".join(lines)


async def follow_run(
    runs: Any, plan_id: str, emit: Callable[[str], None], *, poll_seconds: float = 0.2
) -> list[RunEvent]:
    """Print each new event of the run until it settles; return the whole log.

    Reads pages of the live execution's ``events`` query (compact entries, expanded here);
    once the run has closed, or has continued as new past what was read, reads the rest of
    the whole log (the plan store's copy, no worker needed).
    """
    from temporalio.client import WorkflowExecutionStatus

    from orchestration.execution import LogPage, workflow_id_for
    from orchestration.run.expand import LogExpander

    expander = LogExpander()
    seen = 0
    handle = runs.client.get_workflow_handle(workflow_id_for(plan_id))
    while True:
        description = await handle.describe()
        if description.status != WorkflowExecutionStatus.RUNNING:
            break
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
            line = describe_event(event) if event is not None else None
            if line:
                emit(line)
        if page.done and seen >= page.total:
            break
        if not page.entries:
            await asyncio.sleep(poll_seconds)
    whole = LogExpander()
    full: list[RunEvent] = []
    for index, entry in enumerate(await runs.read_log(plan_id)):
        event = whole.feed(entry)
        if event is None:
            continue
        full.append(event)
        line = describe_event(event) if index >= seen else None
        if line:
            emit(line)
    return full
