"""Composition root of a worker: the PlanRun workflow, the activities, the sandbox wiring.

The workflow sandbox re-imports every module a workflow imports, for every run, unless the
module is passed through. The pure core is passed through once here (and imported under
``imports_passed_through`` in the workflow module): it is deterministic by construction and
by test, and re-importing pydantic models per run would cost far more than the run itself.
Anything else a workflow imports unintentionally fails the worker at start-up rather than
silently running outside the sandbox's checks.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions
from temporalio.workflow import SandboxImportNotificationPolicy

from activities.call import CallActivities
from orchestration.toolbox import Toolbox
from workflows.plan_run import PlanRun

__all__ = ["PASSED_THROUGH", "build_worker", "connect", "sandbox_runner"]

PASSED_THROUGH: tuple[str, ...] = ("orchestration", "msgpack", "ormsgpack", "immutables")
"""Modules shared with the sandbox instead of re-imported per run."""


def sandbox_runner() -> SandboxedWorkflowRunner:
    """The sandbox with the pure core passed through and accidental passthrough refused."""
    restrictions = SandboxRestrictions.default.with_passthrough_modules(
        *PASSED_THROUGH
    ).with_import_notification_policy(
        SandboxImportNotificationPolicy.RAISE_ON_UNINTENTIONAL_PASSTHROUGH
    )
    return SandboxedWorkflowRunner(restrictions=restrictions)


async def connect(address: str, namespace: str = "default", **kwargs: Any) -> Client:
    """A client with the pydantic data converter (workers built on it inherit it)."""
    return await Client.connect(
        address, namespace=namespace, data_converter=pydantic_data_converter, **kwargs
    )


def build_worker(
    client: Client,
    *,
    task_queue: str,
    toolbox: Toolbox,
    extra_activities: Sequence[Any] = (),
    extra_workflows: Sequence[type] = (),
    max_concurrent_activities: int = 200,
    **options: Any,
) -> Worker:
    """A worker that runs ``PlanRun`` and the node activities for ``toolbox``.

    A short sticky schedule-to-start timeout means that after a worker dies, its runs move to
    another worker in about 2 s instead of the default 10 s.
    """
    calls = CallActivities(toolbox)
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[PlanRun, *extra_workflows],
        activities=[calls.run_call, *extra_activities],
        workflow_runner=sandbox_runner(),
        sticky_queue_schedule_to_start_timeout=timedelta(seconds=2),
        max_concurrent_activities=max_concurrent_activities,
        **options,
    )
