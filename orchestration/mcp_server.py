"""An MCP server exposing one forge tier, built on the official ``mcp`` SDK.

Any MCP client (a desktop assistant, an agent framework) can then author plans: ``tools/list``
advertises the tier's tools with their JSON Schemas (and whether each changes a plan), and
``tools/call`` runs one. A refusal comes back as a normal result flagged ``isError`` with the
refusal's text (its code and fix) and its structured form, so the model reads it and corrects
itself; the protocol-level error channel is never used for a plan's problems.

``orch mcp --tier authoring --store plans.sqlite3 --tools pkg.tools:TOOLS`` serves it over
stdio. Requires the ``mcp`` extra (``pip install 'orchestration[mcp]'``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp.types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server

from orchestration.forge import ForgeTool, call_tool

__all__ = ["build_mcp_server", "serve_stdio"]

_INSTRUCTIONS = (
    "Tools for authoring plans that a person reviews and approves before they run once. "
    "Build or instantiate a plan, read its issues (each names its fix), fix them, then "
    "submit_plan it. No tool approves a plan: an operator does."
)


def _annotations(tool: ForgeTool) -> types.ToolAnnotations:
    return types.ToolAnnotations(
        read_only_hint=not tool.mutating,
        destructive_hint=False,
        idempotent_hint=not tool.mutating,
        open_world_hint=False,
    )


def build_mcp_server(
    tools: Mapping[str, ForgeTool], *, name: str = "orchestration", version: str = "0.1.0"
) -> Server[Any]:
    """A low-level MCP ``Server`` listing and running ``tools`` (one forge tier).

    Args:
        tools: The forged tools, as ``Orchestration.tools(tier)`` returns them.
        name: The server name clients see.
        version: The server version clients see.

    """

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=tool.name,
                    description=tool.description,
                    input_schema=dict(tool.parameters),
                    annotations=_annotations(tool),
                )
                for tool in tools.values()
            ]
        )

    async def run_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        result = await call_tool(tools, params.name, params.arguments)
        return types.CallToolResult(
            content=[types.TextContent(text=result.text)],
            structured_content=result.to_json(),
            is_error=not result.ok,
        )

    return Server(
        name,
        version=version,
        instructions=_INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=run_tool,
    )


async def serve_stdio(server: Server[Any]) -> None:
    """Serve ``server`` over this process's stdin and stdout until the client disconnects."""
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
