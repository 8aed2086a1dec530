"""The ``front`` tier: templates, a plan's outline and slices, and submitting for review.

A front model works with plans without graph mechanics: it instantiates a registered template
by filling its params (a form, not a graph), reads what it made, and submits it. When no
template fits, ``author_plan`` opens an empty plan and hands the request to an authoring agent.
"""

from __future__ import annotations

from typing import Any

from orchestration.forge.prose import issues_json, render_issues
from orchestration.forge.schemas import obj
from orchestration.forge.session import ForgeSession
from orchestration.forge.tool import ForgeTool, ToolResult, refusal
from orchestration.plan.authoring import new_plan_id
from orchestration.plan.encoding import from_json_value
from orchestration.store.base import CreateRefused
from orchestration.templates import InstantiateRefused, describe_param
from orchestration.types import DeclaredField, EnumField

__all__ = ["template_tools"]


def _param_line(params: tuple[DeclaredField, ...]) -> str:
    if not params:
        return "(none)"
    parts = []
    for p in params:
        extra = f" ({'|'.join(p.values)})" if isinstance(p, EnumField) else ""
        parts.append(f"{p.path}: {p.type}{extra}")
    return ", ".join(parts)


def template_tools(session: ForgeSession) -> list[ForgeTool]:
    """``list_templates``, ``instantiate_plan`` and ``author_plan``."""
    orch = session.orch

    async def list_templates(args: dict[str, Any]) -> ToolResult:
        templates = orch.templates()
        if not templates:
            return ToolResult(
                ok=True,
                text="No plan templates are registered. Use author_plan to open an empty plan "
                "for an authoring agent to build.",
                data={"templates": []},
            )
        lines = [f"Templates ({len(templates)}):"]
        for t in templates:
            lines.append(f"  · {t.id} — {t.summary}")
            lines.append(f"    params: {_param_line(t.params)}")
            for p in t.params:
                lines.append(f"      {p.path}: {describe_param(p)}")
        return ToolResult(
            ok=True,
            text="\n".join(lines),
            data={"templates": [t.model_dump(mode="json", exclude_none=True) for t in templates]},
        )

    async def instantiate_plan(args: dict[str, Any]) -> ToolResult:
        template_id = args["template"]
        values = {k: from_json_value(v, "none", k) for k, v in args["args"].items()}
        result = await orch.instantiate(template_id, values, actor_id=session.actor_id)
        if isinstance(result, InstantiateRefused):
            return refusal(
                result.reason,
                f'Could not instantiate template "{template_id}": {result.reason} — '
                f"{result.detail}",
            )
        rendered = await orch.render(result.plan_id, audience="model", with_issues=False)
        return ToolResult(
            ok=True,
            text=f'Instantiated plan {result.plan_id} from template "{template_id}". Read it, '
            f"then submit_plan it for review.\n\n{rendered}\n{render_issues(result.issues)}",
            data={
                "planId": result.plan_id,
                "template": template_id,
                "issues": issues_json(result.issues),
            },
        )

    async def author_plan(args: dict[str, Any]) -> ToolResult:
        request = args["request"]
        plan_id = new_plan_id()
        created = await session.store.create_plan(plan_id, label=request[:80])
        if isinstance(created, CreateRefused):  # pragma: no cover - a fresh random id
            return refusal("duplicate_id", "A fresh plan id collided; call author_plan again.")
        detail = f'\nDetail, verbatim:\n"{args["detail"]}"' if args.get("detail") else ""
        return ToolResult(
            ok=True,
            text=f"Created empty plan {plan_id} (editable). Hand it to an authoring agent with "
            "the request: it builds the plan with the authoring tools (add_node, "
            f'connect_nodes, set_node_config, ...). Request, verbatim:\n"{request}"{detail}',
            data={"planId": plan_id, "request": request},
        )

    return [
        ForgeTool(
            "list_templates",
            "List the registered plan templates: the id to name, what each does, and the "
            "params to fill (name: type).",
            obj({}),
            list_templates,
        ),
        ForgeTool(
            "instantiate_plan",
            "Make a new editable plan from a registered template by filling its params "
            "(list_templates shows them). Returns the plan id, the plan as prose, and its "
            "issues; then submit_plan it. A bad argument is refused with what each param takes.",
            obj(
                {
                    "template": {"type": "string", "description": "The template's id."},
                    "args": {
                        "type": "object",
                        "description": "One value per param, keyed by the param's path.",
                    },
                },
                ("template", "args"),
            ),
            instantiate_plan,
            mutating=True,
        ),
        ForgeTool(
            "author_plan",
            "When no template fits: open a new empty plan for an authoring agent to build "
            "from the request. It does not build the plan itself.",
            obj(
                {
                    "request": {
                        "type": "string",
                        "minLength": 1,
                        "description": "What the plan should do, in words.",
                    },
                    "detail": {"type": "string"},
                },
                ("request",),
            ),
            author_plan,
            mutating=True,
        ),
    ]
