"""One PostgreSQL database shared by real OS processes: concurrent writers, a writer killed."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestration.store.postgres import PostgresPlanStore
from tests.postgres_cluster import PostgresCluster
from tests.unit.store.shared_store import StoreProcesses

PROCESSES = StoreProcesses(
    kind="postgres",
    open_store=PostgresPlanStore,
)


@pytest.mark.slow
def test_two_processes_appending_lose_nothing_and_duplicate_nothing(
    postgres: PostgresCluster, tmp_path: Path
) -> None:
    """Every op two concurrent writer processes had acknowledged is in the log exactly once."""
    PROCESSES.race(lambda _: postgres.new_database(), tmp_path, batches=100, size=2)


@pytest.mark.slow
def test_a_killed_writer_leaves_every_acknowledged_batch_and_no_partial_one(
    postgres: PostgresCluster,
) -> None:
    """SIGKILL mid-stream: every acknowledged batch survives, none is half there, writes go on."""
    PROCESSES.kill_mid_stream(postgres.new_database())
