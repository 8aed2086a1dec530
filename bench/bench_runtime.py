"""The plan interpreter against hand-written Temporal workflows, and against this process.

One dev server (in memory, tuned poll rates), one worker, one SQLite plan store. Each row runs
a plan through ``PlanRun`` (a) and a hand-written workflow doing the same activities in the
same shape (b) in alternating pairs after a warm-up each, and prints the median of (a)/(b) over
the pairs with its range (this machine is shared and noisy: the pairs keep a drift from
weighing on one side). Rows:

* 200-node chain, 200-wide fan-out + join, 50 diamonds: ordinary activities on both sides
  (target (a)/(b) <= 1.10); the fan-out again with ``activity_summaries`` off (a summary is
  one more payload per activity for the SDK to convert; the hand-written workflows have none);
* the fast path: a 200-call chain of a short replay-safe tool (local activities) against
  hand-written ordinary activities (target (b)/(a) >= 2.5) and hand-written local activities
  (target (a)/(b) <= 1.15);
* a 5,000-node chain and a 5,000-wide fan-out, through continue-as-new (fewer pairs: each run
  takes tens of seconds);
* 50 runs of a 20-node chain at once;
* the floor: the same 200-node chain run by the in-process host (same tools, no server);
* reading the whole log of an open 5,000-node run once it is past half way, through its first
  continue-as-new (target under 5 s).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from handwritten import (  # noqa: E402
    HandChain,
    HandDiamonds,
    HandFanOut,
    HandLocalChain,
    HandWide,
)

from orchestration.exiting import exit_process  # noqa: E402
from orchestration.run.host import InProcessRuns  # noqa: E402
from orchestration.run.messages import PlanRunResult, RunSettings  # noqa: E402
from orchestration.run.work import FrameWork  # noqa: E402
from orchestration.store.sqlite import SqlitePlanStore  # noqa: E402
from orchestration.testing import PlanSketch, approve_into  # noqa: E402
from orchestration.tools.toolbox import Toolbox  # noqa: E402
from orchestration.types import RawPlanView, StringField  # noqa: E402
from workers.devserver import DevServer  # noqa: E402
from workers.logging import configure_logging  # noqa: E402
from workers.runs import TemporalRuns  # noqa: E402
from workers.worker import build_worker, connect  # noqa: E402

TOOLS = Toolbox()
OUT = [StringField(path="value")]
SETTINGS = RunSettings(search_attributes=False)


@TOOLS.tool("noop")
async def noop() -> str:
    return "ok"


@TOOLS.tool("quick", short=True)
async def quick() -> str:
    return "ok"


def _sketch(plan_id: str, n: int, window: int = 1000) -> PlanSketch:
    size = n + 10
    # Steps count every dequeued frame, a join's parked arrivals among them.
    return PlanSketch(
        plan_id,
        max_nodes=size,
        max_edges=size * 2,
        max_steps=size * 3,
        max_concurrent_frames=window,
    ).entry()


def chain(n: int, tool: str = "noop") -> Callable[[str], RawPlanView]:
    def build(plan_id: str) -> RawPlanView:
        sketch = _sketch(plan_id, n)
        ids = [f"n{i}" for i in range(n)]
        for node in ids:
            sketch.call(node, tool, output=OUT)
        return sketch.chain("entry", *ids).view()

    return build


def fan_join(n: int) -> Callable[[str], RawPlanView]:
    def build(plan_id: str) -> RawPlanView:
        sketch = _sketch(plan_id, n + 3)
        sketch.call("fork", "noop", output=OUT).call("after", "noop", output=OUT).join("j")
        sketch.edge("entry", "fork")
        for i in range(n):
            sketch.call(f"b{i}", "noop", output=OUT)
            sketch.edge("fork", f"b{i}").edge(f"b{i}", "j")
        return sketch.edge("j", "after").view()

    return build


def wide(n: int) -> Callable[[str], RawPlanView]:
    def build(plan_id: str) -> RawPlanView:
        sketch = _sketch(plan_id, n)
        for i in range(n):
            sketch.call(f"c{i}", "noop", output=OUT)
            sketch.edge("entry", f"c{i}")
        return sketch.view()

    return build


def diamonds(n: int) -> Callable[[str], RawPlanView]:
    def build(plan_id: str) -> RawPlanView:
        sketch = _sketch(plan_id, 4 * n)
        tail = "entry"
        for i in range(n):
            sketch.call(f"f{i}", "noop", output=OUT)
            sketch.call(f"l{i}", "noop", output=OUT).call(f"r{i}", "noop", output=OUT)
            sketch.join(f"j{i}")
            sketch.edge(tail, f"f{i}").edge(f"f{i}", f"l{i}").edge(f"f{i}", f"r{i}")
            sketch.edge(f"l{i}", f"j{i}").edge(f"r{i}", f"j{i}")
            tail = f"j{i}"
        return sketch.view()

    return build


def spread(ratios: list[float]) -> str:
    return f"{statistics.median(ratios):5.2f} ({min(ratios):.2f}-{max(ratios):.2f})"


async def pairs(
    a: Callable[[], Awaitable[None]], b: Callable[[], Awaitable[None]], rounds: int
) -> tuple[list[float], list[float]]:
    """Times of ``a`` and ``b``, run in alternation after one warm-up each."""
    await a()
    await b()
    times_a: list[float] = []
    times_b: list[float] = []
    for _ in range(rounds):
        for run, taken in ((a, times_a), (b, times_b)):
            start = time.perf_counter()
            await run()
            taken.append(time.perf_counter() - start)
    return times_a, times_b


async def main() -> None:  # noqa: C901 - one benchmark script, row after row
    configure_logging("WARNING")
    folder = Path(tempfile.mkdtemp())
    store = SqlitePlanStore(folder / "plans.sqlite3")
    async with DevServer(ui=False) as server:
        client = await connect(server.address)
        queue = "bench"
        worker = build_worker(
            client,
            task_queue=queue,
            toolbox=TOOLS,
            store=store,
            extra_workflows=[HandChain, HandLocalChain, HandFanOut, HandWide, HandDiamonds],
            max_concurrent_activities=1000,
        )
        runs = TemporalRuns(client, store, task_queue=queue, settings=SETTINGS)
        async with worker:

            def plan(build: Callable[[str], RawPlanView]) -> Callable[[], Awaitable[None]]:
                async def run() -> None:
                    view = await approve_into(store, build(f"b-{uuid.uuid4().hex[:10]}"))
                    handle = await runs.start(view.plan_id, {})
                    result: PlanRunResult = await handle.result()
                    assert result.outcome == "completed", result

                return run

            def hand(name: str, n: int) -> Callable[[], Awaitable[None]]:
                async def run() -> None:
                    await client.execute_workflow(
                        name, n, id=f"hand-{uuid.uuid4().hex[:10]}", task_queue=queue
                    )

                return run

            print(
                f"{'shape':<34}{'(a) PlanRun':>13}{'(b) hand-written':>18}   (a)/(b) median (range)"
            )
            rows = [
                ("200-node chain", chain(200), "HandChain", 200, 5, "<= 1.10"),
                ("200-wide fan-out + join", fan_join(200), "HandFanOut", 200, 5, "<= 1.10"),
                ("50 diamonds (200 nodes)", diamonds(50), "HandDiamonds", 50, 5, "<= 1.10"),
                (
                    "fast path vs hand local",
                    chain(200, "quick"),
                    "HandLocalChain",
                    200,
                    5,
                    "<= 1.15",
                ),
                ("5,000-node chain", chain(5000), "HandChain", 5000, 2, "(continues as new)"),
                ("5,000-wide fan-out", wide(5000), "HandWide", 5000, 2, "(continues as new)"),
            ]
            for name, build, hand_name, n, rounds, target in rows:
                ta, tb = await pairs(plan(build), hand(hand_name, n), rounds)
                ratios = [x / y for x, y in zip(ta, tb, strict=True)]
                print(
                    f"{name:<34}{statistics.median(ta) * 1000:>11.0f}ms"
                    f"{statistics.median(tb) * 1000:>16.0f}ms   {spread(ratios)}  target {target}"
                )

            quiet_runs = TemporalRuns(
                client,
                store,
                task_queue=queue,
                settings=SETTINGS.model_copy(update={"activity_summaries": False}),
            )

            async def unlabelled() -> None:
                view = await approve_into(store, fan_join(200)(f"q-{uuid.uuid4().hex[:10]}"))
                result = await (await quiet_runs.start(view.plan_id, {})).result()
                assert result.outcome == "completed", result

            ta, tb = await pairs(unlabelled, hand("HandFanOut", 200), 5)
            ratios = [x / y for x, y in zip(ta, tb, strict=True)]
            print(
                f"{'... without activity summaries':<34}{statistics.median(ta) * 1000:>11.0f}ms"
                f"{statistics.median(tb) * 1000:>16.0f}ms   {spread(ratios)}  target <= 1.10"
            )

            ta, tb = await pairs(plan(chain(200, "quick")), hand("HandChain", 200), 5)
            ratios = [y / x for x, y in zip(ta, tb, strict=True)]
            print(
                f"{'fast path vs hand ordinary':<34}{statistics.median(ta) * 1000:>11.0f}ms"
                f"{statistics.median(tb) * 1000:>16.0f}ms   (b)/(a) {spread(ratios)}  "
                "target >= 2.5"
            )

            async def many_plans() -> None:
                await asyncio.gather(*(plan(chain(20))() for _ in range(50)))

            async def many_hands() -> None:
                await asyncio.gather(*(hand("HandChain", 20)() for _ in range(50)))

            ta, tb = await pairs(many_plans, many_hands, 3)
            ratios = [x / y for x, y in zip(ta, tb, strict=True)]
            print(
                f"{'50 runs of a 20-node chain':<34}{statistics.median(ta) * 1000:>11.0f}ms"
                f"{statistics.median(tb) * 1000:>16.0f}ms   {spread(ratios)}"
            )

            local_store = SqlitePlanStore(folder / "local.sqlite3")
            local = InProcessRuns(local_store, FrameWork(TOOLS), settings=SETTINGS)

            async def floor() -> None:
                view = await approve_into(local_store, chain(200)(f"l-{uuid.uuid4().hex[:10]}"))
                assert (await local.execute(view.plan_id, {})).outcome == "completed"

            ta, tb = await pairs(plan(chain(200)), floor, 3)
            print(
                f"{'200-node chain, in process':<34}{statistics.median(ta) * 1000:>11.0f}ms"
                f"{statistics.median(tb) * 1000:>16.0f}ms   (the same plan and tools, no server)"
            )

            view = await approve_into(store, chain(5000)(f"open-{uuid.uuid4().hex[:10]}"))
            handle = await runs.start(view.plan_id, {})
            while (await runs.status(view.plan_id)).steps < 2500:  # past its first continuation
                await asyncio.sleep(1)
            start = time.perf_counter()
            log = await runs.read_log(view.plan_id)
            read_s = time.perf_counter() - start
            print(
                f"reading the whole log of an open 5,000-node run: {len(log):,} entries in "
                f"{read_s:.2f} s (target < 5 s)"
            )
            await handle.result()
    await store.close()


if __name__ == "__main__":
    asyncio.run(main())
    exit_process(0)
