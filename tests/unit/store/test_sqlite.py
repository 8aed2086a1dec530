"""The SQLite store against the shared conformance suite, plus what only a file can show."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from orchestration.run.log import LogEnd, LogEntry, LogStart
from orchestration.store import (
    AppendOk,
    ClaimOk,
    ClaimRefused,
    PlanStore,
    PlanStoreConformance,
    RunRecord,
    SqlitePlanStore,
    TransitionRequest,
)
from orchestration.store._rules import VERSION_1_EXECUTION
from orchestration.store.sqlite import SCHEMA_VERSION, SchemaVersionError
from orchestration.types import (
    AddNodeOp,
    ApprovalRecord,
    EntryNode,
    TemplateProvenance,
)

AT = "2026-01-01T00:00:00Z"


def db_path(tmp_path: Path) -> Path:
    return tmp_path / "plans.sqlite3"


class TestSqlitePlanStore(PlanStoreConformance):
    async def make_store(self, tmp_path: Path) -> PlanStore:
        return SqlitePlanStore(db_path(tmp_path))

    async def make_peer(self, store: PlanStore, tmp_path: Path) -> PlanStore:
        # A second connection on the same file: the races reach SQLite's own locking.
        return SqlitePlanStore(db_path(tmp_path))


def entry_op() -> AddNodeOp:
    return AddNodeOp(op_id="op-1", actor_id="alice", lamport=1, at=AT, node=EntryNode(id="entry"))


@pytest.mark.asyncio
async def test_opening_creates_a_wal_file_with_the_schema_version(tmp_path: Path) -> None:
    """First use creates the file in WAL mode with user_version = SCHEMA_VERSION; not before."""
    path = db_path(tmp_path)
    store = SqlitePlanStore(path)
    assert not path.exists()
    await store.create_plan("p")
    await store.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    assert {"plans", "ops", "run_log"} <= tables


@pytest.mark.asyncio
async def test_everything_survives_reopening_the_file(tmp_path: Path) -> None:
    """A second store on the same file (after the first closed) reads back every record."""
    path = db_path(tmp_path)
    first = SqlitePlanStore(path)
    provenance = TemplateProvenance(template="t", args={"n": 1})
    await first.create_plan("p", label="label", provenance=provenance)
    appended = await first.append_ops("p", [entry_op()])
    assert isinstance(appended, AppendOk)
    digest = appended.digest
    await first.transition(
        "p", TransitionRequest(from_="editable", to="reviewable", expected_digest=digest)
    )
    approval = ApprovalRecord(
        plan_id="p", digest=digest, authority_set=(), decided_by="op", decided_at=AT
    )
    await first.transition(
        "p",
        TransitionRequest(
            from_="reviewable", to="executable", expected_digest=digest, approval=approval
        ),
    )
    await first.claim_run("p", digest, "run-1", execution="exec-a")
    log: list[LogEntry] = [
        LogStart(run_id="run-1", digest=digest, entry="entry", at=AT),
        LogEnd(outcome="halted", at=AT),
    ]
    await first.append_run_log("p", "run-1", 0, log)
    before = (
        await first.read_state("p"),
        await first.read_ops("p"),
        await first.read_provenance("p"),
        await first.read_approval("p"),
        await first.read_run_id("p"),
        await first.read_run("p"),
        await first.read_run_log("p"),
        await first.list_plans(),
    )
    await first.close()

    second = SqlitePlanStore(path)
    after = (
        await second.read_state("p"),
        await second.read_ops("p"),
        await second.read_provenance("p"),
        await second.read_approval("p"),
        await second.read_run_id("p"),
        await second.read_run("p"),
        await second.read_run_log("p"),
        await second.list_plans(),
    )
    await second.close()
    assert after == before
    assert before[3] == approval and before[0].state == "executable"
    assert before[5] == RunRecord(
        run_id="run-1", execution="exec-a", outcome="halted", log_length=2
    )
    assert before[6] == log


VERSION_1_DUMP = Path(__file__).parents[2] / "fixtures" / "store_v1.sql"
"""A file the version-1 store wrote, as SQL (see its header)."""


def write_version_1(path: Path) -> None:
    """Restore the version-1 dump into ``path``, with its ``user_version``."""
    with sqlite3.connect(path) as conn:
        conn.executescript(VERSION_1_DUMP.read_text())
        conn.execute("PRAGMA user_version = 1")
    conn.close()


@pytest.mark.asyncio
async def test_a_version_1_file_is_upgraded_in_place_on_open(tmp_path: Path) -> None:
    """A version-1 file opens upgraded, its data kept; its claimed run never runs again."""
    path = db_path(tmp_path)
    write_version_1(path)
    first, second = SqlitePlanStore(path), SqlitePlanStore(path)
    try:
        # Two stores opening the old file at once: one upgrades it, the other sees it upgraded.
        states = await asyncio.gather(first.read_state("p"), second.read_state("p"))
        assert states[0] == states[1]
        assert (states[0].state, states[0].revision) == ("executable", 1)
        digest = states[0].digest
        assert digest == (await first.fold("p")).view.digest
        assert [s.plan_id for s in await first.list_plans()] == ["p", "q"]
        assert [op.op_id for op in await first.read_ops("p")] == ["op-1"]
        assert (await first.read_approval("p")) is not None
        legacy = RunRecord(run_id="plan/p", execution=VERSION_1_EXECUTION)
        assert await first.read_run("p") == legacy
        assert await first.read_run_log("p") == []
        # The run may have run under version 1: no worker may take it now, nor resume it.
        for resume, reason in ((False, "run_already_claimed"), (True, "run_not_ended")):
            refused = await first.claim_run("p", digest, "plan/p", execution="w", resume=resume)
            assert isinstance(refused, ClaimRefused) and refused.reason == reason
        assert await first.claim_run("p", digest, "plan/p") == ClaimOk(
            run_id="plan/p", resumed=True
        )
        assert await first.read_run("p") == legacy
        # The upgraded file takes new runs like a new one.
        appended = await first.append_ops("q", [entry_op()])
        assert isinstance(appended, AppendOk)
        await first.transition(
            "q",
            TransitionRequest(from_="editable", to="reviewable", expected_digest=appended.digest),
        )
        approval = ApprovalRecord(
            plan_id="q", digest=appended.digest, authority_set=(), decided_by="op", decided_at=AT
        )
        gate = TransitionRequest(
            from_="reviewable", to="executable", expected_digest=appended.digest, approval=approval
        )
        await first.transition("q", gate)
        await first.claim_run("q", appended.digest, "plan/q", execution="w")
        # The legacy run keeps its place in run listings, with no claim time; q comes first.
        runs = await second.list_runs()
        assert [(r.plan_id, r.outcome) for r in runs] == [("q", None), ("p", None)]
        assert runs[0].claimed_at is not None and runs[1].claimed_at is None
        log: list[LogEntry] = [
            LogStart(run_id="plan/q", digest=appended.digest, entry="entry", at=AT),
            LogEnd(outcome="aborted", at=AT),
        ]
        assert await second.append_run_log("q", "plan/q", 0, log) == 2
        resumed = await second.claim_run("q", appended.digest, "plan/q", execution="x", resume=True)
        assert resumed == ClaimOk(run_id="plan/q", resumed=True, log_length=2)
    finally:
        await first.close()
        await second.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("SELECT count(*) FROM run_events").fetchone() == (3,)
    conn.close()


@pytest.mark.asyncio
async def test_a_file_from_a_newer_schema_is_refused(tmp_path: Path) -> None:
    """A file whose user_version is ahead of this code is refused, not rewritten."""
    path = db_path(tmp_path)
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    store = SqlitePlanStore(path)
    with pytest.raises(SchemaVersionError):
        await store.list_plans()
    await store.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1
        assert conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0


@pytest.mark.asyncio
async def test_a_closed_store_refuses_calls(tmp_path: Path) -> None:
    """After close() every call raises instead of silently reopening the file."""
    store = SqlitePlanStore(db_path(tmp_path))
    await store.create_plan("p")
    await store.close()
    with pytest.raises(sqlite3.ProgrammingError):
        await store.read_state("p")


@pytest.mark.asyncio
async def test_store_creates_its_data_folder(tmp_path: Path) -> None:
    """A store path in a folder that does not exist yet works: the folder is created."""
    store = SqlitePlanStore(tmp_path / "fresh" / "nested" / "plans.sqlite3")
    try:
        assert (await store.create_plan("p")).ok
    finally:
        await store.close()
    assert (tmp_path / "fresh" / "nested" / "plans.sqlite3").exists()
