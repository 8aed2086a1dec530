"""The one conformance suite every :class:`~orchestration.store.base.PlanStore` must pass.

It ships in the package so that a store written elsewhere (PostgreSQL, a service) proves itself
against exactly the rules the bundled stores keep. Use it from a pytest module::

    from orchestration.store.conformance import PlanStoreConformance

    class TestMyStore(PlanStoreConformance):
        async def make_store(self, tmp_path):
            return MyStore(dsn=...)

        async def make_peer(self, store, tmp_path):  # optional, see below
            return MyStore(dsn=...)

Each test gets a fresh store from :meth:`PlanStoreConformance.make_store` and closes it
afterwards. The race tests drive two handles at once: by default both are the same object, which
only exercises concurrent coroutines; override :meth:`PlanStoreConformance.make_peer` to return
a second, independent handle on the same data (a second connection, as another process would
hold) so that the races reach the store's own locking.

The suite needs ``pytest`` and ``pytest-asyncio`` (``asyncio_mode`` strict or auto). Every
expected refusal is asserted as a returned value and every misuse as a raised error from
:mod:`orchestration.errors`; after each refusal the suite checks that nothing was written.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
import pytest_asyncio

from orchestration.errors import (
    InvalidListingError,
    MalformedRunLogError,
    PlanNotFoundError,
    RevisionOutOfRangeError,
    RunLogConflictError,
    RunNotFoundError,
)
from orchestration.plan.encoding import NodeRef, canonical_digest
from orchestration.plan.ops import fold_ops
from orchestration.run.expand import expand_log
from orchestration.run.log import (
    LogArrive,
    LogEdge,
    LogEnd,
    LogEnter,
    LogEntry,
    LogInterrupt,
    LogMerge,
    LogSettle,
    LogSnapshot,
    LogStart,
)
from orchestration.types import (
    AddEdgeOp,
    AddNodeOp,
    ApprovalRecord,
    ArtifactHandle,
    AuthorityClaim,
    CallDefinition,
    CallNode,
    CloneProvenance,
    EntryNode,
    ErrorInfo,
    OutputItem,
    PlanEdge,
    PlanNodeKind,
    PlanOp,
    PlanState,
    RunOutcome,
    RunSummary,
    SetNodeFieldOp,
    TemplateProvenance,
    TurnAbort,
)

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
    StateDigest,
    TransitionOk,
    TransitionRefused,
    TransitionRequest,
)

__all__ = ["PlanStoreConformance"]

_AT = "2026-01-01T00:00:00Z"
_STATES: tuple[PlanState, ...] = ("editable", "reviewable", "executable")


# --------------------------------------------------------------------------------------------
# Builders: real wire models, nothing store-specific
# --------------------------------------------------------------------------------------------


def _entry_op(op_id: str = "op-entry", *, lamport: int = 0, actor: str = "alice") -> AddNodeOp:
    node = EntryNode(id="entry")
    return AddNodeOp(op_id=op_id, actor_id=actor, lamport=lamport, at=_AT, node=node)


def _call_op(
    op_id: str, node_id: str, *, lamport: int = 1, actor: str = "alice", tool: str = "search"
) -> AddNodeOp:
    return AddNodeOp(
        op_id=op_id,
        actor_id=actor,
        lamport=lamport,
        at=_AT,
        node=CallNode(
            id=node_id,
            definition=CallDefinition(
                tool=tool,
                args={"query": node_id, "source": NodeRef("entry", path="topic")},
                authority=(AuthorityClaim(capability="web", scope="public", verb="read"),),
                replay_safe=True,
                on_indeterminate="retry",
            ),
        ),
    )


def _edge_op(op_id: str, source: str, target: str, *, lamport: int = 2) -> AddEdgeOp:
    return AddEdgeOp(
        op_id=op_id,
        actor_id="alice",
        lamport=lamport,
        at=_AT,
        edge=PlanEdge(id=f"{source}_to_{target}", from_=source, to=target, handle="always"),
    )


def _set_op(op_id: str, node_id: str, value: object, *, lamport: int = 3) -> SetNodeFieldOp:
    return SetNodeFieldOp(
        op_id=op_id,
        actor_id="alice",
        lamport=lamport,
        at=_AT,
        node_id=node_id,
        path="args.extra",
        value=value,
    )


def _small_plan() -> list[PlanOp]:
    return [_entry_op(), _call_op("op-fetch", "fetch"), _edge_op("op-e1", "entry", "fetch")]


def _approval(plan_id: str, digest: str, *, by: str = "operator") -> ApprovalRecord:
    return ApprovalRecord(
        plan_id=plan_id,
        digest=digest,
        authority_set=(AuthorityClaim(capability="web", scope="public", verb="read"),),
        decided_by=by,
        decided_at=_AT,
    )


def _freeze(digest: str) -> TransitionRequest:
    return TransitionRequest(from_="editable", to="reviewable", expected_digest=digest)


def _gate(plan_id: str, digest: str, *, by: str = "operator") -> TransitionRequest:
    return TransitionRequest(
        from_="reviewable",
        to="executable",
        expected_digest=digest,
        approval=_approval(plan_id, digest, by=by),
    )


def _start(run_id: str, digest: str) -> LogStart:
    return LogStart(run_id=run_id, digest=digest, entry="entry", at=_AT)


def _enter(frame: int) -> LogEnter:
    return LogEnter(frame=frame, at=_AT)


def _ok(frame: int, **fields: object) -> LogSettle:
    return LogSettle(frame=frame, status="ok", items=(OutputItem(json_=dict(fields)),), at=_AT)


def _edge(
    edge: str,
    source: int,
    frame: int,
    node: str,
    kind: PlanNodeKind = "call",
    *,
    evidence: object = None,
) -> LogEdge:
    return LogEdge(
        edge=edge,
        handle="always",
        source=source,
        frame=frame,
        node=node,
        node_kind=kind,
        evidence=evidence,
        at=_AT,
    )


def _end(outcome: RunOutcome) -> LogEnd:
    return LogEnd(outcome=outcome, at=_AT)


def _run_log(run_id: str, digest: str) -> list[LogEntry]:
    """A run that aborted after settling ``entry``, ``notify`` (on two routes) and ``gather`` ok.

    ``fetch`` failed (handled), ``summary`` was skipped; ``gather`` is a join whose merged frame
    comes from a ``merge`` entry, not an ``edge``.
    """
    return [
        _start(run_id, digest),
        _enter(0),
        _ok(0, topic="tides", when=dt.datetime(2026, 1, 1, tzinfo=dt.UTC)),
        _edge("e1", 0, 1, "fetch"),
        _enter(1),
        LogSettle(
            frame=1,
            status="failed",
            handled=True,
            error=ErrorInfo(name="Timeout", message="slow"),
            at=_AT,
        ),
        _edge("e2", 1, 2, "notify"),
        _edge("e3", 1, 3, "notify"),
        _enter(2),
        _ok(2, sent=True),
        _enter(3),
        _ok(3, sent=True),
        _edge("e4", 2, 4, "gather", "join"),
        LogArrive(frame=4, fork=1, required=2, at=_AT),
        _edge("e5", 3, 5, "gather", "join"),
        LogMerge(frame=6, node="gather", fork=1, of=("e4", "e5"), via="e5", arrivals=(4, 5)),
        _ok(6, merged=True),
        _edge("e6", 6, 7, "summary"),
        LogSettle(frame=7, status="skipped", at=_AT),
        LogSnapshot(at=_AT),
        LogInterrupt(cause=TurnAbort(), at=_AT),
        _end("aborted"),
    ]


class PlanStoreConformance:
    """The rules of :mod:`orchestration.store.base`, as pytest tests over one store.

    Subclass it in a module whose name pytest collects, with a class name starting ``Test``,
    and implement :meth:`make_store`.
    """

    async def make_store(self, tmp_path: Path) -> PlanStore:
        """Return a fresh, empty store. ``tmp_path`` is a private directory for this test."""
        raise NotImplementedError("a PlanStoreConformance subclass must implement make_store")

    async def make_peer(self, store: PlanStore, tmp_path: Path) -> PlanStore:
        """Return a second handle on ``store``'s data for the race tests (default: ``store``).

        A handle other than ``store`` itself is closed by the test that asked for it.
        """
        return store

    @pytest_asyncio.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[PlanStore]:
        """A fresh store, closed after the test."""
        made = await self.make_store(tmp_path)
        try:
            yield made
        finally:
            await made.close()

    # ----------------------------------------------------------------------------------------
    # Helpers
    # ----------------------------------------------------------------------------------------

    @staticmethod
    async def _appended(store: PlanStore, plan_id: str, ops: list[PlanOp]) -> AppendOk:
        appended = await store.append_ops(plan_id, ops)
        assert isinstance(appended, AppendOk), appended
        return appended

    @staticmethod
    async def _authored(
        store: PlanStore, plan_id: str = "p", *, label: str | None = None
    ) -> AppendOk:
        created = await store.create_plan(plan_id, label=label)
        assert isinstance(created, CreateOk), created
        return await PlanStoreConformance._appended(store, plan_id, _small_plan())

    @staticmethod
    async def _reviewable(store: PlanStore, plan_id: str = "p") -> str:
        digest = (await PlanStoreConformance._authored(store, plan_id)).digest
        assert isinstance(await store.transition(plan_id, _freeze(digest)), TransitionOk)
        return digest

    @staticmethod
    async def _executable(store: PlanStore, plan_id: str = "p") -> str:
        digest = await PlanStoreConformance._reviewable(store, plan_id)
        assert isinstance(await store.transition(plan_id, _gate(plan_id, digest)), TransitionOk)
        return digest

    @staticmethod
    async def _snapshot(store: PlanStore, plan_id: str) -> tuple[PlanStateRecord, list[PlanOp]]:
        return await store.read_state(plan_id), await store.read_ops(plan_id)

    # ----------------------------------------------------------------------------------------
    # Create
    # ----------------------------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_store_satisfies_the_protocol(self, store: PlanStore) -> None:
        """The store is a PlanStore (every protocol method is present)."""
        assert isinstance(store, PlanStore)

    @pytest.mark.asyncio
    async def test_create_starts_editable_and_empty(self, store: PlanStore) -> None:
        """A new plan is editable at revision 0 with the empty fold's digest; one op makes 1."""
        created = await store.create_plan("p")
        empty = fold_ops("p", ()).view.digest
        assert created == CreateOk(plan_id="p", revision=0, digest=empty)
        assert await store.read_state("p") == PlanStateRecord(
            state="editable", digest=empty, revision=0
        )
        assert await store.read_ops("p") == []
        assert await store.read_provenance("p") is None
        assert await store.read_approval("p") is None
        assert await store.read_run_id("p") is None
        appended = await store.append_ops("p", [_entry_op()])
        assert isinstance(appended, AppendOk) and appended.revision == 1

    @pytest.mark.asyncio
    async def test_create_keeps_label_and_template_provenance(self, store: PlanStore) -> None:
        """Label and template provenance are stored, and the provenance is part of the digest."""
        provenance = TemplateProvenance(
            template="digest_mail", args={"limit": 3, "since": dt.timedelta(days=1)}
        )
        created = await store.create_plan("p", label="Morning digest", provenance=provenance)
        assert isinstance(created, CreateOk)
        assert created.digest == fold_ops("p", (), provenance).view.digest
        assert created.digest != fold_ops("p", ()).view.digest
        assert await store.read_provenance("p") == provenance
        (summary,) = await store.list_plans()
        assert summary.label == "Morning digest" and summary.provenance == provenance

    @pytest.mark.asyncio
    async def test_duplicate_create_is_refused_and_changes_nothing(self, store: PlanStore) -> None:
        """Creating an existing id returns duplicate_id; the existing plan is untouched."""
        await self._authored(store, "p", label="first")
        before = await self._snapshot(store, "p")
        assert await store.create_plan("p", label="second") == CreateRefused(reason="duplicate_id")
        assert await self._snapshot(store, "p") == before
        (summary,) = await store.list_plans()
        assert summary.label == "first"

    # ----------------------------------------------------------------------------------------
    # Append
    # ----------------------------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_append_returns_the_new_revision_and_the_fold_digest(
        self, store: PlanStore
    ) -> None:
        """An append acknowledges revision = log length and the digest of the folded log."""
        await store.create_plan("p")
        first = await store.append_ops("p", [_entry_op()])
        second = await store.append_ops("p", [_call_op("op-a", "a"), _call_op("op-b", "b")])
        assert isinstance(first, AppendOk) and isinstance(second, AppendOk)
        assert first.revision == 1 and second.revision == 3
        ops = await store.read_ops("p")
        assert second.digest == fold_ops("p", ops).view.digest
        assert await store.read_state("p") == PlanStateRecord(
            state="editable", digest=second.digest, revision=3
        )

    @pytest.mark.asyncio
    async def test_ops_read_back_equal_in_append_order(self, store: PlanStore) -> None:
        """Ops come back in append order (not lamport order), equal and with equal canonical bytes.

        The values exercise every tagged JSON form: a reference, bytes, a datetime, a set, a map
        with non-string keys, a big integer, and a literal dict that merely looks like a tag.
        """
        rich: dict[str, object] = {
            "ref": NodeRef("entry", select="all", path="items"),
            "blob": b"\x00\xff",
            "when": dt.datetime(2026, 3, 1, 12, 30, tzinfo=dt.UTC),
            "every": dt.timedelta(hours=6),
            "tags": {"b", "a"},
            "by_id": {1: "one", 2: "two"},
            "huge": 2**80,
            "pattern": re.compile("^a+$", re.IGNORECASE),
            "looks_like_a_ref": {"$ref": {"node": "entry"}},
            "nested": [{"x": 1.5}, None, True],
        }
        ops: list[PlanOp] = [
            _call_op("op-late", "late", lamport=9),
            _entry_op(lamport=0),
            _set_op("op-rich", "late", rich, lamport=4),
        ]
        await store.create_plan("p")
        await store.append_ops("p", ops)
        back = await store.read_ops("p")
        assert [op.op_id for op in back] == ["op-late", "op-entry", "op-rich"]
        assert back == ops
        assert [canonical_digest(op) for op in back] == [canonical_digest(op) for op in ops]
        value = back[2]
        assert isinstance(value, SetNodeFieldOp)
        assert isinstance(value.value["ref"], NodeRef)
        assert type(value.value["looks_like_a_ref"]) is dict
        assert type(value.value["tags"]) is set and type(value.value["blob"]) is bytes

    @pytest.mark.asyncio
    async def test_append_while_reviewable_is_not_editable(self, store: PlanStore) -> None:
        """A frozen plan refuses ops with not_editable and its actual state; nothing is written."""
        await self._reviewable(store)
        before = await self._snapshot(store, "p")
        refused = await store.append_ops("p", [_call_op("op-x", "x")])
        assert isinstance(refused, AppendRefused)
        assert refused.reason == "not_editable"
        assert (refused.actual.state, refused.actual.revision) == ("reviewable", 3)
        assert await self._snapshot(store, "p") == before

    @pytest.mark.asyncio
    async def test_append_while_executable_is_not_editable(self, store: PlanStore) -> None:
        """An executable plan refuses ops with not_editable; its digest is unchanged."""
        digest = await self._executable(store)
        before = await self._snapshot(store, "p")
        refused = await store.append_ops("p", [_call_op("op-x", "x")], expected_revision=3)
        assert isinstance(refused, AppendRefused)
        assert refused.reason == "not_editable" and refused.actual.state == "executable"
        assert await self._snapshot(store, "p") == before
        assert before[0].digest == digest

    @pytest.mark.asyncio
    async def test_stale_expected_revision_is_revision_moved(self, store: PlanStore) -> None:
        """An append made against an older revision is refused with revision_moved; no op lands."""
        await store.create_plan("p")
        await store.append_ops("p", [_entry_op()])
        before = await self._snapshot(store, "p")
        refused = await store.append_ops("p", [_call_op("op-x", "x")], expected_revision=0)
        assert isinstance(refused, AppendRefused)
        assert refused.reason == "revision_moved"
        assert (refused.actual.state, refused.actual.revision) == ("editable", 1)
        assert await self._snapshot(store, "p") == before
        ahead = await store.append_ops("p", [_call_op("op-x", "x")], expected_revision=5)
        assert isinstance(ahead, AppendRefused) and ahead.reason == "revision_moved"
        landed = await store.append_ops("p", [_call_op("op-x", "x")], expected_revision=1)
        assert isinstance(landed, AppendOk) and landed.revision == 2

    @pytest.mark.asyncio
    async def test_reappending_identical_ops_is_a_no_op(self, store: PlanStore) -> None:
        """An op id already in the log with identical content is skipped, within a batch too.

        A batch that adds nothing is a retried delivery: it is acknowledged at the current
        revision even when it carries the revision it was first sent against.
        """
        await store.create_plan("p")
        first = await store.append_ops("p", [_entry_op(), _call_op("op-a", "a")])
        assert isinstance(first, AppendOk) and first.revision == 2
        again = await store.append_ops("p", [_entry_op()], expected_revision=0)
        assert again == AppendOk(revision=2, digest=first.digest)
        mixed = await store.append_ops("p", [_call_op("op-a", "a"), _call_op("op-b", "b")])
        assert isinstance(mixed, AppendOk) and mixed.revision == 3
        twice = await store.append_ops("p", [_call_op("op-c", "c"), _call_op("op-c", "c")])
        assert isinstance(twice, AppendOk) and twice.revision == 4
        empty = await store.append_ops("p", [])
        assert isinstance(empty, AppendOk) and empty.revision == 4
        assert [op.op_id for op in await store.read_ops("p")] == [
            "op-entry",
            "op-a",
            "op-b",
            "op-c",
        ]
        assert (await store.read_state("p")).revision == 4

    @pytest.mark.asyncio
    async def test_known_op_id_with_other_content_is_conflicting_op(
        self, store: PlanStore
    ) -> None:
        """Different content under a known op id refuses the whole batch with conflicting_op.

        Content is compared by canonical bytes, so ``1`` and ``1.0`` are different content.
        """
        await store.create_plan("p")
        await store.append_ops("p", [_entry_op(), _set_op("op-v", "entry", 1)])
        before = await self._snapshot(store, "p")
        cases: list[list[PlanOp]] = [
            [_call_op("op-new", "new"), _entry_op(lamport=7)],
            [_set_op("op-v", "entry", 1.0)],
            [_call_op("op-d", "d"), _call_op("op-d", "d", tool="other")],
        ]
        for batch in cases:
            refused = await store.append_ops("p", batch)
            assert isinstance(refused, AppendRefused), batch
            assert refused.reason == "conflicting_op"
            assert (refused.actual.state, refused.actual.revision) == ("editable", 2)
            assert await self._snapshot(store, "p") == before

    @pytest.mark.asyncio
    async def test_an_op_that_would_not_read_back_is_refused_as_invalid_op(
        self, store: PlanStore
    ) -> None:
        """Ops never validated (model_construct, model_copy(update=...)) are refused, by name.

        Each batch holds a good op first: the refusal writes nothing, names the op and the
        field, and the plan stays readable, foldable and appendable.
        """
        await store.create_plan("p")
        await self._appended(store, "p", [_entry_op()])
        before = await self._snapshot(store, "p")
        good = _call_op("op-good", "good")
        base = _call_op("op-bad", "bad")
        cases: list[tuple[object, str | None]] = [
            (AddNodeOp.model_construct(**{**dict(base), "lamport": "5"}), "lamport"),
            (AddNodeOp.model_construct(**{**dict(base), "at": 5}), "at"),
            (base.model_copy(update={"lamport": -1}), "lamport"),
            (base.model_copy(update={"lamport": 2**64}), "lamport"),
            (base.model_copy(update={"at": "yesterday"}), "at"),
            (base.model_copy(update={"at": "2026-13-45T99:99:99Z"}), "at"),
            (base.model_copy(update={"at": "2026-01-01T00:00:00"}), "at"),
            (base.model_copy(update={"node": {"id": "bad"}}), "node"),
            (base.model_copy(update={"op_id": ""}), "opId"),
            (_set_op("op-bad", "entry", 1).model_copy(update={"value": object()}), None),
        ]
        for bad, field in cases:
            refused = await store.append_ops("p", [good, bad])  # type: ignore[list-item]
            assert isinstance(refused, AppendRefused), bad
            assert refused.reason == "invalid_op", refused
            assert refused.field == field, refused
            assert refused.detail.startswith("op #1"), refused.detail
            if field is not None:
                assert f"field {field}" in refused.detail, refused.detail
            if field != "opId":
                assert refused.op_id == "op-bad" and '"op-bad"' in refused.detail
            assert (refused.actual.state, refused.actual.revision) == ("editable", 1)
            assert await self._snapshot(store, "p") == before
        landed = await store.append_ops("p", [good], expected_revision=1)
        assert isinstance(landed, AppendOk) and landed.revision == 2
        assert [op.op_id for op in await store.read_ops("p")] == ["op-entry", "op-good"]
        assert (await store.fold("p")).view.digest == landed.digest

    @pytest.mark.asyncio
    async def test_a_frozen_plan_refuses_an_invalid_op_as_not_editable(
        self, store: PlanStore
    ) -> None:
        """State is decided first: a frozen plan says not_editable whatever the batch holds."""
        await self._reviewable(store)
        bad = _call_op("op-bad", "bad").model_copy(update={"at": "yesterday"})
        refused = await store.append_ops("p", [bad])
        assert isinstance(refused, AppendRefused) and refused.reason == "not_editable"

    @pytest.mark.asyncio
    async def test_the_log_keeps_its_own_copy_of_each_op(self, store: PlanStore) -> None:
        """Changing a staged value the caller still holds after the append changes nothing."""
        await store.create_plan("p")
        op = _call_op("op-a", "a")
        appended = await self._appended(store, "p", [_entry_op(), op])
        assert isinstance(op.node, CallNode)
        op.node.definition.args["query"] = "changed behind the store's back"
        (_, stored) = await store.read_ops("p")
        assert isinstance(stored, AddNodeOp) and isinstance(stored.node, CallNode)
        assert stored.node.definition.args["query"] == "a"
        assert (await store.read_state("p")).digest == appended.digest

    # ----------------------------------------------------------------------------------------
    # Read ops, fold, digest
    # ----------------------------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_read_ops_takes_the_prefix_then_filters_by_lamport(
        self, store: PlanStore
    ) -> None:
        """The first through_revision ops in append order, then only those with lamport > k."""
        lamports = [5, 1, 7, 3, 9]
        ops = [_call_op(f"op-{i}", f"n{i}", lamport=lam) for i, lam in enumerate(lamports)]
        await store.create_plan("p")
        await store.append_ops("p", ops)

        async def lamports_of(
            through_revision: int | None = None, since_lamport: int | None = None
        ) -> list[int]:
            ops = await store.read_ops(
                "p", through_revision=through_revision, since_lamport=since_lamport
            )
            return [op.lamport for op in ops]

        assert await lamports_of() == lamports
        assert await lamports_of(through_revision=0) == []
        assert await lamports_of(through_revision=3) == [5, 1, 7]
        assert await lamports_of(through_revision=5) == lamports
        assert await lamports_of(since_lamport=4) == [5, 7, 9]
        assert await lamports_of(since_lamport=5) == [7, 9]
        assert await lamports_of(through_revision=3, since_lamport=4) == [5, 7]
        assert [op.op_id for op in await store.read_ops("p", through_revision=1)] == ["op-0"]
        for out_of_range in (-1, 6, 99):
            with pytest.raises(RevisionOutOfRangeError):
                await store.read_ops("p", through_revision=out_of_range)

    @pytest.mark.asyncio
    async def test_fold_at_a_revision_is_the_fold_of_that_prefix(self, store: PlanStore) -> None:
        """fold(revision=n) equals fold_ops of the first n ops with the plan's provenance."""
        provenance = TemplateProvenance(template="t", args={"n": 1})
        await store.create_plan("p", provenance=provenance)
        ops: list[PlanOp] = [
            *_small_plan(),
            _set_op("op-ghost", "ghost", 1, lamport=1),
            _edge_op("op-e2", "fetch", "nowhere", lamport=5),
        ]
        await store.append_ops("p", ops)
        for n in range(len(ops) + 1):
            folded = await store.fold("p", revision=n)
            expected = fold_ops("p", ops[:n], provenance)
            assert folded.view == expected.view
            assert folded.issues == expected.issues
        current = await store.fold("p")
        assert current.view.digest == (await store.read_state("p")).digest
        assert {issue.code for issue in current.issues} == {"unknown_node", "dangling_edge"}
        for out_of_range in (-1, len(ops) + 1):
            with pytest.raises(RevisionOutOfRangeError):
                await store.fold("p", revision=out_of_range)

    @pytest.mark.asyncio
    async def test_state_digest_is_the_fold_of_the_stored_log(self, store: PlanStore) -> None:
        """read_state().digest == fold_ops(id, read_ops(id), read_provenance(id)).view.digest."""
        await store.create_plan("t", provenance=TemplateProvenance(template="t"))
        await store.append_ops("t", _small_plan())
        await store.clone_plan("t", "c")
        await store.append_ops("c", [_call_op("op-more", "more", lamport=8)])
        for plan_id in ("t", "c"):
            state = await store.read_state(plan_id)
            ops = await store.read_ops(plan_id)
            provenance = await store.read_provenance(plan_id)
            view = fold_ops(plan_id, ops, provenance).view
            assert state.digest == view.digest
            assert state.revision == len(ops) == view.revision

    # ----------------------------------------------------------------------------------------
    # Transitions and approval
    # ----------------------------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_freeze_and_approve_move_forward_and_keep_the_content(
        self, store: PlanStore
    ) -> None:
        """Freeze then approve succeed at the current digest, keeping revision and content."""
        digest = (await self._authored(store)).digest
        assert await store.transition("p", _freeze(digest)) == TransitionOk(revision=3)
        assert (await store.read_state("p")).state == "reviewable"
        assert await store.read_approval("p") is None
        gate = _gate("p", digest)
        assert await store.transition("p", gate) == TransitionOk(revision=3)
        assert await store.read_state("p") == PlanStateRecord(
            state="executable", digest=digest, revision=3
        )
        assert await store.read_approval("p") == gate.approval

    @pytest.mark.asyncio
    async def test_transition_from_another_state_is_state_mismatch(
        self, store: PlanStore
    ) -> None:
        """A request whose from-state is not the plan's state is refused with the actual state."""
        digest = (await self._authored(store)).digest
        refused = await store.transition("p", _gate("p", digest))
        assert isinstance(refused, TransitionRefused)
        assert refused.reason == "state_mismatch"
        assert refused.actual == StateDigest(state="editable", digest=digest)
        assert (await store.read_state("p")).state == "editable"
        assert await store.read_approval("p") is None

    @pytest.mark.asyncio
    async def test_transition_at_a_stale_digest_is_digest_mismatch(self, store: PlanStore) -> None:
        """A legal move decided on other content is refused with the actual digest; nothing moves.

        This is the stale-approval case: the gate decided on an earlier digest cannot pass.
        """
        await store.create_plan("p")
        stale = (await self._appended(store, "p", [_entry_op()])).digest
        digest = (await self._appended(store, "p", [_call_op("op-a", "a")])).digest
        refused = await store.transition("p", _freeze(stale))
        assert isinstance(refused, TransitionRefused) and refused.reason == "digest_mismatch"
        assert refused.actual == StateDigest(state="editable", digest=digest)
        assert (await store.read_state("p")).state == "editable"
        assert isinstance(await store.transition("p", _freeze(digest)), TransitionOk)
        before = await self._snapshot(store, "p")
        for bogus in (stale, "0" * 64):
            refused = await store.transition("p", _gate("p", bogus))
            assert isinstance(refused, TransitionRefused) and refused.reason == "digest_mismatch"
            assert refused.actual == StateDigest(state="reviewable", digest=digest)
            assert await self._snapshot(store, "p") == before
            assert await store.read_approval("p") is None

    @pytest.mark.asyncio
    async def test_only_forward_transitions_exist(self, store: PlanStore) -> None:
        """Every other pair (back, skip, stay) is illegal_transition, returned, never raised."""
        plans: list[tuple[PlanState, str, str]] = [
            ("editable", "e", (await self._authored(store, "e")).digest),
            ("reviewable", "r", await self._reviewable(store, "r")),
            ("executable", "x", await self._executable(store, "x")),
        ]
        legal = {("editable", "reviewable"), ("reviewable", "executable")}
        for source, plan_id, digest in plans:
            approval_before = await store.read_approval(plan_id)
            for target in _STATES:
                if (source, target) in legal:
                    continue
                request = TransitionRequest(
                    from_=source,
                    to=target,
                    expected_digest=digest,
                    approval=_approval(plan_id, digest, by="someone else"),
                )
                refused = await store.transition(plan_id, request)
                assert isinstance(refused, TransitionRefused), (source, target)
                assert refused.reason == "illegal_transition", (source, target)
                assert await store.read_state(plan_id) == PlanStateRecord(
                    state=source, digest=digest, revision=3
                )
                assert await store.read_approval(plan_id) == approval_before

    @pytest.mark.asyncio
    async def test_gate_requires_an_approval_of_this_plan_at_this_digest(
        self, store: PlanStore
    ) -> None:
        """The gate without an approval, or with one for other content, is approval_missing."""
        digest = await self._reviewable(store)
        other = await self._reviewable(store, "other")
        requests = [
            TransitionRequest(from_="reviewable", to="executable", expected_digest=digest),
            TransitionRequest(
                from_="reviewable",
                to="executable",
                expected_digest=digest,
                approval=_approval("p", other),
            ),
            TransitionRequest(
                from_="reviewable",
                to="executable",
                expected_digest=digest,
                approval=_approval("other", digest),
            ),
        ]
        for request in requests:
            refused = await store.transition("p", request)
            assert isinstance(refused, TransitionRefused)
            assert refused.reason == "approval_missing"
            assert (await store.read_state("p")).state == "reviewable"
            assert await store.read_approval("p") is None

    @pytest.mark.asyncio
    async def test_the_approval_is_recorded_once(self, store: PlanStore) -> None:
        """A second gate on an executable plan is refused and the first approval stays."""
        digest = await self._reviewable(store)
        first = _gate("p", digest, by="first operator")
        assert isinstance(await store.transition("p", first), TransitionOk)
        second = await store.transition("p", _gate("p", digest, by="second operator"))
        assert isinstance(second, TransitionRefused) and second.reason == "state_mismatch"
        assert await store.read_approval("p") == first.approval

    @pytest.mark.asyncio
    async def test_racing_append_and_freeze_never_both_succeed(
        self, store: PlanStore, tmp_path: Path
    ) -> None:
        """An append racing a freeze either lands before it (freeze misses) or is not_editable."""
        peer = await self.make_peer(store, tmp_path)
        try:
            for round_ in range(6):
                plan_id = f"p{round_}"
                digest = (await self._authored(store, plan_id)).digest
                appended, frozen = await asyncio.gather(
                    store.append_ops(plan_id, [_call_op("op-late", "late")]),
                    peer.transition(plan_id, _freeze(digest)),
                )
                state = await store.read_state(plan_id)
                if isinstance(frozen, TransitionOk):
                    assert isinstance(appended, AppendRefused)
                    assert appended.reason == "not_editable"
                    assert state == PlanStateRecord(state="reviewable", digest=digest, revision=3)
                else:
                    assert isinstance(appended, AppendOk)
                    assert frozen.reason == "digest_mismatch"
                    assert state == PlanStateRecord(
                        state="editable", digest=appended.digest, revision=4
                    )
        finally:
            if peer is not store:
                await peer.close()

    # ----------------------------------------------------------------------------------------
    # Clone
    # ----------------------------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_clone_copies_the_prefix_and_records_its_lineage(
        self, store: PlanStore
    ) -> None:
        """A clone is editable with the first n ops as stored, a clone provenance, no approval/run.

        ``parentDigest`` is the parent's own digest at that revision (its provenance included);
        ``completedAtClone`` lists the node ids the parent's run settled ok, read from its compact
        log (a merged join frame included), in log order, each once.
        """
        provenance = TemplateProvenance(template="digest_mail")
        await store.create_plan("p", label="Morning digest", provenance=provenance)
        await store.append_ops("p", _small_plan())
        digest = (await store.read_state("p")).digest
        await store.transition("p", _freeze(digest))
        await store.transition("p", _gate("p", digest))
        await store.claim_run("p", digest, "run-1", execution="exec-a")
        await store.append_run_log("p", "run-1", 0, _run_log("run-1", digest))
        parent_ops = await store.read_ops("p")

        created = await store.clone_plan("p", "c", at_revision=2)
        expected = CloneProvenance(
            parent="p",
            parent_digest=fold_ops("p", parent_ops[:2], provenance).view.digest,
            parent_revision=2,
            completed_at_clone=("entry", "notify", "gather"),
        )
        assert expected.parent_digest == (await store.fold("p", revision=2)).view.digest
        assert await store.read_provenance("c") == expected
        clone_digest = fold_ops("c", parent_ops[:2], expected).view.digest
        assert created == CreateOk(plan_id="c", revision=2, digest=clone_digest)
        assert await store.read_state("c") == PlanStateRecord(
            state="editable", digest=clone_digest, revision=2
        )
        assert await store.read_ops("c") == parent_ops[:2]
        assert await store.read_approval("c") is None
        assert await store.read_run_id("c") is None
        assert await store.read_run("c") is None
        with pytest.raises(RunNotFoundError):
            await store.read_run_log("c")
        labels = {s.plan_id: s.label for s in await store.list_plans()}
        assert labels == {"p": "Morning digest", "c": "Morning digest"}

    @pytest.mark.asyncio
    async def test_clone_defaults_to_the_current_revision_and_is_independent(
        self, store: PlanStore
    ) -> None:
        """Without at_revision the clone takes the whole log; later edits of either stay apart."""
        parent = await self._authored(store)
        created = await store.clone_plan("p", "c")
        assert isinstance(created, CreateOk) and created.revision == 3
        provenance = await store.read_provenance("c")
        assert provenance == CloneProvenance(
            parent="p", parent_digest=parent.digest, parent_revision=3, completed_at_clone=()
        )
        await store.append_ops("c", [_call_op("op-c", "only_in_clone")])
        await store.append_ops("p", [_call_op("op-p", "only_in_parent")])
        assert [op.op_id for op in await store.read_ops("c")][-1] == "op-c"
        assert [op.op_id for op in await store.read_ops("p")][-1] == "op-p"
        assert (await store.read_state("c")).revision == 4
        assert (await store.read_state("p")).revision == 4
        empty = await store.clone_plan("p", "e", at_revision=0)
        assert isinstance(empty, CreateOk) and empty.revision == 0
        assert await store.read_ops("e") == []

    @pytest.mark.asyncio
    async def test_clone_refusals_come_in_check_order(self, store: PlanStore) -> None:
        """source_missing before duplicate_id before revision_missing; a refusal creates nothing."""
        await self._authored(store, "p")
        await store.create_plan("taken")
        missing = await store.clone_plan("ghost", "taken", at_revision=99)
        assert missing == CreateRefused(reason="source_missing")
        duplicate = await store.clone_plan("p", "taken", at_revision=99)
        assert duplicate == CreateRefused(reason="duplicate_id")
        for bad in (-1, 4):
            refused = await store.clone_plan("p", "new", at_revision=bad)
            assert refused == CreateRefused(reason="revision_missing")
        assert [s.plan_id for s in await store.list_plans()] == ["p", "taken"]
        with pytest.raises(PlanNotFoundError):
            await store.read_state("new")

    @pytest.mark.asyncio
    async def test_a_clone_of_a_spent_plan_can_be_frozen_at_its_digest(
        self, store: PlanStore
    ) -> None:
        """Cloning an executable plan gives an editable plan that freezes at its read digest."""
        await self._executable(store)
        await store.clone_plan("p", "c")
        state = await store.read_state("c")
        view = fold_ops("c", await store.read_ops("c"), await store.read_provenance("c")).view
        assert state.digest == view.digest
        assert isinstance(await store.transition("c", _freeze(state.digest)), TransitionOk)

    @pytest.mark.asyncio
    async def test_a_clone_of_an_unreadable_run_log_is_refused_whole(
        self, store: PlanStore
    ) -> None:
        """A parent whose stored log names a frame before defining it cannot be cloned from.

        Its completedAtClone would be a guess: clone_plan raises MalformedRunLogError and
        creates nothing.
        """
        digest = await self._executable(store)
        await store.claim_run("p", digest, "run-1")
        await store.append_run_log("p", "run-1", 0, [_start("run-1", digest), _ok(3)])
        with pytest.raises(MalformedRunLogError):
            await store.clone_plan("p", "c")
        assert [s.plan_id for s in await store.list_plans()] == ["p"]

    # ----------------------------------------------------------------------------------------
    # Runs
    # ----------------------------------------------------------------------------------------

    @staticmethod
    async def _ended(
        store: PlanStore, outcome: RunOutcome = "aborted", *, execution: str = "exec-a"
    ) -> tuple[str, int]:
        """An executable ``p`` whose run ``run-1`` ran under ``execution`` and ended ``outcome``.

        Returns the digest and the log's length.
        """
        digest = await PlanStoreConformance._executable(store)
        claimed = await store.claim_run("p", digest, "run-1", execution=execution)
        assert claimed == ClaimOk(run_id="run-1", resumed=False), claimed
        log = [*_run_log("run-1", digest)[:-1], _end(outcome)]
        assert await store.append_run_log("p", "run-1", 0, log) == len(log)
        return digest, len(log)

    @pytest.mark.asyncio
    async def test_claim_needs_an_executable_plan_at_its_digest(self, store: PlanStore) -> None:
        """Any claim is not_executable before approval, digest_mismatch on other content.

        Fresh or resume alike; nothing is recorded.
        """
        digest = (await self._authored(store, "e")).digest
        reviewable = await self._reviewable(store, "r")
        await self._executable(store, "x")
        cases: list[tuple[str, str, str]] = [
            ("e", digest, "not_executable"),
            ("r", reviewable, "not_executable"),
            ("x", digest, "digest_mismatch"),
        ]
        for plan_id, expected, reason in cases:
            for resume in (False, True):
                refused = await store.claim_run(
                    plan_id, expected, "run-1", execution="exec-a", resume=resume
                )
                assert isinstance(refused, ClaimRefused), (plan_id, resume)
                assert (refused.reason, refused.existing_run_id) == (reason, None)
                assert refused.detail
                assert await store.read_run(plan_id) is None
                assert await store.read_run_id(plan_id) is None

    @pytest.mark.asyncio
    async def test_a_plan_has_one_run_ever(self, store: PlanStore) -> None:
        """The first claim records the run; the same id is resumed; any other id is refused."""
        digest = await self._executable(store)
        assert await store.claim_run("p", digest, "run-1") == ClaimOk(
            run_id="run-1", resumed=False, log_length=0
        )
        assert await store.claim_run("p", digest, "run-1") == ClaimOk(run_id="run-1", resumed=True)
        for execution in (None, "exec-a"):
            refused = await store.claim_run("p", digest, "run-2", execution=execution)
            assert isinstance(refused, ClaimRefused)
            assert (refused.reason, refused.existing_run_id) == ("run_already_claimed", "run-1")
        assert await store.read_run_id("p") == "run-1"
        assert await store.read_run("p") == RunRecord(run_id="run-1")

    @pytest.mark.asyncio
    async def test_a_reservation_is_bound_by_the_first_worker(self, store: PlanStore) -> None:
        """A client reserves the run with no execution; the first worker's claim binds its own.

        After the bind, a retry of either claim is acknowledged and writes nothing; a second
        execution is run_already_claimed.
        """
        digest = await self._executable(store)
        reserved = await store.claim_run("p", digest, "run-1")
        assert reserved == ClaimOk(run_id="run-1", resumed=False, log_length=0)
        assert await store.read_run("p") == RunRecord(run_id="run-1", execution=None)
        bound = await store.claim_run("p", digest, "run-1", execution="exec-a")
        assert bound == ClaimOk(run_id="run-1", resumed=True, log_length=0)
        assert await store.read_run("p") == RunRecord(run_id="run-1", execution="exec-a")
        for retry in ("exec-a", None):
            again = await store.claim_run("p", digest, "run-1", execution=retry)
            assert again == ClaimOk(run_id="run-1", resumed=True, log_length=0)
        second = await store.claim_run("p", digest, "run-1", execution="exec-b")
        assert isinstance(second, ClaimRefused)
        assert (second.reason, second.existing_run_id) == ("run_already_claimed", "run-1")
        assert "exec-a" in second.detail
        assert await store.read_run("p") == RunRecord(run_id="run-1", execution="exec-a")

    @pytest.mark.asyncio
    async def test_a_second_execution_never_takes_a_started_run(self, store: PlanStore) -> None:
        """A run that has started refuses another execution; a retry gets the log's length.

        A reservation whose log has entries was run by a host that binds no execution, so it is
        no longer a reservation a worker may bind.
        """
        digest = await self._executable(store, "w")
        assert await store.claim_run("w", digest, "run-1", execution="exec-a") == ClaimOk(
            run_id="run-1", resumed=False
        )
        await store.append_run_log("w", "run-1", 0, [_start("run-1", digest), _enter(0)])
        refused = await store.claim_run("w", digest, "run-1", execution="exec-b")
        assert isinstance(refused, ClaimRefused) and refused.reason == "run_already_claimed"
        assert await store.claim_run("w", digest, "run-1", execution="exec-a") == ClaimOk(
            run_id="run-1", resumed=True, log_length=2
        )
        assert await store.read_run("w") == RunRecord(
            run_id="run-1", execution="exec-a", log_length=2
        )

        digest = await self._executable(store, "h")
        await store.claim_run("h", digest, "run-1")
        await store.append_run_log("h", "run-1", 0, [_start("run-1", digest)])
        refused = await store.claim_run("h", digest, "run-1", execution="exec-b")
        assert isinstance(refused, ClaimRefused) and refused.reason == "run_already_claimed"
        assert await store.claim_run("h", digest, "run-1") == ClaimOk(
            run_id="run-1", resumed=True, log_length=1
        )
        assert await store.read_run("h") == RunRecord(run_id="run-1", log_length=1)

    @pytest.mark.asyncio
    async def test_racing_claims_exactly_one_wins(self, store: PlanStore, tmp_path: Path) -> None:
        """Two claims at once (two run ids, or one id from two executions): exactly one wins.

        The loser is run_already_claimed naming the winner's run.
        """
        peer = await self.make_peer(store, tmp_path)
        try:
            for round_ in range(6):
                plan_id = f"p{round_}"
                digest = await self._executable(store, plan_id)
                same_run = round_ % 2 == 1
                results = await asyncio.gather(
                    store.claim_run(plan_id, digest, f"run-a{round_}", execution="exec-a"),
                    peer.claim_run(
                        plan_id,
                        digest,
                        f"run-a{round_}" if same_run else f"run-b{round_}",
                        execution="exec-b",
                    ),
                )
                winners = [r for r in results if isinstance(r, ClaimOk)]
                losers = [r for r in results if isinstance(r, ClaimRefused)]
                assert len(winners) == 1 and len(losers) == 1
                assert winners[0].resumed is False
                assert losers[0].reason == "run_already_claimed"
                assert losers[0].existing_run_id == winners[0].run_id
                run = await store.read_run(plan_id)
                assert run is not None and run.run_id == winners[0].run_id
                assert run.execution == ("exec-a" if results[0].ok else "exec-b")
        finally:
            if peer is not store:
                await peer.close()

    @pytest.mark.asyncio
    async def test_racing_appends_on_one_revision_exactly_one_wins(
        self, store: PlanStore, tmp_path: Path
    ) -> None:
        """Two appends against the same expected revision: one lands whole, the other not at all."""
        peer = await self.make_peer(store, tmp_path)
        try:
            await store.create_plan("p")
            for round_ in range(8):
                revision = (await store.read_state("p")).revision
                mine = [_call_op(f"a{round_}-{i}", f"a{round_}_{i}") for i in range(3)]
                theirs = [_call_op(f"b{round_}-{i}", f"b{round_}_{i}") for i in range(3)]
                results = await asyncio.gather(
                    store.append_ops("p", mine, expected_revision=revision),
                    peer.append_ops("p", theirs, expected_revision=revision),
                )
                winners = [r for r in results if isinstance(r, AppendOk)]
                losers = [r for r in results if isinstance(r, AppendRefused)]
                assert len(winners) == 1 and len(losers) == 1
                assert winners[0].revision == revision + 3
                assert losers[0].reason == "revision_moved"
                assert losers[0].actual.revision == revision + 3
                won, lost = (mine, theirs) if isinstance(results[0], AppendOk) else (theirs, mine)
                log = [op.op_id for op in await store.read_ops("p")]
                assert log[revision:] == [op.op_id for op in won]
                assert not {op.op_id for op in lost} & set(log)
            assert (await store.read_state("p")).revision == 8 * 3
        finally:
            if peer is not store:
                await peer.close()

    @pytest.mark.asyncio
    async def test_resume_refuses_what_it_cannot_continue(self, store: PlanStore) -> None:
        """A resume of what cannot be continued is refused, and nothing changes.

        run_not_found for no run or another id, run_not_ended while the log does not end with
        an end entry, run_already_settled once it ended completed.
        """
        digest = await self._executable(store)

        async def refused(run_id: str = "run-1") -> tuple[str, str | None]:
            before = await store.read_run("p")
            answer = await store.claim_run("p", digest, run_id, execution="exec-b", resume=True)
            assert isinstance(answer, ClaimRefused), answer
            assert answer.detail
            assert await store.read_run("p") == before
            return answer.reason, answer.existing_run_id

        assert await refused() == ("run_not_found", None)
        await store.claim_run("p", digest, "run-1", execution="exec-a")
        assert await refused("run-2") == ("run_not_found", "run-1")
        assert await refused() == ("run_not_ended", "run-1")
        log = _run_log("run-1", digest)
        await store.append_run_log("p", "run-1", 0, log[:-1])
        assert await refused() == ("run_not_ended", "run-1")
        await store.append_run_log("p", "run-1", len(log) - 1, [_end("completed")])
        assert await store.read_run("p") == RunRecord(
            run_id="run-1", execution="exec-a", outcome="completed", log_length=len(log)
        )
        assert await refused() == ("run_already_settled", "run-1")
        assert await refused("run-2") == ("run_not_found", "run-1")

    @pytest.mark.asyncio
    async def test_resume_binds_a_new_execution_and_reports_the_log_length(
        self, store: PlanStore
    ) -> None:
        """An aborted or halted run resumes under a new execution, from its log's length.

        Only that execution holds the run until its log ends again.
        """
        digest, length = await self._ended(store, "aborted")
        assert await store.read_run("p") == RunRecord(
            run_id="run-1", execution="exec-a", outcome="aborted", log_length=length
        )
        resumed = await store.claim_run("p", digest, "run-1", execution="exec-b", resume=True)
        assert resumed == ClaimOk(run_id="run-1", resumed=True, log_length=length)
        running = RunRecord(run_id="run-1", execution="exec-b", log_length=length)
        assert await store.read_run("p") == running
        retry = await store.claim_run("p", digest, "run-1", execution="exec-b", resume=True)
        assert retry == resumed
        for execution, resume, reason in (
            ("exec-c", True, "run_not_ended"),
            ("exec-a", True, "run_not_ended"),
            (None, True, "run_not_ended"),
            ("exec-c", False, "run_already_claimed"),
        ):
            other = await store.claim_run("p", digest, "run-1", execution=execution, resume=resume)
            assert isinstance(other, ClaimRefused) and other.reason == reason, execution
        assert await store.read_run("p") == running
        fresh_retry = await store.claim_run("p", digest, "run-1", execution="exec-b")
        assert fresh_retry == resumed

        tail: list[LogEntry] = [LogInterrupt(cause=TurnAbort(), at=_AT), _end("halted")]
        assert await store.append_run_log("p", "run-1", length, tail) == length + 2
        assert (await store.read_run("p")) == RunRecord(
            run_id="run-1", execution="exec-b", outcome="halted", log_length=length + 2
        )
        again = await store.claim_run("p", digest, "run-1", execution="exec-c", resume=True)
        assert again == ClaimOk(run_id="run-1", resumed=True, log_length=length + 2)
        assert await store.read_run_log("p", start=length) == tail

    @pytest.mark.asyncio
    async def test_racing_resumes_exactly_one_wins(self, store: PlanStore, tmp_path: Path) -> None:
        """Two executions resuming one ended run at once: one holds it, one is run_not_ended."""
        peer = await self.make_peer(store, tmp_path)
        try:
            digest, length = await self._ended(store)
            results = await asyncio.gather(
                store.claim_run("p", digest, "run-1", execution="exec-b", resume=True),
                peer.claim_run("p", digest, "run-1", execution="exec-c", resume=True),
            )
            winners = [r for r in results if isinstance(r, ClaimOk)]
            losers = [r for r in results if isinstance(r, ClaimRefused)]
            assert len(winners) == 1 and len(losers) == 1
            assert winners[0].log_length == length
            assert losers[0].reason == "run_not_ended"
            run = await store.read_run("p")
            assert run is not None and run.outcome is None
            assert run.execution == ("exec-b" if results[0].ok else "exec-c")
        finally:
            if peer is not store:
                await peer.close()

    @pytest.mark.asyncio
    async def test_run_log_reads_back_equal_and_in_order(self, store: PlanStore) -> None:
        """Entries append in batches and read back equal, in order, with their values' types.

        Bytes, sets, datetimes and artifact handles survive; the read-back log expands to the
        same contract events as the original.
        """
        digest = await self._executable(store)
        await store.claim_run("p", digest, "run-1", execution="exec-a")
        handle = ArtifactHandle(tag="spool", locator="file:///a.bin", artifact_class="CsvFile")
        first: list[LogEntry] = [
            _start("run-1", digest),
            _enter(0),
            LogSettle(
                frame=0,
                status="ok",
                items=(OutputItem(json_={"raw": b"\x01\x02", "seen": {"x", "y"}}),),
                artifact=handle,
                at=_AT,
            ),
        ]
        second: list[LogEntry] = [
            _edge(
                "entry_to_fetch",
                0,
                1,
                "fetch",
                evidence={"because": [1, 2], "when": dt.datetime(2026, 1, 2, tzinfo=dt.UTC)},
            ),
            LogSnapshot(at=_AT),
            LogInterrupt(cause=TurnAbort(), frame=1, at=_AT),
            _end("aborted"),
        ]
        assert await store.append_run_log("p", "run-1", 0, first) == 3
        assert await store.read_run_log("p") == first
        assert await store.append_run_log("p", "run-1", 3, second) == 7
        assert await store.append_run_log("p", "run-1", 7, []) == 7
        log = await store.read_run_log("p", "run-1")
        assert log == first + second
        settle = log[2]
        assert isinstance(settle, LogSettle) and settle.artifact == handle
        assert type(settle.items[0].json_["raw"]) is bytes
        assert type(settle.items[0].json_["seen"]) is set
        assert expand_log(log) == expand_log(first + second)

    @pytest.mark.asyncio
    async def test_run_log_pages_by_start_and_limit(self, store: PlanStore) -> None:
        """read_run_log(start, limit) is the slice [start, start + limit) of the log.

        Past the end it is empty; a negative start or limit is RunLogConflictError.
        """
        digest, length = await self._ended(store)
        log = await store.read_run_log("p")
        assert len(log) == length
        for start, limit in ((0, None), (0, 5), (5, 5), (length - 2, 10), (length, 3), (99, 1)):
            stop = None if limit is None else start + limit
            page = await store.read_run_log("p", "run-1", start=start, limit=limit)
            assert page == log[start:stop], (start, limit)
        assert await store.read_run_log("p", start=3, limit=0) == []
        for start, limit in ((-1, None), (0, -1)):
            with pytest.raises(RunLogConflictError):
                await store.read_run_log("p", start=start, limit=limit)

    @pytest.mark.asyncio
    async def test_run_log_appends_are_idempotent_by_position(self, store: PlanStore) -> None:
        """Re-writing held positions with the same entries writes only the new tail.

        A batch that adds nothing changes nothing, not even the outcome a resume cleared.
        """
        digest, length = await self._ended(store)
        log = await store.read_run_log("p")
        assert await store.append_run_log("p", "run-1", 0, log) == length
        assert await store.append_run_log("p", "run-1", 4, log[4:9]) == length
        await store.claim_run("p", digest, "run-1", execution="exec-b", resume=True)
        running = await store.read_run("p")
        assert running is not None and running.outcome is None
        assert await store.append_run_log("p", "run-1", length - 1, log[-1:]) == length
        assert await store.read_run("p") == running
        tail: list[LogEntry] = [_enter(7), LogSettle(frame=7, status="skipped", at=_AT)]
        grown = await store.append_run_log("p", "run-1", length - 2, [*log[-2:], *tail])
        assert grown == length + 2
        assert await store.read_run_log("p") == [*log, *tail]
        # Equal entries are equal whatever the order of a staged map's keys.
        reordered = _edge("e9", 6, 9, "late", evidence={"b": 2, "a": 1})
        assert await store.append_run_log("p", "run-1", grown, [reordered]) == grown + 1
        again = reordered.model_copy(update={"evidence": {"a": 1, "b": 2}})
        assert await store.append_run_log("p", "run-1", grown, [again]) == grown + 1

    @pytest.mark.asyncio
    async def test_run_log_conflicts_and_gaps_are_refused_whole(self, store: PlanStore) -> None:
        """A held position with another entry, a gap or a negative start is RunLogConflictError.

        Entries are compared by canonical JSON, so ``1`` and ``1.0`` differ. Nothing of the
        batch is written.
        """
        digest = await self._executable(store)
        await store.claim_run("p", digest, "run-1", execution="exec-a")
        log: list[LogEntry] = [_start("run-1", digest), _enter(0), _ok(0, n=1)]
        await store.append_run_log("p", "run-1", 0, log)
        before = await store.read_run("p")
        batches: list[tuple[int, list[LogEntry]]] = [
            (2, [_ok(0, n=1.0), _edge("e1", 0, 1, "fetch")]),
            (1, [_enter(0), _ok(0, n=2), _end("completed")]),
            (0, [_start("run-2", digest)]),
            (4, [_end("completed")]),
            (-1, [_start("run-1", digest)]),
        ]
        for start, batch in batches:
            with pytest.raises(RunLogConflictError):
                await store.append_run_log("p", "run-1", start, batch)
            assert await store.read_run_log("p") == log
            assert await store.read_run("p") == before

    @pytest.mark.asyncio
    async def test_a_mirror_replaces_the_tail_a_lost_task_wrote(self, store: PlanStore) -> None:
        """``replace_tail``: the first held position with another entry cuts the log there.

        A lost workflow task's mirror wrote a settlement and an end; its retry writes the same
        positions with another value and no end yet. The log holds the retry's entries only,
        the outcome follows them, and an identical batch afterwards writes nothing. A gap or a
        negative start is refused as without ``replace_tail``.
        """
        digest = await self._executable(store)
        await store.claim_run("p", digest, "run-1", execution="exec-a")
        lost: list[LogEntry] = [_start("run-1", digest), _enter(0), _ok(0, n=1), _end("completed")]
        await store.append_run_log("p", "run-1", 0, lost)
        retried: list[LogEntry] = [_enter(0), _ok(0, n=2)]
        assert await store.append_run_log("p", "run-1", 1, retried, replace_tail=True) == 3
        assert await store.read_run_log("p") == [lost[0], *retried]
        run = await store.read_run("p")
        assert run is not None and run.outcome is None and run.log_length == 3
        assert (
            await store.append_run_log("p", "run-1", 0, [lost[0], *retried], replace_tail=True) == 3
        )
        assert (
            await store.append_run_log("p", "run-1", 3, [_end("completed")], replace_tail=True) == 4
        )
        run = await store.read_run("p")
        assert run is not None and run.outcome == "completed"
        for start in (5, -1):
            with pytest.raises(RunLogConflictError):
                await store.append_run_log("p", "run-1", start, retried, replace_tail=True)
        assert len(await store.read_run_log("p")) == 4

    @pytest.mark.asyncio
    async def test_the_run_keeps_the_outcome_its_log_ends_with(self, store: PlanStore) -> None:
        """After an append that writes, the outcome is the last entry's if it is ``end``."""
        digest = await self._executable(store)
        await store.claim_run("p", digest, "run-1", execution="exec-a")

        async def outcome() -> str | None:
            run = await store.read_run("p")
            assert run is not None
            return run.outcome

        assert await store.append_run_log("p", "run-1", 0, [_start("run-1", digest)]) == 1
        assert await outcome() is None
        await store.append_run_log("p", "run-1", 1, [_enter(0), _end("halted")])
        assert await outcome() == "halted"
        await store.append_run_log("p", "run-1", 3, [LogSnapshot(at=_AT)])
        assert await outcome() is None
        await store.append_run_log("p", "run-1", 4, [_end("aborted")])
        assert await outcome() == "aborted"

    @pytest.mark.asyncio
    async def test_run_log_needs_the_plans_run(self, store: PlanStore) -> None:
        """The log cannot be written or read without the plan's run id: RunNotFoundError."""
        digest = await self._executable(store)
        entry = _start("run-1", digest)
        with pytest.raises(RunNotFoundError):
            await store.append_run_log("p", "run-1", 0, [entry])
        with pytest.raises(RunNotFoundError):
            await store.read_run_log("p")
        await store.claim_run("p", digest, "run-1")
        with pytest.raises(RunNotFoundError):
            await store.append_run_log("p", "run-2", 0, [entry])
        with pytest.raises(RunNotFoundError):
            await store.read_run_log("p", "run-2")
        assert await store.read_run_log("p", "run-1") == []
        assert await store.read_run("p") == RunRecord(run_id="run-1")

    # ----------------------------------------------------------------------------------------
    # Unknown plans, listings
    # ----------------------------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_unknown_plan_raises_plan_not_found(self, store: PlanStore) -> None:
        """Every method that addresses a plan raises PlanNotFoundError for an unknown id."""
        entry = _start("run-1", "d")
        calls: dict[str, Callable[[], Awaitable[object]]] = {
            "append_ops": lambda: store.append_ops("ghost", [_entry_op()]),
            "read_ops": lambda: store.read_ops("ghost"),
            "read_provenance": lambda: store.read_provenance("ghost"),
            "read_state": lambda: store.read_state("ghost"),
            "fold": lambda: store.fold("ghost"),
            "transition": lambda: store.transition("ghost", _freeze("d")),
            "read_approval": lambda: store.read_approval("ghost"),
            "claim_run": lambda: store.claim_run("ghost", "d", "run-1"),
            "resume": lambda: store.claim_run("ghost", "d", "run-1", resume=True),
            "read_run_id": lambda: store.read_run_id("ghost"),
            "read_run": lambda: store.read_run("ghost"),
            "append_run_log": lambda: store.append_run_log("ghost", "run-1", 0, [entry]),
            "read_run_log": lambda: store.read_run_log("ghost"),
        }
        for name, call in calls.items():
            with pytest.raises(PlanNotFoundError):
                await call()
                pytest.fail(f"{name} did not raise")
        assert await store.list_plans() == []

    @pytest.mark.asyncio
    async def test_list_plans_in_creation_order_with_a_state_filter(
        self, store: PlanStore
    ) -> None:
        """Summaries come in creation order, filtered by state on request, matching each plan."""
        await self._authored(store, "b")
        await self._reviewable(store, "a")
        await self._executable(store, "c")
        await store.clone_plan("c", "d", at_revision=1)

        summaries = await store.list_plans()
        assert [s.plan_id for s in summaries] == ["b", "a", "c", "d"]
        for summary in summaries:
            state = await store.read_state(summary.plan_id)
            view = (await store.fold(summary.plan_id)).view
            assert (summary.state, summary.digest, summary.revision) == (
                state.state,
                state.digest,
                state.revision,
            )
            assert summary.node_count == len(view.nodes)
            assert summary.provenance == await store.read_provenance(summary.plan_id)
        assert [s.node_count for s in summaries] == [2, 2, 2, 1]

        by_state = {
            state: [s.plan_id for s in await store.list_plans(state=state)] for state in _STATES
        }
        assert by_state == {"editable": ["b", "d"], "reviewable": ["a"], "executable": ["c"]}

    @pytest.mark.asyncio
    async def test_list_plans_pages_by_the_last_plan_id(self, store: PlanStore) -> None:
        """``limit`` cuts the listing; ``after`` continues right after that plan.

        With a state filter too; a plan created between two pages shows on a later page, and
        nothing shows twice. A cursor naming no plan, or a negative limit, is invalid_listing.
        """
        for plan_id in ("e", "d", "c"):
            await self._authored(store, plan_id)
        await self._reviewable(store, "b")
        first = await store.list_plans(limit=2)
        assert [s.plan_id for s in first] == ["e", "d"]
        await self._authored(store, "a")
        rest = await store.list_plans(limit=2, after="d")
        assert [s.plan_id for s in rest] == ["c", "b"]
        assert [s.plan_id for s in await store.list_plans(limit=2, after="b")] == ["a"]
        assert await store.list_plans(after="a") == []
        assert await store.list_plans(limit=0) == []
        editable = await store.list_plans(state="editable", limit=1, after="d")
        assert [s.plan_id for s in editable] == ["c"]
        assert [s.plan_id for s in await store.list_plans(state="editable", after="c")] == ["a"]
        whole = await store.list_plans()
        assert [*first, *rest, *await store.list_plans(after="b")] == whole
        with pytest.raises(InvalidListingError):
            await store.list_plans(after="ghost")
        with pytest.raises(InvalidListingError):
            await store.list_plans(limit=-1)

    @pytest.mark.asyncio
    async def test_list_plans_says_each_plans_run(self, store: PlanStore) -> None:
        """A summary carries the plan's run id and outcome: none, running, then its outcome."""
        await self._authored(store, "draft")
        digest = await self._executable(store, "p")

        async def summary(plan_id: str) -> tuple[str | None, str | None]:
            (found,) = [s for s in await store.list_plans() if s.plan_id == plan_id]
            return found.run_id, found.run_outcome

        assert await summary("draft") == (None, None)
        assert await summary("p") == (None, None)
        await store.claim_run("p", digest, "run-1", execution="exec-a")
        assert await summary("p") == ("run-1", None)
        await store.append_run_log("p", "run-1", 0, [_start("run-1", digest), _end("halted")])
        assert await summary("p") == ("run-1", "halted")

    async def _run_ended(
        self, store: PlanStore, plan_id: str, outcome: RunOutcome | None, *, made: bool = False
    ) -> str:
        """An executable ``plan_id`` (``made``: already) whose run ``run-<plan_id>`` ended.

        With ``outcome`` ``None`` it is still running (its start is in the log). Returns the
        digest.
        """
        if made:
            digest = (await store.read_state(plan_id)).digest
        else:
            digest = await self._executable(store, plan_id)
        run_id = f"run-{plan_id}"
        claimed = await store.claim_run(plan_id, digest, run_id, execution="exec-a")
        assert isinstance(claimed, ClaimOk), claimed
        log: list[LogEntry] = [_start(run_id, digest), _enter(0)]
        if outcome is not None:
            log.append(LogEnd(outcome=outcome, at="2026-01-01T00:00:09Z"))
        await store.append_run_log(plan_id, run_id, 0, log)
        return digest

    @pytest.mark.asyncio
    async def test_list_runs_newest_claim_first_with_what_each_run_did(
        self, store: PlanStore
    ) -> None:
        """Runs come newest claim first (not creation order), each with its times and outcome.

        started_at is the start entry's time, ended_at the end entry's (none while running),
        claimed_at the store's time of the first claim, which a resume keeps, as it keeps the
        run's place. A plan with no run is not listed.
        """
        for plan_id in ("a-1", "b-1", "a-2"):
            await self._executable(store, plan_id)
        await self._authored(store, "never")
        order: list[tuple[str, RunOutcome | None]] = [
            ("b-1", None),
            ("a-2", "aborted"),
            ("a-1", "completed"),
        ]
        digests = {
            plan_id: await self._run_ended(store, plan_id, end, made=True) for plan_id, end in order
        }
        runs = await store.list_runs()
        assert [r.plan_id for r in runs] == ["a-1", "a-2", "b-1"]
        assert [r.model_dump(exclude={"claimed_at"}) for r in runs] == [
            RunSummary(
                plan_id=plan_id,
                run_id=f"run-{plan_id}",
                execution="exec-a",
                outcome=outcome,
                started_at=_AT,
                ended_at=None if outcome is None else "2026-01-01T00:00:09Z",
                log_length=2 if outcome is None else 3,
            ).model_dump(exclude={"claimed_at"})
            for plan_id, outcome in reversed(order)
        ]
        claimed = [r.claimed_at for r in runs]
        assert all(c is not None for c in claimed)
        stamps = [dt.datetime.fromisoformat(c) for c in claimed if c is not None]
        assert stamps == sorted(stamps, reverse=True)

        resumed = await store.claim_run(
            "a-2", digests["a-2"], "run-a-2", execution="exec-b", resume=True
        )
        assert isinstance(resumed, ClaimOk)
        after = await store.list_runs()
        assert [r.plan_id for r in after] == ["a-1", "a-2", "b-1"]
        assert [r.claimed_at for r in after] == claimed
        assert (after[1].outcome, after[1].ended_at, after[1].execution) == (
            None,
            None,
            "exec-b",
        )

    @pytest.mark.asyncio
    async def test_list_runs_filters_by_outcome_and_plan_id_prefix(
        self, store: PlanStore
    ) -> None:
        """Filters: ``outcome`` (``running``: no outcome yet) and an exact plan id ``prefix``.

        The prefix is literal: case matters and ``%`` or ``_`` are no wildcards.
        """
        cases: list[tuple[str, RunOutcome | None]] = [
            ("ops-1", "completed"),
            ("ops-2", "halted"),
            ("Ops-3", "completed"),
            ("op%_4", None),
            ("dev-1", "aborted"),
        ]
        for plan_id, outcome in cases:
            await self._run_ended(store, plan_id, outcome)
        await self._executable(store, "ops-reserved")
        reserved = (await store.read_state("ops-reserved")).digest
        await store.claim_run("ops-reserved", reserved, "run-r")

        async def listed(
            outcome: RunOutcomeFilter | None = None, prefix: str = ""
        ) -> list[str]:
            return [r.plan_id for r in await store.list_runs(outcome=outcome, prefix=prefix)]

        everything = ["ops-reserved", "dev-1", "op%_4", "Ops-3", "ops-2", "ops-1"]
        assert await listed() == everything
        assert await listed("completed") == ["Ops-3", "ops-1"]
        assert await listed("halted") == ["ops-2"]
        assert await listed("aborted") == ["dev-1"]
        assert await listed("running") == ["ops-reserved", "op%_4"]
        assert await listed(prefix="ops-") == ["ops-reserved", "ops-2", "ops-1"]
        assert await listed(prefix="op%") == ["op%_4"]
        assert await listed(prefix="op_") == []
        assert await listed("completed", "ops") == ["ops-1"]
        assert await listed(prefix="ops-1") == ["ops-1"]
        assert await listed(prefix="") == everything
        (reservation,) = await store.list_runs(prefix="ops-reserved")
        assert (reservation.execution, reservation.started_at, reservation.log_length) == (
            None,
            None,
            0,
        )

    @pytest.mark.asyncio
    async def test_list_runs_pages_by_the_last_plan_id(self, store: PlanStore) -> None:
        """``after`` continues with the runs claimed before that plan's run.

        A run claimed between two pages does not shift the next page: it is newer than the
        cursor, so it shows on a fresh first page, never twice and never instead of another.
        Filters apply on every page; a cursor naming no plan or a plan without a run, a
        negative limit or an outcome that is not one, is invalid_listing.
        """
        for index in range(5):
            await self._run_ended(store, f"p{index}", "completed" if index % 2 else "halted")
        first = await store.list_runs(limit=2)
        assert [r.plan_id for r in first] == ["p4", "p3"]
        await self._run_ended(store, "p5", "completed")
        second = await store.list_runs(limit=2, after="p3")
        assert [r.plan_id for r in second] == ["p2", "p1"]
        assert [r.plan_id for r in await store.list_runs(limit=2, after="p1")] == ["p0"]
        assert await store.list_runs(after="p0") == []
        assert await store.list_runs(limit=0) == []
        halted = await store.list_runs(outcome="halted", limit=1, after="p4")
        assert [r.plan_id for r in halted] == ["p2"]
        assert [r.plan_id for r in await store.list_runs(outcome="halted", after="p2")] == ["p0"]
        assert [r.plan_id for r in await store.list_runs(prefix="p", after="p5")] == [
            "p4",
            "p3",
            "p2",
            "p1",
            "p0",
        ]
        await self._authored(store, "no-run")
        for kwargs in (
            {"after": "ghost"},
            {"after": "no-run"},
            {"limit": -1},
            {"outcome": "settled"},
        ):
            with pytest.raises(InvalidListingError):
                await store.list_runs(**kwargs)

    @pytest.mark.asyncio
    async def test_racing_claims_of_many_plans_take_distinct_places(
        self, store: PlanStore, tmp_path: Path
    ) -> None:
        """Claims of different plans at once, from two handles, all land and all are listed."""
        peer = await self.make_peer(store, tmp_path)
        try:
            digests = {f"r{i}": await self._executable(store, f"r{i}") for i in range(8)}
            results = await asyncio.gather(
                *(
                    (store if i % 2 else peer).claim_run(
                        plan_id, digest, f"run-{plan_id}", execution=f"exec-{plan_id}"
                    )
                    for i, (plan_id, digest) in enumerate(digests.items())
                )
            )
            assert all(isinstance(r, ClaimOk) for r in results), results
            listed = await store.list_runs()
            assert sorted(r.plan_id for r in listed) == sorted(digests)
            pages: list[str] = []
            after: str | None = None
            while page := await peer.list_runs(limit=3, after=after):
                pages += [r.plan_id for r in page]
                after = page[-1].plan_id
            assert pages == [r.plan_id for r in listed]
        finally:
            if peer is not store:
                await peer.close()

    @pytest.mark.asyncio
    async def test_every_write_refreshes_updated_at(self, store: PlanStore) -> None:
        """The updatedAt stamp moves forward on append, freeze, approval, claim, log and resume."""

        async def stamp() -> dt.datetime:
            (summary,) = await store.list_plans()
            return dt.datetime.fromisoformat(summary.updated_at)

        await store.create_plan("p")
        stamps = [await stamp()]
        digest = ""

        async def append() -> None:
            nonlocal digest
            digest = (await self._appended(store, "p", _small_plan())).digest

        async def freeze() -> None:
            await store.transition("p", _freeze(digest))

        async def approve() -> None:
            await store.transition("p", _gate("p", digest))

        async def claim() -> None:
            await store.claim_run("p", digest, "run-1")

        async def record() -> None:
            await store.append_run_log("p", "run-1", 0, [_start("run-1", digest), _end("halted")])

        async def resume() -> None:
            await store.claim_run("p", digest, "run-1", execution="exec-b", resume=True)

        for write in (append, freeze, approve, claim, record, resume):
            await asyncio.sleep(0.02)
            await write()
            stamps.append(await stamp())
        assert stamps == sorted(stamps)
        assert len(set(stamps)) == len(stamps)
