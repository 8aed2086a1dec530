"""A template with holes in call args (nested too), prompts and a predicate; its allowlist."""

from __future__ import annotations

from typing import Any

from orchestration.plan.authoring import claim, ref
from orchestration.plan.encoding import ParamRef
from orchestration.templates import PlanTemplate, TemplateNode
from orchestration.tools.allowlist import ToolAllowlist
from orchestration.types import (
    BooleanField,
    EnumField,
    NumberField,
    PlanEdge,
    StringField,
)

__all__ = ["TEMPLATES", "TOOLS", "edge", "research"]

TOOLS = ToolAllowlist(["vet", "search", "notify"])

READ = [claim("web", "*", "read").model_dump()]


def edge(edge_id: str, source: str, target: str, handle: str = "always") -> PlanEdge:
    return PlanEdge.model_validate({"id": edge_id, "from": source, "to": target, "handle": handle})


def _call(
    tool: str, args: dict[str, Any], output: list[dict[str, Any]], **extra: Any
) -> dict[str, Any]:
    return {
        "tool": tool,
        "args": args,
        "output": output,
        "authority": READ,
        "replaySafe": True,
        "onIndeterminate": "retry",
        "onMissingValue": "fail",
        **extra,
    }


def research(
    *,
    vet_declassifies: tuple[str, ...] = ("topic", "depth", "urgent"),
    search_args: dict[str, Any] | None = None,
    prompt: list[Any] | None = None,
    extra_nodes: tuple[TemplateNode, ...] = (),
    extra_edges: tuple[PlanEdge, ...] = (),
    template_id: str = "research",
    notify_tool: str = "notify",
) -> PlanTemplate:
    """entry → vet → search → summarize → gate -match→ notify, with holes everywhere data goes."""
    return PlanTemplate(
        id=template_id,
        summary="Search a topic, summarise the hits, notify when urgent",
        params=(
            StringField(path="topic", max_bytes=40),
            NumberField(path="depth"),
            EnumField(path="tone", values=("plain", "formal")),
            BooleanField(path="urgent"),
        ),
        nodes=(
            TemplateNode(id="entry", kind="entry"),
            TemplateNode(
                id="vet",
                kind="call",
                phase="gather",
                definition=_call(
                    "vet",
                    {},
                    [
                        {"path": "topic", "type": "string"},
                        {"path": "depth", "type": "number"},
                        {"path": "urgent", "type": "boolean"},
                    ],
                    declassifies=list(vet_declassifies),
                ),
            ),
            TemplateNode(
                id="search",
                kind="call",
                phase="gather",
                definition=_call(
                    "search",
                    search_args
                    if search_args is not None
                    else {
                        "q": ParamRef("topic"),
                        "opts": {"depth": ParamRef("depth"), "tags": ["news", ParamRef("topic")]},
                    },
                    [{"path": "hits", "type": "string"}],
                ),
            ),
            TemplateNode(
                id="summarize",
                kind="reason",
                phase="think",
                definition={
                    "prompt": prompt
                    if prompt is not None
                    else [
                        {"text": "Summarise, in a tone that is "},
                        ParamRef("tone"),
                        {"text": ParamRef("topic")},
                        ref("search", path="hits"),
                    ],
                    "outputSchema": '{"type": "object", "properties": {"summary": '
                    '{"type": "string"}}, "required": ["summary"]}',
                    "maxAttempts": 2,
                },
            ),
            TemplateNode(
                id="gate",
                kind="branch",
                definition={
                    "evaluator": "structured",
                    "predicate": {
                        "any": [
                            {"path": "vet:e5:e_vet.urgent", "op": "eq", "value": ParamRef("urgent")}
                        ]
                    },
                },
            ),
            TemplateNode(
                id="notify",
                kind="call",
                definition=_call(notify_tool, {"urgent": ParamRef("urgent")}, []),
            ),
            *extra_nodes,
        ),
        edges=(
            edge("e_vet", "entry", "vet"),
            edge("e_search", "vet", "search"),
            edge("e_think", "search", "summarize"),
            edge("e_gate", "summarize", "gate"),
            edge("e_notify", "gate", "notify", "match"),
            *extra_edges,
        ),
    )


TEMPLATES = [research()]
"""What the CLI tests register with ``--templates``."""

GOOD_ARGS: dict[str, Any] = {"topic": "cats", "depth": 2, "tone": "formal", "urgent": True}
