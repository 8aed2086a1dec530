"""The forged tools in the tool-definition formats of the model APIs, and a dispatcher.

The definitions are data only (name, description, argument schema); the host keeps the
tool objects and dispatches each call the model makes with :func:`call_tool`, which never
raises: an unknown tool name is a refusal naming the available ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from orchestration.forge.tool import ForgeTool, ToolResult, refusal

__all__ = ["anthropic_tools", "call_tool", "openai_tools"]


def _listed(tools: Mapping[str, ForgeTool] | Iterable[ForgeTool]) -> list[ForgeTool]:
    return list(tools.values()) if isinstance(tools, Mapping) else list(tools)


def openai_tools(
    tools: Mapping[str, ForgeTool] | Iterable[ForgeTool], *, api: str = "chat"
) -> list[dict[str, Any]]:
    """OpenAI function tools.

    Args:
        tools: The forged tools (the mapping ``tools(tier)`` returns, or any iterable).
        api: ``"chat"`` for Chat Completions (``{"type": "function", "function": {...}}``) or
            ``"responses"`` for the Responses API (the function's fields at the top level).

    """
    out = []
    for tool in _listed(tools):
        function = {
            "name": tool.name,
            "description": tool.description,
            "parameters": dict(tool.parameters),
        }
        if api == "responses":
            out.append({"type": "function", **function})
        elif api == "chat":
            out.append({"type": "function", "function": function})
        else:
            raise ValueError(f"api must be 'chat' or 'responses', got {api!r}")
    return out


def anthropic_tools(tools: Mapping[str, ForgeTool] | Iterable[ForgeTool]) -> list[dict[str, Any]]:
    """Anthropic Messages API tools: ``{"name", "description", "input_schema"}``."""
    return [
        {"name": t.name, "description": t.description, "input_schema": dict(t.parameters)}
        for t in _listed(tools)
    ]


async def call_tool(
    tools: Mapping[str, ForgeTool], name: str, arguments: Mapping[str, Any] | None
) -> ToolResult:
    """Run the tool a model named with the arguments it gave; a refusal if there is none."""
    tool = tools.get(name)
    if tool is None:
        available = ", ".join(sorted(tools)) or "(none)"
        return refusal(
            "unknown_tool", f'There is no tool "{name}" here; the available tools are: {available}.'
        )
    return await tool(arguments)
