"""Plan builders, a fake cell and the tool allowlist for the freeze tests.

Transforms are checked against the real artifact classes, so the freeze tests pin the
vocabulary a plan can actually use.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence
from typing import Any

from orchestration.artifacts import SpooledJsonArtifact
from orchestration.plan.authoring import PlanAuthor, claim
from orchestration.plan.ops import fold_ops
from orchestration.review.validation import FreezeInputs, validate
from orchestration.tools.allowlist import ToolAllowlist
from orchestration.tools.contracts import (
    BranchVerdict,
    PredicateContext,
    PredicateVerdict,
    SelectVerdict,
)
from orchestration.types import (
    BranchNode,
    PlanIssue,
    PlanOp,
    RawPlanView,
    SelectNode,
    StringField,
)

TOOLS = ToolAllowlist.of(
    text=["web.fetch", "text.upper", "text.lower", "mail.send", "files.write"],
    artifacts={"files.read_json": SpooledJsonArtifact},
    media=["image.render"],
    bytes_=["blob.get"],
    undeclared=["legacy.tool"],
)


class FakeCell:
    """A predicate cell: a predicate is a dict; ``{"bad": ...}`` is refused by ``validate``."""

    def __init__(self, cell_id: str = "fake", *, fail_load: bool = False) -> None:
        self._id = cell_id
        self.fail_load = fail_load
        self.loads = 0
        self.validated: list[str] = []

    @property
    def id(self) -> str:
        return self._id

    @property
    def deterministic(self) -> bool:
        return True

    async def load(self) -> None:
        self.loads += 1
        if self.fail_load:
            raise RuntimeError("peer package 'fakelib' is not installed; install it")

    async def validate(self, node: BranchNode | SelectNode) -> None:
        self.validated.append(node.id)
        predicate = node.definition.predicate
        if not isinstance(predicate, dict) or "bad" in predicate:
            raise ValueError("predicate must be a dict without 'bad'; write {'path': ...}")

    async def evaluate(
        self, node: BranchNode | SelectNode, ctx: PredicateContext
    ) -> PredicateVerdict:
        if isinstance(node, SelectNode):
            return SelectVerdict(case_label=None)
        return BranchVerdict(matched=True)


_OP_IDS = itertools.count(1)


def author(actor: str = "alice") -> PlanAuthor:
    """A deterministic author; op ids never repeat within a test process."""
    return PlanAuthor(
        actor, now=lambda: "2026-01-01T00:00:00Z", new_id=lambda: f"{actor}-{next(_OP_IDS):06d}"
    )


SAFE: dict[str, Any] = dict(replay_safe=True, on_indeterminate="retry", on_missing_value="fail")


def call(a: PlanAuthor, node_id: str, tool: str = "web.fetch", **overrides: Any) -> PlanOp:
    """A call that passes every call check: literal args, one read claim, all decisions made."""
    spec: dict[str, Any] = dict(
        args={"url": "https://example.org"},
        output=[StringField(path="body")],
        authority=[claim("http", "example.org", "read")],
        **SAFE,
    )
    spec.update(overrides)
    return a.call(node_id, tool=tool, **spec)


def fold(ops: Sequence[PlanOp], plan_id: str = "p") -> tuple[RawPlanView, list[PlanIssue]]:
    view, issues = fold_ops(plan_id, ops)
    return view, issues


def check(
    ops: Sequence[PlanOp],
    *,
    tools: Any = TOOLS,
    cells: Sequence[Any] | None = None,
    strict_authority: bool = False,
) -> list[PlanIssue]:
    """Fold and validate; fold issues come first."""
    view, fold_issues = fold_ops("p", ops)
    return check_view(
        view, tools=tools, cells=cells, fold_issues=fold_issues, strict_authority=strict_authority
    )


def check_view(
    view: RawPlanView,
    *,
    tools: Any = TOOLS,
    cells: Sequence[Any] | None = None,
    fold_issues: Sequence[PlanIssue] = (),
    strict_authority: bool = False,
) -> list[PlanIssue]:
    inputs = FreezeInputs(
        tools, tuple(cells if cells is not None else (FakeCell(),)), strict_authority
    )
    return asyncio.run(validate(view, inputs, fold_issues=fold_issues))


def codes(issues: Sequence[PlanIssue]) -> list[str]:
    return [i.code for i in issues]


def blocking(issues: Sequence[PlanIssue]) -> list[PlanIssue]:
    return [i for i in issues if i.severity == "blocking"]


def only(issues: Sequence[PlanIssue], code: str) -> PlanIssue:
    """The one issue of the plan, asserting it has that code and nothing else."""
    assert codes(issues) == [code], [f"{i.code}: {i.message}" for i in issues]
    return issues[0]


def route(*segments: str | tuple[str, tuple[str, ...]]) -> Any:
    """A BranchId from edge ids and ``(join, of)`` pairs."""
    from orchestration.run.routes import BranchId, EdgeSegment, JoinSegment

    return BranchId(
        segments=tuple(
            EdgeSegment(edge=s) if isinstance(s, str) else JoinSegment(join=s[0], of=s[1])
            for s in segments
        )
    )


SCHEMA = (
    '{"type": "object", "properties": {"verdict": {"type": "string"}, '
    '"score": {"type": "number"}}, "required": ["verdict"]}'
)


def every_kind_ops(a: PlanAuthor | None = None) -> list[PlanOp]:
    """A valid plan using every node kind: fan-out, diamond join, reason, branch, transform,
    select with several cases, an error edge, phases, and post-join references by route."""
    from orchestration.plan.authoring import ref, text
    from orchestration.types import BooleanField, EnumField, NumberField

    a = a or author()
    after_join = ("e_fetch", ("both", ("e_low_j", "e_up_j")), "e_sum", "e_gate", "e_match")
    return [
        a.entry(
            input=[StringField(path="city", max_bytes=64), BooleanField(path="urgent")],
            phase="intake",
        ),
        call(
            a,
            "fetch",
            args={"city": ref("entry", path="city"), "units": "metric", "days": 3},
            output=[StringField(path="body"), NumberField(path="status")],
            declassifies=["body"],
            phase="gather",
        ),
        call(a, "upper", tool="text.upper", args={"s": ref("fetch", path="body")},
             output=[StringField(path="value")], phase="gather"),
        call(a, "lower", tool="text.lower", args={"s": ref("fetch", path="body")},
             output=[StringField(path="value")], phase="gather"),
        a.join("both", phase="gather"),
        a.reason(
            "summarize",
            prompt=[text("Compare "), ref("upper", path="value"), text(" with "),
                    ref("lower", path="value")],
            output_schema=SCHEMA,
            max_attempts=2,
            phase="decide",
        ),
        a.branch("gate", evaluator="fake",
                 predicate={"path": "summarize.verdict", "op": "eq", "value": "go"},
                 phase="decide"),
        call(a, "read_doc", tool="files.read_json", args={"path": "reports/today.json"},
             output=[], authority=[claim("files", "reports", "read")], phase="report"),
        a.transform(
            "extract",
            source=ref("read_doc", select="all", branch_id=route(*after_join)),
            steps=[("artifact_json_get", {"path": "$.title"})],
            emit_field="title",
            output=[StringField(path="title")],
            phase="report",
        ),
        a.select("channel", evaluator="fake", predicate={"path": "entry.urgent", "op": "truthy"},
                 cases=["mail", "file"], phase="report"),
        call(
            a,
            "notify",
            tool="mail.send",
            args={
                "to": ["ops@example.org"],
                "subject": ref("extract", path="title", select=0,
                               branch_id=route(*after_join, "e_extract")),
            },
            output=[EnumField(path="status", values=("sent", "queued"))],
            authority=[claim("mail", "ops@example.org", "create")],
            replay_safe=False,
            on_indeterminate="halt",
            phase="report",
        ),
        call(a, "save", tool="files.write", args={"path": "out/report.txt"},
             authority=[claim("files", "out", "update"), claim("files", "out", "read")],
             replay_safe=True, on_indeterminate="skip", on_missing_value="omit", phase="report"),
        call(a, "archive", tool="files.write", args={"path": "archive/report.txt"},
             authority=[claim("files", "archive", "create")], phase="report"),
        call(a, "skip_note", tool="text.lower", args={"s": "nothing to report"},
             output=[StringField(path="value")], authority=[claim("text", "local", "read")]),
        call(a, "alert", tool="mail.send", args={"to": ["oncall@example.org"]},
             authority=[claim("mail", "oncall@example.org", "create")]),
        a.edge("entry", "fetch", edge_id="e_fetch"),
        a.edge("fetch", "upper", edge_id="e_up"),
        a.edge("fetch", "lower", edge_id="e_low"),
        a.edge("fetch", "alert", "error", edge_id="e_alert"),
        a.edge("upper", "both", edge_id="e_up_j"),
        a.edge("lower", "both", edge_id="e_low_j"),
        a.edge("both", "summarize", edge_id="e_sum"),
        a.edge("summarize", "gate", edge_id="e_gate"),
        a.edge("gate", "read_doc", "match", edge_id="e_match"),
        a.edge("gate", "skip_note", "no_match", edge_id="e_skip"),
        a.edge("read_doc", "extract", edge_id="e_extract"),
        a.edge("extract", "channel", edge_id="e_channel"),
        a.edge("channel", "notify", "case_mail", edge_id="e_mail"),
        a.edge("channel", "save", "case_file", edge_id="e_file"),
        a.edge("channel", "archive", "default", edge_id="e_default"),
    ]


def fan_in_ops(evaluator: str, predicate: Any) -> list[PlanOp]:
    """entry → left, entry → right, both → gate: `left` runs before gate on one route only."""
    from orchestration.types import NumberField

    a = author()
    return [
        a.entry(),
        call(a, "left", output=[NumberField(path="n")]),
        call(a, "right", output=[NumberField(path="n")]),
        a.branch("gate", evaluator=evaluator, predicate=predicate),
        a.edge("entry", "left", edge_id="e1"),
        a.edge("entry", "right", edge_id="e2"),
        a.edge("left", "gate", edge_id="e3"),
        a.edge("right", "gate", edge_id="e4"),
    ]
