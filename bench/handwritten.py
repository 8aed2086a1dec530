"""Hand-written Temporal workflows with the same shapes as the benchmark plans.

They call the same ``plan.call`` activity with the same requests a plan would send (ordinary
activities, or local ones for the fast-path comparison), so the difference in wall time is the
plan interpreter's own cost.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from orchestration.run.messages import CallRequest, CallResponse
    from orchestration.types import StringField

_OUT = (StringField(path="value"),)
_ONE = RetryPolicy(maximum_attempts=1)


def _request(node: str, tool: str) -> CallRequest:
    return CallRequest(
        plan_id="hand",
        run_id="hand",
        node_id=node,
        frame_key=f"{node}:",
        tool=tool,
        args={},
        output=_OUT,
    )


async def _call(node: str, tool: str = "noop") -> CallResponse:
    return await workflow.execute_activity(
        "plan.call",
        _request(node, tool),
        result_type=CallResponse,
        activity_id=node,
        start_to_close_timeout=timedelta(seconds=60),
        retry_policy=_ONE,
    )


async def _local(node: str, tool: str = "noop") -> CallResponse:
    return await workflow.execute_local_activity(
        "plan.call",
        _request(node, tool),
        result_type=CallResponse,
        activity_id=node,
        start_to_close_timeout=timedelta(seconds=60),
        retry_policy=_ONE,
    )


@workflow.defn(name="HandChain")
class HandChain:
    """n calls, one after another."""

    @workflow.run
    async def run(self, n: int) -> int:
        for i in range(n):
            await _call(f"n{i}")
        return n


@workflow.defn(name="HandLocalChain")
class HandLocalChain:
    """n calls, one after another, each a local activity."""

    @workflow.run
    async def run(self, n: int) -> int:
        for i in range(n):
            await _local(f"n{i}", "quick")
        return n


@workflow.defn(name="HandFanOut")
class HandFanOut:
    """One call, n calls in parallel (at most 1,000 at once), then one call after them all."""

    @workflow.run
    async def run(self, n: int) -> int:
        await _call("fork")
        window = asyncio.Semaphore(1000)

        async def bounded(i: int) -> CallResponse:
            async with window:
                return await _call(f"b{i}")

        await asyncio.gather(*(bounded(i) for i in range(n)))
        await _call("after")
        return n


@workflow.defn(name="HandWide")
class HandWide:
    """n calls in parallel off the start (at most 1,000 at once), nothing after."""

    @workflow.run
    async def run(self, n: int) -> int:
        window = asyncio.Semaphore(1000)

        async def bounded(i: int) -> CallResponse:
            async with window:
                return await _call(f"c{i}")

        await asyncio.gather(*(bounded(i) for i in range(n)))
        return n


@workflow.defn(name="HandDiamonds")
class HandDiamonds:
    """n diamonds in a row: a fork call, two calls in parallel, the next fork after both."""

    @workflow.run
    async def run(self, n: int) -> int:
        for i in range(n):
            await _call(f"f{i}")
            await asyncio.gather(_call(f"l{i}"), _call(f"r{i}"))
        return n


@workflow.defn(name="HandBatch")
class HandBatch:
    """A child of ``HandMap``: two calls per item, one item after another (local activities)."""

    @workflow.run
    async def run(self, items: list[str]) -> int:
        for item in items:
            await _local(f"peek-{item}", "quick")
            await _local(f"seal-{item}", "quick")
        return len(items)


@workflow.defn(name="HandMap")
class HandMap:
    """A call, then n items in children of 100 (50 children at once), then a call after them.

    What a Temporal developer writes by hand for a large fan-out: the parent holds one child per
    batch instead of every item's activities.
    """

    @workflow.run
    async def run(self, n: int) -> int:
        await _call("list")
        window = asyncio.Semaphore(50)
        names = [f"f{i}" for i in range(n)]
        parent = workflow.info().workflow_id

        async def batch(k: int, items: list[str]) -> int:
            async with window:
                done: int = await workflow.execute_child_workflow(
                    "HandBatch", items, id=f"{parent}/b{k}", result_type=int
                )
                return done

        chunks = [names[i : i + 100] for i in range(0, n, 100)]
        await asyncio.gather(*(batch(k, chunk) for k, chunk in enumerate(chunks)))
        await _call("after")
        return n
