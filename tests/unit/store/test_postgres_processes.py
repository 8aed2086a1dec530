"""One PostgreSQL database shared by real OS processes: concurrent writers, a writer killed."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from orchestration.ops import fold_ops
from orchestration.store import AppendOk
from orchestration.store.postgres import PostgresPlanStore
from tests.postgres_cluster import PostgresCluster
from tests.unit.store._sqlite_writer import op as writer_op
from tests.unit.store.test_sqlite_processes import parse_acks

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
    dsn, go = postgres.new_database(), tmp_path / "go"
    asyncio.run(fresh_plan(dsn))
    writers = {name: spawn(dsn, name, batches=100, size=2, go=go) for name in ("left", "right")}
    acks: dict[str, list[tuple[int, list[str]]]] = {}
    try:
        for process in writers.values():
            assert process.stdout is not None
            assert process.stdout.readline().strip() == "ready"
        go.touch()
        for name, process in writers.items():
            out, err = process.communicate(timeout=120)
            assert process.returncode == 0, err
            acks[name] = parse_acks(out.splitlines())
            assert len(acks[name]) == 100
    finally:
        for process in writers.values():
            process.kill()
            process.communicate()

    log = asyncio.run(read_log(dsn))
    acknowledged = [op_id for name in acks for _, ids in acks[name] for op_id in ids]
    assert len(log) == len(set(log)) == len(acknowledged) == 2 * 100 * 2
    assert set(log) == set(acknowledged)
    positions = {op_id: index for index, op_id in enumerate(log)}
    for name in acks:
        mine = [op_id for _, ids in acks[name] for op_id in ids]
        assert [op_id for op_id in log if op_id.startswith(f"{name}-")] == mine
        for revision, ids in acks[name]:
            # A batch is contiguous in the log and ends at the revision its append reported.
            assert [positions[op_id] for op_id in ids] == list(range(revision - len(ids), revision))
    writer_of = [op_id.split("-")[0] for op_id in log]
    switches = sum(1 for a, b in zip(writer_of, writer_of[1:], strict=False) if a != b)
    assert switches > 2, "the writers never overlapped in time"


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
