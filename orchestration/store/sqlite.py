"""``SqlitePlanStore``: the embedded default :class:`~orchestration.store.base.PlanStore`.

One SQLite file holds every plan. Several OS processes on one machine may open it at once
(an API process, a worker, the CLI) and the protocol's compare-and-set rules still hold:

* The file is in WAL mode, so readers never block the writer or each other.
* A write transaction begins ``BEGIN IMMEDIATE``, which takes the file's write lock before the
  first read, so two processes cannot both decide on the same record: the second waits (up to
  ``busy_timeout``) and then decides on what the first committed. Row locks add nothing here,
  so this dialect spells none.
* Commits use ``synchronous=FULL``: an acknowledged write (a run claim above all) survives a
  crash of the process or of the machine.
* The layout is versioned (``PRAGMA user_version``): opening a file written by an older
  version applies the missing steps of :data:`MIGRATIONS` in place, in one ``BEGIN IMMEDIATE``
  transaction, so of several processes opening it exactly one upgrades it.

The operations are :class:`~orchestration.store.sql.SqlPlanStore`'s; this module is the
database they run on. The stdlib driver blocks, so each transaction runs on a worker thread
(``asyncio.to_thread``) over the store's one connection, which a ``threading.Lock``
serialises; the operation's coroutine is driven to its end there, never suspending, since the
connection's methods never do. A call whose awaiting task is cancelled still runs its
transaction to the end (commit or rollback) on that thread.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Coroutine, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from . import _rules, _schema
from ._schema import SchemaVersionError
from ._sql import Dialect
from .sql import Access, Row, SqlPlanStore, Work

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "SchemaVersionError", "SqlitePlanStore"]

MIGRATIONS: tuple[_schema.Migration, ...] = (
    (
        1,
        f"""
CREATE TABLE IF NOT EXISTS plans (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    plan_id     TEXT NOT NULL UNIQUE,
{_schema.PLAN_COLUMNS}
);
CREATE TABLE IF NOT EXISTS ops (
{_schema.op_columns("plans")}
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS run_events (
{_schema.log_columns("plans")}
) WITHOUT ROWID;
""",
    ),
    (
        2,
        # The run's execution and outcome, and its compact log. A run claimed under version 1
        # is bound to an execution no worker has (see _rules.VERSION_1_EXECUTION); run_events
        # stays as it was, unused.
        f"""
ALTER TABLE plans ADD COLUMN run_execution TEXT;
ALTER TABLE plans ADD COLUMN run_outcome TEXT
    CHECK (run_outcome IN ('completed', 'halted', 'aborted'));
UPDATE plans SET run_execution = '{_rules.VERSION_1_EXECUTION}' WHERE run_id IS NOT NULL;
CREATE TABLE run_log (
{_schema.log_columns("plans")}
) WITHOUT ROWID;
""",
    ),
    (
        3,
        # Each run's place in claim order and its claim time, for run listings. A run claimed
        # before takes its plan's creation place (so older runs stay older) and no time.
        """
ALTER TABLE plans ADD COLUMN run_seq INTEGER;
ALTER TABLE plans ADD COLUMN run_claimed_at TEXT;
UPDATE plans SET run_seq = seq WHERE run_id IS NOT NULL;
CREATE UNIQUE INDEX plans_run_seq ON plans (run_seq);
""",
    ),
)
"""``(version, DDL)`` in order; a file at version ``v`` gets every later step, once, on open."""

SCHEMA_VERSION = MIGRATIONS[-1][0]
"""The layout this module reads and writes, kept in the file as ``PRAGMA user_version``."""

_DIALECT = Dialect(
    table_prefix="",
    placeholder="?",
    op_id_in="op_id IN (SELECT value FROM json_each({p}))",
    op_ids=json.dumps,
    # A write runs in BEGIN IMMEDIATE, which holds the file's write lock before the first read.
    for_update="",
    for_share="",
    # Every write holds the file's write lock, so the largest place so far is stable.
    next_run_seq="(SELECT COALESCE(MAX(run_seq), 0) + 1 FROM {plans})",
)

_BEGIN: dict[Access, str] = {"read": "BEGIN", "write": "BEGIN IMMEDIATE"}

_T = TypeVar("_T")


class SqlitePlanStore(SqlPlanStore):
    """A plan store in one SQLite file, safe to share between processes on one machine.

    The file is opened (and its schema created, idempotently) on first use, on a worker
    thread, so constructing the store does no I/O. Once the store is closed, every call raises
    ``sqlite3.ProgrammingError``.

    Args:
        path: The database file; created if absent.
        busy_timeout: Seconds a write waits for another process's write to finish before it
            fails with ``sqlite3.OperationalError`` ("database is locked"). The wait is not
            fair: SQLite polls with growing sleeps, so a process writing back to back with no
            pause at all can keep another one waiting for long.
        clock: Returns the ``updatedAt`` stamp of a write (ISO-8601). Defaults to UTC now.

    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout: float = 30.0,
        clock: Callable[[], str] = _rules.utc_now,
    ) -> None:
        super().__init__(_SqliteFile(os.fspath(path), busy_timeout), clock=clock)


