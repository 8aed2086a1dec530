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

Records are stored as the JSON the pydantic models emit and are read back with
``validate_json``: only JSON mode decodes the value tags (``{"$ref": ...}``, ``{"$bytes": ...}``),
so a round trip gives back the same values of the same types. The current digest, revision and
node count are kept in the ``plans`` row and recomputed by folding when the log changes, so
``read_state`` and ``list_plans`` never refold. An append does refold the whole log; to spare it
re-parsing the log too, each store keeps the parsed logs of recently used plans, which stay
exact across processes because a committed position of an append-only log never changes.

The stdlib driver blocks, so each call runs on a worker thread (``asyncio.to_thread``) over the
store's one connection, which a ``threading.Lock`` serialises. A call whose awaiting task is
cancelled still runs its transaction to the end (commit or rollback) on that thread.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from orchestration.errors import (
    OrchestrationError,
    PlanNotFoundError,
    RunNotFoundError,
)
from orchestration.ops import FoldResult, fold_ops
from orchestration.types import (
    ApprovalRecord,
    CloneProvenance,
    PlanOp,
    PlanProvenance,
    PlanState,
    PlanSummary,
    RunEvent,
    TemplateProvenance,
)

from . import _rules
from .base import (
    AppendOk,
    AppendRefused,
    ClaimOk,
    ClaimRefused,
    CreateOk,
    CreateRefused,
    PlanStateRecord,
    TransitionOk,
    TransitionRefused,
    TransitionRequest,
)

__all__ = ["SCHEMA_VERSION", "SchemaVersionError", "SqlitePlanStore"]

SCHEMA_VERSION = 1
"""The layout this module reads and writes, kept in the file as ``PRAGMA user_version``."""

_SCHEMA = """
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
"""

_T = TypeVar("_T")

