"""A facade over a memory store with the template fixtures, and a tool-calling shorthand."""

from __future__ import annotations

from typing import Any

from orchestration.api import Orchestration, create_orchestration
from orchestration.forge import ForgeTool, ToolResult
from orchestration.store import MemoryPlanStore
from orchestration.tools.allowlist import ToolAllowlist
from tests.unit.templates.fixtures import TEMPLATES

TOOLS = ToolAllowlist(["vet", "search", "notify", "upper", "stamp"])

READ = [{"capability": "text", "scope": "*", "verb": "read"}]


async def make_orch(**kwargs: Any) -> Orchestration:
    kwargs.setdefault("templates", TEMPLATES)
    kwargs.setdefault("invocable", TOOLS)
    return await create_orchestration(store=MemoryPlanStore(), **kwargs)


class Caller:
    """Calls tools by name and remembers nothing but the tools."""

    def __init__(self, tools: dict[str, ForgeTool]) -> None:
        self.tools = tools

    async def __call__(self, name: str, **args: Any) -> ToolResult:
        return await self.tools[name](args)


def call_node(node_id: str, tool: str = "upper", **definition: Any) -> dict[str, Any]:
    """A complete call node in wire form (every required field set)."""
    body: dict[str, Any] = {
        "tool": tool,
        "args": {},
        "output": [{"path": "value", "type": "string"}],
        "authority": READ,
        "replaySafe": True,
        "onIndeterminate": "retry",
        "onMissingValue": "fail",
    }
    body.update(definition)
    return {"id": node_id, "kind": "call", "definition": body}
