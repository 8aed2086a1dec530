"""How ``PlanRun`` carries out the shared run loop's requests: the workflow's ``HostPort``.

The loop (:class:`~orchestration.run.driver.RunDriver`) decides which frames start and what each
attempt's outcome means; :class:`WorkflowPort` decides only how one attempt is carried out
inside a workflow, and how the run waits:

* a ``call`` is an activity on the run's task queue or, for a replay-safe tool this worker
  lists as fast (:func:`fast_tools`), a local activity: no task-queue round trip, the same
  attempts and outcomes;
* a ``reason`` and a ``transform`` are an activity each;
* a ``branch`` or ``select`` is decided inline by the deterministic cells, or by the worker's
  other cells in the ``plan.evaluate`` local activity;
* a retry's backoff is a durable timer, a wait is ``workflow.wait_condition``, and a wait
  bounded by a gate's deadline is ``wait_condition`` with a timeout: a durable timer, so a
  run waiting for a person holds no worker slot, and a worker that dies or a server that
  restarts meanwhile changes nothing.

Determinism: every attempt is one activity execution of one attempt (the loop retries, not
Temporal), with ``activity_id = <frame key>#<attempt>``: replaying a history against code that
would hand a result to another frame fails as nondeterministic instead of silently. Time is
``workflow.now()``. So Temporal retries nothing the run's log does not show: each attempt's
failure comes back here, is classified (a start-to-close or heartbeat timeout is a lost
attempt, by which timeout; an application error carries its name, kind, transience and what
a reason attempt spent), and the loop records it.

This module is passed through the workflow sandbox (see :mod:`workflows.plan_run`), so the
sandbox does not check it: it reads no clock, randomness or environment except through
``workflow``, and keeps no state between runs (the inline cells are made per run).
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    TimeoutError,
    TimeoutType,
    is_cancelled_exception,
)
from temporalio.workflow import ChildWorkflowHandle

from orchestration.predicates import CelCell, StructuredCell
from orchestration.run.batching import BatchDispatch, BatchResult, decode_result
from orchestration.run.budgets import Allowance
from orchestration.run.driver import (
    Inbox,
    call_request,
    decided,
    evaluate_request,
    reason_attempt,
    reason_request,
    transform_request,
)
from orchestration.run.engine.machine import Dispatch, Failed, Succeeded
from orchestration.run.log import LogEntry
from orchestration.run.messages import (
    CallResponse,
    EvaluateResponse,
    PlanBatchInput,
    PlanRef,
    PlanRunInput,
    ReasonResponse,
    RunSettings,
    TransformResponse,
    activity_id_for,
    batch_workflow_id,
)
from orchestration.run.policy import Attempt, Lost, LostBy
from orchestration.run.work import WorkFailed, decide_with
from orchestration.tools.contracts import PredicateEvaluator
from orchestration.types import (
    BranchNode,
    CallNode,
    RawPlanView,
    SelectNode,
    TurnAbort,
    Usage,
)

__all__ = ["LOCAL_TIMEOUT", "WorkflowPort", "attempt_from_error", "fast_tools", "iso"]

LOCAL_TIMEOUT = timedelta(seconds=30)
"""Start-to-close timeout of the worker's own local activities (claim, mirror, cells, lists)."""

_LOST = (TimeoutType.START_TO_CLOSE, TimeoutType.HEARTBEAT)
_ONE_ATTEMPT = RetryPolicy(maximum_attempts=1)


def iso(moment: datetime) -> str:
    """``moment`` as the log writes time: ISO-8601 to the millisecond, UTC as ``Z``."""
    text = moment.isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")


def inline_cells() -> dict[str, PredicateEvaluator]:
    """The deterministic predicate cells evaluated inside the workflow, by cell id.

    Any other cell id is decided by the worker's cells in the ``plan.evaluate`` local activity.
    Made per run: the CEL cell keeps a compile cache and an environment no two runs share.
    """
    return {cell.id: cell for cell in (StructuredCell(), CelCell())}


async def fast_tools(view: RawPlanView) -> frozenset[str]:
    """The tools this worker runs on the fast path (asked once per execution, recorded).

    Asked only when the plan has a replay-safe call: no other call may run locally.
    """
    if not any(isinstance(n, CallNode) and n.definition.replay_safe for n in view.nodes):
        return frozenset()
    names: list[str] = await workflow.execute_local_activity(
        "plan.fast_tools",
        result_type=list[str],
        summary="which tools run as local activities",
        start_to_close_timeout=LOCAL_TIMEOUT,
    )
    return frozenset(names)


