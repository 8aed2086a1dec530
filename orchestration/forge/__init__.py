"""The forge: the tools a model authors plans with, in two tiers.

``forge_tools(orch, "front")`` withholds graph mechanics: list and instantiate templates, open
an empty plan for an authoring agent, read a plan's outline or a slice, and submit a plan for
review. ``forge_tools(orch, "authoring")`` exposes them: create and clone plans, add and remove
nodes and edges, set definitions, fields, phases and bounds (values in the tagged JSON form,
references as ``{"$ref": ...}``), read the plan (prose, outline, slice, raw JSON, op log, diff),
validate it, freeze it and submit it.

Every tool is a :class:`ForgeTool` (a name, a description addressed to the model, a JSON Schema
for its arguments, an async handler); calling it returns a :class:`ToolResult`, and every
refusal is a value with a stable code and a message naming the fix, never an exception. No
tool of any tier approves a plan: approval is an operator's act.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orchestration.forge.edit import edit_tools
from orchestration.forge.export import anthropic_tools, call_tool, openai_tools
from orchestration.forge.front import template_tools
from orchestration.forge.prose import NODE_VOCABULARY
from orchestration.forge.read import outline_tool, raw_tools, read_tools, slice_tool
from orchestration.forge.review import freeze_tool, submit_tool
from orchestration.forge.session import ForgeSession
from orchestration.forge.tool import ForgeTool, Tier, ToolResult, refusal

if TYPE_CHECKING:
    from orchestration.api import Orchestration

__all__ = [
    "FRONT_TOOLS",
    "NODE_VOCABULARY",
    "ForgeTool",
    "Tier",
    "ToolResult",
    "anthropic_tools",
    "call_tool",
    "forge_tools",
    "openai_tools",
    "refusal",
]

FRONT_TOOLS = (
    "list_templates",
    "instantiate_plan",
    "author_plan",
    "plan_outline",
    "plan_read",
    "submit_plan",
)
"""The ``front`` tier's tools, in the order they are listed."""


def forge_tools(
    orch: Orchestration, tier: Tier, *, actor_id: str = "orchestration"
) -> dict[str, ForgeTool]:
    """The tools of ``tier`` over ``orch``, keyed by name (see the module docstring).

    Args:
        orch: The facade: its store, allowlist, cells and templates.
        tier: ``"front"`` or ``"authoring"``.
        actor_id: Who the ops the tools mint are attributed to.

    Raises:
        ValueError: ``tier`` is neither.

    """
    session = ForgeSession(orch, actor_id)
    if tier == "front":
        tools = [
            *template_tools(session),
            outline_tool(session),
            slice_tool(session),
            submit_tool(session),
        ]
    elif tier == "authoring":
        tools = [
            *edit_tools(session),
            *read_tools(session),
            *raw_tools(session),
            freeze_tool(session),
            submit_tool(session),
        ]
    else:
        raise ValueError(f"tier must be 'front' or 'authoring', got {tier!r}")
    return {tool.name: tool for tool in tools}