class _SqliteFile:
    """The :class:`~orchestration.store.sql.Database` of a SQLite file: one connection, a lock."""

    dialect = _DIALECT

    def __init__(self, path: str, busy_timeout: float) -> None:
        self._path = path
        self._busy_timeout = busy_timeout
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._closed = False

    async def transaction(self, access: Access, work: Work[_T]) -> _T:
        return await asyncio.to_thread(self._transact, _BEGIN[access], work)

    def _transact(self, begin: str, work: Work[_T]) -> _T:
        with self._lock:
            conn = self._connection()
            with _transaction(conn, begin):
                return _run_to_end(work(_Connection(conn)))

    async def close(self) -> None:
        def work() -> None:
            with self._lock:
                self._closed = True
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None

        await asyncio.to_thread(work)

    def _connection(self) -> sqlite3.Connection:
        if self._closed:
            raise sqlite3.ProgrammingError("the store is closed")
        if self._conn is None:
            self._conn = self._open()
        return self._conn

    def _open(self) -> sqlite3.Connection:
        if self._path != ":memory:":
            Path(self._path).parent.mkdir(parents=True, exist_ok=True)  # a fresh data folder
        conn = sqlite3.connect(
            self._path,
            timeout=self._busy_timeout,
            isolation_level=None,
            check_same_thread=False,
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout * 1000)}")
            self._steps(conn)  # refuse a newer file before switching it to WAL
            self._enable_wal(conn)
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute("PRAGMA foreign_keys = ON")
            if self._steps(conn):
                # Under the write lock, so that of several processes opening an old file
                # exactly one upgrades it and the others see it upgraded.
                with _transaction(conn, "BEGIN IMMEDIATE"):
                    for ddl in self._steps(conn):
                        for statement in ddl.split(";"):
                            if statement.strip():
                                conn.execute(statement)
                    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except BaseException:
            conn.close()
            raise
        return conn

    def _steps(self, conn: sqlite3.Connection) -> list[str]:
        """The migration steps the file still needs.

        Raises:
            SchemaVersionError: the file is at a newer version than this code.

        """
        version: int = conn.execute("PRAGMA user_version").fetchone()[0]
        return _schema.pending(MIGRATIONS, version, self._path)

    def _enable_wal(self, conn: sqlite3.Connection) -> None:
        # Switching a fresh file to WAL needs a moment of exclusive access; a process opening
        # the same new file at that moment is told "locked" without the busy handler running.
        deadline = time.monotonic() + self._busy_timeout
        while True:
            try:
                conn.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as exc:
                busy = exc.sqlite_errorcode & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
                if not busy or time.monotonic() >= deadline:
                    raise
                time.sleep(0.01)


class _Connection:
    """The :class:`~orchestration.store.sql.Connection` of the stdlib driver: it never awaits."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    async def one(self, sql: str, params: Sequence[Any]) -> Row | None:
        row: Row | None = self._conn.execute(sql, params).fetchone()
        return row

    async def all(self, sql: str, params: Sequence[Any]) -> list[Row]:
        return self._conn.execute(sql, params).fetchall()

    async def run(self, sql: str, params: Sequence[Any]) -> int:
        return self._conn.execute(sql, params).rowcount

    async def run_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self._conn.executemany(sql, rows)


def _run_to_end(work: Coroutine[Any, Any, _T]) -> _T:
    """The result of a coroutine that never suspends, driven on this thread.

    Raises:
        RuntimeError: it suspended (it awaited something other than a ``_Connection``).

    """
    try:
        work.send(None)
    except StopIteration as done:
        result: _T = done.value
        return result
    work.close()
    raise RuntimeError("a SQLite transaction awaited something that suspends; it was rolled back")


@contextmanager
def _transaction(conn: sqlite3.Connection, begin: str) -> Iterator[None]:
    conn.execute(begin)
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
