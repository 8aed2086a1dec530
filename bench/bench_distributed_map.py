"""A map of 10,000 items through child workflows, against a hand-written parent and children.

One dev server, one worker, one SQLite plan store. (a) is a plan: a call lists ``n`` files, a map
runs a two-call body over them, 50 items at a time, then one call; with the default settings its
items run in batches of 100 as ``PlanBatch`` children (the body's tool is short: local
activities; the tools and settings are ``bench_runtime.py``'s, plus one that lists the files).
(b) is ``HandMap`` (``bench/handwritten.py``): the same calls, 100 items per ``HandBatch``
child, 50 children at once. Alternating pairs after a warm-up of each at 2,000
items; the median of (a)/(b) with its range.
``python bench/bench_distributed_map.py [items, default 10000] [pairs, default 2]`` (a pair of
10,000-item runs takes about 10 minutes on the 2-core machine CI uses).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_runtime import OUT, SETTINGS, TOOLS  # noqa: E402
from handwritten import HandBatch, HandMap  # noqa: E402

from orchestration.exiting import exit_process  # noqa: E402
from orchestration.plan.encoding import NodeRef  # noqa: E402
from orchestration.run.messages import PlanRunResult  # noqa: E402
from orchestration.store.sqlite import SqlitePlanStore  # noqa: E402
from orchestration.testing import PlanSketch, approve_into  # noqa: E402
from orchestration.types import NumberField, RawPlanView  # noqa: E402
from workers.devserver import DevServer  # noqa: E402
from workers.logging import configure_logging  # noqa: E402
from workers.runs import TemporalRuns  # noqa: E402
from workers.worker import build_worker, connect  # noqa: E402


@TOOLS.tool("files")
def files(n: int) -> dict[str, object]:
    return {"files": [f"f{i}" for i in range(n)], "n": n}


def mapped(plan_id: str, n: int) -> RawPlanView:
    s = PlanSketch(plan_id, max_steps=4 * n + 10, max_concurrent_frames=64).entry()
    s.call("list", "files", args={"n": n}, output=[NumberField(path="n")])
    s.map("m", NodeRef("list", path="files"), max_items=n, concurrency=50)
    s.call("peek", "quick", output=OUT).call("seal", "quick", output=OUT)
    s.call("after", "noop", output=OUT)
    s.edge("entry", "list").edge("list", "m").edge("m", "peek", "item")
    return s.edge("peek", "seal").edge("m", "after").view()


async def main(n: int, rounds: int) -> None:
    configure_logging("WARNING")
    folder = Path(tempfile.mkdtemp())
    store = SqlitePlanStore(folder / "plans.sqlite3")
    async with DevServer(ui=False) as server:
        client = await connect(server.address)
        queue = "bench-map"
        worker = build_worker(
            client,
            task_queue=queue,
            toolbox=TOOLS,
            store=store,
            extra_workflows=[HandMap, HandBatch],
            max_concurrent_activities=1000,
        )
        runs = TemporalRuns(client, store, task_queue=queue, settings=SETTINGS)
        async with worker:

            async def plan(items: int) -> None:
                view = await approve_into(store, mapped(f"m-{uuid.uuid4().hex[:10]}", items))
                result: PlanRunResult = await (await runs.start(view.plan_id, {})).result()
                assert result.outcome == "completed", result

            async def hand(items: int) -> None:
                await client.execute_workflow(
                    "HandMap", items, id=f"hand-{uuid.uuid4().hex[:10]}", task_queue=queue
                )

            await plan(2000)
            await hand(2000)
            times_a: list[float] = []
            times_b: list[float] = []
            for _ in range(rounds):
                for run, taken in ((plan, times_a), (hand, times_b)):
                    start = time.perf_counter()
                    await run(n)
                    taken.append(time.perf_counter() - start)
            ratios = [a / b for a, b in zip(times_a, times_b, strict=True)]
            print(
                f"map of {n:,} items (2 calls each) through children: (a) PlanRun "
                f"{statistics.median(times_a):.1f} s, (b) hand-written parent/children "
                f"{statistics.median(times_b):.1f} s, (a)/(b) {statistics.median(ratios):.2f} "
                f"({min(ratios):.2f}-{max(ratios):.2f}) over {rounds} pairs"
            )
    await store.close()


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    pairs = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    asyncio.run(main(count, pairs))
    exit_process(0)
