"""What ``PlanRun`` reads from its worker outside history: plans and logs by content, fast tools.

A run's plan can be far larger than a Temporal payload (a 20,000-node plan is megabytes), and a
resumed run's log larger still; carried through history they would blow its limits, and
carried again at every continue-as-new they would repeat for ever. So the workflow reads them
from the worker's plan store through *extern functions* (plain callables the sandbox hands to
workflow code) instead of activities:

* ``orchestration.load_plan(plan_id) -> RawPlanView``: an executable plan never changes, and the
  workflow checks that the view digests to the digest it was started with, so every replay
  reads the same content (content-addressed, like code).
* ``orchestration.load_log(plan_id, run_id, upto) -> list[LogEntry]``: the first ``upto``
  entries of a run's log, which are never rewritten (appends are idempotent by position), so
  the same call reads the same entries on every replay. ``upto`` comes from the claim, which is
  recorded in history.
* ``orchestration.check_args(tool, args) -> str | None``: why the worker's tool refuses an
  approver's edited arguments (:class:`ToolShapes`). Called only by the ``decide`` update's
  validator, which never runs on replay, so it may read the worker's configuration.

A worker registers them with :class:`RunServices` (an interceptor); so does a replayer that
rebuilds logs. :class:`RunServices` also refuses a ``PlanRun`` started with more than one
argument, which the workflow itself never sees (the SDK would fail its task for ever).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from temporalio.exceptions import ApplicationError
from temporalio.worker import (
    ExecuteWorkflowInput,
    Interceptor,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
)

from orchestration.run.log import LogEntry
from orchestration.store.base import PlanStore
from orchestration.types import RawPlanView

__all__ = ["CHECK_ARGS", "KEEP_LOG", "LOAD_LOG", "LOAD_PLAN", "RunServices", "ToolShapes"]

LOAD_PLAN = "orchestration.load_plan"
LOAD_LOG = "orchestration.load_log"
CHECK_ARGS = "orchestration.check_args"
KEEP_LOG = "orchestration.keep_log"
"""Registered (by :mod:`workflows.runlog`) when a replay rebuilds the log: hold all of it."""

T = TypeVar("T")

_TIMEOUT = 60.0
_CACHED_PLANS = 32


class RunServices(Interceptor):
    """Registers the plan store's readers for ``PlanRun`` (and a replayer).

    Args:
        store: The plan store runs were claimed in (``None``: plans only inline, no resume).
        loop: The event loop the store's coroutines run on (default: the one running when
            this is built, which must be the worker's or replayer's own).

    """

    def __init__(
        self, store: PlanStore | None, *, loop: asyncio.AbstractEventLoop | None = None
    ) -> None:
        self.store = store
        self._loop = loop or asyncio.get_running_loop()
        self._plans: OrderedDict[str, RawPlanView] = OrderedDict()

    def _wait(self, work: Callable[[], Awaitable[T]]) -> T:
        """Run a store coroutine on the worker's loop and wait for it (from a workflow thread)."""

        async def call() -> T:
            return await work()

        future: concurrent.futures.Future[T] = asyncio.run_coroutine_threadsafe(call(), self._loop)
        return future.result(timeout=_TIMEOUT)

    def load_plan(self, plan_id: str) -> RawPlanView:
        """The plan's current (for an executable plan: its only) view."""
        store = self.store
        if store is None:
            raise LookupError(
                "this worker has no plan store; start it with --store so runs can load plans"
            )
        cached = self._plans.get(plan_id)
        if cached is not None:
            self._plans.move_to_end(plan_id)
            return cached
        view = self._wait(lambda: store.fold(plan_id)).view
        self._plans[plan_id] = view
        if len(self._plans) > _CACHED_PLANS:
            self._plans.popitem(last=False)
        return view

    def load_log(self, plan_id: str, run_id: str, upto: int) -> list[LogEntry]:
        """The first ``upto`` entries of the run's log."""
        store = self.store
        if store is None:
            raise LookupError("this worker has no plan store; start it with --store to resume runs")
        return self._wait(lambda: store.read_run_log(plan_id, run_id, start=0, limit=upto))

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor]:
        """Register the externs; refuse a ``PlanRun`` started with several arguments."""
        input.unsafe_extern_functions[LOAD_PLAN] = self.load_plan
        input.unsafe_extern_functions[LOAD_LOG] = self.load_log
        return _OneArgument


class ToolShapes(Interceptor):
    """Registers ``orchestration.check_args``: the worker's tools judge an approver's edit.

    Args:
        check: ``(tool, args) -> problem`` (the worker's ``FrameWork.check_args``).

    """

    def __init__(self, check: Callable[[str, Any], str | None]) -> None:
        self.check = check

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor] | None:
        """Register the extern (no interceptor class of its own)."""
        input.unsafe_extern_functions[CHECK_ARGS] = self.check
        return None


class _OneArgument(WorkflowInboundInterceptor):
    async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
        if getattr(input.type, "__name__", "") == "PlanRun" and len(input.args) > 1:
            raise ApplicationError(
                f"PlanRun takes one argument (a PlanRunInput), but was started with "
                f"{len(input.args)}; start it with exactly one JSON object (see schema/)",
                type="invalid_plan_run_input",
                non_retryable=True,
            )
        return await super().execute_workflow(input)
