"""Two writer processes appending to one shared store at once, checked op by op.

Both the SQLite and the PostgreSQL store tests run this race. What must hold on every attempt:
each acknowledged op is in the log exactly once, each writer's ops keep its order, and each
batch is contiguous and ends at the revision its append reported. The race only proves
something when the writers really interleaved, which a loaded machine may not schedule on a
given attempt; so an attempt in which one writer ran alone is repeated (checked all the same),
and the test fails only if no attempt interleaved.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

SpawnWriter = Callable[[str, Path], "subprocess.Popen[str]"]
"""Start writer ``name`` that waits for the ``go`` file; it prints ``ready`` first."""


def parse_acks(lines: list[str]) -> list[tuple[int, list[str]]]:
    """The ``ack <revision> <id,id,...>`` lines a writer printed, in order."""
    acks = []
    for line in lines:
        kind, *rest = line.split()
        if kind == "ack":
            revision, ids = rest
            acks.append((int(revision), ids.split(",")))
    return acks


def run_once(spawn: SpawnWriter, go: Path, batches: int) -> dict[str, list[tuple[int, list[str]]]]:
    """Start both writers, release them together, and collect what each acknowledged."""
    writers = {name: spawn(name, go) for name in ("left", "right")}
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
            assert len(acks[name]) == batches
    finally:
        for process in writers.values():
            process.kill()
            process.communicate()
    return acks


def check_log(log: list[str], acks: dict[str, list[tuple[int, list[str]]]], total: int) -> int:
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


def race(
    fresh: Callable[[int], tuple[SpawnWriter, Callable[[], list[str]]]],
    tmp_path: Path,
    *,
    batches: int,
    size: int,
    attempts: int = 4,
) -> None:
    """Run the race on fresh stores until the writers interleave (more than two switches).

    ``fresh(attempt)`` makes a new store holding an empty plan ``p`` and returns how to spawn a
    writer on it and how to read its log back (after checking the store's own consistency).
    """
    switches: list[int] = []
    for attempt in range(attempts):
        spawn, read_log = fresh(attempt)
        go = tmp_path / f"go-{attempt}"
        acks = run_once(spawn, go, batches)
        switches.append(check_log(read_log(), acks, 2 * batches * size))
        if switches[-1] > 2:
            return
    raise AssertionError(f"the writers never interleaved in {attempts} attempts: {switches}")
