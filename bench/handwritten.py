"""Hand-written Temporal workflows with the same shapes as the benchmark plans.

They call the same ``plan.call`` activity with the same requests a plan would send, so the
difference in wall time is the plan interpreter's own cost.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from orchestration.execution import CallRequest, CallResponse
    from orchestration.types import StringField

_OUT = (StringField(path="value"),)


def _request(node: str) -> CallRequest:
    return CallRequest(
        plan_id="hand",
        run_id="hand",
        node_id=node,
        frame_key=f"{node}:",
        tool="noop",
        args={},
        output=_OUT,
    )


async def _call(node: str) -> CallResponse:
    return await workflow.execute_activity(
        "plan.call",
        _request(node),
        result_type=CallResponse,
        activity_id=node,
        start_to_close_timeout=timedelta(seconds=60),
        retry_policy=RetryPolicy(maximum_attempts=5),
    )


@workflow.defn(name="HandChain")
class HandChain:
    """n calls, one after another."""

    @workflow.run
    async def run(self, n: int) -> int:
        for i in range(n):
            await _call(f"n{i}")
        return n


@workflow.defn(name="HandFanOut")
class HandFanOut:
    """One call, n calls in parallel, then one call after they all finished."""

    @workflow.run
    async def run(self, n: int) -> int:
        await _call("fork")
        await asyncio.gather(*(_call(f"b{i}") for i in range(n)))
        await _call("after")
        return n
