"""``SqlitePlanStore``: the embedded default :class:`~orchestration.store.base.PlanStore`.

One SQLite file holds every plan. Several OS processes on one machine may open it at once
(an API process, a worker, the CLI) and the protocol's compare-and-set rules still hold:

* The file is in WAL mode, so readers never block the writer or each other.
* Every write is one ``BEGIN IMMEDIATE`` transaction that reads the plan's record, decides
  (with the same rules as every bundled store) and writes. ``IMMEDIATE`` takes the write lock
  before the read, so two processes cannot both decide on the same record: the second waits
  (up to ``busy_timeout``) and then decides on what the first committed. A refusal writes
  nothing; an exception rolls the whole transaction back, so a batch is all or nothing.
* Commits use ``synchronous=FULL``: an acknowledged write (a run claim above all) survives a
  crash of the process or of the machine.
* The layout is versioned (``PRAGMA user_version``): opening a file written by an older
  version applies the missing steps of :data:`MIGRATIONS` in place, in one ``BEGIN IMMEDIATE``
  transaction, so of several processes opening it exactly one upgrades it.

The statements, and the records' JSON columns, are those of the PostgreSQL store (:mod:`._sql`,
:mod:`._rows`). The current digest, revision and node count are kept in the ``plans`` row and
recomputed by folding when the log changes, so ``read_state`` and ``list_plans`` never refold.
An append does refold the whole log; each store keeps the parsed logs of recently used plans
(:mod:`._oplog`) to spare it re-parsing the log too.

The stdlib driver blocks, so each call runs on a worker thread (``asyncio.to_thread``) over the
store's one connection, which a ``threading.Lock`` serialises. A call whose awaiting task is
cancelled still runs its transaction to the end (commit or rollback) on that thread.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from orchestration.errors import OrchestrationError
from orchestration.plan.ops import FoldResult, fold_ops
from orchestration.run.log import LogEntry
from orchestration.types import (
    ApprovalRecord,
    PlanOp,
    PlanProvenance,
    PlanState,
    PlanSummary,
    RunSummary,
    TemplateProvenance,
)

from . import _listing, _oplog, _rows, _rules
from ._sql import SQLITE, RowLock, Statements
from .base import (
    AppendOk,
    AppendRefused,
    ClaimOk,
    ClaimRefused,
    CreateOk,
    CreateRefused,
    PlanStateRecord,
    RunOutcomeFilter,
    RunRecord,
    TransitionOk,
    TransitionRefused,
    TransitionRequest,
)

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "SchemaVersionError", "SqlitePlanStore"]

MIGRATIONS: tuple[tuple[int, str], ...] = (
    (
        1,
        """
