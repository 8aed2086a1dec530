"""``PlanBatch``: one batch of a long map's items, as a child workflow of the plan's run.

A ``PlanRun`` whose map has more items than ``RunSettings.batch_maps_over`` runs them in batches
(:mod:`orchestration.run.batching`), each a ``PlanBatch`` child: the run's own history then holds
one child per batch instead of every item's activities, and no execution comes near Temporal's
2,000 pending activities or its continue-as-new suggestion. The child runs the hosts' shared
batch code (:func:`~orchestration.run.batch.run_batch`) over the same transport as ``PlanRun``
(:class:`~workflows.port.WorkflowPort`), and returns its log and rows, compressed, for the run to
splice into its own log.

**Only the run starts a batch.** Tools run here, so the worker checks what the run checked,
whoever started the execution: the child must have a parent, that parent must be the plan's
run (``plan/<planId>``, a workflow that ran nothing unless it won the plan store's claim), its
own id must be the one the run gives that batch, and the plan loaded by reference must be the
approved one. Anything else fails at once, non-retryable (``batch_refused``), before any node.

**Stopping.** The signal ``stop`` (sent by the run when it is ending) or a cancellation stops
the batch gracefully: nothing new starts, what is in flight settles, and the batch returns
what it did; the run fails the items it did not finish. A run that closes first terminates
its children (the default parent-close policy).
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from orchestration.run.batch import run_batch
    from orchestration.run.batching import encode_result
    from orchestration.run.driver import Inbox
    from orchestration.run.log import LogEntry
    from orchestration.run.messages import (
        PlanBatchInput,
        PlanRunInput,
        batch_workflow_id,
        workflow_id_for,
    )
    from orchestration.types import OperatorStop, RawPlanView
    from workflows.gate import NO_INPUT, decode_as, deviation, load_view
    from workflows.port import WorkflowPort, fast_tools

__all__ = ["PlanBatch"]


@workflow.defn(name="PlanBatch")
class PlanBatch:
    """Runs one batch of a map's items for the plan's run; see the module docstring."""

    def __init__(self) -> None:
        self._inbox = Inbox()

    @workflow.run
    async def run(self, input: RawValue = NO_INPUT) -> bytes:
        """Check the batch is the run's, run its items, return its result (compressed)."""
        request = _decode(input)
        as_run = PlanRunInput(
            plan_ref=request.plan_ref, approval=request.approval, settings=request.settings
        )
        loaded = load_view(as_run)
        problem = _refusal(request, loaded)
        if problem is not None:
            raise ApplicationError(problem, type="batch_refused", non_retryable=True)
        assert isinstance(loaded, RawPlanView)
        log: list[LogEntry] = []
        port = WorkflowPort(
            loaded,
            as_run,
            inbox=self._inbox,
            fast=await fast_tools(loaded),
            record=log.extend,
            on_cancel=lambda: None,
            run_id=workflow_id_for(loaded.plan_id),
        )
        result = await run_batch(
            loaded,
            request.spec,
            port,
            request.settings.retry,
            self._inbox,
            log,
            max_in_flight=request.settings.max_in_flight,
        )
        return encode_result(result)

    @workflow.signal(
        description="Stop the batch: nothing new starts, what is in flight settles, and the "
        "batch returns what it did (the run sends it when it is ending)."
    )
    def stop(self) -> None:
        """Stop gracefully."""
        if self._inbox.stop is None:
            self._inbox.stop = OperatorStop()


def _decode(input: RawValue) -> PlanBatchInput:
    return decode_as(input, PlanBatchInput, "PlanBatch", _refuse_input)


def _refuse_input(message: str) -> ApplicationError:
    return ApplicationError(
        f"{message}; PlanBatch is started only by a plan's PlanRun, for one batch of a map",
        type="batch_refused",
        non_retryable=True,
    )


def _refusal(request: PlanBatchInput, loaded: RawPlanView | str) -> str | None:
    """Why this execution may not run the batch, if it may not."""
    info = workflow.info()
    plan_id = request.plan_ref.plan_id
    run_id = workflow_id_for(plan_id)
    parent = info.parent
    if parent is None or parent.workflow_id != run_id:
        return (
            f"PlanBatch runs only as a child of the plan's run {run_id!r}"
            + ("" if parent is None else f", not of {parent.workflow_id!r}")
            + "; a map's batches are started by the run itself"
        )
    if request.spec.plan_id != plan_id:
        return f"the batch is of plan {request.spec.plan_id!r}, not of {plan_id!r}"
    prefix = batch_workflow_id(plan_id, "")
    if not info.workflow_id.startswith(prefix) or not info.workflow_id.endswith(
        f"#batch{request.spec.batch}"
    ):
        return (
            f"this batch's workflow id is {info.workflow_id!r}, not the one the run gives batch "
            f"{request.spec.batch} (under {prefix!r})"
        )
    if isinstance(loaded, str):
        return loaded
    return deviation(loaded, request.approval, request.plan_ref.digest)