def attempt_from_error(exc: ActivityError) -> Attempt:
    """An activity's failure as an attempt's outcome: a named failure, or a lost attempt.

    A start-to-close or heartbeat timeout means the attempt may have run: its outcome is lost,
    and the loop's policy decides (retry a replay-safe call, halt any other for an operator).
    """
    cause = exc.cause
    if isinstance(cause, TimeoutError):
        if cause.type in _LOST:
            workflow.metric_meter().create_counter("plan_indeterminate_frames").add(1)
            by: LostBy = "heartbeat" if cause.type == TimeoutType.HEARTBEAT else "start_to_close"
            return Lost(str(cause), by)
        # Timed out before it started (schedule-to-start): nothing ran; try again.
        return Failed("ScheduleTimeout", str(cause), transient=True)
    if isinstance(cause, ApplicationError):
        return _failed_from_application(cause, "")
    name = type(cause).__name__ if cause is not None else "ActivityError"
    return Failed(name, str(cause or exc))


def _failed_from_application(error: ApplicationError, node_kind: str) -> Failed:
    """A node activity's ``ApplicationError`` (see :mod:`activities.frames`) as a failure."""
    facts = error.details[0] if error.details and isinstance(error.details[0], dict) else {}
    kind = facts.get("kind", "predicate" if node_kind in ("branch", "select") else "error")
    spent = facts.get("usage")
    return Failed(
        error.type or "ApplicationError",
        error.message,
        kind if kind in ("error", "predicate", "output_schema", "budget") else "error",
        bool(facts.get("transient", False)),
        Usage.model_validate(spent) if isinstance(spent, dict) else None,
    )


