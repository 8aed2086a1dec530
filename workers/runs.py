"""Client side of runs on Temporal: start, resume, read, stop, and answer a plan's one run.

Everything that can refuse happens before anything is started, because a claim is for ever:
:func:`~orchestration.run.admission.admit` checks the plan's state, its approval, the run
input. A fresh start then reserves the run id ``plan/<planId>`` in the plan store and starts
``PlanRun`` under that id with ``REJECT_DUPLICATE`` (no second run after the first closes) and
``FAIL`` on a conflict (of two concurrent starts, one is refused); the plan travels by reference
(the worker loads it from the same store and checks its digest). The worker, not this client,
is what makes the run happen at most once: it claims the run for its execution before any
node runs (ruling 30).

A resume (ruling 28) starts a new execution of ``plan/<planId>`` with ``resume``, allowed by the
store's claim for a run whose log did not complete, and ``ALLOW_DUPLICATE_FAILED_ONLY`` (a
completed execution can never be followed). If the last execution died without closing its
log in the store (a terminated execution), its log is first rebuilt from its history.

:meth:`TemporalRuns.read_log` returns the whole compact log: the plan store's copy (the
workflow mirrors its log there), with the open execution's own entries read by its paged
``events`` query, or, for an execution that closed without mirroring, rebuilt from history.

:meth:`TemporalRuns.liveness` reads the liveness of the run's node activities in flight from
the server's pending activities (``describe``, no worker needed): each one's last heartbeat
and heartbeat timeout, judged by :mod:`orchestration.run.liveness`. An activity whose heartbeat
timeout has fired is no longer pending, yet the run has not acted on it until a worker runs its
next workflow task: until then it is still in flight for the run, and ``stalled``
(:func:`unresolved_timeouts` finds it in the newest history events).

Gates are decided through the workflow's ``decide`` and ``answer`` updates
(:meth:`TemporalRuns.decide`), under an update id derived from the frame, the request and the
decision's content: sending the same decision again (a retry after a lost connection) is
answered by the server from the first, never applied twice.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import AsyncIterator, Iterable
from typing import Any, Literal

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType, TimeoutType
from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryReverseRequest
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

from orchestration.errors import GateRefusedError, RunNotFoundError, RunRefusedError
from orchestration.review.ui_details import run_details, run_summary
from orchestration.run.admission import admit
from orchestration.run.expand import expand_log, project_log
from orchestration.run.liveness import liveness_of
from orchestration.run.local import utc_now
from orchestration.run.log import LogEnd, LogEntry
from orchestration.run.messages import (
    GateAck,
    GateApproval,
    LogPage,
    PendingGateDecision,
    PlanRef,
    PlanRunInput,
    PlanRunResult,
    ResolveDecision,
    RunSettings,
    RunStatus,
    WaitingGate,
    workflow_id_for,
)
from orchestration.store.base import ClaimOk, PlanStore
from orchestration.types import FrameLiveness, RunEvent, RunProjection
from workflows.plan_run import PLAN_DIGEST, PLAN_ID
from workflows.runlog import segment_from_history

__all__ = ["NODE_ACTIVITIES", "TemporalRuns", "pending_liveness", "unresolved_timeouts"]

_OPEN = (WorkflowExecutionStatus.RUNNING,)

NODE_ACTIVITIES = frozenset({"plan.call", "plan.reason", "plan.transform"})
"""The activities that carry a frame's work (their ids are ``<frame key>#<attempt>``)."""


