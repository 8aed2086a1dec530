"""A real Temporal dev server for the session, and a worker per test on a fresh task queue."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from temporalio.client import Client

from orchestration.store.sqlite import SqlitePlanStore
from workers.devserver import DevServer
from workers.worker import connect


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def dev_server(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[DevServer]:
    """One dev server (in memory, headless, tuned poll rates) for the whole session."""
    logs = Path(tmp_path_factory.mktemp("temporal")) / "server.log"
    async with DevServer(ui=False, log_file=logs) as server:
        yield server


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def client(dev_server: DevServer) -> Client:
    """A client with the pydantic data converter."""
    return await connect(dev_server.address)


@pytest_asyncio.fixture(loop_scope="session")
async def task_queue() -> str:
    """A task queue no other test uses."""
    return f"tq-{uuid.uuid4().hex[:10]}"


@pytest_asyncio.fixture(loop_scope="session")
async def store(tmp_path: Path) -> AsyncIterator[SqlitePlanStore]:
    """A plan store of the test's own (a SQLite file), shared by its workers and clients."""
    plans = SqlitePlanStore(tmp_path / "plans.sqlite3")
    yield plans
    await plans.close()
