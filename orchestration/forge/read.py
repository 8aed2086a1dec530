"""The reading tools: render, validate, status, outline, slice and the raw views.

Reading never changes a plan. The outline and the slice are how a model works on a plan larger
than it can hold: one flat level with the verbatim ids it must cite, then one phase or one node
in full with the ids just across its boundary.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import TypeAdapter

from orchestration.forge.prose import issues_json, node_json, render_issues
from orchestration.forge.schemas import PLAN_ID, obj
from orchestration.forge.session import ForgeSession
from orchestration.forge.tool import ForgeTool, ToolResult, refusal
from orchestration.tools.toolbox import catalog_lines, tool_catalog
from orchestration.types import PlanOp

__all__ = ["outline_tool", "raw_tools", "read_tools", "slice_tool"]

_OPS = TypeAdapter[list[PlanOp]](list[PlanOp])


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def outline_tool(session: ForgeSession) -> ForgeTool:
    """``plan_outline``: one flat level with verbatim node ids, tools and issue counts."""

    async def plan_outline(args: dict[str, Any]) -> ToolResult:
        outline = await session.orch.outline(args["planId"])
        lines = [
            f"Outline of {outline.plan_id} (state {outline.state}, {outline.node_count} "
            f"node(s), digest {outline.digest})."
        ]
        entries = [*outline.phases, *([outline.unphased] if outline.unphased else [])]
        for entry in entries:
            tools = f" tools: {', '.join(entry.tools)}" if entry.tools else ""
            lines.append(
                f"  · {entry.phase or '(unphased)'} [{', '.join(entry.node_ids)}]{tools} — "
                f"{entry.summary} ({entry.issue_count} issue(s))"
            )
        if not entries:
            lines.append("  (no nodes)")
        return ToolResult(ok=True, text="\n".join(lines), data=outline.model_dump(mode="json"))

    return ForgeTool(
        "plan_outline",
        "Read a plan at one flat level: its state and digest, then one line per phase with the "
        "node ids (verbatim: cite them exactly), the tools its calls use and how many issues "
        "fall in it. Read a phase or node in full with plan_read.",
        obj({"planId": PLAN_ID}, ("planId",)),
        plan_outline,
    )


def slice_tool(session: ForgeSession) -> ForgeTool:
    """``plan_read``: one phase, or one node, in full, with its boundary and issues."""

    async def plan_read(args: dict[str, Any]) -> ToolResult:
        phase, node = args.get("phase"), args.get("node")
        if (phase is None) == (node is None):
            return refusal(
                "bad_selection", "plan_read takes exactly one of phase or node; pass one of them."
            )
        sliced = await session.orch.slice(args["planId"], phase=phase, node=node)
        inside = {n.id for n in sliced.nodes}
        view = await session.view(args["planId"])
        edges = [e for e in view.edges if e.from_ in inside or e.to in inside]
        where = f'phase "{phase}"' if phase is not None else f'node "{node}"'
        lines = [
            f"Slice of {args['planId']} around {where}. Predecessors: "
            f"{', '.join(sliced.boundary.incoming) or '(none)'}; successors: "
            f"{', '.join(sliced.boundary.outgoing) or '(none)'}."
        ]
        lines += [f"  {json.dumps(node_json(n), ensure_ascii=False)}" for n in sliced.nodes]
        lines.append("Edges touching it:" if edges else "No edges touch it.")
        lines += [f"  {e.id}: {e.from_} → {e.to} ({e.handle})" for e in edges]
        lines.append(render_issues(sliced.issues))
        data = sliced.model_dump(mode="json", exclude_none=True)
        data["edges"] = [e.model_dump(mode="json") for e in edges]
        return ToolResult(ok=True, text="\n".join(lines), data=data)

    return ForgeTool(
        "plan_read",
        'Read one phase (phase; "" for the unphased nodes) or one node (node) of a plan in full, '
        "in wire form, with the edges touching it, the ids just outside it (so you can link to "
        "them) and the issues that fall in it. Pass exactly one of phase and node.",
        obj(
            {"planId": PLAN_ID, "phase": {"type": "string"}, "node": {"type": "string"}},
            ("planId",),
        ),
        plan_read,
    )


def read_tools(session: ForgeSession) -> list[ForgeTool]:
    """``get_plan``, ``validate_plan``, ``plan_status``, ``list_tools``."""

    async def get_plan(args: dict[str, Any]) -> ToolResult:
        plan_id = args["planId"]
        text = await session.orch.render(
            plan_id,
            audience=args.get("audience", "model"),
            view=args.get("view", "as_planned"),
        )
        view = await session.view(plan_id)
        return ToolResult(
            ok=True,
            text=f"Plan {plan_id} (rev {view.revision}, {len(view.nodes)} node(s)).\n\n{text}",
            data={"planId": plan_id, "revision": view.revision, "digest": view.digest},
        )

    async def validate_plan(args: dict[str, Any]) -> ToolResult:
        plan_id = args["planId"]
        view = await session.view(plan_id)
        issues = await session.orch.check_plan(plan_id)
        blocking = sum(1 for i in issues if i.severity == "blocking")
        verdict = (
            "Nothing blocks a freeze." if not blocking else f"{blocking} issue(s) block a freeze."
        )
        return ToolResult(
            ok=True,
            text=f"Validation of {plan_id} (rev {view.revision}). {verdict}\n"
            + render_issues(issues),
            data={
                "planId": plan_id,
                "revision": view.revision,
                "blocking": blocking,
                "issues": issues_json(issues),
            },
        )

    async def plan_status(args: dict[str, Any]) -> ToolResult:
        plan_id = args["planId"]
        state = await session.store.read_state(plan_id)
        run_id = await session.store.read_run_id(plan_id)
        run = f", run={run_id}" if run_id else ""
        return ToolResult(
            ok=True,
            text=f"Plan {plan_id}: state={state.state}, rev={state.revision}, "
            f"digest={state.digest}{run}.",
            data={
                "planId": plan_id,
                "state": state.state,
                "revision": state.revision,
                "digest": state.digest,
                "runId": run_id,
            },
        )

    async def list_tools(args: dict[str, Any]) -> ToolResult:
        entries = tool_catalog(session.orch.inputs.invocable)
        lines = [f"  · {line}" for line in catalog_lines(entries)]
        return ToolResult(
            ok=True,
            text=f"Tools a call node may name ({len(entries)}), with their arguments (? marks "
            "an optional one, ... any others) and what each returns:\n" + "\n".join(lines),
            data={"tools": [e.model_dump(mode="json", exclude_none=True) for e in entries]},
        )

    return [
        ForgeTool(
            "get_plan",
            "Read a whole plan as prose with its issues. audience model (default) shows "
            'references in their {"$ref": ...} form; operator shows what a reviewer reads. '
            "view as_executed reads what the plan's run did instead: each node's status, the "
            "edges taken with their evidence, and the value each reference read.",
            obj(
                {
                    "planId": PLAN_ID,
                    "audience": {"enum": ["model", "operator"]},
                    "view": {"enum": ["as_planned", "as_executed"]},
                },
                ("planId",),
            ),
            get_plan,
        ),
        ForgeTool(
            "validate_plan",
            "List every issue a freeze would report, without freezing. Each issue names its "
            "fix; blocking ones must be fixed before the plan can be frozen.",
            obj({"planId": PLAN_ID}, ("planId",)),
            validate_plan,
        ),
        ForgeTool(
            "plan_status",
            "A plan's lifecycle state (editable, reviewable, executable), revision, digest and "
            "run id if it has run.",
            obj({"planId": PLAN_ID}, ("planId",)),
            plan_status,
        ),
        ForgeTool(
            "list_tools",
            "List the tools a call node may name: each one's arguments as a signature "
            "(name(arg: type, optional?: type)), what it returns and what it does; data.tools "
            "holds each input JSON Schema. Freeze refuses a call whose args the tool does not "
            "take, or misses a required one, or gives one a value of the wrong type.",
            obj({}),
            list_tools,
        ),
        outline_tool(session),
        slice_tool(session),
    ]


def raw_tools(session: ForgeSession) -> list[ForgeTool]:
    """``raw_plan``, ``raw_diff``, ``raw_ops``: the structured views, as JSON."""

    async def raw_plan(args: dict[str, Any]) -> ToolResult:
        view = await session.orch.raw.plan(args["planId"], args.get("revision"))
        dumped = view.model_dump(mode="json", exclude_none=True)
        return ToolResult(ok=True, text=_pretty(dumped), data=dumped)

    async def raw_diff(args: dict[str, Any]) -> ToolResult:
        diff = await session.orch.raw.diff(args["planId"], args["a"], args.get("b", "current"))
        dumped = diff.model_dump(mode="json", exclude_none=True)
        return ToolResult(ok=True, text=_pretty(dumped), data=dumped)

    async def raw_ops(args: dict[str, Any]) -> ToolResult:
        ops = await session.orch.raw.ops(
            args["planId"],
            through_revision=args.get("throughRevision"),
            since_lamport=args.get("sinceLamport"),
        )
        dumped = _OPS.dump_python(ops, mode="json", exclude_none=True)
        return ToolResult(ok=True, text=_pretty(dumped), data={"ops": dumped})

    revision = {"anyOf": [{"type": "integer", "minimum": 0}, {"const": "current"}]}
    return [
        ForgeTool(
            "raw_plan",
            "The folded plan (nodes, edges, bounds, provenance, digest) as JSON, at a revision "
            "(default: now).",
            obj({"planId": PLAN_ID, "revision": {"type": "integer", "minimum": 0}}, ("planId",)),
            raw_plan,
        ),
        ForgeTool(
            "raw_diff",
            'The structural diff between two revisions (a, b: numbers or "current"; b '
            "defaults to current) as JSON: nodes added, removed and changed field by field, "
            "edges added and removed.",
            obj({"planId": PLAN_ID, "a": revision, "b": revision}, ("planId", "a")),
            raw_diff,
        ),
        ForgeTool(
            "raw_ops",
            "The plan's op log as JSON, in append order (optionally the first throughRevision "
            "ops, then only those after sinceLamport).",
            obj(
                {
                    "planId": PLAN_ID,
                    "sinceLamport": {"type": "integer", "minimum": 0},
                    "throughRevision": {"type": "integer", "minimum": 0},
                },
                ("planId",),
            ),
            raw_ops,
        ),
    ]
