"""The MCP server, driven in-process by the SDK's own client over JSON-RPC streams."""

from __future__ import annotations

from typing import Any

import mcp.types as types
import pytest
from mcp import Client

from orchestration.forge.mcp import build_mcp_server

from .helpers import call_node, make_orch

pytestmark = pytest.mark.asyncio


def _text(result: types.CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    return block.text


async def test_tools_are_listed_with_schemas_and_hints() -> None:
    """tools/list gives each tool's schema; read-only tools say so."""
    orch = await make_orch()
    server = build_mcp_server(orch.tools("authoring"))
    async with Client(server, mode="legacy") as client:
        listed = await client.list_tools()
    by_name = {tool.name: tool for tool in listed.tools}
    assert len(by_name) == 21
    assert by_name["plan_outline"].annotations is not None
    assert by_name["plan_outline"].annotations.read_only_hint is True
    assert by_name["add_node"].annotations.read_only_hint is False  # type: ignore[union-attr]
    assert by_name["add_node"].input_schema["required"] == ["planId", "node"]


async def test_an_agent_builds_freezes_and_submits_through_mcp() -> None:
    """Over MCP: build a plan, get the freeze issues back as an error result, fix, submit."""
    orch = await make_orch()
    server = build_mcp_server(orch.tools("authoring", actor_id="mcp-agent"))
    async with Client(server, mode="legacy") as client:

        async def call(name: str, **args: Any) -> types.CallToolResult:
            return await client.call_tool(name, args)

        created = await call("create_plan")
        assert not created.is_error
        plan_id = created.structured_content["data"]["planId"]  # type: ignore[index]
        await call("add_node", planId=plan_id, node={"id": "entry", "kind": "entry"})
        up = call_node("up")
        del up["definition"]["onIndeterminate"]
        await call("add_node", planId=plan_id, node=up)
        await call("connect_nodes", planId=plan_id, edge={"from": "entry", "to": "up"})

        refused = await call("submit_plan", planId=plan_id)
        assert refused.is_error
        assert refused.structured_content["code"] == "freeze_refused"  # type: ignore[index]
        assert "(blocking) missing_on_indeterminate [node up]" in _text(refused)

        fixed = await call("set_node_field", planId=plan_id, nodeId="up",
                           path="onIndeterminate", value="retry")
        assert not fixed.is_error, _text(fixed)
        submitted = await call("submit_plan", planId=plan_id)
        assert not submitted.is_error, _text(submitted)
        assert f"Plan {plan_id} is submitted" in _text(submitted)

        unknown = await call("approve_plan", planId=plan_id)
        assert unknown.is_error and "There is no tool" in _text(unknown)
    state = await orch.store.read_state(plan_id)
    assert state.state == "reviewable"
    assert {op.actor_id for op in await orch.store.read_ops(plan_id)} == {"mcp-agent"}


async def test_the_front_tier_over_mcp() -> None:
    """A front client sees six tools and instantiates a template."""
    orch = await make_orch()
    async with Client(build_mcp_server(orch.tools("front")), mode="legacy") as client:
        listed = await client.list_tools()
        assert [t.name for t in listed.tools][:2] == ["list_templates", "instantiate_plan"]
        made = await client.call_tool(
            "instantiate_plan",
            {"template": "research",
             "args": {"topic": "owls", "depth": 1, "tone": "plain", "urgent": False}},
        )
    assert not made.is_error, _text(made)
    assert made.structured_content["data"]["template"] == "research"  # type: ignore[index]


async def test_an_mcp_client_reads_the_tools_a_plan_may_call_with_their_shapes() -> None:
    """list_tools over MCP: each allowed tool's signature and input schema."""
    from workers.example_tools import TOOLBOX

    orch = await make_orch(invocable=TOOLBOX, templates=())
    server = build_mcp_server(orch.tools("authoring"))
    async with Client(server, mode="legacy") as client:
        listed = await client.call_tool("list_tools", {})
    assert not listed.is_error
    assert "files.write(path: string, text: string) -> text" in _text(listed)
    tools = listed.structured_content["data"]["tools"]  # type: ignore[index]
    assert [t["name"] for t in tools] == list(TOOLBOX.names())
    assert tools[0]["inputSchema"]["properties"] == {"dir": {"type": "string"}}
