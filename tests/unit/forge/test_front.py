"""The front tier: list and instantiate templates, read, submit; refusals a model can act on."""

from __future__ import annotations

import pytest

from tests.unit.templates.fixtures import GOOD_ARGS

from .helpers import Caller, make_orch

pytestmark = pytest.mark.asyncio


async def test_a_front_model_instantiates_reads_and_submits() -> None:
    """Fill a template's form, read the outline and a slice, submit; it stops at reviewable."""
    orch = await make_orch()
    call = Caller(orch.tools("front", actor_id="front-model"))
    listed = await call("list_templates")
    assert "  · research — Search a topic, summarise the hits, notify when urgent" in listed.text
    assert "    params: topic: string, depth: number, tone: enum (plain|formal), urgent: boolean" \
        in listed.text
    assert listed.data["templates"][0]["params"][0] == {
        "path": "topic", "type": "string", "maxBytes": 40
    }
    made = await call("instantiate_plan", template="research", args=GOOD_ARGS)
    assert made.ok and made.data["issues"] == []
    plan_id = made.data["planId"]
    assert made.text.startswith(f'Instantiated plan {plan_id} from template "research".')
    assert "Lineage: instantiated from template research" in made.text
    outline = await call("plan_outline", planId=plan_id)
    assert "  · gather [vet, search] tools: vet, search" in outline.text
    sliced = await call("plan_read", planId=plan_id, phase="think")
    assert [n["id"] for n in sliced.data["nodes"]] == ["summarize"]
    assert sliced.data["boundary"] == {"incoming": ["search"], "outgoing": ["gate"]}
    submitted = await call("submit_plan", planId=plan_id)
    assert submitted.ok and (await orch.store.read_state(plan_id)).state == "reviewable"
    assert {op.actor_id for op in await orch.store.read_ops(plan_id)} == {"front-model"}


async def test_instantiation_refusals_name_the_fix() -> None:
    """Unknown template names the registered ones; bad args say what each param takes."""
    call = Caller((await make_orch()).tools("front"))
    unknown = await call("instantiate_plan", template="reserch", args={})
    assert unknown.code == "unknown_template"
    assert unknown.text == (
        'Could not instantiate template "reserch": unknown_template — No template registered '
        'with id "reserch". Registered templates: "research".'
    )
    bad = await call("instantiate_plan", template="research", args={**GOOD_ARGS, "depth": "deep"})
    assert bad.code == "invalid_args"
    assert 'Param "depth" has the wrong type: expected a finite number, got "deep".' in bad.text
    extra = await call("instantiate_plan", template="research", args={**GOOD_ARGS, "colour": 1})
    assert extra.code == "invalid_args"
    assert 'Arg "colour" is not a param of this template' in extra.text
    tagged = await call("instantiate_plan", template="research",
                        args={**GOOD_ARGS, "topic": {"$ref": {"node": "x"}}})
    assert tagged.code == "undecodable_value"
    missing = await call("instantiate_plan", template="research")
    assert missing.code == "invalid_arguments" and "'args' is a required property" in missing.text


async def test_submitting_a_broken_plan_returns_its_issues() -> None:
    """A plan that cannot freeze stays editable; each issue comes back with its code."""
    orch = await make_orch()
    call = Caller(orch.tools("front"))
    opened = await call("author_plan", request="Tidy the inbox", detail="only unread mail")
    assert opened.ok and '"Tidy the inbox"' in opened.text
    plan_id = opened.data["planId"]
    assert (await orch.store.list_plans())[0].label == "Tidy the inbox"
    refused = await call("submit_plan", planId=plan_id)
    assert refused.code == "freeze_refused"
    assert [i["code"] for i in refused.data["issues"]] == ["no_entry"]
    assert (await orch.store.read_state(plan_id)).state == "editable"


async def test_no_templates_points_to_author_plan() -> None:
    """With nothing registered, list_templates says what to do instead."""
    call = Caller((await make_orch(templates=())).tools("front"))
    listed = await call("list_templates")
    assert listed.ok and "Use author_plan" in listed.text and listed.data == {"templates": []}
