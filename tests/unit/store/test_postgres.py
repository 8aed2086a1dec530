"""The PostgreSQL store against the shared conformance suite, plus its schema handling."""

from __future__ import annotations

import asyncio
from pathlib import Path

import psycopg
import pytest

from orchestration.plan.encoding import canonical_digest
from orchestration.plan.ops import fold_ops
from orchestration.run.log import LogStart
from orchestration.store import (
    ClaimOk,
    ClaimRefused,
    PlanStore,
    PlanStoreConformance,
    RunRecord,
    TransitionRequest,
)
from orchestration.store._rules import VERSION_1_EXECUTION
from orchestration.store.postgres import (
    MIGRATIONS,
    SCHEMA_VERSION,
    PostgresPlanStore,
    SchemaVersionError,
    migrate,
)
from orchestration.types import AddNodeOp, ApprovalRecord, EntryNode, RunStarted
from tests.postgres_cluster import PostgresCluster

AT = "2026-01-01T00:00:00Z"


class TestPostgresPlanStore(PlanStoreConformance):
    @pytest.fixture(autouse=True)
    def _database(self, postgres: PostgresCluster) -> None:
        self.dsn = postgres.new_database()

    async def make_store(self, tmp_path: Path) -> PlanStore:
        return PostgresPlanStore(self.dsn)

    async def make_peer(self, store: PlanStore, tmp_path: Path) -> PlanStore:
        # A second pool on the same database: the races reach PostgreSQL's own locking.
        return PostgresPlanStore(self.dsn)


def schema_version(dsn: str) -> int | None:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT version FROM orch_schema_version").fetchone()
        return None if row is None else int(row[0])


@pytest.mark.asyncio
async def test_many_hosts_migrating_at_once_create_the_schema_once(
    postgres: PostgresCluster,
) -> None:
    """Eight connections migrating a fresh database at once: all succeed, one did the work."""
    dsn = postgres.new_database()

    async def one() -> int:
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
            return await migrate(conn)

    found = await asyncio.gather(*(one() for _ in range(8)))
    assert sorted(found) == [0] + [SCHEMA_VERSION] * 7
    assert schema_version(dsn) == SCHEMA_VERSION
    store = PostgresPlanStore(dsn)
    try:
        assert (await store.create_plan("p")).ok
    finally:
        await store.close()


@pytest.mark.asyncio
async def test_a_database_from_a_newer_schema_is_refused(postgres: PostgresCluster) -> None:
    """A database whose recorded version is ahead of this code is refused, not rewritten."""
    dsn = postgres.new_database()
    with psycopg.connect(dsn) as conn:
        conn.execute(
            "CREATE TABLE orch_schema_version (singleton BOOLEAN PRIMARY KEY,"
            " version INTEGER NOT NULL)"
        )
        conn.execute("INSERT INTO orch_schema_version VALUES (TRUE, %s)", (SCHEMA_VERSION + 1,))
    store = PostgresPlanStore(dsn)
    with pytest.raises(SchemaVersionError, match="Upgrade the library"):
        await store.list_plans()
    await store.close()
    assert schema_version(dsn) == SCHEMA_VERSION + 1
    with psycopg.connect(dsn) as conn:
        tables = conn.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'orch_plans'"
            " AND table_schema = current_schema()"
        ).fetchone()
        assert tables == (0,)


@pytest.mark.asyncio
async def test_a_closed_store_refuses_calls(postgres: PostgresCluster) -> None:
    """After close() every call raises instead of silently reconnecting."""
    store = PostgresPlanStore(postgres.new_database())
    await store.create_plan("p")
    await store.close()
    with pytest.raises(psycopg.InterfaceError):
        await store.read_state("p")


@pytest.mark.asyncio
async def test_everything_survives_a_new_store_on_the_same_database(
    postgres: PostgresCluster,
) -> None:
    """A second store (another host) reads back exactly what the first wrote."""
    dsn = postgres.new_database()
    first, second = PostgresPlanStore(dsn), PostgresPlanStore(dsn)
    try:
        await first.create_plan("p", label="label")
        assert await second.list_plans() == await first.list_plans()
        assert await second.read_state("p") == await first.read_state("p")
    finally:
        await first.close()
        await second.close()


