"""``SqlPlanStore``: every :class:`~orchestration.store.base.PlanStore` operation, once, over SQL.

The SQLite and PostgreSQL stores are this class over a :class:`Database`. What differs between
them lives in that object and never in an operation: how a statement is spelled (a
:class:`~._sql.Dialect`), how a transaction begins and what it locks, how connections are
opened, kept and closed, and how the schema is migrated.

Each operation is one transaction that reads the plan's row, decides with the rules every
bundled store shares (:mod:`._rules`) and writes exactly what they admitted. A transaction that
decides a write is a ``"write"`` one, and its database keeps a second writer of the same plan
from deciding on the same record until it commits (SQLite holds the file's write lock from
``BEGIN IMMEDIATE``; PostgreSQL locks the plan's row, ``FOR UPDATE`` on the deciding read), so
of two writers racing on one expected revision exactly one wins. A refusal writes nothing and an
exception rolls the transaction back, so a batch is all or nothing. What could be computed by
SQL over the stored JSON (a clone's ``completedAtClone``, a run's start and end times) is read
from the parsed entries by those shared rules instead, so the stores cannot disagree on it.

The current digest, revision and node count are kept in the ``plans`` row and recomputed by
folding when the log changes, so ``read_state`` and ``list_plans`` never refold. An append does
refold the whole log; the store keeps the parsed logs of recently used plans (:mod:`._oplog`)
to spare it re-parsing the log too.

Operations are coroutines over a :class:`Connection`. A blocking driver implements its methods
without ever suspending, and its database runs a whole transaction's coroutine to the end on a
worker thread (:mod:`.sqlite`), so one body of each operation serves both kinds of driver.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeVar

from typing_extensions import override

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
from ._sql import Dialect, RowLock, Statements
from .base import (
    AppendOk,
    AppendRefused,
    ClaimOk,
    ClaimRefused,
    CreateOk,
    CreateRefused,
    PlanStateRecord,
    PlanStore,
    RunOutcomeFilter,
    RunRecord,
    TransitionOk,
    TransitionRefused,
    TransitionRequest,
)

__all__ = ["Access", "Connection", "Database", "Row", "SqlPlanStore", "Work"]

_T = TypeVar("_T")

Row = tuple[Any, ...]
"""A row as the driver returns it, columns in the order the statement names them."""

Access = Literal["read", "write"]
"""What a transaction does: only read (its statements agree with each other), or decide a write."""


class Connection(Protocol):
    """The open transaction an operation runs its statements in.

    Parameters are bound in the order of the statement's placeholders (:mod:`._rows` builds them).
    """

    async def one(self, sql: str, params: Sequence[Any]) -> Row | None:
        """The first row of a query, or ``None`` when it has none."""
        ...

    async def all(self, sql: str, params: Sequence[Any]) -> list[Row]:
        """Every row of a query, in its order."""
        ...

    async def run(self, sql: str, params: Sequence[Any]) -> int:
        """Run a write; how many rows it wrote."""
        ...

    async def run_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run a write once for each parameter row, in order."""
        ...


Work = Callable[[Connection], Coroutine[Any, Any, _T]]
"""What runs in one transaction: an operation's statements and decisions, as a coroutine."""


class Database(Protocol):
    """One SQL database as :class:`SqlPlanStore` reaches it.

    The database is opened, and its schema brought to the current version, on first use, so that
    constructing a store does no I/O.
    """

    @property
    def dialect(self) -> Dialect:
        """How this database spells the shared statements and locks the rows it decides on."""
        ...

    async def transaction(self, access: Access, work: Work[_T]) -> _T:
        """Run ``work`` in one transaction: committed when it returns, rolled back when it raises.

        A ``write`` transaction keeps every other writer of the plans it decides on from
        deciding on them until it commits: from its beginning, or from the row reads its
        dialect locks (:attr:`~._sql.Dialect.for_update`).
        """
        ...

    async def close(self) -> None:
        """Release the connections; every later transaction raises the driver's own error."""
        ...


