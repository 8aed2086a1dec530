"""``PostgresPlanStore``: a :class:`~orchestration.store.base.PlanStore` shared by many hosts.

When workers, API processes and agent hosts run on several machines, the plan store must be one
database they all reach. This store keeps the protocol's compare-and-set rules across every
connection to that database:

* A write transaction first locks the plan's row (``SELECT ... FOR UPDATE``), then reads,
  decides and writes. A second writer on the same plan waits on the row lock and then decides
  on what the first committed (``READ COMMITTED`` gives each later statement a fresh snapshot),
  so of two appends against one expected revision exactly one lands. Creating a plan relies on
  the primary key (``INSERT ... ON CONFLICT DO NOTHING``), so two creators of one id cannot
  both succeed. Claims of different plans lock different rows, so a run's place in claim order
  comes from a sequence.
* A client killed mid-transaction has its transaction rolled back, like any failure.
* Schema creation and migrations run under a transaction-scoped advisory lock and are recorded
  in ``orch_schema_version``: any number of hosts may open the store at once, exactly one of
  them applies a pending migration, the others wait and then see it applied. A database written
  by a newer layout is refused (:class:`SchemaVersionError`), never rewritten.

The operations are :class:`~orchestration.store.sql.SqlPlanStore`'s; this module is the
database they run on. Its tables are prefixed ``orch_`` so that the store can share a database
with other applications. Each store owns an ``AsyncConnectionPool`` (psycopg 3), opened on first
use so that constructing the store does no I/O.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from psycopg import AsyncConnection, InterfaceError
from psycopg_pool import AsyncConnectionPool

from . import _rules, _schema
from ._schema import SchemaVersionError
from ._sql import Dialect
from .sql import Access, Row, SqlPlanStore, Work

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "PostgresPlanStore", "SchemaVersionError"]

MIGRATIONS: tuple[_schema.Migration, ...] = (
    (
        1,
        f"""
CREATE TABLE orch_plans (
    seq         BIGSERIAL UNIQUE,
    plan_id     TEXT PRIMARY KEY,
{_schema.PLAN_COLUMNS}
);
CREATE TABLE orch_ops (
{_schema.op_columns("orch_plans")}
);
CREATE TABLE orch_run_events (
{_schema.log_columns("orch_plans")}
);
""",
    ),
    (
        2,
        # The run's execution and outcome, and its compact log. A run claimed under version 1
        # is bound to an execution no worker has (see _rules.VERSION_1_EXECUTION);
        # orch_run_events stays as it was, unused.
        f"""
ALTER TABLE orch_plans
    ADD COLUMN run_execution TEXT,
    ADD COLUMN run_outcome TEXT
        CHECK (run_outcome IN ('completed', 'halted', 'aborted'));
UPDATE orch_plans SET run_execution = '{_rules.VERSION_1_EXECUTION}'
    WHERE run_id IS NOT NULL;
CREATE TABLE orch_run_log (
{_schema.log_columns("orch_plans")}
);
""",
    ),
    (
        3,
        # Each run's place in claim order and its claim time, for run listings. A run claimed
        # before takes its plan's creation place (so older runs stay older) and no time; the
        # sequence continues after the largest place.
        """
ALTER TABLE orch_plans
    ADD COLUMN run_seq BIGINT UNIQUE,
    ADD COLUMN run_claimed_at TEXT;
