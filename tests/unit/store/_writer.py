"""A separate OS process appending to a shared plan store, for the multi-process store tests.

Usage: ``python _writer.py sqlite|postgres TARGET PLAN WRITER BATCHES SIZE [GO_FILE]``, where
TARGET is the SQLite file or the PostgreSQL DSN.

Appends ``BATCHES`` batches (``0``: until killed) of ``SIZE`` ops with ids
``<WRITER>-<n>``; every other batch is a compare-and-set append (read the revision, append
against it, retry on ``revision_moved``). Prints ``ready`` once the store is open, waits for
``GO_FILE`` to exist if given, then prints ``ack <revision> <id>,<id>,...`` after every
acknowledged batch, flushing each line, so a parent that reads a line knows the batch committed.
"""

from __future__ import annotations

import asyncio
import itertools
import sys
import time
from pathlib import Path

from orchestration.store import AppendOk, AppendRefused, PlanStore, SqlitePlanStore
from orchestration.types import AddNodeOp, CallDefinition, CallNode, PlanOp


def op(writer: str, n: int) -> PlanOp:
    node_id = f"{writer}_{n}"
    return AddNodeOp(
        op_id=f"{writer}-{n}",
        actor_id=writer,
        lamport=n,
        at="2026-01-01T00:00:00Z",
        node=CallNode(id=node_id, definition=CallDefinition(tool="t", args={"n": n})),
    )


def open_store(kind: str, target: str) -> PlanStore:
    """The store a writer appends to; a PostgreSQL writer holds one connection, like a host."""
    if kind == "sqlite":
        return SqlitePlanStore(target)
    from orchestration.store.postgres import PostgresPlanStore

    return PostgresPlanStore(target, max_size=1)


async def main(
    kind: str, target: str, plan_id: str, writer: str, batches: int, size: int, go: str
) -> None:
    store = open_store(kind, target)
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
        # A writer that never pauses starves the other (SQLite's busy handler polls with
        # growing sleeps and keeps missing the moment the lock is free).
        await asyncio.sleep(0.001)
    await store.close()


if __name__ == "__main__":
    kind, target, plan_id, writer, batches, size = sys.argv[1:7]
    go = sys.argv[7] if len(sys.argv) > 7 else ""
    asyncio.run(main(kind, target, plan_id, writer, int(batches), int(size), go))
