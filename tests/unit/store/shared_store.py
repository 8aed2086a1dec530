"""One store shared by real OS processes: two writers racing, and a writer killed mid-stream.

The SQLite and the PostgreSQL store tests run these same drills through :class:`StoreProcesses`,
which knows a store kind and how to open that store from a target (a file path or a DSN). The
writers are ``_writer.py`` processes; they speak one protocol on stdout: ``ready``, then
``ack <revision> <ids>`` per acknowledged batch.

What must hold in the race, on every attempt: each acknowledged op is in the log exactly once,
each writer's ops keep its order, and each batch is contiguous and ends at the revision its
append reported. The race only proves something when the writers really interleaved, which a
loaded machine may not schedule on a given attempt; so an attempt in which one writer ran alone
is repeated (checked all the same), and the drill fails only if no attempt interleaved.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from orchestration.plan.ops import fold_ops
from orchestration.store import AppendOk, PlanStore
from tests.unit.store._writer import op as writer_op

Acks = list[tuple[int, list[str]]]
WRITER = Path(__file__).with_name("_writer.py")


def parse_acks(lines: list[str]) -> Acks:
    """The ``ack <revision> <id,id,...>`` lines a writer printed, in order."""
    acks = []
    for line in lines:
        kind, *rest = line.split()
        if kind == "ack":
            revision, ids = rest
            acks.append((int(revision), ids.split(",")))
    return acks


async def assert_consistent(store: PlanStore) -> list[str]:
    """The stored revision and digest agree with the stored log; returns the log's op ids."""
    state = await store.read_state("p")
    ops = await store.read_ops("p")
    assert state.revision == len(ops)
    assert state.digest == fold_ops("p", ops, await store.read_provenance("p")).view.digest
    return [op.op_id for op in ops]


def check_log(log: list[str], acks: dict[str, Acks], total: int) -> int:
    """Assert the log holds exactly the acknowledged ops; return how often the writer changed."""
    acknowledged = [op_id for name in acks for _, ids in acks[name] for op_id in ids]
    assert len(log) == len(set(log)) == len(acknowledged) == total
    assert set(log) == set(acknowledged)
    positions = {op_id: index for index, op_id in enumerate(log)}
    for name in acks:
        mine = [op_id for _, ids in acks[name] for op_id in ids]
        assert [op_id for op_id in log if op_id.startswith(f"{name}-")] == mine
        for revision, ids in acks[name]:
            # A batch is contiguous in the log and ends at the revision its append reported.
            assert [positions[op_id] for op_id in ids] == list(range(revision - len(ids), revision))
    writer_of = [op_id.split("-")[0] for op_id in log]
    return sum(1 for a, b in zip(writer_of, writer_of[1:], strict=False) if a != b)


@dataclass(frozen=True)
class StoreProcesses:
    """The drills for one store kind.

    Attributes:
        kind: ``sqlite`` or ``postgres``: the store ``_writer.py`` opens.
        open_store: Opens the store a target names, in this process.

    """

    kind: str
    open_store: Callable[[str], PlanStore]

    def spawn(
        self, target: str, name: str, batches: int, size: int, go: Path | None
    ) -> subprocess.Popen[str]:
        """Start writer ``name``; ``batches`` 0 writes until killed; ``go`` holds it at ready."""
        args = [sys.executable, str(WRITER), self.kind, target, "p", name, str(batches), str(size)]
        if go is not None:
            args.append(str(go))
        return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def fresh_plan(self, target: str) -> None:
        """Create the empty plan ``p`` the writers append to."""

        async def create() -> None:
            store = self.open_store(target)
            await store.create_plan("p")
            await store.close()

        asyncio.run(create())

    def read_log(self, target: str) -> list[str]:
        """The plan's op ids, after checking the store's own consistency."""

        async def read() -> list[str]:
            store = self.open_store(target)
            try:
                return await assert_consistent(store)
            finally:
                await store.close()

        return asyncio.run(read())

    def race(
        self,
        new_target: Callable[[int], str],
        tmp_path: Path,
        *,
        batches: int,
        size: int,
        attempts: int = 4,
    ) -> None:
        """Two writers at once on a fresh store per attempt, until they interleave."""
        switches: list[int] = []
        for attempt in range(attempts):
            target = new_target(attempt)
            self.fresh_plan(target)
            go = tmp_path / f"go-{attempt}"
            writers = {name: self.spawn(target, name, batches, size, go) for name in ("l", "r")}
            acks: dict[str, Acks] = {}
            try:
                for process in writers.values():
                    assert process.stdout is not None
                    assert process.stdout.readline().strip() == "ready"
                go.touch()
                for name, process in writers.items():
                    out, err = process.communicate(timeout=120)
                    assert process.returncode == 0, err
                    acks[name] = parse_acks(out.splitlines())
                    assert len(acks[name]) == batches
            finally:
                for process in writers.values():
                    process.kill()
                    process.communicate()
            switches.append(check_log(self.read_log(target), acks, 2 * batches * size))
            if switches[-1] > 2:
                return
        raise AssertionError(f"the writers never interleaved in {attempts} attempts: {switches}")

    def kill_mid_stream(self, target: str, *, size: int = 3, acks_before_kill: int = 40) -> None:
        """SIGKILL a writer mid-stream: every acknowledged batch survives, none is half there,
        and the store takes writes again afterwards."""
        self.fresh_plan(target)
        process = self.spawn(target, "w", 0, size, None)
        assert process.stdout is not None
        acked: Acks = []
        try:
            assert process.stdout.readline().strip() == "ready"
            while len(acked) < acks_before_kill:
                line = process.stdout.readline()
                assert line, process.stderr.read() if process.stderr else ""
                acked.extend(parse_acks([line]))
            process.send_signal(signal.SIGKILL)
        finally:
            process.kill()
            process.communicate(timeout=30)
        assert process.returncode == -signal.SIGKILL

        async def reopen() -> None:
            store = self.open_store(target)
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