@dataclass(frozen=True)
class _Tx:
    """One transaction of the store: its connection, and the op logs it parsed (see _oplog)."""

    conn: Connection
    sql: Statements
    logs: _oplog.OpLogCache
    seen: dict[str, list[PlanOp]]

    async def row(
        self, method: str, plan_id: str, columns: str, *, lock: RowLock | None = None
    ) -> Row:
        """The plan's ``columns``, taking ``lock`` on its row.

        Raises:
            PlanNotFoundError: unknown plan.

        """
        return _rows.found(
            await self.conn.one(self.sql.plan(columns, lock), (plan_id,)), method, plan_id
        )

    async def ops(self, plan_id: str, through: int, current: int) -> list[PlanOp]:
        """The first ``through`` ops of a plan at revision ``current``, parsing only what's new.

        The returned list may be shared with the cache; callers copy it before handing it out.
        """
        log = self.logs.known(self.seen, plan_id)
        if len(log) < through:
            rows = await self.conn.all(self.sql.op_bodies, (plan_id, len(log), through))
            log = _oplog.extended(self.seen, plan_id, log, rows, whole=through == current)
        return _oplog.prefix(log, through)

    async def run(
        self, method: str, plan_id: str, *, lock: RowLock | None = None
    ) -> RunRecord | None:
        """The plan's run, with its log's length.

        ``lock`` holds the row, and so the log (every append locks the row first), still while
        the length is read, where each statement sees its own snapshot (READ COMMITTED).
        """
        columns = await self.row(method, plan_id, _rows.RUN_COLUMNS, lock=lock)
        row = await self.conn.one(self.sql.run_log_length, (plan_id,))
        return _rows.run(columns, 0 if row is None else row[0])

    async def log_bodies(self, plan_id: str, first: int, stop: int) -> list[Row]:
        """The stored bodies of the run log's positions ``[first, stop)``, in order."""
        return await self.conn.all(self.sql.run_log_bodies, (plan_id, first, stop))


