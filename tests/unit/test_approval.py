"""Approval binds the digest and the canonical authority set; every refusal leaves the store
unchanged and has its own code."""

from __future__ import annotations

from typing import Any

import pytest

from orchestration.api import Orchestration, create_orchestration
from orchestration.plan.authoring import claim
from orchestration.review.approval import (
    ApprovalOk,
    ApprovalRefused,
    approval_record,
    authority_refusal,
    authority_set,
    check_approval,
    describe_claim,
)
from orchestration.store.memory import MemoryPlanStore
from orchestration.types import ApprovalRecord, AuthorityClaim

from .validation.helpers import TOOLS, FakeCell, author, call, every_kind_ops, fold


async def _frozen(plan_id: str = "p") -> tuple[Orchestration, Any]:
    store = MemoryPlanStore()
    orch = await create_orchestration(store=store, invocable=TOOLS, evaluators=[FakeCell()])
    await store.create_plan(plan_id)
    ops = every_kind_ops()
    await store.append_ops(plan_id, ops[:-1])
    await store.append_ops(plan_id, ops[-1:])
    result = await orch.freeze_plan(plan_id)
    assert result.ok, result.issues
    view = (await store.fold(plan_id)).view
    return orch, view


async def _snapshot(orch: Orchestration, plan_id: str = "p") -> tuple[Any, Any]:
    return await orch.store.read_state(plan_id), await orch.store.read_approval(plan_id)


def _record(view: Any, **changes: Any) -> ApprovalRecord:
    return approval_record(view, "ops-lead", "2026-01-01T00:00:00Z").model_copy(update=changes)


@pytest.mark.asyncio
async def test_exact_record_makes_the_plan_executable() -> None:
    """A record with the current digest and the canonical set approves, and is persisted."""
    orch, view = await _frozen()
    record = _record(view)
    result = await orch.approve_plan("p", record)
    assert isinstance(result, ApprovalOk) and result.digest == view.digest
    state, stored = await _snapshot(orch)
    assert state.state == "executable" and stored == record


async def _refused(
    orch: Orchestration, record: ApprovalRecord, reason: str, cause: str
) -> ApprovalRefused:
    before = await _snapshot(orch)
    result = await orch.approve_plan("p", record)
    assert isinstance(result, ApprovalRefused), result
    assert (result.reason, result.cause) == (reason, cause), result.message
    assert await _snapshot(orch) == before
    state = before[0]
    assert result.actual is not None
    assert (result.actual.state, result.actual.digest) == (state.state, state.digest)
    return result


@pytest.mark.asyncio
async def test_forged_digest_is_refused() -> None:
    """A digest the plan never had is digest_mismatch (unknown_digest), naming the current one."""
    orch, view = await _frozen()
    result = await _refused(orch, _record(view, digest="0" * 64), "digest_mismatch",
                            "unknown_digest")
    assert view.digest in result.message and "type its digest exactly" in result.message


@pytest.mark.asyncio
async def test_stale_revision_digest_is_refused() -> None:
    """The digest of an earlier revision is digest_mismatch with the cause stale_digest."""
    orch, view = await _frozen()
    earlier = (await orch.store.fold("p", revision=view.revision - 1)).view
    result = await _refused(orch, _record(view, digest=earlier.digest), "digest_mismatch",
                            "stale_digest")
    assert "Re-render" in result.message


@pytest.mark.asyncio
async def test_authority_set_missing_a_claim_is_refused() -> None:
    """Leaving out one claim the plan makes is digest_mismatch (authority_mismatch), naming it."""
    orch, view = await _frozen()
    claims = authority_set(view)
    result = await _refused(orch, _record(view, authority_set=claims[1:]), "digest_mismatch",
                            "authority_mismatch")
    assert f"omits {claims[0].capability} · {claims[0].scope} · {claims[0].verb}" in (
        result.message
    )


@pytest.mark.asyncio
async def test_authority_set_with_an_extra_claim_is_refused() -> None:
    """Granting a claim no reachable call makes is refused, naming it."""
    orch, view = await _frozen()
    extra = AuthorityClaim(capability="zz", scope="everything", verb="delete")
    result = await _refused(orch, _record(view, authority_set=(*authority_set(view), extra)),
                            "digest_mismatch", "authority_mismatch")
    assert "grants zz · everything · delete" in result.message


@pytest.mark.asyncio
async def test_authority_set_with_duplicates_is_refused() -> None:
    """A record listing a claim twice is refused: a set holds each claim once."""
    orch, view = await _frozen()
    claims = authority_set(view)
    result = await _refused(orch, _record(view, authority_set=(claims[0], *claims)),
                            "digest_mismatch", "authority_duplicate")
    assert describe_claim(claims[0]) in result.message