def _iso(stamp: Any) -> str | None:
    """A protobuf timestamp as the log writes time, or ``None`` when unset."""
    if stamp is None or (stamp.seconds == 0 and stamp.nanos == 0):
        return None
    moment = dt.datetime.fromtimestamp(stamp.seconds + stamp.nanos / 1e9, dt.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def pending_liveness(
    pending: Iterable[Any], now: str, heartbeat_seconds: float | None = None
) -> dict[str, FrameLiveness]:
    """The liveness of each node activity among a workflow's pending activities, by frame key.

    Its last activity is its last heartbeat, else its last start, else when it was scheduled;
    its heartbeat timeout is the one it was scheduled with (else ``heartbeat_seconds``).
    """
    out: dict[str, FrameLiveness] = {}
    for activity in pending:
        if activity.activity_type.name not in NODE_ACTIVITIES:
            continue
        key, _, number = activity.activity_id.rpartition("#")
        if not key or not number.isdigit():
            continue
        last = (
            _iso(activity.last_heartbeat_time)
            or _iso(activity.last_started_time)
            or _iso(activity.scheduled_time)
        )
        timeout = heartbeat_seconds
        options = activity.activity_options if activity.HasField("activity_options") else None
        if options is not None and options.HasField("heartbeat_timeout"):
            declared = options.heartbeat_timeout.ToTimedelta().total_seconds()
            timeout = declared or timeout
        out[key] = liveness_of(int(number), last, now, timeout, "temporal")
    return out


async def unresolved_timeouts(
    client: Client, workflow_id: str, run_id: str, now: str, *, page_size: int = 200
) -> dict[str, FrameLiveness]:
    """Node activities whose heartbeat timeout fired after the run's last workflow task.

    The server has timed them out, but the run has not yet acted on it (its next workflow task
    has not completed: say, every worker of its version is down or frozen), so each is still a
    frame in flight for the run, silent for its whole heartbeat timeout: ``stalled``, its last
    activity the moment the timeout counted from. Reads the history newest first, as far back as
    the scheduling of those activities.
    """
    request = GetWorkflowExecutionHistoryReverseRequest(
        namespace=client.namespace,
        execution=WorkflowExecution(workflow_id=workflow_id, run_id=run_id),
        maximum_page_size=page_size,
    )
    timed_out: dict[int, str] = {}
    found: dict[str, FrameLiveness] = {}
    seen_task_completed = False
    while True:
        page = await client.workflow_service.get_workflow_execution_history_reverse(request)
        for event in page.history.events:
            kind = event.event_type
            if kind == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
                seen_task_completed = True
                if not timed_out:
                    return found
            elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT and not seen_task_completed:
                ended = event.activity_task_timed_out_event_attributes
                info = ended.failure.timeout_failure_info
                if info.timeout_type == TimeoutType.TIMEOUT_TYPE_HEARTBEAT:
                    timed_out[ended.scheduled_event_id] = _iso(event.event_time) or now
            elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED and (
                event.event_id in timed_out
            ):
                scheduled = event.activity_task_scheduled_event_attributes
                fired = timed_out.pop(event.event_id)
                timeout = scheduled.heartbeat_timeout.ToTimedelta().total_seconds()
                key, _, number = scheduled.activity_id.rpartition("#")
                if scheduled.activity_type.name in NODE_ACTIVITIES and number.isdigit():
                    last = _shifted(fired, -timeout)
                    found[key] = liveness_of(int(number), last, now, timeout, "temporal")
                if not timed_out and seen_task_completed:
                    return found
        if not page.next_page_token:
            return found
        request.next_page_token = page.next_page_token


def _shifted(moment: str, seconds: float) -> str:
    at = dt.datetime.fromisoformat(moment.replace("Z", "+00:00")) + dt.timedelta(seconds=seconds)
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class TemporalRuns:
    """Starts and inspects ``PlanRun`` workflows for plans held in a ``PlanStore``.

    Args:
        client: A client using the pydantic data converter (see ``workers.worker.connect``).
        store: Where plans, approvals, claims and run logs live: the workers' store.
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
        """Start the plan's one run, or with ``resume_run_id`` resume it.

        Raises:
            RunRefusedError: with the code saying why; nothing was started.
            PlanNotFoundError: no such plan.
        """
        workflow_id = workflow_id_for(plan_id)
        admitted = await admit(
            self.store, plan_id, run_input, run_id=workflow_id, resume_run_id=resume_run_id
        )
        if admitted.resume:
            await self._close_open_log(plan_id, workflow_id)
            reuse = WorkflowIDReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY
        else:
            claim = await self.store.claim_run(plan_id, admitted.view.digest, workflow_id)
            if not isinstance(claim, ClaimOk):
                raise RunRefusedError(
                    claim.reason,
                    f"the store refused the run claim ({claim.reason}); re-read the plan",
                    claim.existing_run_id,
                )
            reuse = WorkflowIDReusePolicy.REJECT_DUPLICATE
        view = admitted.view
        run_settings = settings or self.settings
        try:
            return await self.client.start_workflow(
                "PlanRun",
                PlanRunInput(
                    plan_ref=PlanRef(plan_id=plan_id, digest=view.digest),
                    approval=admitted.approval,
                    run_input=admitted.run_input,
                    settings=run_settings,
                    resume=admitted.resume,
                ),
                id=workflow_id,
                task_queue=self.task_queue,
                result_type=PlanRunResult,
                id_reuse_policy=reuse,
                id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
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
                # What the Web UI shows on the run's page: the plan's size, its flowchart and
                # its operator view (user metadata: through the codec like every payload).
                static_summary=run_summary(view, resumed=admitted.resume),
                static_details=run_details(view),
            )
        except WorkflowAlreadyStartedError as exc:
            running = await self._status_of(workflow_id) in _OPEN
            raise RunRefusedError(
                "run_already_claimed",
                f"the plan's one run {workflow_id!r} "
                + ("is already running" if running else "already ran")
                + f"; a plan runs at most once: follow or read it with `orch run watch "
                f"{plan_id}` / `orch run show {plan_id}`, or clone the plan to run it again",
                workflow_id,
            ) from exc

    async def _close_open_log(self, plan_id: str, workflow_id: str) -> None:
        """Before a resume: the last execution must be closed, and its log in the store.

        Raises:
            RunRefusedError: ``run_still_open`` when an execution of the run is still open.
        """
        status = await self._status_of(workflow_id)
        if status in _OPEN:
            raise RunRefusedError(
                "run_still_open",
                f"the run of plan {plan_id!r} is still running; stop it (`orch run stop`) or "
                "let it settle before resuming it",
                workflow_id,
            )
        stored = await self.store.read_run_log(plan_id, workflow_id)
        if stored and isinstance(stored[-1], LogEnd) or status is None:
            return
        # The last execution closed without closing its log (terminated): rebuild its
        # segments from history and write what the store lacks.
        async for offset, entries in self._segments_from_history(workflow_id):
            if offset + len(entries) > len(stored):
                await self.store.append_run_log(plan_id, workflow_id, offset, entries)

    async def execute(
        self,
        plan_id: str,
        run_input: dict[str, Any],
        *,
        resume_run_id: str | None = None,
        settings: RunSettings | None = None,
    ) -> RunProjection:
        """Start the run, wait for it to end, and return the projection of its whole log."""
        handle = await self.start(
            plan_id, run_input, resume_run_id=resume_run_id, settings=settings
        )
        try:
            await handle.result()
        except WorkflowFailureError:
            pass  # halted, aborted and cancelled runs fail the execution; the log says how
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

    async def _executions(self, workflow_id: str) -> AsyncIterator[WorkflowHistory]:
        """The current chain's executions, newest first, each with its history."""
        run_id: str | None = None
        while True:
            handle = self.client.get_workflow_handle(workflow_id, run_id=run_id)
            history = await handle.fetch_history()
            yield history
            started = history.events[0].workflow_execution_started_event_attributes
            previous = started.continued_execution_run_id
            if not previous:
                return
            run_id = previous

    async def _segments_from_history(
        self, workflow_id: str
    ) -> AsyncIterator[tuple[int, list[LogEntry]]]:
        """Each execution's log segment with its global offset, oldest first."""
        histories = [h async for h in self._executions(workflow_id)]
        for history in reversed(histories):
            yield await segment_from_history(
                history, store=self.store, data_converter=self.client.data_converter
            )

    async def read_log(self, plan_id: str) -> list[LogEntry]:
        """The run's whole compact log, live or closed.

        Raises:
            RunRefusedError: ``run_not_found`` when the plan has no started run.
        """
        workflow_id = workflow_id_for(plan_id)
        try:
            stored = await self.store.read_run_log(plan_id)
        except RunNotFoundError as exc:
            raise RunRefusedError("run_not_found", f"plan {plan_id!r} has no run") from exc
        status = await self._status_of(workflow_id)
        if status is None:
            if not stored:
                raise RunRefusedError(
                    "run_not_found", f"plan {plan_id!r} has no started run", workflow_id
                )
            return stored
        if status in _OPEN:
            return await self._with_open_segment(plan_id, stored)
        if stored and isinstance(stored[-1], LogEnd):
            return stored
        entries = list(stored)
        async for offset, segment in self._segments_from_history(workflow_id):
            entries[offset:] = segment
        return entries

    async def _with_open_segment(self, plan_id: str, stored: list[LogEntry]) -> list[LogEntry]:
        """The stored log up to what the open execution holds, then what it holds by query."""
        handle = self.client.get_workflow_handle(workflow_id_for(plan_id))
        page: LogPage = await handle.query("events", args=[0, 1], result_type=LogPage)
        since = page.segment_offset
        entries = list(stored[:since])
        if len(entries) < since:
            # The run mirrored (and let go of) more entries since the store was read.
            entries += await self.store.read_run_log(
                plan_id, start=len(entries), limit=since - len(entries)
            )
        while True:
            page = await handle.query("events", args=[since, 2000], result_type=LogPage)
            entries.extend(page.entries)
            since = page.next
            if since >= page.total or not page.entries:
                return entries

    async def read_events(self, plan_id: str) -> list[RunEvent]:
        """The run's whole log as the contract's ``RunEvent``s."""
        return expand_log(await self.read_log(plan_id))

    async def projection(self, plan_id: str) -> RunProjection:
        """``fold_run`` of the whole log."""
        return project_log(await self.read_log(plan_id))

    async def liveness(self, plan_id: str, *, now: str | None = None) -> dict[str, FrameLiveness]:
        """Each node activity in flight's liveness, read from the server (no worker needed).

        Observed only, never acted on: a stalled attempt is resolved by its heartbeat timeout.
        """
        handle = self.client.get_workflow_handle(workflow_id_for(plan_id))
        description = await handle.describe()
        at = now or utc_now()
        raw = description.raw_description
        live = pending_liveness(raw.pending_activities, at, self.settings.heartbeat_seconds)
        if raw.HasField("pending_workflow_task") and description.status in _OPEN:
            # A timeout the run has not acted on yet schedules a workflow task: look for one.
            late = await unresolved_timeouts(self.client, description.id, description.run_id, at)
            live = {**late, **live}
        return live

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

    async def waiting(self, plan_id: str) -> list[WaitingGate]:
        """What the open run waits for at its gates (the ``waiting`` query; needs a worker)."""
        handle = self.client.get_workflow_handle(workflow_id_for(plan_id))
        result: list[WaitingGate] = await handle.query("waiting", result_type=list[WaitingGate])
        return result

    async def decide(self, plan_id: str, decision: PendingGateDecision) -> GateAck:
        """Decide a gate of the open run (update ``decide`` or ``answer``).

        The update id is derived from the frame, the request and the decision, so the same
        decision sent twice is answered once by the server; a request left unnamed is the one
        open now.

        Raises:
            GateRefusedError: the workflow's validator refused it (nothing entered history).
        """
        if decision.request is None:
            open_now = {g.frame_key: g.request.request for g in await self.waiting(plan_id)}
            if decision.frame_key in open_now:
                decision = decision.model_copy(update={"request": open_now[decision.frame_key]})
        body = decision.model_dump_json(by_alias=True).encode()
        update_id = (
            f"gate/{decision.frame_key}/{decision.request or 0}/"
            f"{hashlib.sha256(body).hexdigest()[:16]}"
        )
        name = "decide" if isinstance(decision, GateApproval) else "answer"
        handle = self.client.get_workflow_handle(workflow_id_for(plan_id))
        try:
            ack: GateAck = await handle.execute_update(
                name, decision, id=update_id, result_type=GateAck
            )
        except WorkflowUpdateFailedError as exc:
            cause = exc.cause
            code = getattr(cause, "type", None) or "gate_refused"
            raise GateRefusedError(code, str(getattr(cause, "message", cause))) from exc
        return ack