UPDATE orch_plans SET run_seq = seq WHERE run_id IS NOT NULL;
CREATE SEQUENCE orch_run_seq;
SELECT setval('orch_run_seq', COALESCE((SELECT MAX(run_seq) FROM orch_plans), 0) + 1, false);
""",
    ),
)
"""``(version, DDL)`` in order; a database at version ``v`` gets every later step, once."""

SCHEMA_VERSION = MIGRATIONS[-1][0]
"""The layout this module reads and writes, kept in the ``orch_schema_version`` table."""

_DDL_LOCK = "orchestration.store.postgres/schema"
"""Hashed to the advisory-lock key every host takes around schema DDL."""

_DIALECT = Dialect(
    table_prefix="orch_",
    placeholder="%s",
    op_id_in="op_id = ANY({p})",
    op_ids=list,
    # READ COMMITTED locks nothing it reads: a deciding read must lock the row itself.
    for_update=" FOR UPDATE",
    for_share=" FOR SHARE",
    # Claims of different plans lock different rows, so only a sequence gives distinct places.
    next_run_seq="nextval('orch_run_seq')",
)

_T = TypeVar("_T")


async def migrate(conn: AsyncConnection[Any]) -> int:
    """Bring the schema to :data:`SCHEMA_VERSION`, safely against other hosts doing the same.

    The advisory lock serialises every host's DDL: ``CREATE TABLE IF NOT EXISTS`` alone is not
    safe under concurrency in PostgreSQL (two creators can both pass the check and one then
    fails on the catalog's unique index). The version is read and written under the lock, so a
    migration step runs exactly once.

    Returns:
        The version the database was at before this call.

    Raises:
        SchemaVersionError: the database is ahead of this code; nothing is changed.

    """
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (_DDL_LOCK,))
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS orch_schema_version ("
            " singleton BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (singleton),"
            " version INTEGER NOT NULL)"
        )
        row = await (await conn.execute("SELECT version FROM orch_schema_version")).fetchone()
        found: int = 0 if row is None else row[0]
        for ddl in _schema.pending(MIGRATIONS, found, "the plan-store database"):
            await conn.execute(ddl)
        if found < SCHEMA_VERSION:
            await conn.execute(
                "INSERT INTO orch_schema_version (singleton, version) VALUES (TRUE, %s)"
                " ON CONFLICT (singleton) DO UPDATE SET version = EXCLUDED.version",
                (SCHEMA_VERSION,),
            )
    return found


class PostgresPlanStore(SqlPlanStore):
    """A plan store in one PostgreSQL database, safe to share between hosts.

    Once the store is closed, every call raises ``psycopg.InterfaceError``.

    Args:
        conninfo: A libpq connection string or URI (``postgresql://user@host:5432/db``).
        min_size: Connections the pool keeps open.
        max_size: Connections the pool may open; concurrent calls beyond it queue.
        clock: Returns the ``updatedAt`` stamp of a write (ISO-8601). Defaults to UTC now.

    """

    def __init__(
        self,
        conninfo: str,
        *,
        min_size: int = 1,
        max_size: int = 8,
        clock: Callable[[], str] = _rules.utc_now,
    ) -> None:
        super().__init__(_PostgresPool(conninfo, min_size, max_size), clock=clock)


class _PostgresPool:
    """The :class:`~orchestration.store.sql.Database` of a PostgreSQL database: a pool."""

    dialect = _DIALECT

    def __init__(self, conninfo: str, min_size: int, max_size: int) -> None:
        self._pool: AsyncConnectionPool[AsyncConnection[Any]] = AsyncConnectionPool(
            conninfo,
            min_size=min_size,
            max_size=max_size,
            open=False,
            kwargs={"autocommit": True},
        )
        self._opened = False
        self._closed = False
        self._opening = asyncio.Lock()

    async def transaction(self, access: Access, work: Work[_T]) -> _T:
        # Both kinds begin alike: a write's lock is the FOR UPDATE of its deciding read.
        pool = await self._ready()
        async with pool.connection() as conn, conn.transaction():
            return await work(_Connection(conn))

    async def close(self) -> None:
        self._closed = True
        await self._pool.close()

    async def _ready(self) -> AsyncConnectionPool[AsyncConnection[Any]]:
        if self._closed:
            raise InterfaceError("the store is closed")
        if not self._opened:
            async with self._opening:
                if not self._opened:
                    await self._pool.open(wait=True)
                    try:
                        async with self._pool.connection() as conn:
                            await migrate(conn)
                    except BaseException:
                        await self._pool.close()
                        self._closed = True
                        raise
                    self._opened = True
        return self._pool


class _Connection:
    """The :class:`~orchestration.store.sql.Connection` of psycopg's async driver."""

    def __init__(self, conn: AsyncConnection[Any]) -> None:
        self._conn = conn

    async def one(self, sql: str, params: Sequence[Any]) -> Row | None:
        row: Row | None = await (await self._conn.execute(sql, params)).fetchone()
        return row

    async def all(self, sql: str, params: Sequence[Any]) -> list[Row]:
        return await (await self._conn.execute(sql, params)).fetchall()

    async def run(self, sql: str, params: Sequence[Any]) -> int:
        return (await self._conn.execute(sql, params)).rowcount

    async def run_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        async with self._conn.cursor() as cursor:
            await cursor.executemany(sql, rows)
