"""Replay real histories on this process's code: the release gate for a candidate build.

A new build of ``PlanRun`` must still replay the histories an older build recorded whenever
it will be asked to: on an unversioned task queue (every worker takes every run), when an
operator moves a pinned run onto it (``temporal workflow update-options``), and when a run's
log is rebuilt from its history (:mod:`workflows.runlog`) by a client on the new code. So
before a rollout, :func:`check_histories` fetches a sample of real executions from a live
namespace and replays each one through the same sandbox, externs and signature switch a worker
uses; a :class:`~temporalio.workflow.NondeterminismError` means this code would issue different
commands than the build that recorded the history.

A run started by reference loads its plan from the plan store while it replays, as it did when
it ran; an execution that fails to replay while the given store does not hold its plan (or holds
it with another digest) is reported as ``plan_missing``, since its replay diverged for a reason
that has nothing to do with the code.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from typing import Literal

from temporalio.client import Client, WorkflowHistory
from temporalio.runtime import LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter
from temporalio.worker import Replayer
from temporalio.workflow import NondeterminismError

from orchestration.errors import OrchestrationError
from orchestration.run.messages import PlanRunInput
from orchestration.store.base import PlanStore
from workers.worker import sandbox_runner
from workflows.externs import RunServices
from workflows.plan_run import PLAN_BUILD, PlanRun
from workflows.signatures import SignedApprovalsOnly, verified_signatures

__all__ = ["ReplayOutcome", "ReplayStatus", "check_histories"]

ReplayStatus = Literal["ok", "nondeterministic", "failed", "plan_missing"]


@dataclasses.dataclass(frozen=True)
class ReplayOutcome:
    """How one execution's history replayed on this code.

    Attributes:
        workflow_id: The execution's workflow id.
        run_id: The execution's run id.
        status: ``ok``; ``nondeterministic`` (this code issues other commands than the build
            that recorded it); ``failed`` (the replay failed for another reason, named in
            ``detail``); ``plan_missing`` (the plan store cannot give the plan it ran).
        build: The ``PlanBuild`` the execution ran on, when it was versioned.
        detail: Why, when not ``ok`` (the first line of the failure).
    """

    workflow_id: str
    run_id: str
    status: ReplayStatus
    build: str | None = None
    detail: str = ""


async def check_histories(
    client: Client, *, query: str, limit: int, store: PlanStore | None
) -> AsyncIterator[ReplayOutcome]:
    """Replay up to ``limit`` executions matching the visibility ``query``, newest first.

    Call it on the event loop that owns ``store`` (plans are read from replay threads through
    it). Yields one outcome per execution, in listing order.

    Raises:
        temporalio.service.RPCError: the listing failed (an invalid query, an unknown search
            attribute, an unreachable server).
    """
    # The SDK core logs each failed replay as a multi-line warning; the outcome says it once.
    quiet = Runtime(
        telemetry=TelemetryConfig(
            logging=LoggingConfig(filter=TelemetryFilter(core_level="ERROR", other_level="ERROR"))
        )
    )
    plain = _replayer(client, store, quiet, signed=False)
    signed = _replayer(client, store, quiet, signed=True)
    async for execution in client.list_workflows(query, limit=limit):
        build = execution.typed_search_attributes.get(PLAN_BUILD)
        history = await client.get_workflow_handle(
            execution.id, run_id=execution.run_id
        ).fetch_history()
        replayer = signed if verified_signatures(history) else plain
        result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
        failure = result.replay_failure
        if failure is None:
            yield ReplayOutcome(execution.id, execution.run_id, "ok", build)
            continue
        missing = await _missing_plan(client, history, store)
        status: ReplayStatus
        if missing is not None:
            status, detail = "plan_missing", missing
        else:
            status = "nondeterministic" if isinstance(failure, NondeterminismError) else "failed"
            detail = (str(failure).strip().splitlines() or [type(failure).__name__])[0]
        yield ReplayOutcome(execution.id, execution.run_id, status, build, detail)


def _replayer(
    client: Client, store: PlanStore | None, runtime: Runtime, *, signed: bool
) -> Replayer:
    """A replayer set up as a worker is: sandbox, plan-store externs, signature switch."""
    return Replayer(
        workflows=[PlanRun],
        interceptors=[RunServices(store), *([SignedApprovalsOnly()] if signed else [])],
        data_converter=client.data_converter,
        workflow_runner=sandbox_runner(),
        runtime=runtime,
    )


async def _missing_plan(
    client: Client, history: WorkflowHistory, store: PlanStore | None
) -> str | None:
    """Why the store cannot give this execution the plan it ran with, if it cannot.

    Only a ``PlanRun`` started by reference needs the store for its plan.
    """
    started = history.events[0].workflow_execution_started_event_attributes
    if started.workflow_type.name != "PlanRun" or len(started.input.payloads) != 1:
        return None
    try:
        (request,) = await client.data_converter.decode(started.input.payloads, [PlanRunInput])
    except Exception:  # noqa: BLE001 - an input this code cannot read is not the store's doing
        return None
    if not isinstance(request, PlanRunInput) or request.plan_ref is None:
        return None
    ref = request.plan_ref
    if store is None:
        return f"plan {ref.plan_id} is started by reference and no plan store was given"
    try:
        view = (await store.fold(ref.plan_id)).view
    except OrchestrationError as exc:
        return f"plan {ref.plan_id} cannot be read from the plan store ({exc.message})"
    if view.digest != ref.digest:
        return (
            f"the plan store holds plan {ref.plan_id} with digest {view.digest[:12]}, not the "
            f"{ref.digest[:12]} the run started with"
        )
    return None
