"""Rebuild a run's compact log from its Temporal history, with no worker running.

The log is produced by ``PlanRun`` from nothing but its history (input, activity results,
signals, updates, timestamps) and content-addressed reads (the plan by its digest, a resumed
log's immutable prefix: :mod:`workflows.externs`), so replaying that history through the same
workflow code yields the same log, entry for entry. Replay happens here, in this process, with
the SDK's ``Replayer``: a closed run's log is readable when no worker is up (a query would need
one, and hangs without it). A run started by reference needs the plan store to replay.

A run that continued as new is a chain of executions, one history each; the full log is their
segments in order. Normally the plan store already holds it (the workflow mirrors its log);
this is for a run whose execution died before it could.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from temporalio import workflow
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter
from temporalio.worker import (
    ExecuteWorkflowInput,
    Interceptor,
    Replayer,
    UnsandboxedWorkflowRunner,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
)

from orchestration.run.log import LogEntry
from orchestration.store.base import PlanStore
from workflows.externs import KEEP_LOG, RunServices
from workflows.plan_run import PlanRun
from workflows.signatures import SignedApprovalsOnly, verified_signatures

__all__ = ["log_from_histories", "log_from_history", "segment_from_history"]


class _Capture(Interceptor):
    """Hands the workflow's log segment to ``sink`` when its run method returns or raises."""

    def __init__(self, sink: list[LogEntry], offset: list[int]) -> None:
        self.sink = sink
        self.offset = offset

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor]:
        sink, offset = self.sink, self.offset
        # The log is the point: the run holds every entry, mirrored or not.
        input.unsafe_extern_functions[KEEP_LOG] = lambda: True

        class Inbound(WorkflowInboundInterceptor):
            async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
                try:
                    return await super().execute_workflow(input)
                finally:
                    instance = workflow.instance()
                    if isinstance(instance, PlanRun):
                        segment = instance._segment  # noqa: SLF001 - the log is the point
                        sink.extend(segment.log)
                        offset.append(segment.offset)

        return Inbound


async def segment_from_history(
    history: WorkflowHistory,
    *,
    store: PlanStore | None = None,
    data_converter: DataConverter = pydantic_data_converter,
) -> tuple[int, list[LogEntry]]:
    """One execution's log segment, rebuilt by replaying its history, and where it starts.

    Args:
        history: The execution's history.
        store: The plan store, for a run started by reference or resumed (its plan and its
            earlier log are read from it, as the worker read them).
        data_converter: The converter the run was recorded with (pass the client's: with a
            payload codec, an encrypted history replays only through that codec).

    Raises:
        temporalio.workflow.NondeterminismError: the history no longer replays on this code.
    """
    sink: list[LogEntry] = []
    offset: list[int] = []
    # A run that verified its approval's signature replays only on the same path.
    switch = [SignedApprovalsOnly()] if verified_signatures(history) else []
    replayer = Replayer(
        workflows=[PlanRun],
        interceptors=[_Capture(sink, offset), RunServices(store), *switch],
        data_converter=data_converter,
        workflow_runner=UnsandboxedWorkflowRunner(),
    )
    await replayer.replay_workflow(history, raise_on_replay_failure=True)
    return (offset[0] if offset else 0), sink


async def log_from_history(
    history: WorkflowHistory,
    *,
    store: PlanStore | None = None,
    data_converter: DataConverter = pydantic_data_converter,
) -> list[LogEntry]:
    """The log entries one execution recorded (see :func:`segment_from_history`)."""
    _, entries = await segment_from_history(history, store=store, data_converter=data_converter)
    return entries


async def log_from_histories(
    histories: Sequence[WorkflowHistory],
    *,
    store: PlanStore | None = None,
    data_converter: DataConverter = pydantic_data_converter,
) -> list[LogEntry]:
    """The full log of a run that continued as new: each execution's segment, in order."""
    entries: list[LogEntry] = []
    for history in histories:
        entries.extend(await log_from_history(history, store=store, data_converter=data_converter))
    return entries
