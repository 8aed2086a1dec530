"""One SQLite file shared by real OS processes: concurrent writers, and a writer killed mid-run."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestration.store import SqlitePlanStore
from tests.unit.store.shared_store import StoreProcesses

PROCESSES = StoreProcesses(
    kind="sqlite",
    open_store=lambda target: SqlitePlanStore(Path(target)),
)


@pytest.mark.slow
def test_two_processes_appending_lose_nothing_and_duplicate_nothing(tmp_path: Path) -> None:
    """Every op two concurrent writer processes had acknowledged is in the log exactly once."""
    PROCESSES.race(
        lambda attempt: str(tmp_path / f"plans-{attempt}.sqlite3"), tmp_path, batches=150, size=2
    )


@pytest.mark.slow
def test_a_killed_writer_leaves_every_acknowledged_batch_and_no_partial_one(
    tmp_path: Path,
) -> None:
    """SIGKILL mid-stream: every acknowledged batch survives, none is half there, writes go on."""
    PROCESSES.kill_mid_stream(str(tmp_path / "plans.sqlite3"))
