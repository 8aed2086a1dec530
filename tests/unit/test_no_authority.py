"""A call claiming no authority (``authority: []``) is allowed: it freezes, approves and runs.

Freeze reports an advisory ``missing_authority`` naming each such call, the operator view marks
it as potentially mutating, and a deployment that wants every call to claim its authority turns
on ``strict_authority`` at construction, which makes the same issue blocking.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from orchestration.api import create_orchestration
from orchestration.plan.authoring import PlanAuthor, claim, ref
from orchestration.review.approval import ApprovalOk, approval_record
from orchestration.store.memory import MemoryPlanStore
from orchestration.testing import FakeToolbox, run_in_process
from orchestration.types import AddNodeOp, ArtifactHandle, CallNode, PlanOp, StringField

from .validation.helpers import TOOLS, FakeCell, author, call, every_kind_ops


def _without_authority(ops: list[PlanOp]) -> list[PlanOp]:
    """The same plan with every call's authority emptied."""
    stripped: list[PlanOp] = []
    for op in ops:
        if isinstance(op, AddNodeOp) and isinstance(op.node, CallNode):
            definition = op.node.definition.model_copy(update={"authority": ()})
            node = op.node.model_copy(update={"definition": definition})
            op = op.model_copy(update={"node": node})
        stripped.append(op)
    return stripped


def _single_call(a: PlanAuthor) -> list[PlanOp]:
    return [a.entry(input=[StringField(path="q")]),
            call(a, "fetch", args={"url": ref("entry", path="q")}, declassifies=["body"]),
            a.edge("entry", "fetch")]


def _error_edge(a: PlanAuthor) -> list[PlanOp]:
    return [a.entry(),
            call(a, "fetch"),
            call(a, "report", tool="mail.send", args={"to": ["ops@example.org"]},
                 replay_safe=False, on_indeterminate="halt"),
            a.edge("entry", "fetch"),
            a.edge("fetch", "report", "error")]


def _diamond(a: PlanAuthor) -> list[PlanOp]:
    return [a.entry(),
            call(a, "fetch"),
            call(a, "left", tool="text.upper", args={"s": ref("fetch", path="body")}),
            call(a, "right", tool="text.lower", args={"s": ref("fetch", path="body")}),
            a.join("both"),
            a.edge("entry", "fetch"), a.edge("fetch", "left"), a.edge("fetch", "right"),
            a.edge("left", "both"), a.edge("right", "both")]


PLANS: dict[str, Callable[[PlanAuthor], list[PlanOp]]] = {
    "every_kind": every_kind_ops,
    "single_call": _single_call,
    "error_edge": _error_edge,
    "diamond": _diamond,
}
RUN_INPUT = {"city": "Oslo", "urgent": True, "q": "tides"}


@pytest.mark.asyncio
@pytest.mark.parametrize("name", sorted(PLANS))
async def test_a_plan_claiming_no_authority_freezes_approves_and_runs(name: str) -> None:
    """Every call without authority: one advisory each, an empty approval set, a full run."""
    ops = _without_authority(PLANS[name](author()))
    store = MemoryPlanStore()
    cell = FakeCell()
    orch = await create_orchestration(store=store, invocable=TOOLS, evaluators=[cell])
    await store.create_plan("p")
    await store.append_ops("p", ops)
    frozen = await orch.freeze_plan("p")
    assert frozen.ok, frozen.issues
    calls = [op.node.id for op in ops if isinstance(op, AddNodeOp) and op.node.kind == "call"]
    assert [(i.code, i.severity, i.node_id) for i in frozen.issues] == [
        ("missing_authority", "advisory", node_id) for node_id in calls
    ]
    view = (await store.fold("p")).view
    rendered = await orch.render("p")
    assert rendered.count("NO AUTHORITY CLAIMED — whether this changes anything is UNKNOWN. "
                          "Treat as potentially mutating.") == len(calls)
    record = approval_record(view, "ops-lead", "2026-01-01T00:00:00Z")
    assert record.authority_set == ()
    assert isinstance(await orch.approve_plan("p", record), ApprovalOk)
    assert (await store.read_state("p")).state == "executable"
    tools = FakeToolbox(nodes={"read_doc": ArtifactHandle(tag="memory", locator="doc-1")})
    _, projection = await run_in_process(view, RUN_INPUT, tools, evaluators=[cell])
    assert projection.outcome == "completed", projection
    assert projection.node_status_by_id[calls[0]] == "done"


@pytest.mark.asyncio
async def test_strict_authority_refuses_the_freeze_naming_the_fix() -> None:
    """With strict_authority at construction the same plan stays editable, one issue per call."""
    store = MemoryPlanStore()
    orch = await create_orchestration(
        store=store, invocable=TOOLS, evaluators=[FakeCell()], strict_authority=True
    )
    await store.create_plan("p")
    await store.append_ops("p", _without_authority(_error_edge(author())))
    frozen = await orch.freeze_plan("p")
    assert not frozen.ok
    assert [(i.code, i.severity, i.node_id) for i in frozen.issues] == [
        ("missing_authority", "blocking", "fetch"),
        ("missing_authority", "blocking", "report"),
    ]
    assert all("strict_authority" in i.message and "add the claims" in i.message
               for i in frozen.issues)
    assert (await store.read_state("p")).state == "editable"


@pytest.mark.asyncio
async def test_a_freeze_override_cannot_relax_strict_authority() -> None:
    """The strict setting is the deployment's: a per-freeze override keeps it."""
    from orchestration.review.validation import FreezeInputs

    store = MemoryPlanStore()
    orch = await create_orchestration(store=store, invocable=TOOLS, strict_authority=True)
    await store.create_plan("p")
    await store.append_ops("p", _without_authority(_single_call(author())))
    frozen = await orch.freeze_plan("p", FreezeInputs(invocable=TOOLS))
    assert not frozen.ok and frozen.issues[0].severity == "blocking"


@pytest.mark.asyncio
async def test_only_the_calls_without_claims_are_reported() -> None:
    """A plan mixing claimed and unclaimed calls reports just the unclaimed ones."""
    a = author()
    ops = [a.entry(), call(a, "claimed", authority=[claim("http", "x", "read")]),
           call(a, "bare", authority=[]), a.edge("entry", "claimed"), a.edge("claimed", "bare")]
    store = MemoryPlanStore()
    orch = await create_orchestration(store=store, invocable=TOOLS)
    await store.create_plan("p")
    await store.append_ops("p", ops)
    frozen = await orch.freeze_plan("p")
    assert frozen.ok and [i.node_id for i in frozen.issues] == ["bare"]