class SqlPlanStore(PlanStore):
    """A plan store over one SQL database, as safe to share as that database makes it.

    Args:
        database: The database, opened on first use.
        clock: Returns the ``updatedAt`` stamp of a write (ISO-8601). Defaults to UTC now.

    """

    def __init__(self, database: Database, *, clock: Callable[[], str] = _rules.utc_now) -> None:
        self._database = database
        self._sql = Statements(database.dialect)
        self._clock = clock
        self._logs = _oplog.OpLogCache()

    async def _transaction(
        self, access: Access, work: Callable[[_Tx], Coroutine[Any, Any, _T]]
    ) -> _T:
        """Run ``work`` in one transaction; remember the logs it parsed only once it committed."""
        seen: dict[str, list[PlanOp]] = {}

        def bound(conn: Connection) -> Coroutine[Any, Any, _T]:
            return work(_Tx(conn, self._sql, self._logs, seen))

        result = await self._database.transaction(access, bound)
        self._logs.remember(seen)
        return result

    async def _column(self, method: str, plan_id: str, column: str) -> str | None:
        async def work(tx: _Tx) -> str | None:
            (value,) = await tx.row(method, plan_id, column)
            text: str | None = value
            return text

        return await self._transaction("read", work)

    @override
    async def create_plan(
        self,
        plan_id: str,
        *,
        label: str | None = None,
        provenance: TemplateProvenance | None = None,
    ) -> CreateOk | CreateRefused:
        view = fold_ops(plan_id, (), provenance).view

        async def work(tx: _Tx) -> CreateOk | CreateRefused:
            row = _rows.new_plan(
                plan_id, 0, view, label=label, provenance=provenance, updated_at=self._clock()
            )
            if await tx.conn.run(self._sql.insert_plan, row) == 0:
                return CreateRefused(reason="duplicate_id")
            return CreateOk(plan_id=plan_id, revision=0, digest=view.digest)

        return await self._transaction("write", work)

    @override
    async def clone_plan(
        self, source_id: str, new_id: str, *, at_revision: int | None = None
    ) -> CreateOk | CreateRefused:
        async def work(tx: _Tx) -> CreateOk | CreateRefused:
            source = await tx.conn.one(
                self._sql.plan("revision, label, provenance", "share"), (source_id,)
            )
            if source is None:
                return CreateRefused(reason="source_missing")
            if await tx.conn.one(self._sql.plan_exists, (new_id,)) is not None:
                return CreateRefused(reason="duplicate_id")
            source_revision, label, source_provenance = source
            revision = _rules.screen_clone(source_revision, at_revision)
            if isinstance(revision, CreateRefused):
                return revision
            ops = await tx.ops(source_id, revision, source_revision)
            provenance = _rules.clone_provenance(
                source_id,
                ops,
                _rows.provenance(source_provenance),
                _rows.log(await tx.conn.all(self._sql.whole_run_log, (source_id,))),
            )
            view = fold_ops(new_id, ops, provenance).view
            row = _rows.new_plan(
                new_id, revision, view, label=label, provenance=provenance, updated_at=self._clock()
            )
            # A database that locks rows has not locked the new id: another writer may have
            # created it since the check above.
            if await tx.conn.run(self._sql.insert_plan, row) == 0:
                return CreateRefused(reason="duplicate_id")
            await tx.conn.run(self._sql.copy_ops, (new_id, source_id, revision))
            tx.seen[new_id] = ops
            return CreateOk(plan_id=new_id, revision=revision, digest=view.digest)

        return await self._transaction("write", work)

    @override
    async def append_ops(
        self,
        plan_id: str,
        ops: Sequence[PlanOp],
        *,
        expected_revision: int | None = None,
    ) -> AppendOk | AppendRefused:
        batch = _rules.wire_checked(ops)
        ids = [] if isinstance(batch, _rules.InvalidOp) else [op.op_id for op in batch]
        op_ids = self._sql.op_ids(ids)

        async def work(tx: _Tx) -> AppendOk | AppendRefused:
            state, revision, digest, provenance = await tx.row(
                "append_ops", plan_id, "state, revision, digest, provenance", lock="update"
            )
            known: dict[str, str] = dict(
                await tx.conn.all(self._sql.known_fingerprints, (plan_id, op_ids))
            )
            decision = _rules.screen_append(state, revision, batch, known, expected_revision)
            if isinstance(decision, AppendRefused):
                return decision
            if not decision:
                return AppendOk(revision=revision, digest=digest)
            log = [*await tx.ops(plan_id, revision, revision), *(op for op, _ in decision)]
            view = fold_ops(plan_id, log, _rows.provenance(provenance)).view
            await tx.conn.run_many(self._sql.insert_ops, _rows.new_ops(plan_id, revision, decision))
            await tx.conn.run(
                self._sql.set_log, (len(log), view.digest, len(view.nodes), self._clock(), plan_id)
            )
            tx.seen[plan_id] = log
            return AppendOk(revision=len(log), digest=view.digest)

        return await self._transaction("write", work)

    @override
    async def read_ops(
        self,
        plan_id: str,
        *,
        through_revision: int | None = None,
        since_lamport: int | None = None,
    ) -> list[PlanOp]:
        async def work(tx: _Tx) -> list[PlanOp]:
            (current,) = await tx.row("read_ops", plan_id, "revision")
            through = _rules.checked_revision(plan_id, current, through_revision)
            return _rules.ops_since(await tx.ops(plan_id, through, current), since_lamport)

        return await self._transaction("read", work)

    @override
    async def read_provenance(self, plan_id: str) -> PlanProvenance | None:
        return _rows.provenance(await self._column("read_provenance", plan_id, "provenance"))

    @override
    async def read_state(self, plan_id: str) -> PlanStateRecord:
        async def work(tx: _Tx) -> PlanStateRecord:
            state, digest, revision = await tx.row("read_state", plan_id, "state, digest, revision")
            return PlanStateRecord(state=state, digest=digest, revision=revision)

        return await self._transaction("read", work)

    @override
    async def fold(self, plan_id: str, *, revision: int | None = None) -> FoldResult:
        async def work(tx: _Tx) -> FoldResult:
            current, provenance = await tx.row("fold", plan_id, "revision, provenance")
            through = _rules.checked_revision(plan_id, current, revision)
            ops = await tx.ops(plan_id, through, current)
            return fold_ops(plan_id, ops, _rows.provenance(provenance))

        return await self._transaction("read", work)

    @override
    async def transition(
        self, plan_id: str, request: TransitionRequest
    ) -> TransitionOk | TransitionRefused:
        async def work(tx: _Tx) -> TransitionOk | TransitionRefused:
            state, digest, revision = await tx.row(
                "transition", plan_id, "state, digest, revision", lock="update"
            )
            refusal = _rules.screen_transition(plan_id, state, digest, request)
            if refusal is not None:
                return refusal
            # The approval goes in with the state: no reader sees an executable plan without it.
            await tx.conn.run(self._sql.set_state, _rows.new_state(plan_id, request, self._clock()))
            return TransitionOk(revision=revision)

        return await self._transaction("write", work)

    @override
    async def read_approval(self, plan_id: str) -> ApprovalRecord | None:
        return _rows.approval(await self._column("read_approval", plan_id, "approval"))

    @override
    async def claim_run(
        self,
        plan_id: str,
        expected_digest: str,
        run_id: str,
        *,
        execution: str | None = None,
        resume: bool = False,
    ) -> ClaimOk | ClaimRefused:
        async def work(tx: _Tx) -> ClaimOk | ClaimRefused:
            state, digest = await tx.row("claim_run", plan_id, "state, digest", lock="update")
            answer, record = _rules.screen_claim(
                state,
                digest,
                await tx.run("claim_run", plan_id),
                expected_digest,
                run_id,
                execution,
                resume=resume,
            )
            if record is not None:
                await tx.conn.run(self._sql.set_run, _rows.new_run(plan_id, record, self._clock()))
            return answer

        return await self._transaction("write", work)

    @override
    async def read_run_id(self, plan_id: str) -> str | None:
        return await self._column("read_run_id", plan_id, "run_id")

    @override
    async def read_run(self, plan_id: str) -> RunRecord | None:
        async def work(tx: _Tx) -> RunRecord | None:
            return await tx.run("read_run", plan_id, lock="share")

        return await self._transaction("read", work)

    @override
    async def append_run_log(
        self,
        plan_id: str,
        run_id: str,
        start: int,
        entries: Sequence[LogEntry],
        *,
        replace_tail: bool = False,
    ) -> int:
        async def work(tx: _Tx) -> int:
            run = await tx.run("append_run_log", plan_id, lock="update")
            append = _rules.screen_log_append(plan_id, run, run_id, start, entries)
            held = await tx.log_bodies(plan_id, *append.held)
            write = append.write([body for (body,) in held], replace_tail=replace_tail)
            if write.cut:
                await tx.conn.run(self._sql.cut_run_log, (plan_id, write.position))
            if write.entries:
                await tx.conn.run_many(self._sql.insert_run_log, _rows.new_log(plan_id, write))
                await tx.conn.run(
                    self._sql.set_run_outcome, (write.outcome, self._clock(), plan_id)
                )
            return write.length

        return await self._transaction("write", work)

    @override
    async def read_run_log(
        self, plan_id: str, run_id: str | None = None, *, start: int = 0, limit: int | None = None
    ) -> list[LogEntry]:
        async def work(tx: _Tx) -> list[LogEntry]:
            run = await tx.run("read_run_log", plan_id, lock="share")
            first, stop = _rules.screen_log_read(plan_id, run, run_id, start, limit)
            return _rows.log(await tx.log_bodies(plan_id, first, stop))

        return await self._transaction("read", work)

    @override
    async def list_plans(
        self,
        *,
        state: PlanState | None = None,
        limit: int | None = None,
        after: str | None = None,
    ) -> list[PlanSummary]:
        count = _listing.screen_limit("list_plans", limit)

        async def work(tx: _Tx) -> list[PlanSummary]:
            since = -1
            if after is not None:
                row = await tx.conn.one(self._sql.plan("seq"), (after,))
                if row is None:
                    raise _listing.cursor_not_found("list_plans", after, needs_run=False)
                (since,) = row
            rows = await tx.conn.all(self._sql.list_plans, (state, state, since, count))
            return [_rows.summary(row) for row in rows]

        return await self._transaction("read", work)

    @override
    async def list_runs(
        self,
        *,
        outcome: RunOutcomeFilter | None = None,
        prefix: str = "",
        limit: int | None = None,
        after: str | None = None,
    ) -> list[RunSummary]:
        count = _listing.screen_limit("list_runs", limit)
        wanted = _listing.screen_outcome(outcome)

        async def work(tx: _Tx) -> list[RunSummary]:
            below = _listing.NO_LIMIT
            if after is not None:
                row = await tx.conn.one(self._sql.plan("run_seq"), (after,))
                if row is None or row[0] is None:
                    raise _listing.cursor_not_found("list_runs", after, needs_run=True)
                (below,) = row
            rows = await tx.conn.all(
                self._sql.list_runs, (below, wanted, wanted, len(prefix), prefix, count)
            )
            return [_rows.run_summary(row) for row in rows]

        return await self._transaction("read", work)

    @override
    async def close(self) -> None:
        await self._database.close()