class WorkflowPort:
    """How ``PlanRun`` carries out the shared loop's requests (see ``HostPort``).

    Args:
        view: The plan being run (checked against its approval).
        request: The run's input: its approval and settings.
        inbox: The loop's inbox; a cancellation while waiting lands there as ``TurnAbort``.
        fast: The tools run as local activities (:func:`fast_tools`).
        record: Where the loop's log entries go.
        on_cancel: Told when the run is cancelled, so the run can end Canceled once it settles.
        before_wait: Awaited each time before the loop waits (the workflow mirrors its log).
        run_id: The run the work is for (default: this workflow's id; a batch's is its run's).

    """

    def __init__(
        self,
        view: RawPlanView,
        request: PlanRunInput,
        *,
        inbox: Inbox,
        fast: frozenset[str],
        record: Callable[[list[LogEntry]], None],
        on_cancel: Callable[[], None],
        before_wait: Callable[[], Awaitable[None]] | None = None,
        run_id: str | None = None,
    ) -> None:
        self.view = view
        self.approval = request.approval
        self.settings: RunSettings = request.settings
        self.plan_id = view.plan_id
        self.run_id = run_id or workflow.info().workflow_id
        self._batches: dict[str, ChildWorkflowHandle[Any, bytes]] = {}
        self.inbox = inbox
        self.fast = fast
        self.cells = inline_cells()
        self._record = record
        self._on_cancel = on_cancel
        self._before_wait = before_wait

    def now(self) -> str:
        """``workflow.now()``, the time history recorded for this workflow task."""
        return iso(workflow.now())

    async def pause(self, seconds: float) -> None:
        """A retry's backoff, as a durable timer."""
        await workflow.sleep(timedelta(seconds=seconds), summary="retry backoff")

    async def wait_until(self, ready: Callable[[], bool], timeout: float | None = None) -> None:
        """Wait for ``ready()``, or ``timeout`` seconds (a durable timer).

        A cancellation ends the wait as a ``TurnAbort`` stop instead; the loop then stops the
        run gracefully, so the log records why it ended. Without a timeout no timer is made
        (what every run without gate deadlines records).
        """
        try:
            if self._before_wait is not None and not ready():
                await self._before_wait()
            if timeout is None:
                await workflow.wait_condition(ready)
            else:
                try:
                    await workflow.wait_condition(
                        ready,
                        timeout=timedelta(seconds=timeout),
                        timeout_summary="a gate's deadline",
                    )
                except builtins.TimeoutError:
                    return
        except BaseException as exc:
            if not is_cancelled_exception(exc):
                raise
            self._on_cancel()
            if self.inbox.stop is None:
                self.inbox.stop = TurnAbort()

    def record(self, entries: list[LogEntry]) -> None:
        """Hand the loop's entries to the run's log."""
        self._record(entries)

    async def batch(self, batch: BatchDispatch) -> BatchResult:
        """Run one batch of a map's items as a ``PlanBatch`` child workflow; take its result.

        The child's id is derived from the batch (:func:`batch_workflow_id`); it runs on this
        task queue and, like every child, is terminated if this run closes without it.
        """
        spec = batch.spec
        last = spec.first + len(spec.items) - 1
        handle = await workflow.start_child_workflow(
            "PlanBatch",
            PlanBatchInput(
                plan_ref=PlanRef(plan_id=self.plan_id, digest=self.approval.digest),
                approval=self.approval,
                settings=self.settings,
                spec=spec,
            ),
            id=batch_workflow_id(self.plan_id, batch.key),
            result_type=bytes,
            static_summary=f"items {spec.first}–{last} of map {batch.map_id}",
        )
        self._batches[batch.key] = handle
        try:
            data: bytes = await handle
        finally:
            del self._batches[batch.key]
        return decode_result(data)

    async def breathe(self) -> None:
        """End this workflow task and go on in the next: a 1 ms durable timer."""
        await workflow.sleep(timedelta(milliseconds=1), summary="taking the map's batches")

    def stop_batch(self, key: str) -> None:
        """Signal the batch's child to stop (it starts nothing more and returns what it did)."""
        handle = self._batches.get(key)
        if handle is not None:
            asyncio.ensure_future(handle.signal("stop"))

    def checkpoint_due(self) -> bool:
        """Whether to continue as new: at the settings' history length, or when Temporal says."""
        info = workflow.info()
        limit = self.settings.continue_as_new_after_events
        if limit is not None and info.get_current_history_length() >= limit:
            return True
        return info.is_continue_as_new_suggested()

    def _options(
        self, d: Dispatch, summary: str, allowance: Allowance | None = None
    ) -> dict[str, Any]:
        settings = self.settings
        timeout = settings.start_to_close_seconds
        if allowance is not None and allowance.seconds is not None:
            # What is left of the node's wall time bounds the attempt (a lost attempt if cut).
            timeout = max(0.001, min(timeout, allowance.seconds))
        return {
            "activity_id": activity_id_for(d.key, d.attempt),
            "summary": summary if settings.activity_summaries else None,
            "start_to_close_timeout": timedelta(seconds=timeout),
            "retry_policy": _ONE_ATTEMPT,
        }

    def _remote(
        self, d: Dispatch, summary: str, allowance: Allowance | None = None
    ) -> dict[str, Any]:
        settings = self.settings
        options = self._options(d, summary, allowance)
        options["task_queue"] = settings.task_queue
        options["heartbeat_timeout"] = (
            None
            if settings.heartbeat_seconds is None
            else timedelta(seconds=settings.heartbeat_seconds)
        )
        return options

    async def attempt(self, d: Dispatch, allowance: Allowance | None = None) -> Attempt:
        """Carry out one attempt of frame ``d``; a failure comes back as its outcome, not raised.

        A kind of node this build does not run fails as ``node_kind_unavailable``.
        """
        node = d.node
        try:
            if isinstance(node, BranchNode | SelectNode):
                return await self._decide(d, node)
            if isinstance(node, CallNode):
                return await self._call(d, node, allowance)
            if node.kind == "reason":
                reason = reason_request(
                    d, plan_id=self.plan_id, run_id=self.run_id, allowance=allowance
                )
                answer = await workflow.execute_activity(
                    "plan.reason",
                    reason,
                    result_type=ReasonResponse,
                    **self._remote(d, f"{node.id} · reason", allowance),
                )
                return reason_attempt(answer)
            if node.kind == "transform":
                transform = transform_request(
                    d, self.view, plan_id=self.plan_id, run_id=self.run_id
                )
                result = await workflow.execute_activity(
                    "plan.transform",
                    transform,
                    result_type=TransformResponse,
                    **self._remote(d, f"{node.id} · transform", allowance),
                )
                return Succeeded(items=result.items)
        except ActivityError as exc:
            return attempt_from_error(exc)
        except ApplicationError as exc:
            # A local activity's failure can surface unwrapped; it is the same failure.
            return _failed_from_application(exc, node.kind)
        return Failed(
            "node_kind_unavailable", f"{node.kind} nodes are not executed by this worker version"
        )

    async def _call(
        self, d: Dispatch, node: CallNode, allowance: Allowance | None = None
    ) -> Attempt:
        definition = node.definition
        request = call_request(d, plan_id=self.plan_id, run_id=self.run_id, approval=self.approval)
        if definition.replay_safe and definition.tool in self.fast:
            # The fast path: a short, replay-safe tool runs in this worker as a local activity
            # (no task-queue round trip), with the same attempts and outcomes.
            response = await workflow.execute_local_activity(
                "plan.call",
                request,
                result_type=CallResponse,
                **self._options(d, f"{node.id} · {definition.tool} (local)", allowance),
            )
        else:
            response = await workflow.execute_activity(
                "plan.call",
                request,
                result_type=CallResponse,
                **self._remote(d, f"{node.id} · {definition.tool}", allowance),
            )
        return Succeeded(items=response.items, artifact=response.artifact)

    async def _decide(self, d: Dispatch, node: BranchNode | SelectNode) -> Attempt:
        assert d.context is not None
        if node.definition.evaluator in self.cells:
            try:
                answer = await decide_with(self.cells, node, d.context)
            except WorkFailed as error:
                return Failed(error.name, error.message, error.kind, error.transient)
        else:
            answer = await workflow.execute_local_activity(
                "plan.evaluate",
                evaluate_request(d),
                result_type=EvaluateResponse,
                activity_id=activity_id_for(d.key, d.attempt),
                summary=(
                    f"{node.id} · {node.definition.evaluator}"
                    if self.settings.activity_summaries
                    else None
                ),
                start_to_close_timeout=LOCAL_TIMEOUT,
                retry_policy=_ONE_ATTEMPT,
            )
        return decided(answer.kind, answer.matched, answer.case_label, answer.evidence)