_CACHED_LOGS = 64
"""How many plans' parsed op logs a store keeps, most recently used first."""


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
        # Parsed op logs of committed revisions (see _log); touched only under self._lock.
        self._logs: OrderedDict[str, list[PlanOp]] = OrderedDict()
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
                with _transaction(conn, "BEGIN IMMEDIATE"):
                    self._check_version(conn)
                    for statement in _SCHEMA.split(";"):
                        if statement.strip():
                            conn.execute(statement)
                    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except BaseException:
            conn.close()
            raise
        return conn

    def _check_version(self, conn: sqlite3.Connection) -> None:
        version: int = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{self._path} has schema version {version}; this store reads version "
                f"{SCHEMA_VERSION}. Upgrade the library to open it."
            )

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
                # Only logs of a committed transaction may be remembered.
                for plan_id, log in self._seen.items():
                    self._logs[plan_id] = log
                    self._logs.move_to_end(plan_id)
                while len(self._logs) > _CACHED_LOGS:
                    self._logs.popitem(last=False)
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
    def _revision(conn: sqlite3.Connection, method: str, plan_id: str) -> int:
        row = conn.execute("SELECT revision FROM plans WHERE plan_id = ?", (plan_id,)).fetchone()
        if row is None:
            raise PlanNotFoundError(_rules.plan_not_found_message(method, plan_id))
        revision: int = row[0]
        return revision

    def _log(
        self, conn: sqlite3.Connection, plan_id: str, through: int, current: int
    ) -> list[PlanOp]:
        """The first ``through`` ops of a plan at revision ``current``, parsing only what's new.

        Ops are append-only and a committed position never changes, so any remembered prefix
        of a committed log is exact: only the rows past it are read and parsed. The returned
        list is shared with the cache; callers copy it before handing it out.
        """
        known = self._logs.get(plan_id, [])
        if len(known) >= through:
            return known[:through] if len(known) > through else known
        rows = conn.execute(
            "SELECT body FROM ops WHERE plan_id = ? AND position >= ? AND position < ?"
            " ORDER BY position",
            (plan_id, len(known), through),
        )
        log = [*known, *(_rules.OP_JSON.validate_json(body) for (body,) in rows)]
        if through == current:
            self._seen[plan_id] = log
        return log

    @staticmethod
    def _provenance(text: str | None) -> PlanProvenance | None:
        return None if text is None else _rules.PROVENANCE_JSON.validate_json(text)

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
        digest = fold_ops(plan_id, (), provenance).view.digest
        provenance_json = None if provenance is None else provenance.model_dump_json()

        def work(conn: sqlite3.Connection) -> CreateOk | CreateRefused:
            exists = conn.execute("SELECT 1 FROM plans WHERE plan_id = ?", (plan_id,)).fetchone()
            if exists is not None:
                return CreateRefused(reason="duplicate_id")
            conn.execute(
                "INSERT INTO plans (plan_id, state, revision, digest, node_count, label,"
                " provenance, updated_at) VALUES (?, 'editable', 0, ?, 0, ?, ?, ?)",
                (plan_id, digest, label, provenance_json, self._clock()),
            )
            return CreateOk(plan_id=plan_id, revision=0, digest=digest)

        return await self._writing(work)

    async def clone_plan(
        self, source_id: str, new_id: str, *, at_revision: int | None = None
    ) -> CreateOk | CreateRefused:
        """Copy the source's first ``at_revision`` ops (default: all) into a new editable plan.

        Refusals, in check order: ``source_missing``, ``duplicate_id``, ``revision_missing``.
        """

        def work(conn: sqlite3.Connection) -> CreateOk | CreateRefused:
            source = conn.execute(
                "SELECT revision, label, provenance FROM plans WHERE plan_id = ?", (source_id,)
            ).fetchone()
            if source is None:
                return CreateRefused(reason="source_missing")
            if conn.execute("SELECT 1 FROM plans WHERE plan_id = ?", (new_id,)).fetchone():
                return CreateRefused(reason="duplicate_id")
            source_revision, label, source_provenance = source
            revision = source_revision if at_revision is None else at_revision
            if not 0 <= revision <= source_revision:
                return CreateRefused(reason="revision_missing")
            ops = self._log(conn, source_id, revision, source_revision)
            parent = fold_ops(source_id, ops, self._provenance(source_provenance)).view
            completed = conn.execute(
                "SELECT json_extract(body, '$.frame.nodeId') FROM run_events"
                " WHERE plan_id = ? AND json_extract(body, '$.kind') = 'node_settled'"
                " AND json_extract(body, '$.outcome.status') = 'ok' ORDER BY position",
                (source_id,),
            ).fetchall()
            provenance = CloneProvenance(
                parent=source_id,
                parent_digest=parent.digest,
                parent_revision=revision,
                completed_at_clone=tuple(node_id for (node_id,) in completed),
            )
            view = fold_ops(new_id, ops, provenance).view
            conn.execute(
                "INSERT INTO plans (plan_id, state, revision, digest, node_count, label,"
                " provenance, updated_at) VALUES (?, 'editable', ?, ?, ?, ?, ?, ?)",
                (
                    new_id,
                    revision,
                    view.digest,
                    len(view.nodes),
                    label,
                    provenance.model_dump_json(),
                    self._clock(),
                ),
            )
            conn.execute(
                "INSERT INTO ops (plan_id, position, op_id, fingerprint, body)"
                " SELECT ?, position, op_id, fingerprint, body FROM ops"
                " WHERE plan_id = ? AND position < ?",
                (new_id, source_id, revision),
            )
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
        batch = list(ops)
        op_ids = [op.op_id for op in batch]

        def work(conn: sqlite3.Connection) -> AppendOk | AppendRefused:
            row = conn.execute(
                "SELECT state, revision, digest, provenance FROM plans WHERE plan_id = ?",
                (plan_id,),
            ).fetchone()
            if row is None:
                raise PlanNotFoundError(_rules.plan_not_found_message("append_ops", plan_id))
            state, revision, digest, provenance = row
            known = dict(
                conn.execute(
                    "SELECT op_id, fingerprint FROM ops WHERE plan_id = ?"
                    " AND op_id IN (SELECT value FROM json_each(?))",
                    (plan_id, json.dumps(op_ids)),
                ).fetchall()
            )
            decision = _rules.screen_append(state, revision, batch, known, expected_revision)
            if isinstance(decision, AppendRefused):
                return decision
            if not decision:
                return AppendOk(revision=revision, digest=digest)
            log = [*self._log(conn, plan_id, revision, revision), *(op for op, _ in decision)]
            view = fold_ops(plan_id, log, self._provenance(provenance)).view
            conn.executemany(
                "INSERT INTO ops (plan_id, position, op_id, fingerprint, body)"
                " VALUES (?, ?, ?, ?, ?)",
                [
                    (plan_id, revision + i, op.op_id, fingerprint, op.model_dump_json())
                    for i, (op, fingerprint) in enumerate(decision)
                ],
            )
            self._seen[plan_id] = log
            conn.execute(
                "UPDATE plans SET revision = ?, digest = ?, node_count = ?, updated_at = ?"
                " WHERE plan_id = ?",
                (len(log), view.digest, len(view.nodes), self._clock(), plan_id),
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
            current = self._revision(conn, "read_ops", plan_id)
            through = _rules.checked_revision(plan_id, current, through_revision)
            log = self._log(conn, plan_id, through, current)
            if since_lamport is None:
                return list(log)
            return [op for op in log if op.lamport > since_lamport]

        return await self._reading(work)

    async def read_provenance(self, plan_id: str) -> PlanProvenance | None:
        """The plan's lineage, or ``None`` when it was authored from scratch.

        Raises:
            PlanNotFoundError: unknown plan.

        """
        text = await self._column("read_provenance", plan_id, "provenance")
        return self._provenance(text)

    async def read_state(self, plan_id: str) -> PlanStateRecord:
        """The lifecycle state now, with the current digest and revision.

        Raises:
            PlanNotFoundError: unknown plan.

        """

        def work(conn: sqlite3.Connection) -> PlanStateRecord:
            row = conn.execute(
                "SELECT state, digest, revision FROM plans WHERE plan_id = ?", (plan_id,)
            ).fetchone()
            if row is None:
                raise PlanNotFoundError(_rules.plan_not_found_message("read_state", plan_id))
            state, digest, revision = row
            return PlanStateRecord(state=state, digest=digest, revision=revision)

        return await asyncio.to_thread(self._call, work)

    async def fold(self, plan_id: str, *, revision: int | None = None) -> FoldResult:
        """The plan folded at ``revision`` (default: current), with its current provenance.

        Raises:
            PlanNotFoundError: unknown plan.
            RevisionOutOfRangeError: ``revision`` outside ``[0, current]``.

        """

        def work(conn: sqlite3.Connection) -> FoldResult:
            row = conn.execute(
                "SELECT revision, provenance FROM plans WHERE plan_id = ?", (plan_id,)
            ).fetchone()
            if row is None:
                raise PlanNotFoundError(_rules.plan_not_found_message("fold", plan_id))
            through = _rules.checked_revision(plan_id, row[0], revision)
            ops = self._log(conn, plan_id, through, row[0])
            return fold_ops(plan_id, ops, self._provenance(row[1]))

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
            row = conn.execute(
                "SELECT state, digest, revision FROM plans WHERE plan_id = ?", (plan_id,)
            ).fetchone()
            if row is None:
                raise PlanNotFoundError(_rules.plan_not_found_message("transition", plan_id))
            state, digest, revision = row
            refusal = _rules.screen_transition(plan_id, state, digest, request)
            if refusal is not None:
                return refusal
            approval = request.approval if request.to == "executable" else None
            conn.execute(
                "UPDATE plans SET state = ?, approval = COALESCE(?, approval), updated_at = ?"
                " WHERE plan_id = ?",
                (
                    request.to,
                    None if approval is None else approval.model_dump_json(),
                    self._clock(),
                    plan_id,
                ),
            )
            return TransitionOk(revision=revision)

        return await self._writing(work)

    async def read_approval(self, plan_id: str) -> ApprovalRecord | None:
        """The approval persisted with ``reviewable → executable``, or ``None``.

        Raises:
            PlanNotFoundError: unknown plan.

        """
        text = await self._column("read_approval", plan_id, "approval")
        return None if text is None else ApprovalRecord.model_validate_json(text)

    async def claim_run(
        self, plan_id: str, expected_digest: str, run_id: str
    ) -> ClaimOk | ClaimRefused:
        """Record ``run_id`` as the plan's one run; atomic compare-and-set across processes.

        Raises:
            PlanNotFoundError: unknown plan.

        """

        def work(conn: sqlite3.Connection) -> ClaimOk | ClaimRefused:
            row = conn.execute(
                "SELECT state, digest, run_id FROM plans WHERE plan_id = ?", (plan_id,)
            ).fetchone()
            if row is None:
                raise PlanNotFoundError(_rules.plan_not_found_message("claim_run", plan_id))
            state, digest, existing = row
            answer = _rules.screen_claim(state, digest, existing, expected_digest, run_id)
            if answer is not None:
                return answer
            conn.execute(
                "UPDATE plans SET run_id = ?, updated_at = ? WHERE plan_id = ?",
                (run_id, self._clock(), plan_id),
            )
            return ClaimOk(run_id=run_id, resumed=False)

        return await self._writing(work)

    async def read_run_id(self, plan_id: str) -> str | None:
        """The plan's run id, once claimed.

        Raises:
            PlanNotFoundError: unknown plan.

        """
        return await self._column("read_run_id", plan_id, "run_id")

    async def append_run_events(
        self, plan_id: str, run_id: str, events: Sequence[RunEvent]
    ) -> None:
        """Append a batch of run events atomically.

        Raises:
            PlanNotFoundError: unknown plan.
            RunNotFoundError: ``run_id`` is not the plan's run.

        """
        bodies = [event.model_dump_json() for event in events]

        def work(conn: sqlite3.Connection) -> None:
            row = conn.execute("SELECT run_id FROM plans WHERE plan_id = ?", (plan_id,)).fetchone()
            if row is None:
                raise PlanNotFoundError(_rules.plan_not_found_message("append_run_events", plan_id))
            if row[0] is None or row[0] != run_id:
                raise RunNotFoundError(f'append_run_events: no run "{run_id}" on plan "{plan_id}"')
            if not bodies:
                return
            (start,) = conn.execute(
                "SELECT COALESCE(MAX(position) + 1, 0) FROM run_events WHERE plan_id = ?",
                (plan_id,),
            ).fetchone()
            conn.executemany(
                "INSERT INTO run_events (plan_id, position, body) VALUES (?, ?, ?)",
                [(plan_id, start + i, body) for i, body in enumerate(bodies)],
            )
            conn.execute(
                "UPDATE plans SET updated_at = ? WHERE plan_id = ?", (self._clock(), plan_id)
            )

        await self._writing(work)

    async def read_run_events(self, plan_id: str, run_id: str | None = None) -> list[RunEvent]:
        """The run's events in append order; ``run_id=None`` reads the plan's only run.

        Raises:
            PlanNotFoundError: unknown plan.
            RunNotFoundError: the plan has no run, or not ``run_id``.

        """

        def work(conn: sqlite3.Connection) -> list[RunEvent]:
            row = conn.execute("SELECT run_id FROM plans WHERE plan_id = ?", (plan_id,)).fetchone()
            if row is None:
                raise PlanNotFoundError(_rules.plan_not_found_message("read_run_events", plan_id))
            if row[0] is None:
                raise RunNotFoundError(f'read_run_events: no run on plan "{plan_id}"')
            if run_id is not None and run_id != row[0]:
                raise RunNotFoundError(f'read_run_events: no run "{run_id}" on plan "{plan_id}"')
            rows = conn.execute(
                "SELECT body FROM run_events WHERE plan_id = ? ORDER BY position", (plan_id,)
            )
            return [_rules.EVENT_JSON.validate_json(body) for (body,) in rows]

        return await self._reading(work)

    async def list_plans(self, *, state: PlanState | None = None) -> list[PlanSummary]:
        """Summaries in creation order, optionally only those in ``state``."""

        def work(conn: sqlite3.Connection) -> list[PlanSummary]:
            rows = conn.execute(
                "SELECT plan_id, state, digest, revision, node_count, label, provenance,"
                " updated_at FROM plans WHERE ? IS NULL OR state = ? ORDER BY seq",
                (state, state),
            )
            return [
                PlanSummary(
                    plan_id=plan_id,
                    state=plan_state,
                    digest=digest,
                    revision=revision,
                    node_count=node_count,
                    label=label,
                    provenance=self._provenance(provenance),
                    updated_at=updated_at,
                )
                for (
                    plan_id,
                    plan_state,
                    digest,
                    revision,
                    node_count,
                    label,
                    provenance,
                    updated_at,
                ) in rows
            ]

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
            row = conn.execute(
                f"SELECT {column} FROM plans WHERE plan_id = ?", (plan_id,)
            ).fetchone()
            if row is None:
                raise PlanNotFoundError(_rules.plan_not_found_message(method, plan_id))
            value: str | None = row[0]
            return value

        return await asyncio.to_thread(self._call, work)