def write_version_1(dsn: str) -> str:
    """A version-1 database: an executable plan ``p`` claimed ``run-1``, one event; its digest."""
    op = AddNodeOp(op_id="op-1", actor_id="a", lamport=1, at=AT, node=EntryNode(id="entry"))
    digest = fold_ops("p", [op]).view.digest
    approval = ApprovalRecord(
        plan_id="p", digest=digest, authority_set=(), decided_by="op", decided_at=AT
    )
    event = RunStarted(run_id="run-1", digest=digest, at=AT).model_dump_json()
    version, ddl = MIGRATIONS[0]
    assert version == 1
    with psycopg.connect(dsn) as conn:
        conn.execute(ddl)
        conn.execute(
            "CREATE TABLE orch_schema_version (singleton BOOLEAN PRIMARY KEY DEFAULT TRUE"
            " CHECK (singleton), version INTEGER NOT NULL)"
        )
        conn.execute("INSERT INTO orch_schema_version VALUES (TRUE, 1)")
        conn.execute(
            "INSERT INTO orch_plans (plan_id, state, revision, digest, node_count, approval,"
            " run_id, updated_at) VALUES ('p', 'executable', 1, %s, 1, %s, 'run-1', %s)",
            (digest, approval.model_dump_json(), AT),
        )
        conn.execute(
            "INSERT INTO orch_ops VALUES ('p', 0, %s, %s, %s)",
            (op.op_id, canonical_digest(op), op.model_dump_json()),
        )
        conn.execute("INSERT INTO orch_run_events VALUES ('p', 0, %s)", (event,))
    return digest


@pytest.mark.asyncio
async def test_a_version_1_database_is_migrated_and_its_run_never_runs_again(
    postgres: PostgresCluster,
) -> None:
    """Migrations keep a version-1 database's data; its claimed run is bound to no worker.

    The legacy run keeps its place in run listings, with no claim time.
    """
    dsn = postgres.new_database()
    digest = write_version_1(dsn)
    store = PostgresPlanStore(dsn)
    try:
        assert (await store.read_state("p")).revision == 1
        legacy = RunRecord(run_id="run-1", execution=VERSION_1_EXECUTION)
        assert await store.read_run("p") == legacy
        assert await store.read_run_log("p") == []
        for resume, reason in ((False, "run_already_claimed"), (True, "run_not_ended")):
            refused = await store.claim_run("p", digest, "run-1", execution="w", resume=resume)
            assert isinstance(refused, ClaimRefused) and refused.reason == reason
        assert await store.claim_run("p", digest, "run-1") == ClaimOk(run_id="run-1", resumed=True)
        start = LogStart(run_id="run-1", digest=digest, entry="entry", at=AT)
        assert await store.append_run_log("p", "run-1", 0, [start]) == 1
        # Migration 3 gives the legacy run its place and no claim time; new runs come after.
        await store.create_plan("q")
        op = AddNodeOp(op_id="op-1", actor_id="a", lamport=1, at=AT, node=EntryNode(id="entry"))
        q_digest = fold_ops("q", [op]).view.digest
        await store.append_ops("q", [op])
        await store.transition(
            "q", TransitionRequest(from_="editable", to="reviewable", expected_digest=q_digest)
        )
        approval = ApprovalRecord(
            plan_id="q", digest=q_digest, authority_set=(), decided_by="op", decided_at=AT
        )
        await store.transition(
            "q",
            TransitionRequest(
                from_="reviewable", to="executable", expected_digest=q_digest, approval=approval
            ),
        )
        assert isinstance(await store.claim_run("q", q_digest, "run-q", execution="w"), ClaimOk)
        runs = await store.list_runs()
        assert [(r.plan_id, r.started_at) for r in runs] == [("q", None), ("p", AT)]
        assert runs[0].claimed_at is not None and runs[1].claimed_at is None
    finally:
        await store.close()
    assert schema_version(dsn) == SCHEMA_VERSION
    with psycopg.connect(dsn) as conn:
        assert conn.execute("SELECT count(*) FROM orch_run_events").fetchone() == (1,)
