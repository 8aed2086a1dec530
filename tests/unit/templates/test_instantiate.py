"""Instantiation: holes filled everywhere data goes, failures as values, provenance rendered."""

from __future__ import annotations

from typing import Any

import pytest

from orchestration.api import Orchestration, create_orchestration
from orchestration.plan.encoding import NodeRef, ParamRef
from orchestration.store import MemoryPlanStore
from orchestration.templates import InstantiateOk, InstantiateRefused
from orchestration.types import (
    AddEdgeOp,
    AddNodeOp,
    BranchDefinition,
    CallDefinition,
    ReasonDefinition,
    SetBoundsOp,
    TemplateProvenance,
    TextPart,
)

from .fixtures import GOOD_ARGS, TEMPLATES, TOOLS, research

pytestmark = pytest.mark.asyncio


async def _orch() -> Orchestration:
    return await create_orchestration(
        store=MemoryPlanStore(), invocable=TOOLS, templates=TEMPLATES
    )


async def _ok(orch: Orchestration, args: dict[str, Any] | None = None) -> str:
    result = await orch.instantiate("research", GOOD_ARGS if args is None else args)
    assert isinstance(result, InstantiateOk), result
    return result.plan_id


async def test_holes_are_filled_in_args_nested_values_prompts_and_predicates() -> None:
    """Each hole becomes its argument: in args, nested lists and dicts, prompts, predicates."""
    orch = await _orch()
    view = (await orch.store.fold(await _ok(orch))).view
    search = view.node("search")
    assert search is not None and isinstance(search.definition, CallDefinition)
    assert search.definition.args == {
        "q": "cats",
        "opts": {"depth": 2, "tags": ["news", "cats"]},
    }
    summarize = view.node("summarize")
    assert summarize is not None and isinstance(summarize.definition, ReasonDefinition)
    assert summarize.definition.prompt == (
        TextPart(text="Summarise, in a tone that is "),
        TextPart(text="formal"),
        TextPart(text="cats"),
        NodeRef("search", "first", "hits"),
    )
    gate = view.node("gate")
    assert gate is not None and isinstance(gate.definition, BranchDefinition)
    assert gate.definition.predicate == {
        "any": [{"path": "vet:e5:e_vet.urgent", "op": "eq", "value": True}]
    }
    notify = view.node("notify")
    assert notify is not None and isinstance(notify.definition, CallDefinition)
    assert notify.definition.args == {"urgent": True}


async def test_a_number_in_a_whole_prompt_part_becomes_its_text() -> None:
    """A hole that is a whole prompt part holds its argument as text (JSON for non-strings)."""
    template = research(prompt=[{"text": "depth "}, ParamRef("depth")], template_id="depthy")
    orch = await create_orchestration(
        store=MemoryPlanStore(), invocable=TOOLS, templates=[template]
    )
    result = await orch.instantiate("depthy", {**GOOD_ARGS, "depth": 2.5})
    assert isinstance(result, InstantiateOk)
    node = (await orch.store.fold(result.plan_id)).view.node("summarize")
    assert node is not None and isinstance(node.definition, ReasonDefinition)
    assert node.definition.prompt[1] == TextPart(text="2.5")


async def test_the_plan_is_editable_with_template_provenance_shown_in_the_render() -> None:
    """The new plan is editable, carries its lineage, and the operator's render shows it."""
    orch = await _orch()
    plan_id = await _ok(orch)
    assert (await orch.store.read_state(plan_id)).state == "editable"
    assert await orch.store.read_provenance(plan_id) == TemplateProvenance(
        template="research", args=GOOD_ARGS
    )
    text = await orch.render(plan_id)
    lineage = text.split("Lineage: instantiated from template research\n", 1)[1]
    assert lineage.startswith('  depth: 2\n  tone: "formal"\n  topic: "cats"\n  urgent: true\n')
    summary = (await orch.store.list_plans())[0]
    assert summary.label == "Search a topic, summarise the hits, notify when urgent"


async def test_ops_are_minted_with_identity_nodes_then_edges_then_bounds() -> None:
    """One add_node per node, one add_edge per edge, then set_bounds; one actor, lamports 1..n."""
    orch = await _orch()
    made = await orch.instantiate("research", GOOD_ARGS, actor_id="agent-7")
    assert isinstance(made, InstantiateOk)
    ops = await orch.store.read_ops(made.plan_id)
    assert [type(op) for op in ops] == [AddNodeOp] * 6 + [AddEdgeOp] * 5 + [SetBoundsOp]
    assert {op.actor_id for op in ops} == {"agent-7"}
    assert [op.lamport for op in ops] == list(range(1, 13))
    assert len({op.op_id for op in ops}) == 12


