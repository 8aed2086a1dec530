"""``PostgresPlanStore``: a :class:`~orchestration.store.base.PlanStore` shared by many hosts.

When workers, API processes and agent hosts run on several machines, the plan store must be one
database they all reach. This store keeps the protocol's compare-and-set rules across every
connection to that database:

* Every write is one transaction that first locks the plan's row (``SELECT ... FOR UPDATE``),
  then reads, decides (with the same rules as every bundled store, :mod:`._rules`) and writes.
  A second writer on the same plan waits on the row lock and then decides on what the first
  committed (``READ COMMITTED`` gives each later statement a fresh snapshot), so of two appends
  against one expected revision exactly one lands. Creating a plan relies on the primary key
  (``INSERT ... ON CONFLICT DO NOTHING``), so two creators of one id cannot both succeed.
* A refusal writes nothing, and an exception (or a client killed mid-transaction) rolls the
  whole transaction back, so a batch is all or nothing.
* Schema creation and migrations run under a transaction-scoped advisory lock and are recorded
  in ``orch_schema_version``: any number of hosts may open the store at once, exactly one of
  them applies a pending migration, the others wait and then see it applied. A database written
  by a newer layout is refused (:class:`SchemaVersionError`), never rewritten.

The statements, and the records' JSON columns, are those of the SQLite store (:mod:`._sql`,
:mod:`._rows`); the tables are prefixed ``orch_`` so that the store can share a database with
other applications. A clone's ``completedAtClone`` is read from the parsed run log by the shared
rule rather than by SQL over JSON, so the stores cannot disagree on it.

Each store owns an ``AsyncConnectionPool`` (psycopg 3), opened on first use so that
constructing the store does no I/O. Parsed op logs of recently used plans are kept per store
(:mod:`._oplog`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from psycopg import AsyncConnection, InterfaceError
from psycopg_pool import AsyncConnectionPool

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
from ._sql import POSTGRES, RowLock, Statements
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

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "PostgresPlanStore", "SchemaVersionError"]

MIGRATIONS: tuple[tuple[int, str], ...] = (
    (
        1,
        """
        CREATE TABLE orch_plans (
            seq         BIGSERIAL UNIQUE,
            plan_id     TEXT PRIMARY KEY,
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
        CREATE TABLE orch_ops (
            plan_id     TEXT NOT NULL REFERENCES orch_plans (plan_id),
            position    INTEGER NOT NULL,
            op_id       TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            body        TEXT NOT NULL,
            PRIMARY KEY (plan_id, position),
            UNIQUE (plan_id, op_id)
        );
        CREATE TABLE orch_run_events (
            plan_id     TEXT NOT NULL REFERENCES orch_plans (plan_id),
            position    INTEGER NOT NULL,
            body        TEXT NOT NULL,
            PRIMARY KEY (plan_id, position)
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
            plan_id     TEXT NOT NULL REFERENCES orch_plans (plan_id),
            position    INTEGER NOT NULL,
            body        TEXT NOT NULL,
            PRIMARY KEY (plan_id, position)
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
        SELECT setval('orch_run_seq', COALESCE((SELECT MAX(run_seq) FROM orch_plans), 0) + 1,
            false);
        """,
    ),
)
"""``(version, DDL)`` in order; a database at version ``v`` gets every later step, once."""

SCHEMA_VERSION = MIGRATIONS[-1][0]
"""The layout this module reads and writes, kept in the ``orch_schema_version`` table."""

_DDL_LOCK = "orchestration.store.postgres/schema"
"""Hashed to the advisory-lock key every host takes around schema DDL."""

_T = TypeVar("_T")

_SQL = Statements(POSTGRES)

_Work = Callable[[AsyncConnection[Any], dict[str, list[PlanOp]]], Awaitable[_T]]


class SchemaVersionError(OrchestrationError):
    """The database was written by a newer layout than this version of the store understands."""

    code = "schema_version_unsupported"


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
        if found > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"the plan-store database has schema version {found}; this store reads version "
                f"{SCHEMA_VERSION}. Upgrade the library to open it."
            )
        for version, ddl in MIGRATIONS:
            if version > found:
                await conn.execute(ddl)
        if found < SCHEMA_VERSION:
            await conn.execute(
                "INSERT INTO orch_schema_version (singleton, version) VALUES (TRUE, %s)"
                " ON CONFLICT (singleton) DO UPDATE SET version = EXCLUDED.version",
                (SCHEMA_VERSION,),
            )
    return found


class PostgresPlanStore:
    """A plan store in one PostgreSQL database, safe to share between hosts.

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
        self._pool: AsyncConnectionPool[AsyncConnection[Any]] = AsyncConnectionPool(
            conninfo,
            min_size=min_size,
            max_size=max_size,
            open=False,
            kwargs={"autocommit": True},
        )
        self._clock = clock
        self._opened = False
        self._closed = False
        self._opening = asyncio.Lock()
        self._logs = _oplog.OpLogCache()

    # ----------------------------------------------------------------------------------------
    # Pool and transactions
    # ----------------------------------------------------------------------------------------

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

    async def _transaction(self, work: _Work[_T]) -> _T:
        """Run ``work`` in one transaction; remember the logs it parsed only once it committed."""
        pool = await self._ready()
        seen: dict[str, list[PlanOp]] = {}
        async with pool.connection() as conn, conn.transaction():
            result = await work(conn, seen)
        self._logs.remember(seen)
        return result

    # ----------------------------------------------------------------------------------------
    # Row helpers (called inside a transaction)
    # ----------------------------------------------------------------------------------------

    @staticmethod
    async def _row(
        conn: AsyncConnection[Any],
        method: str,
        plan_id: str,
        columns: str,
        *,
        lock: RowLock | None = None,
    ) -> tuple[Any, ...]:
        cursor = await conn.execute(_SQL.plan(columns, lock), (plan_id,))
        return _rows.found(await cursor.fetchone(), method, plan_id)

    async def _log(
        self,
        conn: AsyncConnection[Any],
        seen: dict[str, list[PlanOp]],
        plan_id: str,
        through: int,
        current: int,
    ) -> list[PlanOp]:
        """The first ``through`` ops of a plan at revision ``current``, parsing only what's new.

        The returned list may be shared with the cache; callers copy it before handing it out.
        """
        log = self._logs.known(seen, plan_id)
        if len(log) < through:
            cursor = await conn.execute(_SQL.op_bodies, (plan_id, len(log), through))
            rows = await cursor.fetchall()
            log = _oplog.extended(seen, plan_id, log, rows, whole=through == current)
        return _oplog.prefix(log, through)

    async def _run(
        self,
        conn: AsyncConnection[Any],
        method: str,
        plan_id: str,
        *,
        lock: RowLock | None = None,
    ) -> RunRecord | None:
        """The plan's run, with its log's length.

        ``lock`` holds the row, and so the log (every append locks the row first), still while
        the length is read: READ COMMITTED gives each statement its own snapshot.
        """
        columns = await self._row(conn, method, plan_id, _rows.RUN_COLUMNS, lock=lock)
        row = await (await conn.execute(_SQL.run_log_length, (plan_id,))).fetchone()
        return _rows.run(columns, 0 if row is None else row[0])

    @staticmethod
    async def _log_bodies(
        conn: AsyncConnection[Any], plan_id: str, first: int, stop: int
    ) -> list[Any]:
        cursor = await conn.execute(_SQL.run_log_bodies, (plan_id, first, stop))
        return await cursor.fetchall()

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

        async def work(
            conn: AsyncConnection[Any], seen: dict[str, list[PlanOp]]
        ) -> CreateOk | CreateRefused:
            row = _rows.new_plan(
                plan_id, 0, view, label=label, provenance=provenance, updated_at=self._clock()
            )
            if (await conn.execute(_SQL.insert_plan, row)).rowcount == 0:
                return CreateRefused(reason="duplicate_id")
            return CreateOk(plan_id=plan_id, revision=0, digest=view.digest)

        return await self._transaction(work)

    async def clone_plan(
        self, source_id: str, new_id: str, *, at_revision: int | None = None
    ) -> CreateOk | CreateRefused:
        """Copy the source's first ``at_revision`` ops (default: all) into a new editable plan.

        Refusals, in check order: ``source_missing``, ``duplicate_id``, ``revision_missing``.
        """

        async def work(
            conn: AsyncConnection[Any], seen: dict[str, list[PlanOp]]
        ) -> CreateOk | CreateRefused:
            cursor = await conn.execute(
                _SQL.plan("revision, label, provenance", "share"), (source_id,)
            )
            source = await cursor.fetchone()
            if source is None:
                return CreateRefused(reason="source_missing")
            if await (await conn.execute(_SQL.plan_exists, (new_id,))).fetchone() is not None:
                return CreateRefused(reason="duplicate_id")
            source_revision, label, source_provenance = source
            revision = _rules.screen_clone(source_revision, at_revision)
            if isinstance(revision, CreateRefused):
                return revision
            ops = await self._log(conn, seen, source_id, revision, source_revision)
            provenance = _rules.clone_provenance(
                source_id,
                ops,
                _rows.provenance(source_provenance),
                _rows.log(await (await conn.execute(_SQL.whole_run_log, (source_id,))).fetchall()),
            )
            view = fold_ops(new_id, ops, provenance).view
            row = _rows.new_plan(
                new_id, revision, view, label=label, provenance=provenance, updated_at=self._clock()
            )
            # Nothing locks the new id: another host may have created it since the check above.
            if (await conn.execute(_SQL.insert_plan, row)).rowcount == 0:
                return CreateRefused(reason="duplicate_id")
            await conn.execute(_SQL.copy_ops, (new_id, source_id, revision))
            seen[new_id] = ops
            return CreateOk(plan_id=new_id, revision=revision, digest=view.digest)

        return await self._transaction(work)

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

        async def work(
            conn: AsyncConnection[Any], seen: dict[str, list[PlanOp]]
        ) -> AppendOk | AppendRefused:
            state, revision, digest, provenance = await self._row(
                conn, "append_ops", plan_id, "state, revision, digest, provenance", lock="update"
            )
            cursor = await conn.execute(_SQL.known_fingerprints, (plan_id, op_ids))
            known = dict(await cursor.fetchall())
            decision = _rules.screen_append(state, revision, batch, known, expected_revision)
            if isinstance(decision, AppendRefused):
                return decision
            if not decision:
                return AppendOk(revision=revision, digest=digest)
            prefix = await self._log(conn, seen, plan_id, revision, revision)
            log = [*prefix, *(op for op, _ in decision)]
            view = fold_ops(plan_id, log, _rows.provenance(provenance)).view
            async with conn.cursor() as insert:
                await insert.executemany(
                    _SQL.insert_ops, _rows.new_ops(plan_id, revision, decision)
                )
            await conn.execute(
                _SQL.set_log, (len(log), view.digest, len(view.nodes), self._clock(), plan_id)
            )
            seen[plan_id] = log
            return AppendOk(revision=len(log), digest=view.digest)

        return await self._transaction(work)

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

        async def work(conn: AsyncConnection[Any], seen: dict[str, list[PlanOp]]) -> list[PlanOp]:
            (current,) = await self._row(conn, "read_ops", plan_id, "revision")
            through = _rules.checked_revision(plan_id, current, through_revision)
            log = await self._log(conn, seen, plan_id, through, current)
            return _rules.ops_since(log, since_lamport)

        return await self._transaction(work)

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

        async def work(
            conn: AsyncConnection[Any], seen: dict[str, list[PlanOp]]
        ) -> PlanStateRecord:
            state, digest, revision = await self._row(
                conn, "read_state", plan_id, "state, digest, revision"
            )
            return PlanStateRecord(state=state, digest=digest, revision=revision)

        return await self._transaction(work)

    async def fold(self, plan_id: str, *, revision: int | None = None) -> FoldResult:
        """The plan folded at ``revision`` (default: current), with its current provenance.

        Raises:
            PlanNotFoundError: unknown plan.
            RevisionOutOfRangeError: ``revision`` outside ``[0, current]``.

        """

        async def work(conn: AsyncConnection[Any], seen: dict[str, list[PlanOp]]) -> FoldResult:
            current, provenance = await self._row(conn, "fold", plan_id, "revision, provenance")
            through = _rules.checked_revision(plan_id, current, revision)
            ops = await self._log(conn, seen, plan_id, through, current)
            return fold_ops(plan_id, ops, _rows.provenance(provenance))

        return await self._transaction(work)

    async def transition(
        self, plan_id: str, request: TransitionRequest
    ) -> TransitionOk | TransitionRefused:
        """Compare-and-set the lifecycle state. Checks state, then digest, then legality.

        The approval of ``reviewable → executable`` is written in the same transaction as the
        state, so no reader ever sees an executable plan without its approval.

        Raises:
            PlanNotFoundError: unknown plan.

        """

        async def work(
            conn: AsyncConnection[Any], seen: dict[str, list[PlanOp]]
        ) -> TransitionOk | TransitionRefused:
            state, digest, revision = await self._row(
                conn, "transition", plan_id, "state, digest, revision", lock="update"
            )
            refusal = _rules.screen_transition(plan_id, state, digest, request)
            if refusal is not None:
                return refusal
            await conn.execute(_SQL.set_state, _rows.new_state(plan_id, request, self._clock()))
            return TransitionOk(revision=revision)

        return await self._transaction(work)

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
        """Claim the plan's one run for ``execution``, atomically across hosts."""

        async def work(
            conn: AsyncConnection[Any], seen: dict[str, list[PlanOp]]
        ) -> ClaimOk | ClaimRefused:
            state, digest = await self._row(
                conn, "claim_run", plan_id, "state, digest", lock="update"
            )
            answer, record = _rules.screen_claim(
                state,
                digest,
                await self._run(conn, "claim_run", plan_id),
                expected_digest,
                run_id,
                execution,
                resume=resume,
            )
            if record is not None:
                await conn.execute(_SQL.set_run, _rows.new_run(plan_id, record, self._clock()))
            return answer

        return await self._transaction(work)

    async def read_run_id(self, plan_id: str) -> str | None:
        """The plan's run id, once claimed.

        Raises:
            PlanNotFoundError: unknown plan.

        """
        return await self._column("read_run_id", plan_id, "run_id")

    async def read_run(self, plan_id: str) -> RunRecord | None:
        """The plan's run, or ``None`` before any claim (see ``PlanStore``)."""

        async def work(
            conn: AsyncConnection[Any], seen: dict[str, list[PlanOp]]
        ) -> RunRecord | None:
            return await self._run(conn, "read_run", plan_id, lock="share")

        return await self._transaction(work)

    async def append_run_log(
        self, plan_id: str, run_id: str, start: int, entries: Sequence[LogEntry]
    ) -> int:
        """Write ``entries`` from position ``start``, idempotently (see ``PlanStore``)."""

        async def work(conn: AsyncConnection[Any], seen: dict[str, list[PlanOp]]) -> int:
            run = await self._run(conn, "append_run_log", plan_id, lock="update")
            append = _rules.screen_log_append(plan_id, run, run_id, start, entries)
            held = await self._log_bodies(conn, plan_id, *append.held)
            write = append.write([body for (body,) in held])
            if write.entries:
                async with conn.cursor() as insert:
                    await insert.executemany(_SQL.insert_run_log, _rows.new_log(plan_id, write))
                await conn.execute(_SQL.set_run_outcome, (write.outcome, self._clock(), plan_id))
            return write.length

        return await self._transaction(work)

    async def read_run_log(
        self, plan_id: str, run_id: str | None = None, *, start: int = 0, limit: int | None = None
    ) -> list[LogEntry]:
        """The run's log from ``start``, at most ``limit`` entries (see ``PlanStore``)."""

        async def work(conn: AsyncConnection[Any], seen: dict[str, list[PlanOp]]) -> list[LogEntry]:
            run = await self._run(conn, "read_run_log", plan_id, lock="share")
            first, stop = _rules.screen_log_read(plan_id, run, run_id, start, limit)
            return _rows.log(await self._log_bodies(conn, plan_id, first, stop))

        return await self._transaction(work)

    async def list_plans(
        self,
        *,
        state: PlanState | None = None,
        limit: int | None = None,
        after: str | None = None,
    ) -> list[PlanSummary]:
        """Summaries in creation order, optionally only those in ``state`` (see ``PlanStore``)."""
        count = _listing.screen_limit("list_plans", limit)

        async def work(
            conn: AsyncConnection[Any], seen: dict[str, list[PlanOp]]
        ) -> list[PlanSummary]:
            since = -1
            if after is not None:
                row = await (await conn.execute(_SQL.plan("seq"), (after,))).fetchone()
                if row is None:
                    raise _listing.cursor_not_found("list_plans", after, needs_run=False)
                (since,) = row
            cursor = await conn.execute(_SQL.list_plans, (state, state, since, count))
            return [_rows.summary(row) for row in await cursor.fetchall()]

        return await self._transaction(work)

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

        async def work(
            conn: AsyncConnection[Any], seen: dict[str, list[PlanOp]]
        ) -> list[RunSummary]:
            below = _listing.NO_LIMIT
            if after is not None:
                row = await (await conn.execute(_SQL.plan("run_seq"), (after,))).fetchone()
                if row is None or row[0] is None:
                    raise _listing.cursor_not_found("list_runs", after, needs_run=True)
                (below,) = row
            cursor = await conn.execute(
                _SQL.list_runs, (below, wanted, wanted, len(prefix), prefix, count)
            )
            return [_rows.run_summary(row) for row in await cursor.fetchall()]

        return await self._transaction(work)

    async def close(self) -> None:
        """Close the pool; later calls raise ``psycopg.InterfaceError``."""
        self._closed = True
        await self._pool.close()

    async def _column(self, method: str, plan_id: str, column: str) -> str | None:
        async def work(conn: AsyncConnection[Any], seen: dict[str, list[PlanOp]]) -> str | None:
            (value,) = await self._row(conn, method, plan_id, column)
            text: str | None = value
            return text

        return await self._transaction(work)
