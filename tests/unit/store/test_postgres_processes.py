"""One PostgreSQL database shared by real OS processes: concurrent writers, a writer killed."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from orchestration.ops import fold_ops
from orchestration.store import AppendOk
from orchestration.store.postgres import PostgresPlanStore
from tests.postgres_cluster import PostgresCluster
from tests.unit.store._sqlite_writer import op as writer_op
from tests.unit.store.writer_race import SpawnWriter, parse_acks, race

WRITER = Path(__file__).with_name("_postgres_writer.py")


def spawn(dsn: str, writer: str, batches: int, size: int, go: Path | None) -> subprocess.Popen[str]:
    args = [sys.executable, str(WRITER), dsn, "p", writer, str(batches), str(size)]
    if go is not None:
        args.append(str(go))
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


async def fresh_plan(dsn: str) -> None:
    store = PostgresPlanStore(dsn)
    await store.create_plan("p")
    await store.close()


async def assert_consistent(store: PostgresPlanStore) -> list[str]:
    """The stored revision and digest agree with the stored log; returns the log's op ids."""
    state = await store.read_state("p")
    ops = await store.read_ops("p")
    assert state.revision == len(ops)
    assert state.digest == fold_ops("p", ops, await store.read_provenance("p")).view.digest
    return [op.op_id for op in ops]


async def read_log(dsn: str) -> list[str]:
    store = PostgresPlanStore(dsn)
    try:
        return await assert_consistent(store)
    finally:
        await store.close()


@pytest.mark.slow
def test_two_processes_appending_lose_nothing_and_duplicate_nothing(
    postgres: PostgresCluster, tmp_path: Path
) -> None:
    """Every op two concurrent writer processes had acknowledged is in the log exactly once."""

    def fresh(attempt: int) -> tuple[SpawnWriter, Callable[[], list[str]]]:
        dsn = postgres.new_database()
        asyncio.run(fresh_plan(dsn))

        def spawn_writer(name: str, go: Path) -> subprocess.Popen[str]:
            return spawn(dsn, name, batches=100, size=2, go=go)

        return spawn_writer, lambda: asyncio.run(read_log(dsn))

    race(fresh, tmp_path, batches=100, size=2)


@pytest.mark.slow
def test_a_killed_writer_leaves_every_acknowledged_batch_and_no_partial_one(
    postgres: PostgresCluster,
) -> None:
    """SIGKILL mid-stream: every acknowledged batch survives, none is half there, writes go on."""
    dsn = postgres.new_database()
    size = 3
    asyncio.run(fresh_plan(dsn))
    process = spawn(dsn, "w", batches=0, size=size, go=None)
    assert process.stdout is not None
    acked: list[tuple[int, list[str]]] = []
    try:
        assert process.stdout.readline().strip() == "ready"
        while len(acked) < 40:
            line = process.stdout.readline()
            assert line, process.stderr.read() if process.stderr else ""
            acked.extend(parse_acks([line]))
        process.send_signal(signal.SIGKILL)
    finally:
        process.kill()
        process.communicate(timeout=30)
    assert process.returncode == -signal.SIGKILL

    async def reopen() -> None:
        store = PostgresPlanStore(dsn)
        log = await assert_consistent(store)
        last_acked, _ = acked[-1]
        assert len(log) >= last_acked
        assert len(log) % size == 0, "a batch was half written"
        assert log == [f"w-{n}" for n in range(len(log))]
        assert [op_id for _, ids in acked for op_id in ids] == log[:last_acked]
        appended = await store.append_ops(
            "p", [writer_op("after", 0), writer_op("after", 1)], expected_revision=len(log)
        )
        assert isinstance(appended, AppendOk) and appended.revision == len(log) + 2
        assert (await assert_consistent(store))[-2:] == ["after-0", "after-1"]
        await store.close()

    asyncio.run(reopen())
