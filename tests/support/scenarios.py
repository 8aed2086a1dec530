"""The run scenarios both hosts must agree on (ruling 33).

Each scenario is a small plan, its input, the tools it calls (real tools, the same on both
hosts), what an operator answers when a frame halts, and what must hold of its end. The unit
tier runs every scenario in process; the integration tier runs every one on Temporal as well
and asserts the two logs are the same, entry for entry, up to their timestamps.

The tools count their attempts per frame (by the context's idempotency key), so a scenario can
fail a frame's first attempts and succeed later ones, or lose an attempt (sleep past the
start-to-close timeout), identically on both hosts.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from orchestration.plan.encoding import NodeRef
from orchestration.predicates.structured import StructuredCell
from orchestration.run.messages import RetrySettings, RunSettings
from orchestration.run.routes import BranchId, EdgeSegment, frame_key
from orchestration.testing import PlanSketch
from orchestration.tools.contracts import BranchVerdict, PredicateContext
from orchestration.tools.toolbox import Toolbox, ToolContext
from orchestration.types import (
    BranchNode,
    JoinQuorum,
    JoinStrategy,
    NumberField,
    RawPlanView,
    RunProjection,
    SelectNode,
    StringField,
)

__all__ = ["CELLS", "SCENARIOS", "SETTINGS", "Scenario", "make_tools"]

Decision = Literal["retry", "skip", "abort"]

SETTINGS = RunSettings(
    start_to_close_seconds=1.5,
    heartbeat_seconds=None,
    max_in_flight=1,
    retry=RetrySettings(
        maximum_attempts=3, initial_interval_seconds=0.01, maximum_interval_seconds=0.05
    ),
)
"""One frame at a time (so the order of the log is the plan's, on both hosts), quick retries,
and a start-to-close timeout short enough to lose an attempt in a test."""

VALUE = [StringField(path="value"), NumberField(path="n")]


class Transient(Exception):
    """A tool's error that says trying again may help."""

    transient = True


def make_tools() -> Toolbox:
    """The scenarios' tools; each toolbox counts its own attempts."""
    tools = Toolbox()
    attempts: Counter[str] = Counter()

    def attempt(context: ToolContext) -> int:
        attempts[context.idempotency_key] += 1
        return attempts[context.idempotency_key]

    @tools.tool("upper")
    def upper(s: str) -> str:
        return s.upper()

    @tools.tool("stamp")
    def stamp(context: ToolContext, **args: Any) -> dict[str, Any]:
        return {"value": context.node_id, "n": len(args)}

    @tools.tool("count")
    def count(n: int) -> dict[str, Any]:
        return {"n": n}

    @tools.tool("boom")
    def boom(**args: Any) -> str:
        raise RuntimeError("boom")

    @tools.tool("flaky")
    def flaky(context: ToolContext) -> dict[str, Any]:
        if attempt(context) < 3:
            raise ConnectionError("the service hung up")
        return {"value": "steady", "n": 3}

    @tools.tool("marked")
    def marked(context: ToolContext) -> dict[str, Any]:
        if attempt(context) < 2:
            raise Transient("try me again")
        return {"value": "second time", "n": 2}

    @tools.tool("strict")
    def strict(path: str) -> dict[str, Any]:
        return {"value": path, "n": 1}

    @tools.tool("lost_once")
    async def lost_once(context: ToolContext) -> dict[str, Any]:
        if attempt(context) == 1:
            await asyncio.sleep(4)
        return {"value": "found", "n": 1}

    @tools.tool("nap")
    async def nap(seconds: float) -> dict[str, Any]:
        await asyncio.sleep(seconds)
        return {"value": "awake", "n": 0}

    @tools.tool("lost")
    async def lost(context: ToolContext) -> dict[str, Any]:
        attempt(context)
        await asyncio.sleep(4)
        return {"value": "never", "n": 0}

    return tools


class ExplodingCell:
    """A cell (run outside workflow code) whose every evaluation raises."""

    id = "explode"
    deterministic = False

    async def load(self) -> None:
        return None

    async def validate(self, node: BranchNode | SelectNode) -> None:
        return None

    async def evaluate(self, node: BranchNode | SelectNode, ctx: PredicateContext) -> BranchVerdict:
        raise RuntimeError("the cell exploded")


CELLS = (StructuredCell(), ExplodingCell())
"""The cells both hosts run: the structured cell, and one that raises."""


@dataclass(frozen=True)
class Scenario:
    """A plan, its input, the operator's answers to halts, and what must hold at its end."""

    build: Callable[[str], RawPlanView]
    run_input: Mapping[str, Any]
    outcome: str
    decisions: Mapping[str, Decision] = field(default_factory=dict)
    check: Callable[[RunProjection], None] | None = None
    settings: RunSettings = SETTINGS
    """How the run is configured on both hosts (one frame at a time, unless a scenario needs
    frames in flight together; its timings must then order the completions the same way)."""


def _measure_key() -> str:
    return frame_key("measure", BranchId(segments=(EdgeSegment(edge="e0"),)))


def chain(plan_id: str) -> RawPlanView:
    s = PlanSketch(plan_id).entry(StringField(path="s"))
    s.call("a", "upper", args={"s": NodeRef("entry", path="s")}, output=[StringField(path="value")])
    s.call("b", "upper", args={"s": NodeRef("a", path="value")}, output=[StringField(path="value")])
    return s.chain("entry", "a", "b").view()


def fan_out(plan_id: str) -> RawPlanView:
    s = PlanSketch(plan_id).entry(StringField(path="s"))
    s.call("a", "stamp", output=VALUE).call("b", "stamp", output=VALUE)
    return s.edge("entry", "a").edge("entry", "a").edge("entry", "b").view()


def diamond(plan_id: str) -> RawPlanView:
    s = PlanSketch(plan_id).entry(StringField(path="s"))
    for node in ("fork", "left", "right", "after"):
        s.call(node, "stamp", output=VALUE)
    s.join("j")
    return (
        s.edge("entry", "fork")
        .edge("fork", "left")
        .edge("fork", "right")
        .edge("left", "j")
        .edge("right", "j")
        .edge("j", "after")
        .view()
    )


def branch(plan_id: str) -> RawPlanView:
    s = PlanSketch(plan_id).entry(NumberField(path="n"))
    s.call(
        "measure", "count", args={"n": NodeRef("entry", path="n")}, output=[NumberField(path="n")]
    )
    s.branch("big", {"path": f"{_measure_key()}.n", "op": "gt", "value": 10})
    s.call("yes", "stamp", output=VALUE).call("no", "stamp", output=VALUE)
    return (
        s.edge("entry", "measure")
        .edge("measure", "big")
        .edge("big", "yes", "match")
        .edge("big", "no", "no_match")
        .view()
    )


def select(plan_id: str) -> RawPlanView:
    key = _measure_key()
    s = PlanSketch(plan_id).entry(NumberField(path="n"))
    s.call(
        "measure", "count", args={"n": NodeRef("entry", path="n")}, output=[NumberField(path="n")]
    )
    s.select(
        "size",
        ["small", "large"],
        {
            "small": {"path": f"{key}.n", "op": "lt", "value": 5},
            "large": {"path": f"{key}.n", "op": "gte", "value": 100},
        },
    )
    for node in ("s", "l", "d"):
        s.call(node, "stamp", output=VALUE)
    return (
        s.edge("entry", "measure")
        .edge("measure", "size")
        .edge("size", "s", "case_small")
        .edge("size", "l", "case_large")
        .edge("size", "d", "default")
        .view()
    )


def one_call(
    tool: str,
    *,
    replay_safe: bool = True,
    on_indeterminate: str = "retry",
    args: Mapping[str, Any] | None = None,
    error_edge: bool = False,
) -> Callable[[str], RawPlanView]:
    def build(plan_id: str) -> RawPlanView:
        s = PlanSketch(plan_id).entry(StringField(path="s"))
        s.call(
            "work",
            tool,
            args=dict(args or {}),
            output=VALUE if tool != "boom" else [StringField(path="value")],
            replay_safe=replay_safe,
            on_indeterminate=on_indeterminate,  # type: ignore[arg-type]
        )
        s.call("after", "stamp", output=VALUE)
        s.edge("entry", "work").edge("work", "after")
        if error_edge:
            s.call("rescue", "stamp", output=VALUE).edge("work", "rescue", "error")
        return s.view()

    return build


def budget(plan_id: str) -> RawPlanView:
    s = PlanSketch(plan_id, max_steps=3).entry(StringField(path="s"))
    for node in ("a", "b", "c", "d"):
        s.call(node, "stamp", output=VALUE)
    return s.chain("entry", "a", "b", "c", "d").view()


def exploding_branch(plan_id: str) -> RawPlanView:
    s = PlanSketch(plan_id).entry(StringField(path="s"))
    s.branch("decide", "anything", evaluator="explode").call("yes", "stamp", output=VALUE)
    return s.edge("entry", "decide").edge("decide", "yes", "match").view()


def missing(on_missing: str) -> Callable[[str], RawPlanView]:
    def build(plan_id: str) -> RawPlanView:
        s = PlanSketch(plan_id).entry(StringField(path="s"))
        s.call(
            "reads",
            "stamp",
            args={"ghost": NodeRef("nowhere", path="value"), "s": NodeRef("entry", path="s")},
            output=VALUE,
            on_missing=on_missing,  # type: ignore[arg-type]
        )
        return s.edge("entry", "reads").view()

    return build


def unsatisfiable(plan_id: str) -> RawPlanView:
    s = PlanSketch(plan_id).entry(NumberField(path="n"))
    s.call("fork", "stamp", output=VALUE).call("left", "stamp", output=VALUE)
    s.branch("gate", {"path": "entry:.n", "op": "gt", "value": 10})
    s.call("right", "stamp", output=VALUE).join("j").call("after", "stamp", output=VALUE)
    return (
        s.edge("entry", "fork")
        .edge("fork", "left")
        .edge("fork", "gate")
        .edge("gate", "right", "match")
        .edge("left", "j")
        .edge("right", "j")
        .edge("j", "after")
        .view()
    )


def racing_join(strategy: JoinStrategy, naps: tuple[float, ...]) -> Callable[[str], RawPlanView]:
    """fork → one arm per nap (a call sleeping that long) → join(``strategy``) → after."""

    def build(plan_id: str) -> RawPlanView:
        s = PlanSketch(plan_id, max_concurrent_frames=8).entry(StringField(path="s"))
        s.call("fork", "stamp", output=VALUE).call("after", "stamp", output=VALUE)
        s.join("j", strategy).edge("entry", "fork").edge("j", "after")
        for i, seconds in enumerate(naps):
            s.call(f"arm{i}", "nap", args={"seconds": seconds}, output=VALUE)
            s.edge("fork", f"arm{i}").edge(f"arm{i}", "j")
        return s.view()

    return build


def quorum_unsatisfiable(plan_id: str) -> RawPlanView:
    """Two of three arms fail (each handled by an error edge away from the join): a quorum of
    two can no longer be met once the third has arrived."""
    s = PlanSketch(plan_id).entry(StringField(path="s"))
    s.call("fork", "stamp", output=VALUE).join("j", JoinQuorum(quorum=2))
    s.call("ok", "stamp", output=VALUE).call("after", "stamp", output=VALUE)
    s.edge("entry", "fork").edge("fork", "ok").edge("ok", "j").edge("j", "after")
    for arm in ("bad1", "bad2"):
        s.call(arm, "boom", output=VALUE).call(f"{arm}_rescue", "stamp", output=VALUE)
        s.edge("fork", arm).edge(arm, "j").edge(arm, f"{arm}_rescue", "error")
    return s.view()


CONCURRENT = SETTINGS.model_copy(update={"max_in_flight": 8})
"""Frames in flight together, for the joins that cancel the arms still running."""


def _cancelled(*nodes: str) -> Callable[[RunProjection], None]:
    def check(projection: RunProjection) -> None:
        assert projection.outcome == "completed"
        for node in nodes:
            assert projection.node_status_by_id[node] == "skipped", projection.node_status_by_id
        assert projection.node_status_by_id["after"] == "done"

    return check


def _status(node: str, status: str) -> Callable[[RunProjection], None]:
    def check(projection: RunProjection) -> None:
        assert projection.node_status_by_id.get(node, "pending") == status, (
            projection.node_status_by_id
        )

    return check


def _error(node: str, name: str) -> Callable[[RunProjection], None]:
    def check(projection: RunProjection) -> None:
        assert projection.node_status_by_id[node] == "failed"
        assert projection.interruption is not None or projection.outcome == "completed"

    return check


SCENARIOS: dict[str, Scenario] = {
    "chain": Scenario(chain, {"s": "quiet"}, "completed"),
    "fan_out": Scenario(fan_out, {"s": "x"}, "completed"),
    "diamond": Scenario(diamond, {"s": "x"}, "completed"),
    "branch_match": Scenario(branch, {"n": 42}, "completed", check=_status("no", "pending")),
    "branch_no_match": Scenario(branch, {"n": 1}, "completed", check=_status("yes", "pending")),
    "select_case": Scenario(select, {"n": 500}, "completed", check=_status("l", "done")),
    "select_default": Scenario(select, {"n": 50}, "completed", check=_status("d", "done")),
    "error_edge": Scenario(
        one_call("boom", error_edge=True), {"s": "x"}, "completed", check=_status("rescue", "done")
    ),
    "unhandled_failure": Scenario(one_call("boom"), {"s": "x"}, "aborted"),
    "budget_exhausted": Scenario(budget, {"s": "x"}, "halted"),
    "transient_retried": Scenario(
        one_call("flaky"), {"s": "x"}, "completed", check=_status("work", "done")
    ),
    "transient_unsafe_fails": Scenario(
        one_call("flaky", replay_safe=False, on_indeterminate="halt"), {"s": "x"}, "aborted"
    ),
    "marked_transient": Scenario(one_call("marked"), {"s": "x"}, "completed"),
    "argument_error_not_retried": Scenario(
        one_call("strict", args={"pathh": "typo"}), {"s": "x"}, "aborted"
    ),
    "lost_then_found": Scenario(one_call("lost_once"), {"s": "x"}, "completed"),
    "lost_safe_exhausted": Scenario(one_call("lost"), {"s": "x"}, "aborted"),
    "lost_unsafe_skipped": Scenario(
        one_call("lost", replay_safe=False, on_indeterminate="skip"),
        {"s": "x"},
        "completed",
        check=_status("work", "skipped"),
    ),
    "lost_unsafe_halt_retry": Scenario(
        one_call("lost_once", replay_safe=False, on_indeterminate="halt"),
        {"s": "x"},
        "completed",
        decisions={"work": "retry"},
    ),
    "lost_unsafe_halt_skip": Scenario(
        one_call("lost", replay_safe=False, on_indeterminate="halt"),
        {"s": "x"},
        "completed",
        decisions={"work": "skip"},
        check=_status("work", "skipped"),
    ),
    "lost_unsafe_halt_abort": Scenario(
        one_call("lost", replay_safe=False, on_indeterminate="halt"),
        {"s": "x"},
        "aborted",
        decisions={"work": "abort"},
    ),
    "cell_raises": Scenario(exploding_branch, {"s": "x"}, "halted"),
    "missing_value_fails": Scenario(missing("fail"), {"s": "x"}, "aborted"),
    "missing_value_omitted": Scenario(missing("omit"), {"s": "x"}, "completed"),
    "join_unsatisfiable": Scenario(unsatisfiable, {"n": 1}, "halted"),
    "join_any_cancels_the_rest": Scenario(
        racing_join("any", (0.0, 1.2, 1.2)),
        {"s": "x"},
        "completed",
        check=_cancelled("arm1", "arm2"),
        settings=CONCURRENT,
    ),
    "join_quorum_cancels_the_last": Scenario(
        racing_join(JoinQuorum(quorum=2), (0.0, 0.3, 1.2)),
        {"s": "x"},
        "completed",
        check=_cancelled("arm2"),
        settings=CONCURRENT,
    ),
    "join_quorum_unsatisfiable": Scenario(quorum_unsatisfiable, {"s": "x"}, "halted"),
}
