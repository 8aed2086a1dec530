"""Freezing and submitting: a plan goes to review, and stops there.

No forged tool approves a plan, in any tier: approval binds the digest and the authority set a
person was shown, so it is an operator's act (``orch plan approve``). ``submit_plan`` is
therefore "freeze and report": it validates the plan, moves it ``editable → reviewable`` when
nothing blocks, and hands back what the operator will be asked to approve (the digest and the
authority set), or every issue, each naming its fix.
"""

from __future__ import annotations

from typing import Any

from orchestration.forge.prose import issues_json, render_issues
from orchestration.forge.schemas import PLAN_ID, obj
from orchestration.forge.session import ForgeSession
from orchestration.forge.tool import ForgeTool, ToolResult, refusal
from orchestration.review.approval import authority_set, describe_claim

__all__ = ["freeze_tool", "submit_tool"]


def freeze_tool(session: ForgeSession) -> ForgeTool:
    """``freeze_plan``: validate and, when nothing blocks, make the plan reviewable."""

    async def freeze_plan(args: dict[str, Any]) -> ToolResult:
        plan_id = args["planId"]
        result = await session.orch.freeze_plan(plan_id)
        issues = render_issues(result.issues)
        data = {"planId": plan_id, "issues": issues_json(result.issues)}
        if not result.ok:
            return refusal(
                "freeze_refused",
                f"Plan {plan_id} could not be frozen; it stays as it was. Fix each blocking "
                f"issue as its message says, then freeze again.\n{issues}",
                **data,
            )
        view = await session.view(plan_id)
        return ToolResult(
            ok=True,
            text=f"Plan {plan_id} is now reviewable (digest {view.digest}); an operator "
            f"reviews and approves it.\n{issues}",
            data={**data, "digest": view.digest, "state": "reviewable"},
        )

    return ForgeTool(
        "freeze_plan",
        "Freeze a plan: validate it and, if no issue blocks, make it reviewable (no further "
        "edits; an operator then reviews and approves it). If anything blocks, the plan stays "
        "editable and every issue comes back with its fix.",
        obj({"planId": PLAN_ID}, ("planId",)),
        freeze_plan,
        mutating=True,
    )


def submit_tool(session: ForgeSession) -> ForgeTool:
    """``submit_plan``: freeze and report what the operator will be asked to approve."""

    async def submit_plan(args: dict[str, Any]) -> ToolResult:
        plan_id = args["planId"]
        result = await session.orch.freeze_plan(plan_id)
        data: dict[str, Any] = {"planId": plan_id, "issues": issues_json(result.issues)}
        if not result.ok:
            return refusal(
                "freeze_refused",
                f"Plan {plan_id} was not submitted; it stays as it was. Fix each blocking issue "
                f"as its message says, then submit again.\n{render_issues(result.issues)}",
                **data,
            )
        view = await session.view(plan_id)
        claims = authority_set(view)
        lines = [
            f"Plan {plan_id} is submitted: frozen for review at digest {view.digest}.",
            "It is NOT approved. No tool can approve a plan: an operator reads it and approves "
            "this exact digest, e.g.",
            f"  orch plan render {plan_id}",
            f"  orch plan approve {plan_id} --digest {view.digest} --by <name>",
            f"Authority set the approval binds ({len(claims)} claim(s)):",
            *([f"  · {describe_claim(c)}" for c in claims] or ["  (none)"]),
            render_issues(result.issues),
        ]
        data.update(
            digest=view.digest,
            state="reviewable",
            authoritySet=[c.model_dump(mode="json") for c in claims],
        )
        return ToolResult(ok=True, text="\n".join(lines), data=data)

    return ForgeTool(
        "submit_plan",
        "Submit a plan for review: freeze it (validate; if nothing blocks it becomes "
        "reviewable and takes no more edits) and report the digest and authority set an "
        "operator will be asked to approve. It does not approve: only an operator can. If "
        "anything blocks, every issue comes back with its fix and the plan is unchanged.",
        obj({"planId": PLAN_ID}, ("planId",)),
        submit_plan,
        mutating=True,
    )
