"""Client side of runs: start a plan's one run, read its log, stop it, answer a halted call.

Everything that can refuse happens before the run is claimed, because a claim is for ever:
the plan must be ``executable`` with an approval, and the run input must satisfy the entry's
declared fields. Then the store records the run id ``plan/<planId>`` once, ever, and the
workflow starts under that id with ``REJECT_DUPLICATE`` (no second run after the first closes)
and ``USE_EXISTING`` (a retried start attaches instead of failing). Two concurrent starts of one
plan yield one run: the store's compare-and-set lets exactly one claim win.

``read_log`` returns the whole log: the current execution's segment by paged query while the
run is open, and every closed execution's segment rebuilt from its history by local replay,
so a closed run is readable with no worker running.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Literal

from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowHistory,
    WorkflowUpdateFailedError,
)
from temporalio.common import (
    SearchAttributePair,
    TypedSearchAttributes,
    WorkflowIDConflictPolicy,
    WorkflowIDReusePolicy,
)
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from orchestration.errors import InvalidRunInputError, RunRefusedError
from orchestration.execution import (
    EventPage,
    PlanRunInput,
    PlanRunResult,
    ResolveDecision,
    RunSettings,
    RunStatus,
    workflow_id_for,
)
from orchestration.run_input import check_run_input
from orchestration.runs import fold_run
from orchestration.store.base import PlanStore
from orchestration.types import EntryNode, RunEvent, RunProjection
from workflows.plan_run import PLAN_DIGEST, PLAN_ID
from workflows.runlog import events_from_history

__all__ = ["TemporalRuns"]

_OPEN = (WorkflowExecutionStatus.RUNNING,)


class TemporalRuns:
    """Starts and inspects ``PlanRun`` workflows for plans held in a ``PlanStore``.

    Args:
        client: A client using the pydantic data converter (see ``workers.worker.connect``).
        store: Where plans, approvals and the run-id record live.
        task_queue: The task queue ``PlanRun`` workers poll.
        settings: Default run settings (a call may pass its own).
    """

    def __init__(
        self,
        client: Client,
        store: PlanStore,
        *,
        task_queue: str,
        settings: RunSettings | None = None,
    ) -> None:
        self.client = client
        self.store = store
        self.task_queue = task_queue
        self.settings = settings or RunSettings()

    # -- starting -----------------------------------------------------------------------------

    async def start(
        self,
        plan_id: str,
        run_input: dict[str, Any],
        *,
        resume_run_id: str | None = None,
        settings: RunSettings | None = None,
    ) -> WorkflowHandle[Any, PlanRunResult]:
        """Start the plan's one run (or, with ``resume_run_id``, attach to it).

        Raises:
            RunRefusedError: with the code saying why; nothing was claimed or started.
            PlanNotFoundError: no such plan.
        """
        state = await self.store.read_state(plan_id)
        if state.state != "executable":
            raise RunRefusedError(
                "not_executable",
                f"plan {plan_id!r} is {state.state}; freeze it, have an operator approve it, "
                "then run it",
            )
        view = (await self.store.fold(plan_id)).view
        approval = await self.store.read_approval(plan_id)
        if approval is None:
            raise RunRefusedError(
                "approval_missing", f"plan {plan_id!r} has no approval record; approve it first"
            )
        entry = next((n for n in view.nodes if isinstance(n, EntryNode)), None)
        if entry is not None:
            try:
                check_run_input(entry.definition.input, run_input)
            except InvalidRunInputError as exc:
                raise RunRefusedError("invalid_run_input", exc.message) from exc
        workflow_id = workflow_id_for(plan_id)
        existing = await self.store.read_run_id(plan_id)
        if resume_run_id is not None:
            if existing != resume_run_id:
                raise RunRefusedError(
                    "run_not_found",
                    f"plan {plan_id!r} has no run {resume_run_id!r}"
                    + (f"; its run is {existing!r}" if existing else ""),
                    existing,
                )
            status = await self._status_of(workflow_id)
            if status == WorkflowExecutionStatus.COMPLETED:
                raise RunRefusedError(
                    "run_already_settled",
                    f"run {resume_run_id!r} already completed; read it with `orch run show`",
                    existing,
                )
            if status is not None:
                return self.client.get_workflow_handle(workflow_id, result_type=PlanRunResult)
        elif existing is not None:
            raise RunRefusedError(
                "run_already_claimed",
                f"plan {plan_id!r} already has its one run {existing!r}; a plan runs at most "
                "once — clone it (`orch plan clone`) to run its content again",
                existing,
            )
        else:
            claim = await self.store.claim_run(plan_id, state.digest, workflow_id)
            if not claim.ok:
                raise RunRefusedError(
                    claim.reason,
                    f"the store refused the run claim ({claim.reason}); re-read the plan",
                    claim.existing_run_id,
                )
            if claim.resumed:
                raise RunRefusedError(
                    "run_already_claimed",
                    f"plan {plan_id!r} was claimed by a concurrent start; its run is "
                    f"{claim.run_id!r}",
                    claim.run_id,
                )
        run_settings = settings or self.settings
        try:
            return await self.client.start_workflow(
                "PlanRun",
                PlanRunInput(
                    plan=view, approval=approval, run_input=run_input, settings=run_settings
                ),
                id=workflow_id,
                task_queue=self.task_queue,
                result_type=PlanRunResult,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                search_attributes=(
                    TypedSearchAttributes(
                        [
                            SearchAttributePair(PLAN_ID, plan_id),
                            SearchAttributePair(PLAN_DIGEST, view.digest),
                        ]
                    )
                    if run_settings.search_attributes
                    else None
                ),
                static_summary=(
                    f"Plan {plan_id}: {len(view.nodes)} nodes, digest {view.digest[:12]}"
                ),
            )
        except WorkflowAlreadyStartedError as exc:
            raise RunRefusedError(
                "run_already_settled",
                f"the workflow {workflow_id!r} already ran and closed; a plan runs at most once",
                workflow_id,
            ) from exc

    async def execute(
        self, plan_id: str, run_input: dict[str, Any], **kwargs: Any
    ) -> RunProjection:
        """Start the run, wait for it to end, and return the projection of its whole log."""
        handle = await self.start(plan_id, run_input, **kwargs)
        try:
            await handle.result()
        except WorkflowFailureError:
            pass  # the log says how it ended; a cancelled run still has one
        return await self.projection(plan_id)

    # -- reading --------------------------------------------------------------------------------

    async def _status_of(self, workflow_id: str) -> WorkflowExecutionStatus | None:
        try:
            description = await self.client.get_workflow_handle(workflow_id).describe()
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                return None
            raise
        return description.status

    async def _executions(self, workflow_id: str) -> AsyncIterator[tuple[str, WorkflowHistory]]:
        """The run's executions, newest first, each with its history."""
        run_id: str | None = None
        while True:
            handle = self.client.get_workflow_handle(workflow_id, run_id=run_id)
            history = await handle.fetch_history()
            started = history.events[0].workflow_execution_started_event_attributes
            yield history.run_id, history
            previous = started.continued_execution_run_id
            if not previous:
                return
            run_id = previous

    async def read_log(self, plan_id: str) -> list[RunEvent]:
        """The run's whole event log, live or closed.

        Raises:
            RunRefusedError: ``run_not_found`` when the plan has no started run.
        """
        workflow_id = workflow_id_for(plan_id)
        status = await self._status_of(workflow_id)
        if status is None:
            raise RunRefusedError("run_not_found", f"plan {plan_id!r} has no started run")
        segments: list[list[RunEvent]] = []
        newest = True
        async for run_id, history in self._executions(workflow_id):
            if newest and status in _OPEN:
                segments.append(await self._query_segment(workflow_id, run_id))
            else:
                segments.append(
                    await events_from_history(history, self.client.data_converter)
                )
            newest = False
        return [event for segment in reversed(segments) for event in segment]

    async def _query_segment(self, workflow_id: str, run_id: str) -> list[RunEvent]:
        """The open execution's own events, page by page (each page well under 2 MiB)."""
        handle = self.client.get_workflow_handle(workflow_id, run_id=run_id)
        events: list[RunEvent] = []
        since = 0
        while True:
            page: EventPage = await handle.query("events", args=[since, 500], result_type=EventPage)
            events.extend(page.events)
            since = page.next
            if since >= page.total or not page.events:
                return events

    async def projection(self, plan_id: str) -> RunProjection:
        """``fold_run`` of the whole log."""
        return fold_run(await self.read_log(plan_id))

    async def status(self, plan_id: str) -> RunStatus:
        """The live headline of an open run (needs a worker)."""
        handle = self.client.get_workflow_handle(workflow_id_for(plan_id))
        result: RunStatus = await handle.query("status", result_type=RunStatus)
        return result

    # -- operating ------------------------------------------------------------------------------

    async def stop(self, plan_id: str, reason: str = "") -> None:
        """Ask the run to stop gracefully (``operator_stop``)."""
        await self.client.get_workflow_handle(workflow_id_for(plan_id)).signal("stop", reason)

    async def cancel(self, plan_id: str) -> None:
        """Cancel the workflow (recorded as ``turn_abort``)."""
        await self.client.get_workflow_handle(workflow_id_for(plan_id)).cancel()

    async def resolve(
        self,
        plan_id: str,
        frame_key: str,
        decision: Literal["retry", "skip", "abort"],
        decided_by: str = "operator",
    ) -> str:
        """Answer a halted indeterminate call with ``retry``, ``skip`` or ``abort``.

        Raises:
            RunRefusedError: ``not_halted`` when that frame is not waiting for a decision.
        """
        handle = self.client.get_workflow_handle(workflow_id_for(plan_id))
        try:
            answer: str = await handle.execute_update(
                "resolve",
                ResolveDecision(frame_key=frame_key, decision=decision, decided_by=decided_by),
                result_type=str,
            )
        except WorkflowUpdateFailedError as exc:
            cause = exc.cause
            raise RunRefusedError("not_halted", str(getattr(cause, "message", cause))) from exc
        return answer
