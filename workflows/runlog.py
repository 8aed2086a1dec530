"""Rebuild a run's event log from its Temporal history, with no worker running.

The log is produced by ``PlanRun`` from nothing but its history (input, activity results,
signals, updates, timestamps), so replaying that history through the same workflow code yields
the same log, event for event. Replay happens here, in this process, with the SDK's
``Replayer``: a closed run's log is readable when no worker is up (a query would need one, and
hangs without it).

A run that continued as new is a chain of executions, one history each; the full log is their
segments in order.
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

from orchestration.types import RunEvent
from workflows.plan_run import PlanRun
from workflows.signatures import SignedApprovalsOnly, verified_signatures

__all__ = ["events_from_histories", "events_from_history"]


class _Capture(Interceptor):
    """Hands the workflow's log to ``sink`` when its run method returns or raises."""

    def __init__(self, sink: list[RunEvent]) -> None:
        self.sink = sink

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor]:
        sink = self.sink

        class Inbound(WorkflowInboundInterceptor):
            async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
                try:
                    return await super().execute_workflow(input)
                finally:
                    instance = workflow.instance()
                    if isinstance(instance, PlanRun):
                        sink.extend(instance._events)  # noqa: SLF001 - the log is the point

        return Inbound


async def events_from_history(
    history: WorkflowHistory, data_converter: DataConverter = pydantic_data_converter
) -> list[RunEvent]:
    """The run events one closed execution recorded, rebuilt by replaying its history.

    Args:
        history: The execution's history.
        data_converter: The converter the run was recorded with (pass the client's: with a
            payload codec, an encrypted history replays only through that codec).

    Raises:
        temporalio.workflow.NondeterminismError: the history no longer replays on this code.
    """
    sink: list[RunEvent] = []
    # A run that verified its approval's signature replays only on the same path.
    switch = [SignedApprovalsOnly()] if verified_signatures(history) else []
    replayer = Replayer(
        workflows=[PlanRun],
        interceptors=[_Capture(sink), *switch],
        data_converter=data_converter,
        workflow_runner=UnsandboxedWorkflowRunner(),
    )
    result = await replayer.replay_workflow(history, raise_on_replay_failure=True)
    del result
    return sink


async def events_from_histories(
    histories: Sequence[WorkflowHistory], data_converter: DataConverter = pydantic_data_converter
) -> list[RunEvent]:
    """The full log of a run that continued as new: each execution's segment, in order."""
    events: list[RunEvent] = []
    for history in histories:
        events.extend(await events_from_history(history, data_converter))
    return events