async def test_the_instantiated_plan_freezes() -> None:
    """A template that passed its checks instantiates into a plan with no blocking issue."""
    orch = await _orch()
    result = await orch.instantiate("research", GOOD_ARGS)
    assert isinstance(result, InstantiateOk) and result.issues == ()
    assert (await orch.freeze_plan(result.plan_id)).ok


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            {k: v for k, v in GOOD_ARGS.items() if k != "depth"},
            'Param "depth" is required and was not supplied; expected a finite number.',
        ),
        (
            {**GOOD_ARGS, "depth": "2"},
            'Param "depth" has the wrong type: expected a finite number, got "2".',
        ),
        (
            {**GOOD_ARGS, "depth": True},
            'Param "depth" has the wrong type: expected a finite number, got bool.',
        ),
        (
            {**GOOD_ARGS, "depth": float("inf")},
            'Param "depth" has the wrong type: expected a finite number, got float.',
        ),
        (
            {**GOOD_ARGS, "topic": "x" * 41},
            'Param "topic" has the wrong type: expected a string of at most 40 bytes, got "'
            + "x" * 40
            + '…".',
        ),
        (
            {**GOOD_ARGS, "tone": "angry"},
            'Param "tone" has the wrong type: expected one of "plain", "formal", got "angry".',
        ),
        (
            {**GOOD_ARGS, "urgent": None},
            'Param "urgent" has the wrong type: expected a boolean, got null.',
        ),
        (
            {**GOOD_ARGS, "colour": "red"},
            'Arg "colour" is not a param of this template; its params are "topic", "depth", '
            '"tone", "urgent".',
        ),
    ],
)
async def test_bad_args_are_refused_with_what_each_param_takes(
    args: dict[str, Any], expected: str
) -> None:
    """A missing, mistyped or undeclared argument is refused as a value; nothing is created."""
    orch = await _orch()
    result = await orch.instantiate("research", args)
    assert result == InstantiateRefused(reason="invalid_args", detail=expected)
    assert await orch.store.list_plans() == []


async def test_every_bad_arg_is_named_at_once() -> None:
    """Two problems, two sentences: a model fixes all of them in one go."""
    orch = await _orch()
    result = await orch.instantiate("research", {"topic": 3, "depth": 1, "tone": "plain"})
    assert isinstance(result, InstantiateRefused)
    assert 'Param "topic" has the wrong type' in result.detail
    assert 'Param "urgent" is required' in result.detail


async def test_unknown_template_names_the_registered_ones() -> None:
    """An unknown id is a value listing what is registered."""
    orch = await _orch()
    assert await orch.instantiate("nope", {}) == InstantiateRefused(
        reason="unknown_template",
        detail='No template registered with id "nope". Registered templates: "research".',
    )


async def test_a_taken_plan_id_is_refused() -> None:
    """Instantiating into an existing plan id is refused and leaves that plan alone."""
    orch = await _orch()
    await orch.store.create_plan("p1")
    result = await orch.instantiate("research", GOOD_ARGS, plan_id="p1")
    assert isinstance(result, InstantiateRefused) and result.reason == "duplicate_id"
    assert (await orch.store.read_state("p1")).revision == 0


async def test_templates_lists_what_a_model_fills() -> None:
    """templates() gives id, summary and params, and nothing of the graph."""
    orch = await _orch()
    (summary,) = orch.templates()
    assert summary.id == "research"
    assert [p.path for p in summary.params] == ["topic", "depth", "tone", "urgent"]
    assert set(summary.model_dump()) == {"id", "summary", "params"}


async def test_a_template_written_as_json_reads_its_holes_as_params() -> None:
    """In JSON, a hole is {"$param": {"path"}}; it round-trips through the wire form."""
    from orchestration.templates import PlanTemplate

    template = research()
    text = template.model_dump_json()
    assert '"q":{"$param":{"path":"topic"}}' in text
    again = PlanTemplate.model_validate_json(text)
    assert again == template
    orch = await create_orchestration(store=MemoryPlanStore(), invocable=TOOLS, templates=[again])
    assert isinstance(await orch.instantiate("research", GOOD_ARGS), InstantiateOk)
