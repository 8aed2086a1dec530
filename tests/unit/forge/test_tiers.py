"""The two tiers: which tools each has, their schemas, the export formats; none approves."""

from __future__ import annotations

import ast
from pathlib import Path

import jsonschema
import pytest

from orchestration.forge import FRONT_TOOLS, anthropic_tools, call_tool, openai_tools

from .helpers import make_orch

pytestmark = pytest.mark.asyncio

AUTHORING = [
    "create_plan",
    "add_node",
    "set_node_config",
    "set_node_field",
    "set_node_phase",
    "connect_nodes",
    "remove_node",
    "disconnect_edge",
    "set_bounds",
    "clone_plan",
    "get_plan",
    "validate_plan",
    "plan_status",
    "list_tools",
    "plan_outline",
    "plan_read",
    "raw_plan",
    "raw_diff",
    "raw_ops",
    "freeze_plan",
    "submit_plan",
]


async def test_front_withholds_graph_mechanics_and_authoring_exposes_them() -> None:
    """front: templates, outline, slice, submit; authoring: every graph edit and read."""
    orch = await make_orch()
    front = orch.tools("front")
    assert list(front) == list(FRONT_TOOLS)
    assert not {"add_node", "connect_nodes", "set_node_field", "remove_node"} & set(front)
    assert list(orch.tools("authoring")) == AUTHORING


async def test_no_tool_of_any_tier_approves() -> None:
    """No tool is named for approval, and no forge module calls the approval gate."""
    orch = await make_orch()
    names = [*orch.tools("front"), *orch.tools("authoring")]
    assert not [n for n in names if "approv" in n]
    forge = Path(__file__).resolve().parents[3] / "orchestration" / "forge"
    calls = [
        f"{path.name}:{node.lineno}"
        for path in forge.glob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Attribute) and node.attr in {"approve_plan", "transition"}
    ]
    assert calls == []


async def test_every_tool_has_a_description_and_a_valid_object_schema() -> None:
    """Each schema is a Draft 2020-12 object schema with no oneOf/anyOf at its top level."""
    orch = await make_orch()
    for tier in ("front", "authoring"):
        for tool in orch.tools(tier).values():  # type: ignore[arg-type]
            assert len(tool.description) > 40, tool.name
            jsonschema.Draft202012Validator.check_schema(dict(tool.parameters))
            assert tool.parameters["type"] == "object", tool.name
            assert not {"anyOf", "oneOf", "allOf", "$defs"} & set(tool.parameters), tool.name
            assert '"$ref": "#/' not in str(tool.parameters).replace("'", '"'), tool.name


async def test_graph_tools_teach_the_grammar_and_name_the_allowlist() -> None:
    """add_node's description carries the node grammar and the allowlisted tool names."""
    orch = await make_orch()
    text = orch.tools("authoring")["add_node"].description
    assert "NODE GRAMMAR" in text and "branch → match | no_match | default | error" in text
    assert "notify; search; stamp; upper; vet" in text


async def test_exports_in_openai_and_anthropic_formats() -> None:
    """The same tools, shaped for each API; an unknown API flavour is refused."""
    tools = (await make_orch()).tools("front")
    chat = openai_tools(tools)
    assert chat[0] == {
        "type": "function",
        "function": {
            "name": "list_templates",
            "description": tools["list_templates"].description,
            "parameters": dict(tools["list_templates"].parameters),
        },
    }
    responses = openai_tools(tools, api="responses")
    assert responses[-1]["name"] == "submit_plan" and responses[-1]["type"] == "function"
    anthropic = anthropic_tools(tools.values())
    assert [t["name"] for t in anthropic] == list(FRONT_TOOLS)
    assert anthropic[-1]["input_schema"]["required"] == ["planId"]
    with pytest.raises(ValueError, match="chat"):
        openai_tools(tools, api="legacy")


async def test_an_unknown_tool_name_is_a_refusal_naming_the_tools() -> None:
    """call_tool never raises: a made-up name gets the list of real ones."""
    tools = (await make_orch()).tools("front")
    result = await call_tool(tools, "approve_plan", {"planId": "x"})
    assert not result.ok and result.code == "unknown_tool"
    assert "list_templates, plan_outline" in result.text


async def test_an_unknown_tier_is_refused() -> None:
    """Only front and authoring exist."""
    orch = await make_orch()
    with pytest.raises(ValueError, match="front"):
        orch.tools("admin")  # type: ignore[arg-type]