@pytest.mark.asyncio
async def test_authority_set_in_any_order_approves_and_is_stored_canonical() -> None:
    """The right claims in any order approve; the stored record holds the sorted set."""
    orch, view = await _frozen()
    claims = authority_set(view)
    assert len(claims) > 2
    shuffled = (claims[1], *reversed(claims[2:]), claims[0])
    record = _record(view, authority_set=shuffled)
    result = await orch.approve_plan("p", record)
    assert isinstance(result, ApprovalOk), result
    stored = await orch.store.read_approval("p")
    assert stored == record.model_copy(update={"authority_set": claims})


@pytest.mark.asyncio
async def test_record_for_another_plan_is_refused() -> None:
    """A record naming another plan id is digest_mismatch with the cause wrong_plan."""
    orch, view = await _frozen()
    await _refused(orch, _record(view, plan_id="other"), "digest_mismatch", "wrong_plan")


@pytest.mark.asyncio
async def test_plan_not_reviewable_is_refused() -> None:
    """An editable plan, and an already executable one, are state_mismatch (not_reviewable)."""
    store = MemoryPlanStore()
    orch = await create_orchestration(store=store, invocable=TOOLS, evaluators=[FakeCell()])
    await store.create_plan("p")
    await store.append_ops("p", every_kind_ops())
    view = (await store.fold("p")).view
    result = await _refused(orch, _record(view), "state_mismatch", "not_reviewable")
    assert "freeze it first" in result.message
    assert (await orch.freeze_plan("p")).ok
    assert isinstance(await orch.approve_plan("p", _record(view)), ApprovalOk)
    again = await _refused(orch, _record(view), "state_mismatch", "not_reviewable")
    assert "clone it" in again.message


@pytest.mark.asyncio
async def test_a_clone_never_inherits_the_approval() -> None:
    """A clone is a new plan with its own digest: the parent's record does not approve it."""
    orch, view = await _frozen()
    assert isinstance(await orch.approve_plan("p", _record(view)), ApprovalOk)
    await orch.store.clone_plan("p", "q")
    assert (await orch.freeze_plan("q")).ok
    result = await orch.approve_plan("q", _record(view, plan_id="q"))
    assert isinstance(result, ApprovalRefused) and result.reason == "digest_mismatch"


def test_authority_set_is_canonical_and_reachable_only() -> None:
    """Claims are deduped, sorted by capability/scope/verb, and unreachable calls excluded."""
    a = author()
    ops = [a.entry(),
           call(a, "b1", authority=[claim("mail", "x", "read"), claim("http", "z", "read")]),
           call(a, "b2", authority=[claim("http", "z", "read"), claim("http", "a", "update")]),
           call(a, "orphan", authority=[claim("aaa", "x", "delete")]),
           a.edge("entry", "b1"), a.edge("b1", "b2")]
    view, _ = fold(ops)
    assert [(c.capability, c.scope, c.verb) for c in authority_set(view)] == [
        ("http", "a", "update"), ("http", "z", "read"), ("mail", "x", "read")]


def test_check_approval_is_pure() -> None:
    """The pure check accepts the exact record and refuses in a fixed order of reasons."""
    view, _ = fold(every_kind_ops())
    record = _record(view)
    assert check_approval("p", "reviewable", view, record) is None
    refusal = check_approval("p", "editable", view, _record(view, plan_id="x"))
    assert refusal is not None and (refusal.reason, refusal.cause) == (
        "digest_mismatch",
        "wrong_plan",
    )


def test_already_live_claims_are_left_out_of_the_set() -> None:
    """computeAuthoritySet(view, alreadyLive): claims already granted are not asked for."""
    a = author()
    ops = [a.entry(),
           call(a, "b1", authority=[claim("mail", "x", "read"), claim("http", "z", "read")]),
           a.edge("entry", "b1")]
    view, _ = fold(ops)
    live = authority_set(view, already_live=lambda c: c.capability == "http")
    assert [(c.capability, c.scope, c.verb) for c in live] == [("mail", "x", "read")]
    assert len(authority_set(view)) == 2


def test_authority_refusal_compares_as_a_set() -> None:
    """The one comparison the gate and the worker share: order-free, duplicates refused."""
    view, _ = fold(every_kind_ops())
    claims = authority_set(view)
    assert authority_refusal(view, _record(view)) is None
    assert authority_refusal(view, _record(view, authority_set=claims[::-1])) is None
    duplicate = authority_refusal(view, _record(view, authority_set=(*claims, claims[-1])))
    assert duplicate is not None and duplicate.cause == "authority_duplicate"
    missing = authority_refusal(view, _record(view, authority_set=claims[:-1]))
    assert missing is not None and missing.cause == "authority_mismatch"
    assert describe_claim(claims[-1]) in missing.message