CREATE TABLE IF NOT EXISTS plans (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    plan_id     TEXT NOT NULL UNIQUE,
    state       TEXT NOT NULL CHECK (state IN ('editable', 'reviewable', 'executable')),
    revision    INTEGER NOT NULL,
    digest      TEXT NOT NULL,
    node_count  INTEGER NOT NULL,
    label       TEXT,
    provenance  TEXT,
    approval    TEXT,
    run_id      TEXT,
    updated_at  TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS ops (
    plan_id     TEXT NOT NULL REFERENCES plans (plan_id),
    position    INTEGER NOT NULL,
    op_id       TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    body        TEXT NOT NULL,
    PRIMARY KEY (plan_id, position),
    UNIQUE (plan_id, op_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS run_events (
    plan_id     TEXT NOT NULL REFERENCES plans (plan_id),
    position    INTEGER NOT NULL,
    body        TEXT NOT NULL,
    PRIMARY KEY (plan_id, position)
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
    plan_id     TEXT NOT NULL REFERENCES plans (plan_id),
    position    INTEGER NOT NULL,
    body        TEXT NOT NULL,
    PRIMARY KEY (plan_id, position)
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


def _layout_from(version: int) -> list[str]:
    """The statements that take a file at ``version`` to :data:`SCHEMA_VERSION`."""
    return [
        statement
        for step, ddl in MIGRATIONS
        if step > version
        for statement in ddl.split(";")
        if statement.strip()
    ]


_T = TypeVar("_T")

_SQL = Statements(SQLITE)


class SchemaVersionError(OrchestrationError):
    """The file was written by a newer layout than this version of the store understands."""

    code = "schema_version_unsupported"


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


class SqlitePlanStore:
    """A plan store in one SQLite file, safe to share between processes on one machine.

    The file is opened (and its schema created, idempotently) on first use, on a worker
    thread, so constructing the store does no I/O.

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
        self._path = os.fspath(path)
        self._busy_timeout = busy_timeout
        self._clock = clock
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        # Parsed op logs (see _log), and those the running transaction parsed; touched only
        # under self._lock, which also makes one _seen enough for every transaction.
        self._logs = _oplog.OpLogCache()
        self._seen: dict[str, list[PlanOp]] = {}

    # ----------------------------------------------------------------------------------------
    # Connection and transactions
    # ----------------------------------------------------------------------------------------

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
            self._check_version(conn)
            self._enable_wal(conn)
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute("PRAGMA foreign_keys = ON")
            if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                # Under the write lock, so that of several processes opening an old file
                # exactly one upgrades it and the others see it upgraded.
                with _transaction(conn, "BEGIN IMMEDIATE"):
                    for statement in _layout_from(self._check_version(conn)):
                        conn.execute(statement)
                    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except BaseException:
            conn.close()
            raise
        return conn

    def _check_version(self, conn: sqlite3.Connection) -> int:
        version: int = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{self._path} has schema version {version}; this store reads version "
                f"{SCHEMA_VERSION}. Upgrade the library to open it."
            )
        return version

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

    def _call(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        with self._lock:
            return work(self._connection())

    def _in_transaction(self, begin: str, work: Callable[[sqlite3.Connection], _T]) -> _T:
        def run(conn: sqlite3.Connection) -> _T:
            self._seen.clear()
            try:
                with _transaction(conn, begin):
                    result = work(conn)
                self._logs.remember(self._seen)  # only once the transaction committed
                return result
            finally:
                self._seen.clear()

        return self._call(run)

    def _write(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        return self._in_transaction("BEGIN IMMEDIATE", work)

    def _read(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        return self._in_transaction("BEGIN", work)

    async def _writing(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        return await asyncio.to_thread(self._write, work)

    async def _reading(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        return await asyncio.to_thread(self._read, work)

    # ----------------------------------------------------------------------------------------
    # Row helpers (called inside a transaction)
    # ----------------------------------------------------------------------------------------

    @staticmethod
    def _row(
        conn: sqlite3.Connection,
        method: str,
        plan_id: str,
        columns: str,
        *,
        lock: RowLock | None = None,
    ) -> tuple[Any, ...]:
        """The plan's ``columns``; ``lock`` adds nothing, as a write already holds the file's."""
        row = conn.execute(_SQL.plan(columns, lock), (plan_id,)).fetchone()
        return _rows.found(row, method, plan_id)

    def _log(
        self, conn: sqlite3.Connection, plan_id: str, through: int, current: int
    ) -> list[PlanOp]:
        """The first ``through`` ops of a plan at revision ``current``, parsing only what's new.

        The returned list may be shared with the cache; callers copy it before handing it out.
        """
        log = self._logs.known(self._seen, plan_id)
        if len(log) < through:
            rows = conn.execute(_SQL.op_bodies, (plan_id, len(log), through))
            log = _oplog.extended(self._seen, plan_id, log, rows, whole=through == current)
        return _oplog.prefix(log, through)

    def _run(
        self,
        conn: sqlite3.Connection,
        method: str,
        plan_id: str,
        *,
        lock: RowLock | None = None,
    ) -> RunRecord | None:
        """The plan's run, with its log's length."""
        columns = self._row(conn, method, plan_id, _rows.RUN_COLUMNS, lock=lock)
        (length,) = conn.execute(_SQL.run_log_length, (plan_id,)).fetchone()
        return _rows.run(columns, length)

    # ----------------------------------------------------------------------------------------
    # PlanStore
    # ----------------------------------------------------------------------------------------

    async def create_plan(
        self,
        plan_id: str,
        *,
        label: str | None = None,
        provenance: TemplateProvenance | None = None,
    ) -> CreateOk | CreateRefused:
        """Create an empty ``editable`` plan (revision 0); ``duplicate_id`` if it exists."""
        view = fold_ops(plan_id, (), provenance).view

        def work(conn: sqlite3.Connection) -> CreateOk | CreateRefused:
            row = _rows.new_plan(
                plan_id, 0, view, label=label, provenance=provenance, updated_at=self._clock()
            )
            if conn.execute(_SQL.insert_plan, row).rowcount == 0:
                return CreateRefused(reason="duplicate_id")
            return CreateOk(plan_id=plan_id, revision=0, digest=view.digest)

        return await self._writing(work)

    async def clone_plan(
        self, source_id: str, new_id: str, *, at_revision: int | None = None
    ) -> CreateOk | CreateRefused:
        """Copy the source's first ``at_revision`` ops (default: all) into a new editable plan.

        Refusals, in check order: ``source_missing``, ``duplicate_id``, ``revision_missing``.
        """

        def work(conn: sqlite3.Connection) -> CreateOk | CreateRefused:
            source = conn.execute(
                _SQL.plan("revision, label, provenance", "share"), (source_id,)
            ).fetchone()
            if source is None:
                return CreateRefused(reason="source_missing")
            if conn.execute(_SQL.plan_exists, (new_id,)).fetchone() is not None:
                return CreateRefused(reason="duplicate_id")
            source_revision, label, source_provenance = source
            revision = _rules.screen_clone(source_revision, at_revision)
            if isinstance(revision, CreateRefused):
                return revision
            ops = self._log(conn, source_id, revision, source_revision)
            provenance = _rules.clone_provenance(
                source_id,
                ops,
                _rows.provenance(source_provenance),
                _rows.log(conn.execute(_SQL.whole_run_log, (source_id,))),
            )
            view = fold_ops(new_id, ops, provenance).view
            row = _rows.new_plan(
                new_id, revision, view, label=label, provenance=provenance, updated_at=self._clock()
            )
            conn.execute(_SQL.insert_plan, row)  # new_id is free: the write lock is held
            conn.execute(_SQL.copy_ops, (new_id, source_id, revision))
            self._seen[new_id] = ops
            return CreateOk(plan_id=new_id, revision=revision, digest=view.digest)

        return await self._writing(work)

    async def append_ops(
        self,
        plan_id: str,
        ops: Sequence[PlanOp],
        *,
        expected_revision: int | None = None,
    ) -> AppendOk | AppendRefused:
        """Append ops atomically, only while ``editable`` and (if given) at that revision.

        Raises:
            PlanNotFoundError: unknown plan.

        """
        batch = _rules.wire_checked(ops)
        ids = [] if isinstance(batch, _rules.InvalidOp) else [op.op_id for op in batch]
        op_ids = _SQL.op_ids(ids)

        def work(conn: sqlite3.Connection) -> AppendOk | AppendRefused:
            state, revision, digest, provenance = self._row(
                conn, "append_ops", plan_id, "state, revision, digest, provenance", lock="update"
            )
            known = dict(conn.execute(_SQL.known_fingerprints, (plan_id, op_ids)).fetchall())
            decision = _rules.screen_append(state, revision, batch, known, expected_revision)
            if isinstance(decision, AppendRefused):
                return decision
            if not decision:
                return AppendOk(revision=revision, digest=digest)
            log = [*self._log(conn, plan_id, revision, revision), *(op for op, _ in decision)]
            view = fold_ops(plan_id, log, _rows.provenance(provenance)).view
            conn.executemany(_SQL.insert_ops, _rows.new_ops(plan_id, revision, decision))
            self._seen[plan_id] = log
            conn.execute(
                _SQL.set_log, (len(log), view.digest, len(view.nodes), self._clock(), plan_id)
            )
            return AppendOk(revision=len(log), digest=view.digest)

        return await self._writing(work)

    async def read_ops(
        self,
        plan_id: str,
        *,
        through_revision: int | None = None,
        since_lamport: int | None = None,
    ) -> list[PlanOp]:
        """The log in append order: the first ``through_revision`` ops, then ``lamport >`` filter.

        Raises:
            PlanNotFoundError: unknown plan.
            RevisionOutOfRangeError: ``through_revision`` outside ``[0, revision]``.

        """

        def work(conn: sqlite3.Connection) -> list[PlanOp]:
            (current,) = self._row(conn, "read_ops", plan_id, "revision")
            through = _rules.checked_revision(plan_id, current, through_revision)
            return _rules.ops_since(self._log(conn, plan_id, through, current), since_lamport)

        return await self._reading(work)

    async def read_provenance(self, plan_id: str) -> PlanProvenance | None:
        """The plan's lineage, or ``None`` when it was authored from scratch.

        Raises:
            PlanNotFoundError: unknown plan.

        """
        return _rows.provenance(await self._column("read_provenance", plan_id, "provenance"))

    async def read_state(self, plan_id: str) -> PlanStateRecord:
        """The lifecycle state now, with the current digest and revision.

        Raises:
            PlanNotFoundError: unknown plan.

        """

        def work(conn: sqlite3.Connection) -> PlanStateRecord:
            state, digest, revision = self._row(
                conn, "read_state", plan_id, "state, digest, revision"
            )
            return PlanStateRecord(state=state, digest=digest, revision=revision)

        return await asyncio.to_thread(self._call, work)

    async def fold(self, plan_id: str, *, revision: int | None = None) -> FoldResult:
        """The plan folded at ``revision`` (default: current), with its current provenance.

        Raises:
            PlanNotFoundError: unknown plan.
            RevisionOutOfRangeError: ``revision`` outside ``[0, current]``.

        """

        def work(conn: sqlite3.Connection) -> FoldResult:
            current, provenance = self._row(conn, "fold", plan_id, "revision, provenance")
            through = _rules.checked_revision(plan_id, current, revision)
            ops = self._log(conn, plan_id, through, current)
            return fold_ops(plan_id, ops, _rows.provenance(provenance))

        return await self._reading(work)

    async def transition(
        self, plan_id: str, request: TransitionRequest
    ) -> TransitionOk | TransitionRefused:
        """Compare-and-set the lifecycle state. Checks state, then digest, then legality.

        The approval of ``reviewable → executable`` is written in the same transaction as the
        state, so no reader ever sees an executable plan without its approval.

        Raises:
            PlanNotFoundError: unknown plan.

        """

        def work(conn: sqlite3.Connection) -> TransitionOk | TransitionRefused:
            state, digest, revision = self._row(
                conn, "transition", plan_id, "state, digest, revision", lock="update"
            )
            refusal = _rules.screen_transition(plan_id, state, digest, request)
            if refusal is not None:
                return refusal
            conn.execute(_SQL.set_state, _rows.new_state(plan_id, request, self._clock()))
            return TransitionOk(revision=revision)

        return await self._writing(work)

    async def read_approval(self, plan_id: str) -> ApprovalRecord | None:
        """The approval persisted with ``reviewable → executable``, or ``None``.

        Raises:
            PlanNotFoundError: unknown plan.

        """
        return _rows.approval(await self._column("read_approval", plan_id, "approval"))

    async def claim_run(
        self,
        plan_id: str,
        expected_digest: str,
        run_id: str,
        *,
        execution: str | None = None,
        resume: bool = False,
    ) -> ClaimOk | ClaimRefused:
        """Claim the plan's one run for ``execution``, atomically across processes."""

        def work(conn: sqlite3.Connection) -> ClaimOk | ClaimRefused:
            state, digest = self._row(conn, "claim_run", plan_id, "state, digest", lock="update")
            answer, record = _rules.screen_claim(
                state,
                digest,
                self._run(conn, "claim_run", plan_id),
                expected_digest,
                run_id,
                execution,
                resume=resume,
            )
            if record is not None:
                conn.execute(_SQL.set_run, _rows.new_run(plan_id, record, self._clock()))
            return answer

        return await self._writing(work)

    async def read_run_id(self, plan_id: str) -> str | None:
        """The plan's run id, once claimed.

        Raises:
            PlanNotFoundError: unknown plan.

        """
        return await self._column("read_run_id", plan_id, "run_id")

    async def read_run(self, plan_id: str) -> RunRecord | None:
        """The plan's run, or ``None`` before any claim (see ``PlanStore``)."""

        def work(conn: sqlite3.Connection) -> RunRecord | None:
            return self._run(conn, "read_run", plan_id)

        return await self._reading(work)

    async def append_run_log(
        self, plan_id: str, run_id: str, start: int, entries: Sequence[LogEntry]
    ) -> int:
        """Write ``entries`` from position ``start``, idempotently (see ``PlanStore``)."""

        def work(conn: sqlite3.Connection) -> int:
            run = self._run(conn, "append_run_log", plan_id, lock="update")
            append = _rules.screen_log_append(plan_id, run, run_id, start, entries)
            held = conn.execute(_SQL.run_log_bodies, (plan_id, *append.held))
            write = append.write([body for (body,) in held])
            if write.entries:
                conn.executemany(_SQL.insert_run_log, _rows.new_log(plan_id, write))
                conn.execute(_SQL.set_run_outcome, (write.outcome, self._clock(), plan_id))
            return write.length

        return await self._writing(work)

    async def read_run_log(
        self, plan_id: str, run_id: str | None = None, *, start: int = 0, limit: int | None = None
    ) -> list[LogEntry]:
        """The run's log from ``start``, at most ``limit`` entries (see ``PlanStore``)."""

        def work(conn: sqlite3.Connection) -> list[LogEntry]:
            run = self._run(conn, "read_run_log", plan_id)
            first, stop = _rules.screen_log_read(plan_id, run, run_id, start, limit)
            return _rows.log(conn.execute(_SQL.run_log_bodies, (plan_id, first, stop)))

        return await self._reading(work)

    async def list_plans(
        self,
        *,
        state: PlanState | None = None,
        limit: int | None = None,
        after: str | None = None,
    ) -> list[PlanSummary]:
        """Summaries in creation order, optionally only those in ``state`` (see ``PlanStore``)."""
        count = _listing.screen_limit("list_plans", limit)

        def work(conn: sqlite3.Connection) -> list[PlanSummary]:
            since = -1
            if after is not None:
                row = conn.execute(_SQL.plan("seq"), (after,)).fetchone()
                if row is None:
                    raise _listing.cursor_not_found("list_plans", after, needs_run=False)
                (since,) = row
            rows = conn.execute(_SQL.list_plans, (state, state, since, count))
            return [_rows.summary(row) for row in rows]

        return await self._reading(work)

    async def list_runs(
        self,
        *,
        outcome: RunOutcomeFilter | None = None,
        prefix: str = "",
        limit: int | None = None,
        after: str | None = None,
    ) -> list[RunSummary]:
        """The plans' runs, newest claim first (see ``PlanStore``)."""
        count = _listing.screen_limit("list_runs", limit)
        wanted = _listing.screen_outcome(outcome)

        def work(conn: sqlite3.Connection) -> list[RunSummary]:
            below = _listing.NO_LIMIT
            if after is not None:
                row = conn.execute(_SQL.plan("run_seq"), (after,)).fetchone()
                if row is None or row[0] is None:
                    raise _listing.cursor_not_found("list_runs", after, needs_run=True)
                (below,) = row
            rows = conn.execute(
                _SQL.list_runs, (below, wanted, wanted, len(prefix), prefix, count)
            )
            return [_rows.run_summary(row) for row in rows]

        return await self._reading(work)

    async def close(self) -> None:
        """Close the connection; later calls raise ``sqlite3.ProgrammingError``."""

        def work() -> None:
            with self._lock:
                self._closed = True
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None

        await asyncio.to_thread(work)

    async def _column(self, method: str, plan_id: str, column: str) -> str | None:
        def work(conn: sqlite3.Connection) -> str | None:
            (value,) = self._row(conn, method, plan_id, column)
            text: str | None = value
            return text

        return await asyncio.to_thread(self._call, work)
