"""No store ever keeps an op it could not read back, whatever object it is handed.

Op objects built with ``model_construct`` or changed with ``model_copy(update=...)`` skip
validation, so their fields may hold anything. Hypothesis hands every store (memory, SQLite,
PostgreSQL) such objects, one field of a valid op replaced by an arbitrary value, and then
reads, folds and appends again through the same handle and through a fresh one: every step
must work, and both handles must read the same log.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import re
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orchestration.plan.encoding import NodeRef, canonical_digest
from orchestration.store import AppendOk, AppendRefused, MemoryPlanStore, PlanStore
from orchestration.store.postgres import PostgresPlanStore
from orchestration.store.sqlite import SqlitePlanStore
from orchestration.types import (
    AddEdgeOp,
    AddNodeOp,
    CallDefinition,
    CallNode,
    EntryNode,
    PlanEdge,
    PlanOp,
    SetNodeFieldOp,
)
from tests.postgres_cluster import PostgresCluster

AT = "2026-01-01T00:00:00Z"

VALID: tuple[PlanOp, ...] = (
    AddNodeOp(op_id="op-entry", actor_id="a", lamport=1, at=AT, node=EntryNode(id="entry")),
    AddNodeOp(
        op_id="op-call",
        actor_id="a",
        lamport=2,
        at=AT,
        node=CallNode(
            id="fetch",
            definition=CallDefinition(tool="web.fetch", args={"q": NodeRef("entry", path="x")}),
        ),
    ),
    AddEdgeOp(
        op_id="op-edge",
        actor_id="b",
        lamport=3,
        at=AT,
        edge=PlanEdge(id="e1", from_="entry", to="fetch", handle="always"),
    ),
    SetNodeFieldOp(
        op_id="op-set", actor_id="b", lamport=4, at=AT, node_id="fetch", path="args.n", value=1
    ),
)

junk = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=2**62, max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(
        ("yesterday", "2026-13-45T99:99:99Z", "2026-01-01", "2026-01-01T00:00:00", AT, "")
    ),
    st.binary(max_size=4),
    st.datetimes(timezones=st.just(dt.UTC)),
    st.just(re.compile("a+")),
    st.just(object()),
    st.just(NodeRef("entry")),
    st.just(EntryNode(id="other")),
    st.just(VALID[1].node),
    st.lists(st.integers(), max_size=3),
    st.tuples(st.integers()),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.frozensets(st.integers(), max_size=2),
)


def _mutated(base: PlanOp, field: str, value: Any, construct: bool) -> object:
    if construct:
        return type(base).model_construct(**{**dict(base), field: value})
    return base.model_copy(update={field: value})


@st.composite
def mutated_ops(draw: st.DrawFn) -> object:
    base = draw(st.sampled_from(VALID))
    field = draw(st.sampled_from(sorted(type(base).model_fields)))
    return _mutated(base, field, draw(junk), draw(st.booleans()))


class Harness:
    """One store kind on one event loop, with fresh handles on demand."""

    def __init__(self, make: Callable[[], PlanStore], *, shared: bool) -> None:
        self.loop = asyncio.new_event_loop()
        self.make = make
        self.store = make()
        self.shared = shared
        self.ids = itertools.count()

    def run(self, work: Callable[[], Awaitable[Any]]) -> Any:
        return self.loop.run_until_complete(work())

    def close(self) -> None:
        self.run(self.store.close)
        self.loop.run_until_complete(self.loop.shutdown_default_executor())
        self.loop.close()


@pytest.fixture(params=["memory", "sqlite", "postgres"], scope="module")
def harness(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Harness]:
    kind = request.param
    if kind == "memory":
        built = Harness(MemoryPlanStore, shared=False)
    elif kind == "sqlite":
        path: Path = tmp_path_factory.mktemp("unvalidated") / "plans.sqlite3"
        built = Harness(lambda: SqlitePlanStore(path), shared=True)
    else:
        cluster: PostgresCluster = request.getfixturevalue("postgres")
        dsn = cluster.new_database()
        built = Harness(lambda: PostgresPlanStore(dsn), shared=True)
    try:
        yield built
    finally:
        built.close()


def _fingerprints(ops: list[PlanOp]) -> list[str]:
    return [canonical_digest(op) for op in ops]


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(batch=st.lists(st.one_of(mutated_ops(), st.sampled_from(VALID)), min_size=1, max_size=3))
def test_nothing_is_stored_that_cannot_be_read_back(harness: Harness, batch: list[object]) -> None:
    """After any append of mutated ops, the plan reads, folds and appends in every handle."""
    plan_id = f"p{next(harness.ids)}"
    store = harness.store

    async def attempt() -> None:
        await store.create_plan(plan_id)
        result = await store.append_ops(plan_id, batch)  # type: ignore[arg-type]
        assert isinstance(result, AppendOk | AppendRefused)
        if isinstance(result, AppendRefused):
            assert result.reason in ("invalid_op", "conflicting_op"), result
            assert await store.read_ops(plan_id) == []
        ops = await store.read_ops(plan_id)
        state = await store.read_state(plan_id)
        assert (await store.fold(plan_id)).view.digest == state.digest
        later = SetNodeFieldOp(
            op_id="op-later", actor_id="z", lamport=9, at=AT, node_id="fetch", path="x", value=2
        )
        again = await store.append_ops(plan_id, [later])
        assert isinstance(again, AppendOk) and again.revision == len(ops) + 1
        after = await store.read_ops(plan_id)
        assert after[: len(ops)] == ops
        if not harness.shared:
            return
        fresh = harness.make()
        try:
            seen = await fresh.read_ops(plan_id)
            assert _fingerprints(seen) == _fingerprints(after)
            assert (await fresh.fold(plan_id)).view.digest == again.digest
            assert isinstance(
                await fresh.append_ops(plan_id, [later.model_copy(update={"op_id": "op-x"})]),
                AppendOk,
            )
        finally:
            await fresh.close()

    harness.run(attempt)
