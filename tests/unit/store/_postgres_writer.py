"""A separate OS process appending to a PostgresPlanStore, for the multi-process store tests.

Usage: ``python _postgres_writer.py DSN PLAN WRITER BATCHES SIZE [GO_FILE]``; the protocol on
stdout is the one of ``_sqlite_writer.py`` (``ready``, then ``ack <revision> <ids>`` per batch).
"""

from __future__ import annotations

import asyncio
import itertools
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from orchestration.store import AppendOk, AppendRefused  # noqa: E402
from orchestration.store.postgres import PostgresPlanStore  # noqa: E402
from tests.unit.store._sqlite_writer import op  # noqa: E402


async def main(dsn: str, plan_id: str, writer: str, batches: int, size: int, go: str) -> None:
    store = PostgresPlanStore(dsn, max_size=1)
    await store.read_state(plan_id)
    print("ready", flush=True)
    if go:
        while not Path(go).exists():
            time.sleep(0.001)
    numbers = itertools.count()
    rounds = itertools.count() if batches == 0 else range(batches)
    for index in rounds:
        batch = [op(writer, next(numbers)) for _ in range(size)]
        while True:
            expected = None
            if index % 2:
                expected = (await store.read_state(plan_id)).revision
            result = await store.append_ops(plan_id, batch, expected_revision=expected)
            if isinstance(result, AppendOk):
                break
            assert isinstance(result, AppendRefused) and result.reason == "revision_moved", result
        ids = ",".join(o.op_id for o in batch)
        print(f"ack {result.revision} {ids}", flush=True)
    await store.close()


if __name__ == "__main__":
    dsn, plan_id, writer, batches, size = sys.argv[1:6]
    go = sys.argv[6] if len(sys.argv) > 6 else ""
    asyncio.run(main(dsn, plan_id, writer, int(batches), int(size), go))
