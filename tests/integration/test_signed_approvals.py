"""Signed approvals on a real dev server: a worker with operator keys runs only signed records."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import ApplicationError
from temporalio.worker import Replayer

from orchestration.plan.encoding import NodeRef
from orchestration.review.approval import approval_record
from orchestration.review.signing import sign_approval
from orchestration.run.expand import expand_log
from orchestration.run.messages import PlanRunInput, PlanRunResult
from orchestration.store.sqlite import SqlitePlanStore
from orchestration.testing import PlanSketch, approve_into
from orchestration.types import ApprovalRecord, NodeEntered, RawPlanView, RunEvent, StringField
from workers.worker import SignedApprovalsOnly, build_worker, sandbox_runner
from workflows.externs import RunServices
from workflows.plan_run import PlanRun
from workflows.runlog import log_from_history

from .harness import FAST_RETRY, make_toolbox, unique_plan_id

pytestmark = pytest.mark.asyncio(loop_scope="session")

OPERATOR = Ed25519PrivateKey.generate()
STRANGER = Ed25519PrivateKey.generate()


def plan(plan_id: str) -> RawPlanView:
    return (
        PlanSketch(plan_id)
        .entry(StringField(path="s"))
        .call(
            "a", "upper", args={"s": NodeRef("entry", path="s")}, output=[StringField(path="value")]
        )
        .chain("entry", "a")
        .view()
    )


async def run_with(
    client: Client,
    task_queue: str,
    store: SqlitePlanStore,
    view: RawPlanView,
    approval: ApprovalRecord,
) -> tuple[PlanRunResult, list[RunEvent]]:
    """Start PlanRun directly (as any Temporal client could) with ``approval`` for ``view``.

    ``view`` is the plan as the store holds it (approved there, so the worker can claim its
    run); the approval is the one under test. A run that does not complete fails its
    execution; its result travels as the failure's first detail.
    """
    async with build_worker(
        client,
        task_queue=task_queue,
        toolbox=make_toolbox(),
        store=store,
        approval_keys=[OPERATOR.public_key()],
    ):
        handle = await client.start_workflow(
            "PlanRun",
            PlanRunInput(plan=view, approval=approval, run_input={"s": "x"}, settings=FAST_RETRY),
            id=f"plan/{view.plan_id}",
            task_queue=task_queue,
            result_type=PlanRunResult,
        )
        try:
            result = await handle.result()
        except WorkflowFailureError as failure:
            cause = failure.cause
            assert isinstance(cause, ApplicationError) and cause.non_retryable, cause
            result = PlanRunResult.model_validate(cause.details[0])
            assert cause.type == result.outcome
    # Replay needs the same configuration as the worker that ran it: the interceptor included.
    history = await handle.fetch_history()
    await Replayer(
        workflows=[PlanRun],
        data_converter=client.data_converter,
        workflow_runner=sandbox_runner(),
        interceptors=[RunServices(store), SignedApprovalsOnly()],
    ).replay_workflow(history)
    log = await log_from_history(history, store=store, data_converter=client.data_converter)
    return result, expand_log(log)


async def test_a_signed_approval_runs_to_completion(
    client: Client, task_queue: str, store: SqlitePlanStore
) -> None:
    """A record signed by a trusted operator key runs every node."""
    view = await approve_into(store, plan(unique_plan_id("signed")))
    record = sign_approval(approval_record(view, "op", "2026-01-01T00:00:00Z"), OPERATOR)
    result, events = await run_with(client, task_queue, store, view, record)
    assert result.outcome == "completed" and result.settled == 2
    assert any(isinstance(e, NodeEntered) and e.frame.node_id == "a" for e in events)


@pytest.mark.parametrize("case", ["unsigned", "wrong_key", "digest_altered"])
async def test_unsigned_or_forged_approvals_abort_before_any_node(
    client: Client, task_queue: str, store: SqlitePlanStore, case: str
) -> None:
    """Unsigned, stranger-signed and altered-after-signing records end in deviation_abort."""
    view = await approve_into(store, plan(unique_plan_id(case)))
    record = approval_record(view, "op", "2026-01-01T00:00:00Z")
    if case == "wrong_key":
        record = sign_approval(record, STRANGER)
    elif case == "digest_altered":
        # Signed for another content, then re-pointed at this plan's digest.
        other = approval_record(plan(view.plan_id + "-x"), "op", "2026-01-01T00:00:00Z")
        signed = sign_approval(other.model_copy(update={"plan_id": view.plan_id}), OPERATOR)
        record = signed.model_copy(update={"digest": view.digest})
    assert record.digest == view.digest  # the digest check alone would pass
    result, events = await run_with(client, task_queue, store, view, record)
    assert result.outcome == "aborted"
    assert result.interruption is not None and result.interruption.kind == "deviation_abort"
    expected = {
        "unsigned": "not signed",
        "wrong_key": "does not trust",
        "digest_altered": "altered",
    }
    assert expected[case] in result.interruption.detail
    assert not any(isinstance(e, NodeEntered) for e in events)
    assert await store.read_run_id(view.plan_id) is None  # refused before the claim
