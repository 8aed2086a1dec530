"""Construction checks: a bad template fails boot with its issues; the taint rule for holes."""

from __future__ import annotations

import pytest

from orchestration.api import create_orchestration
from orchestration.plan.encoding import ParamRef
from orchestration.store import MemoryPlanStore
from orchestration.templates import InvalidTemplateError, PlanTemplate, TemplateNode

from .fixtures import TOOLS, edge, research

pytestmark = pytest.mark.asyncio


async def _codes(*templates: PlanTemplate) -> list[str]:
    with pytest.raises(InvalidTemplateError) as refused:
        await create_orchestration(store=MemoryPlanStore(), invocable=TOOLS, templates=templates)
    assert refused.value.code == "invalid_template"
    head = f'[invalid_template] template "{templates[-1].id}" is invalid: '
    assert str(refused.value).startswith(head)
    return [issue.code for issue in refused.value.issues]


async def test_a_sound_template_boots() -> None:
    """The fixture template passes every check."""
    orch = await create_orchestration(
        store=MemoryPlanStore(), invocable=TOOLS, templates=[research()]
    )
    assert [t.id for t in orch.templates()] == ["research"]


async def test_a_hole_naming_no_param_is_refused() -> None:
    """unknown_param names the declared params."""
    bad = research(search_args={"q": ParamRef("subject")})
    with pytest.raises(InvalidTemplateError) as refused:
        await create_orchestration(store=MemoryPlanStore(), invocable=TOOLS, templates=[bad])
    (issue,) = refused.value.issues
    assert issue.code == "unknown_param" and issue.node_id == "search"
    assert '"subject"' in issue.message and '"topic", "depth", "tone", "urgent"' in issue.message


async def test_a_hole_outside_staged_values_is_refused() -> None:
    """A hole may not choose a tool, a claim or an output: those are the approved shape."""
    node = TemplateNode(
        id="sneaky",
        kind="call",
        definition={"tool": ParamRef("topic"), "args": {}, "authority": [ParamRef("tone")]},
    )
    codes = await _codes(research(extra_nodes=(node,)))
    assert codes == ["misplaced_param", "misplaced_param"]


async def test_a_definition_that_cannot_take_its_holes_is_refused() -> None:
    """A number param in a prompt part's text cannot build a reason node: invalid_definition."""
    assert await _codes(research(prompt=[{"text": ParamRef("depth")}])) == ["invalid_definition"]


async def test_a_tool_off_the_allowlist_fails_boot() -> None:
    """The probe instantiation is frozen against the allowlist: unknown_tool."""
    assert await _codes(research(notify_tool="rm.rf")) == ["unknown_tool"]


async def test_structural_problems_fail_boot() -> None:
    """Whatever freeze would refuse for every argument refuses the template: here a cycle."""
    assert "cycle" in await _codes(research(extra_edges=(edge("e_back", "notify", "vet"),)))


async def test_a_hole_reaching_a_call_without_declassification_is_refused() -> None:
    """The route to notify passes no node declassifying "urgent": param_not_declassified."""
    with pytest.raises(InvalidTemplateError) as refused:
        await create_orchestration(
            store=MemoryPlanStore(),
            invocable=TOOLS,
            templates=[research(vet_declassifies=("topic", "depth"))],
        )
    (issue,) = refused.value.issues
    assert issue.code == "param_not_declassified" and issue.node_id == "notify"
    assert issue.message == (
        'Template "research" routes template hole "urgent" into the args of call node "notify" '
        "through a route that does not declassify it; every route to that call must pass a node "
        'declaring "urgent" in "declassifies".'
    )


async def test_every_route_must_declassify_not_just_one() -> None:
    """A second route entry → search bypassing vet leaves every hole after it undeclassified."""
    with pytest.raises(InvalidTemplateError) as refused:
        await create_orchestration(
            store=MemoryPlanStore(),
            invocable=TOOLS,
            templates=[research(extra_edges=(edge("e_bypass", "entry", "search"),))],
        )
    laundering = [
        (i.node_id, i.message.split('template hole "')[1].split('"')[0])
        for i in refused.value.issues
        if i.code == "param_not_declassified"
    ]
    assert laundering == [("search", "topic"), ("search", "depth"), ("notify", "urgent")]


async def test_a_declassified_parent_path_covers_its_children() -> None:
    """The prefix rule: declassifying "topic" covers a hole "topic.en", and the reverse."""
    from orchestration.templates.taint import covers

    assert covers("topic", "topic.en") and covers("topic.en", "topic") and covers("a", "a")
    assert not covers("topic", "topics") and not covers("top", "topic")


async def test_duplicate_ids_fail_boot() -> None:
    """Two nodes with one id, two edges with one id, two templates with one id."""
    twice = TemplateNode(id="notify", kind="join")
    assert await _codes(research(extra_nodes=(twice,))) == ["duplicate_node_id"]
    assert await _codes(research(extra_edges=(edge("e_vet", "vet", "notify"),))) == [
        "duplicate_edge_id"
    ]
    assert await _codes(research(), research()) == ["duplicate_template_id"]


async def test_param_declarations_are_checked() -> None:
    """A param declared twice, or an enum with no values, fails boot."""
    from orchestration.types import EnumField, StringField

    base = research()
    twice = base.model_copy(update={"params": (*base.params, StringField(path="topic"))})
    assert await _codes(twice) == ["duplicate_param"]
    empty = base.model_copy(update={"params": (*base.params, EnumField(path="mode", values=()))})
    assert await _codes(empty) == ["invalid_param"]
