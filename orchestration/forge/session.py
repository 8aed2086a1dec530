"""The forge's common machinery: minting ops with identity, appending them, and answering.

Every edit a tool makes is an op minted by a :class:`~orchestration.plan.authoring.PlanAuthor` that
has first observed the plan's log, so each op carries the forge's actor id and a Lamport time
past everything the plan already holds: the edit wins over what the model saw, as it meant.
The op is appended at the revision that was observed; if another writer moved the plan in
between, the forge observes again and retries (the edit itself does not depend on the read).

Before appending, the edit is folded with the log in memory: an edit the fold would refuse to
apply (a field or definition of the wrong type) is refused as a value instead of being logged
without effect. After appending, the answer is scoped to what changed: the node in its wire
form, its neighbours, its issues, and the plan's totals, so a model keeps editing without
re-reading the whole plan.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from orchestration.forge.prose import compact, issue_lines, issues_json, node_json
from orchestration.forge.tool import ToolResult, refusal
from orchestration.plan.authoring import PlanAuthor
from orchestration.plan.ops import fold_ops
from orchestration.store.base import AppendRefused, PlanStore
from orchestration.types import PlanIssue, PlanOp, RawPlanView

if TYPE_CHECKING:
    from orchestration.api import Orchestration

__all__ = ["ForgeSession"]

_REFUSED_BY_FOLD = frozenset({"invalid_node_field", "invalid_node_definition"})
_RETRIES = 5


class ForgeSession:
    """One facade and one actor: what every forged tool of a tier shares.

    Args:
        orch: The facade (its store, allowlist, cells and templates).
        actor_id: Who the minted ops are attributed to.

    """

    def __init__(self, orch: Orchestration, actor_id: str) -> None:
        self.orch = orch
        self.actor_id = actor_id

    @property
    def store(self) -> PlanStore:
        """The backing store."""
        return self.orch.store

    async def view(self, plan_id: str) -> RawPlanView:
        """The plan as it is now.

        Raises:
            PlanNotFoundError: no plan has that id.

        """
        return (await self.orch.store.fold(plan_id)).view

    async def edit(
        self, plan_id: str, make: Callable[[PlanAuthor], Sequence[PlanOp]]
    ) -> ToolResult | None:
        """Mint ops with ``make`` and append them; a refusal, or ``None`` once appended.

        Raises:
            PlanNotFoundError: no plan has that id.

        """
        for _ in range(_RETRIES):
            existing = await self.orch.store.read_ops(plan_id)
            author = PlanAuthor(self.actor_id).observe(existing)
            ops = list(make(author))
            refused = _refused_by_fold(plan_id, existing, ops)
            if refused:
                return refusal(
                    refused[0].code,
                    "The edit was not applied:\n" + "\n".join(issue_lines(refused)),
                    issues=issues_json(refused),
                )
            result = await self.orch.store.append_ops(plan_id, ops, expected_revision=len(existing))
            if not isinstance(result, AppendRefused):
                return None
            if result.reason == "not_editable":
                return refusal(
                    "not_editable",
                    f"Plan {plan_id} is {result.actual.state}; only an editable plan takes "
                    "edits, and there is no way back. To change it, clone_plan it and edit the "
                    "clone (which must be frozen and approved again).",
                    state=result.actual.state,
                )
            if result.reason != "revision_moved":
                return refusal(
                    result.reason, f"The store refused the edit: {result.detail or result.reason}."
                )
        return refusal(
            "revision_moved",
            f"Plan {plan_id} kept changing under this edit; read it again and retry.",
        )

    async def after_edit(
        self, plan_id: str, headline: str, focal: str | None, edge_id: str | None = None
    ) -> ToolResult:
        """The answer to a successful edit, scoped to ``focal`` (a node id) when given."""
        fold = await self.orch.store.fold(plan_id)
        view = fold.view
        issues = await self.orch.check_plan(plan_id)
        blocking = sum(1 for i in issues if i.severity == "blocking")
        lines = [
            headline,
            f"Plan {plan_id} is at revision {view.revision} (digest {view.digest[:16]}…), "
            f"{len(view.nodes)} node(s), {len(view.edges)} edge(s).",
        ]
        data: dict[str, Any] = {
            "planId": plan_id,
            "revision": view.revision,
            "digest": view.digest,
            "blocking": blocking,
            "advisory": len(issues) - blocking,
        }
        node = view.node(focal) if focal is not None else None
        if node is not None:
            before = list(dict.fromkeys(e.from_ for e in view.edges if e.to == node.id))
            after = list(dict.fromkeys(e.to for e in view.edges if e.from_ == node.id))
            wire = node_json(node)
            lines.append(
                f"Node {node.id} ({node.kind}): predecessors {', '.join(before) or '(none)'}; "
                f"successors {', '.join(after) or '(none)'}."
            )
            lines.append(f"  {compact(wire)}")
            data.update(node=wire, predecessors=before, successors=after)
        mine = _scoped(issues, focal, edge_id)
        if focal is not None or edge_id is not None:
            what = f"node {focal}" if edge_id is None else f"edge {edge_id}"
            lines.append(f"Issues on {what} ({len(mine)}):" if mine else f"No issues on {what}.")
            lines += issue_lines(mine)
            data["issues"] = issues_json(mine)
        lines.append(
            f"The plan has {blocking} blocking and {len(issues) - blocking} advisory issue(s) in "
            "all; validate_plan lists them."
        )
        return ToolResult(ok=True, text="\n".join(lines), data=data)


def _scoped(issues: Sequence[PlanIssue], node: str | None, edge: str | None) -> list[PlanIssue]:
    return [
        i
        for i in issues
        if (node is not None and i.node_id == node) or (edge is not None and i.edge_id == edge)
    ]


def _refused_by_fold(
    plan_id: str, existing: Sequence[PlanOp], ops: Sequence[PlanOp]
) -> list[PlanIssue]:
    before = {(i.code, i.node_id, i.message) for i in fold_ops(plan_id, existing).issues}
    after = fold_ops(plan_id, [*existing, *ops]).issues
    return [
        i
        for i in after
        if i.code in _REFUSED_BY_FOLD and (i.code, i.node_id, i.message) not in before
    ]
