"""A client process for the multi-host test: try to start every plan's run, print what happened.

Usage: python -m tests.integration.start_runs DSN ADDRESS TASK_QUEUE PLAN_ID...
Prints one JSON object: {plan_id: "started" | "<refusal code>"}.
"""

from __future__ import annotations

import asyncio
import json
import sys

from orchestration.errors import RunRefusedError
from orchestration.exiting import exit_process
from orchestration.store.postgres import PostgresPlanStore
from workers.runs import TemporalRuns
from workers.worker import connect


async def main(dsn: str, address: str, task_queue: str, plan_ids: list[str]) -> None:
    store = PostgresPlanStore(dsn)
    runs = TemporalRuns(await connect(address), store, task_queue=task_queue)
    outcome: dict[str, str] = {}

    async def start(plan_id: str) -> None:
        try:
            await runs.start(plan_id, {"s": plan_id})
            outcome[plan_id] = "started"
        except RunRefusedError as exc:
            outcome[plan_id] = exc.code

    try:
        await asyncio.gather(*(start(p) for p in plan_ids))
    finally:
        await store.close()
    print(json.dumps(outcome))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]))
    exit_process(0)
