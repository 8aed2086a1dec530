"""The plan interpreter against a hand-written Temporal workflow and plain asyncio.

Same shapes, same no-op activity, one dev server (in memory, tuned poll rates), one worker:
(a) a 200-node chain and a 200-wide fan-out + join run as plans through ``PlanRun``;
(b) hand-written workflows calling the same activity in the same shape;
(c) the tool called directly from asyncio.
Prints the median of 5 runs of each (after a warm-up) and the ratio (a)/(b); target <= 1.15.
The runs of (a) and (b) alternate, so a drift in the machine's speed (this one is shared) weighs
on both alike instead of on whichever ran second.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from handwritten import HandChain, HandFanOut  # noqa: E402

from orchestration.approval import approval_record  # noqa: E402
from orchestration.execution import PlanRunInput, PlanRunResult, RunSettings  # noqa: E402
from orchestration.exiting import exit_process  # noqa: E402
from orchestration.testing import PlanSketch  # noqa: E402
from orchestration.toolbox import Toolbox  # noqa: E402
from orchestration.types import RawPlanView, StringField  # noqa: E402
from workers.devserver import DevServer  # noqa: E402
from workers.logging import configure_logging  # noqa: E402
from workers.worker import build_worker, connect  # noqa: E402

N = 200
TOOLS = Toolbox()


@TOOLS.tool("noop")
async def noop() -> str:
    return "ok"


def chain_plan(plan_id: str) -> RawPlanView:
    sketch = PlanSketch(plan_id, max_concurrent_frames=N + 2).entry()
    ids = [f"n{i}" for i in range(N)]
    for node in ids:
        sketch.call(node, "noop", output=[StringField(path="value")])
    return sketch.chain("entry", *ids).view()


def fan_plan(plan_id: str) -> RawPlanView:
    sketch = PlanSketch(plan_id, max_concurrent_frames=N + 2).entry()
    sketch.call("fork", "noop", output=[StringField(path="value")])
    sketch.call("after", "noop", output=[StringField(path="value")])
    sketch.join("j")
    sketch.edge("entry", "fork")
    for i in range(N):
        sketch.call(f"b{i}", "noop", output=[StringField(path="value")])
        sketch.edge("fork", f"b{i}").edge(f"b{i}", "j")
    return sketch.edge("j", "after").view()


async def medians(*runs: Callable[[], Awaitable[None]], rounds: int = 5) -> list[float]:
    """The median time of each of ``runs``, taken in alternation after one warm-up each."""
    for run in runs:
        await run()
    times: list[list[float]] = [[] for _ in runs]
    for _ in range(rounds):
        for run, taken in zip(runs, times, strict=True):
            start = time.perf_counter()
            await run()
            taken.append(time.perf_counter() - start)
    return [statistics.median(taken) for taken in times]


async def main() -> None:
    configure_logging("WARNING")
    async with DevServer(ui=False) as server:
        client = await connect(server.address)
        queue = "bench"
        worker = build_worker(
            client,
            task_queue=queue,
            toolbox=TOOLS,
            extra_workflows=[HandChain, HandFanOut],
            max_concurrent_activities=N + 10,
        )
        async with worker:

            async def plan(build: Callable[[str], RawPlanView]) -> None:
                view = build(f"b-{uuid.uuid4().hex[:8]}")
                run = PlanRunInput(
                    plan=view,
                    approval=approval_record(view, "bench", "2026-01-01T00:00:00Z"),
                    settings=RunSettings(search_attributes=False),
                )
                result = await client.execute_workflow(
                    "PlanRun",
                    run,
                    id=f"plan/{view.plan_id}",
                    task_queue=queue,
                    result_type=PlanRunResult,
                )
                assert result.outcome == "completed", result

            async def hand(name: str) -> None:
                await client.execute_workflow(
                    name, N, id=f"hand-{uuid.uuid4().hex[:8]}", task_queue=queue
                )

            async def plain_chain() -> None:
                for _ in range(N):
                    await noop()

            async def plain_fan() -> None:
                await noop()
                await asyncio.gather(*(noop() for _ in range(N)))
                await noop()

            rows = [
                (
                    "200-node chain",
                    lambda: plan(chain_plan),
                    lambda: hand("HandChain"),
                    plain_chain,
                ),
                (
                    "200-wide fan-out + join",
                    lambda: plan(fan_plan),
                    lambda: hand("HandFanOut"),
                    plain_fan,
                ),
            ]
            print(
                f"{'shape':<26}{'(a) PlanRun':>14}{'(b) hand-written':>18}"
                f"{'(c) asyncio':>14}{'(a)/(b)':>10}"
            )
            for name, a, b, c in rows:
                ta, tb, tc = await medians(a, b, c)
                print(
                    f"{name:<26}{ta * 1000:>12.0f}ms{tb * 1000:>16.0f}ms{tc * 1e6:>12.0f}µs"
                    f"{ta / tb:>10.2f}   (target <= 1.15)"
                )


if __name__ == "__main__":
    asyncio.run(main())
    exit_process(0)
