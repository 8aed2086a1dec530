"""The run scenarios both hosts must agree on (ruling 33).

Each scenario is a small plan, its input, the tools it calls (real tools, the same on both
hosts), what an operator answers when a frame halts, and what must hold of its end. The unit
tier runs every scenario in process; the integration tier runs every one on Temporal as well
and asserts the two logs are the same, entry for entry, up to their timestamps.

The tools count their attempts per frame (by the context's idempotency key), so a scenario can
fail a frame's first attempts and succeed later ones, or lose an attempt (sleep past the
start-to-close timeout), identically on both hosts. A scenario with reason nodes brings a
scripted reasoner (made fresh for each host, so its counters start alike) and, for costs, a
price table; both hosts use the same ones.

Gate scenarios say what a person does at each request (:class:`Say`): a decision and what must
become of it (applied, skipped, or refused with a code), optionally only once the request has
closed (a late decision). Both hosts hand the same decisions over their own surface (the
in-process run's ``decide``, the workflow's updates) as the requests open, and a scenario's
plan is a chain, so its log does not depend on when a person answers.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from orchestration.errors import ContextWindowExceededError, ReasonerUnavailableError
from orchestration.plan.encoding import NodeRef
from orchestration.predicates.structured import StructuredCell
from orchestration.run.messages import (
    GateAnswer,
    GateApproval,
    PendingGateDecision,
    RetrySettings,
    RunSettings,
    WaitingGate,
)
from orchestration.run.routes import BranchId, EdgeSegment, frame_key
from orchestration.testing import Ask, PlanSketch, ScriptedReasoner
from orchestration.tools.contracts import BranchVerdict, PredicateContext
from orchestration.tools.pricing import ModelPrice, PriceTable
from orchestration.tools.reasoning import Reasoner, ReasonTurn
from orchestration.tools.toolbox import Toolbox, ToolContext
from orchestration.types import (
    ApprovalGate,
    AskPolicy,
    BranchNode,
    ChoiceInput,
    FileInput,
    FormField,
    FormInput,
    InputChoice,
    JoinQuorum,
    JoinStrategy,
    NodeBudget,
    NumberField,
    PlanBounds,
    RawPlanView,
    ReasonNode,
    RunProjection,
    SelectNode,
    StringField,
    TextInput,
)

__all__ = [
    "CELLS",
    "SCENARIOS",
    "SETTINGS",
    "Say",
    "Scenario",
    "make_reasoner",
    "make_tools",
]

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

    @tools.tool("echo")
    def echo(s: str, times: int = 1) -> dict[str, Any]:
        return {"value": s * times, "n": times}

    @tools.tool("stamp")
    def stamp(context: ToolContext, **args: Any) -> dict[str, Any]:
        return {"value": context.node_id, "n": len(args)}

    @tools.tool("peek", short=True)
    def peek(name: str) -> dict[str, Any]:
        return {"value": name.upper(), "n": len(name)}

    @tools.tool("seal", short=True)
    def seal(context: ToolContext, **args: Any) -> dict[str, Any]:
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

    @tools.tool("listing")
    def listing(n: int, bad: int) -> dict[str, Any]:
        good = max(0, n - bad)
        names = [f"f{i}" for i in range(good)] + [f"x{i}" for i in range(good, n)]
        return {"files": names, "n": n}

    @tools.tool("schedule")
    def schedule() -> dict[str, Any]:
        return {"files": [0.0, 0.5, 0.0, 1.0], "n": 4}

    @tools.tool("inspect")
    def inspect(name: str) -> dict[str, Any]:
        if name.startswith("x"):
            raise ValueError(f"cannot read {name}")
        return {"value": name.upper(), "n": len(name)}

    @tools.tool("refine")
    def refine(round: int, cap: int) -> dict[str, Any]:
        return {"value": f"v{min(round, cap)}", "n": round + 1}

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


def make_reasoner() -> ScriptedReasoner:
    """The scenarios' model: ``think`` asks twice, then answers from the answers it got."""

    def answer(turn: Any) -> dict[str, Any]:
        given = [dict(r.answers) for r in turn.rounds]
        return {"answer": "/".join(str(v) for a in given for v in a.values())}

    return ScriptedReasoner(
        {
            "think": [
                Ask.text("city", "Which city?"),
                Ask(({"id": "size", "prompt": "How big?", "kind": "choice",
                      "options": [{"id": "s", "label": "Small"}, {"id": "l", "label": "Large"}]},)),
                answer,
            ]
        }
    )


@dataclass(frozen=True)
class Say:
    """What a person does at one request: a decision, and what must become of it.

    Attributes:
        decision: Builds the decision from the request as the person reads it.
        expect: ``applied``, ``skipped``, or the code it is refused with.
        late: Send it only once the request has closed (it timed out).

    """

    decision: Callable[[WaitingGate], PendingGateDecision]
    expect: str = "applied"
    late: bool = False


@dataclass(frozen=True)
class Scenario:
    """A plan, its input, the operator's answers to halts, and what must hold at its end.

    ``gates`` says, per node, what is said at each of its requests in order (a request with
    nothing said waits for its timeout); ``settings`` replaces the hosts' run settings.
    """

    build: Callable[[str], RawPlanView]
    run_input: Mapping[str, Any]
    outcome: str
    decisions: Mapping[str, Decision] = field(default_factory=dict)
    check: Callable[[RunProjection], None] | None = None
    settings: RunSettings = SETTINGS
    """How the run is configured on both hosts (one frame at a time, unless a scenario needs
    frames in flight together; its timings must then order the completions the same way)."""
    reasoner: Callable[[], Reasoner] | None = None
    """Makes the scripted model (fresh per host run, so both hosts see the same answers)."""
    prices: PriceTable | None = None
    gates: Mapping[str, Sequence[Sequence[Say]]] = field(default_factory=dict)


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


def mapped(
    max_items: int = 5,
    *,
    concurrency: int | None = None,
    tolerated_failures: int | None = None,
    tolerated_failure_percent: float | None = None,
) -> Callable[[str], RawPlanView]:
    """list (a call returning ``files``) → map over ``list.files`` (body: inspect the item) →
    after; the map's error edge goes to rescue. Input ``n`` items, the last ``bad`` of which
    the body fails on."""

    def build(plan_id: str) -> RawPlanView:
        s = PlanSketch(plan_id, max_concurrent_frames=8)
        s.entry(NumberField(path="n"), NumberField(path="bad"))
        s.call(
            "list",
            "listing",
            args={"n": NodeRef("entry", path="n"), "bad": NodeRef("entry", path="bad")},
            output=[NumberField(path="n")],
        )
        s.map(
            "m",
            NodeRef("list", path="files"),
            max_items=max_items,
            concurrency=concurrency,
            tolerated_failures=tolerated_failures,
            tolerated_failure_percent=tolerated_failure_percent,
        )
        s.call("inspect", "inspect", args={"name": NodeRef("m", path="item")}, output=VALUE)
        s.call("after", "stamp", args={"results": NodeRef("m", select="all")}, output=VALUE)
        s.call("rescue", "stamp", output=VALUE)
        s.edge("entry", "list").edge("list", "m").edge("m", "inspect", "item")
        return s.edge("m", "after").edge("m", "rescue", "error").view()

    return build


def gated_map(plan_id: str) -> RawPlanView:
    """A map of two items, one at a time, whose body asks for approval before each call."""
    s = PlanSketch(plan_id, max_concurrent_frames=8).entry(StringField(path="s"))
    s.call("list", "listing", args={"n": 2, "bad": 0}, output=[NumberField(path="n")])
    s.map("m", NodeRef("list", path="files"), max_items=4, concurrency=1)
    s.call(
        "inspect",
        "inspect",
        args={"name": NodeRef("m", path="item")},
        output=VALUE,
        gate=ApprovalGate(on="arguments"),
    )
    s.call("after", "stamp", args={"results": NodeRef("m", select="all")}, output=VALUE)
    s.edge("entry", "list").edge("list", "m").edge("m", "inspect", "item")
    return s.edge("m", "after").view()


def paced_map(plan_id: str) -> RawPlanView:
    """A map of four naps, two at a time: the first two items start together; each later item
    starts when one finishes (the naps order the finishes the same way on both hosts)."""
    s = PlanSketch(plan_id, max_concurrent_frames=8).entry(StringField(path="s"))
    s.call("list", "schedule", output=[NumberField(path="n")])
    s.map("m", NodeRef("list", path="files"), max_items=4, concurrency=2)
    s.call("inspect", "nap", args={"seconds": NodeRef("m", path="item")}, output=VALUE)
    s.call("after", "stamp", args={"results": NodeRef("m", select="all")}, output=VALUE)
    s.call("rescue", "stamp", output=VALUE)
    s.edge("entry", "list").edge("list", "m").edge("m", "inspect", "item")
    return s.edge("m", "after").edge("m", "rescue", "error").view()


def looped(
    goal: int,
    max_iterations: int,
    *,
    watch: bool = False,
    fail_unless_met: bool = False,
    evaluator: str = "structured",
    gate: bool = False,
) -> Callable[[str], RawPlanView]:
    """A loop whose body refines once per round (``n`` is the round's number from 1, ``value``
    stops changing after round ``cap``), until ``n`` reaches ``goal``; with ``watch``, it
    watches ``value``; with ``gate``, each round's call waits for approval first. Its ``always``
    edge goes to after, its ``error`` edge to rescue."""

    def build(plan_id: str) -> RawPlanView:
        s = PlanSketch(plan_id, max_concurrent_frames=8).entry(NumberField(path="cap"))
        s.loop(
            "lp",
            {"path": "step.n", "op": "gte", "value": goal},
            max_iterations=max_iterations,
            watch=NodeRef("step", path="value") if watch else None,
            fail_unless_met=fail_unless_met,
            evaluator=evaluator,
        )
        s.call(
            "step",
            "refine",
            args={"round": NodeRef("lp", path="index"), "cap": NodeRef("entry", path="cap")},
            output=VALUE,
            gate=ApprovalGate(on="arguments") if gate else None,
        )
        s.call("after", "stamp", args={"loop": NodeRef("lp", path="ended")}, output=VALUE)
        s.call("rescue", "stamp", output=VALUE)
        s.edge("entry", "lp").edge("lp", "step", "body")
        return s.edge("lp", "after").edge("lp", "rescue", "error").view()

    return build


def _looped(
    status: str, ended: str | None = None, values: list[str] | None = None
) -> Callable[[RunProjection], None]:
    """The loop settled ``status``; if done, how it ended and each round's ``value``."""

    def check(projection: RunProjection) -> None:
        nodes = projection.node_status_by_id
        assert nodes["lp"] == status, nodes
        assert nodes.get("after", "pending") == ("done" if status == "done" else "pending")
        assert nodes.get("rescue", "pending") == ("done" if status == "failed" else "pending")
        if ended is None or values is None:
            return
        (output,) = [
            o for k, o in projection.outputs.items() if k.startswith("lp:") and "[" not in k
        ]
        (row,) = [item.json_ for item in output.items]
        assert row["ended"] == ended and row["rounds"] == len(values), row
        assert [r["value"] for r in row["results"]] == values, row
        assert row["result"] == row["results"][-1], row
        # The body reads run input, the round's index and the round before's result, none of
        # which a model wrote: every check's verdict is verified.
        checks = [v.check for k, v in projection.verdicts.items() if k.startswith("lp:")]
        assert len(checks) == len(values), projection.verdicts
        assert all(c is not None and c.provenance == "verified" for c in checks), checks

    return check


def _mapped(
    status: str, results: list[tuple[bool, str | None]] | None = None
) -> Callable[[RunProjection], None]:
    """The map settled ``status``; with ``results``, its output row per item (ok, value)."""

    def check(projection: RunProjection) -> None:
        nodes = projection.node_status_by_id
        assert nodes["m"] == status, nodes
        assert nodes.get("after", "pending") == ("done" if status == "done" else "pending")
        assert nodes.get("rescue", "pending") == ("done" if status == "failed" else "pending")
        if results is None:
            return
        outputs = projection.outputs.items()
        (output,) = [o for k, o in outputs if k.startswith("m:") and "[" not in k]
        rows = [item.json_ for item in output.items]
        assert [row["index"] for row in rows] == list(range(len(results)))
        for row, (ok, value) in zip(rows, results, strict=True):
            assert row["ok"] is ok, row
            if ok:
                assert row["result"]["value"] == value, row
            else:
                assert row["error"]["node"] == "inspect" and row["error"]["name"] == "ValueError"

    return check


CONCURRENT = SETTINGS.model_copy(update={"max_in_flight": 8})
"""Frames in flight together, for the joins that cancel the arms still running."""


BATCHED = SETTINGS.model_copy(update={"batch_maps_over": 4, "batch_steps": 6})
"""Maps of more than 4 items run in batches of 3 (an item is 2 steps: its frame and a call):
child workflows on Temporal, sub-runs in process."""


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


SCORE = json.dumps(
    {"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]}
)


def _with_bounds(view: RawPlanView, **bounds: Any) -> RawPlanView:
    from orchestration.plan.ops import plan_digest

    changed = view.model_copy(
        update={"bounds": PlanBounds(**{**view.bounds.model_dump(), **bounds}), "digest": ""}
    )
    return changed.model_copy(update={"digest": plan_digest(changed)})


def _budgeted(node: Any, budget: NodeBudget) -> Any:
    definition = node.definition.model_copy(update={"budget": budget})
    return node.model_copy(update={"definition": definition})


def thinking(plan_id: str) -> RawPlanView:
    """One reason node between the entry and a call: the model's answer is the call's input."""
    s = PlanSketch(plan_id).entry(StringField(path="s"))
    s.reason(
        "think", "Score this: ", NodeRef("entry", path="s"), max_attempts=3, output_schema=SCORE
    )
    s.call("after", "stamp", output=VALUE)
    return s.chain("entry", "think", "after").view()


def two_thoughts(budget: int | None = None) -> Callable[[str], RawPlanView]:
    """Two reason nodes in a chain, the second with its own token budget when given."""

    def build(plan_id: str) -> RawPlanView:
        s = PlanSketch(plan_id).entry(StringField(path="s"))
        s.reason("first", "Score: ", NodeRef("entry", path="s"), output_schema=SCORE)
        s.reason("second", "Score again: ", NodeRef("entry", path="s"), output_schema=SCORE)
        s.call("after", "stamp", output=VALUE)
        if budget is not None:
            s.nodes = [
                _budgeted(n, NodeBudget(max_tokens=budget))
                if isinstance(n, ReasonNode) and n.id == "second"
                else n
                for n in s.nodes
            ]
        return s.chain("entry", "first", "second", "after").view()

    return build


# -- gates ---------------------------------------------------------------------------------------

ECHOED = [StringField(path="value"), NumberField(path="n")]
CHOICE = ChoiceInput(options=(InputChoice(id="eu", label="Europe"), InputChoice(id="us",
                                                                              label="Americas")))


def gated(
    on: str = "arguments",
    *,
    editable: tuple[str, ...] | None = None,
    timeout: str | None = None,
    on_timeout: str | None = None,
    autonomous: bool | None = None,
    error_edge: bool = False,
    then_gate: bool = False,
) -> Callable[[str], RawPlanView]:
    """entry → work (echo, gated) → after (gated too with ``then_gate``); optionally
    work -error-> rescue."""

    def build(plan_id: str) -> RawPlanView:
        gate = ApprovalGate(
            on=on,  # type: ignore[arg-type]
            summary="send the greeting",
            editable=editable,
            timeout=timeout,
            on_timeout=on_timeout,  # type: ignore[arg-type]
            autonomous=autonomous,
        )
        s = PlanSketch(plan_id).entry(StringField(path="s"))
        s.call("work", "echo", args={"s": NodeRef("entry", path="s")}, output=ECHOED, gate=gate)
        s.call("after", "echo", args={"s": NodeRef("work", path="value")}, output=ECHOED,
               gate=ApprovalGate(on="arguments") if then_gate else None)
        s.edge("entry", "work").edge("work", "after")
        if error_edge:
            s.call("rescue", "stamp", output=VALUE).edge("work", "rescue", "error")
        return s.view()

    return build


def token_budget(plan_id: str) -> RawPlanView:
    return _with_bounds(two_thoughts(budget=500)(plan_id), max_tokens=200)


def cost_budget(plan_id: str) -> RawPlanView:
    return _with_bounds(two_thoughts()(plan_id), max_cost_usd=0.01)


def _own_budget(build: Callable[[str], RawPlanView], node_id: str, budget: NodeBudget) -> Any:
    def built(plan_id: str) -> RawPlanView:
        from orchestration.plan.ops import plan_digest

        view = build(plan_id)
        nodes = tuple(_budgeted(n, budget) if n.id == node_id else n for n in view.nodes)
        changed = view.model_copy(update={"nodes": nodes, "digest": ""})
        return changed.model_copy(update={"digest": plan_digest(changed)})

    return built


def model_branch(plan_id: str) -> RawPlanView:
    """A branch on a value a call computed from a model's answer: a model could steer it."""
    s = PlanSketch(plan_id).entry(NumberField(path="n"))
    s.reason("think", "Pick a number near ", NodeRef("entry", path="n"), output_schema=SCORE)
    s.call(
        "measure",
        "count",
        args={"n": NodeRef("think", path="score")},
        output=[NumberField(path="n")],
    )
    s.branch("big", {"path": "measure.n", "op": "gt", "value": 10})
    s.call("yes", "stamp", output=VALUE).call("no", "stamp", output=VALUE)
    return (
        s.edge("entry", "think")
        .edge("think", "measure")
        .edge("measure", "big")
        .edge("big", "yes", "match")
        .edge("big", "no", "no_match")
        .view()
    )


def _scripted(**scripts: Any) -> Callable[[], Reasoner]:
    return lambda: ScriptedReasoner(scripts)


def _provider_fails_once() -> Reasoner:
    """The provider is unavailable on the first request, then answers."""
    calls = Counter[str]()

    def answer(turn: ReasonTurn) -> Any:
        calls[turn.frame_key] += 1
        if calls[turn.frame_key] == 1:
            return ReasonerUnavailableError("HTTP 503: overloaded")
        return {"score": 4}

    return ScriptedReasoner({"think": answer})


PRICES = PriceTable({"scripted": ModelPrice(input_per_million=1000.0, output_per_million=1000.0)})
"""A test price: a thousand dollars per million tokens (a cent per ten tokens), so a few
scripted turns pass a one-cent budget."""


def _attempts(node: str, *expected: tuple[str, str | None]) -> Callable[[RunProjection], None]:
    """The node's one frame's attempts, as ``(result, reason)`` pairs."""

    def check(projection: RunProjection) -> None:
        keys = [k for k in projection.attempts if k.startswith(f"{node}:")]
        assert len(keys) == 1, projection.attempts
        got = [(a.result, a.reason) for a in projection.attempts[keys[0]]]
        assert got == list(expected), got
        assert [a.number for a in projection.attempts[keys[0]]] == list(
            range(1, len(expected) + 1)
        )

    return check


def asking(
    schema: Any,
    *,
    timeout: str | None = None,
    on_timeout: str | None = None,
    default: Any = None,
    read: str = "text",
    then_gate: bool = False,
) -> Callable[[str], RawPlanView]:
    """entry → ask (an input request) → use (echo of one field of the response; gated before
    it runs with ``then_gate``)."""

    def build(plan_id: str) -> RawPlanView:
        s = PlanSketch(plan_id).entry(StringField(path="s"))
        s.input("ask", schema, "Please answer for ", NodeRef("entry", path="s"), timeout=timeout,
                on_timeout=on_timeout, default=default)  # type: ignore[arg-type]
        s.call("use", "echo", args={"s": NodeRef("ask", path=read)}, output=ECHOED,
               gate=ApprovalGate(on="arguments") if then_gate else None)
        return s.chain("entry", "ask", "use").view()

    return build


def asking_model(plan_id: str) -> RawPlanView:
    """entry → think (may ask twice) → use (echo of its answer)."""
    schema = (
        '{"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}'
    )
    s = PlanSketch(plan_id).entry(StringField(path="s"))
    s.reason("think", "Plan a trip for ", NodeRef("entry", path="s"), output_schema=schema,
             max_attempts=2, asks=AskPolicy(max_rounds=2))
    s.call("use", "echo", args={"s": NodeRef("think", path="answer")}, output=ECHOED)
    return s.chain("entry", "think", "use").view()


def approve(
    by: str = "alice",
    *,
    args: dict[str, Any] | None = None,
    digest: str | None = None,
    feedback: str | None = None,
) -> Callable[[WaitingGate], PendingGateDecision]:
    def decide(gate: WaitingGate) -> PendingGateDecision:
        return GateApproval(
            frame_key=gate.frame_key,
            request=gate.request.request,
            decision="approved",
            decided_by=by,
            args=args,
            digest=digest if digest is not None else gate.request.digest,
            feedback=feedback,
        )

    return decide


def reject(by: str = "alice", feedback: str | None = None) -> Callable[[WaitingGate],
                                                                       PendingGateDecision]:
    def decide(gate: WaitingGate) -> PendingGateDecision:
        return GateApproval(frame_key=gate.frame_key, request=gate.request.request,
                            decision="rejected", decided_by=by, feedback=feedback)

    return decide


def answer(response: Any, by: str = "bob") -> Callable[[WaitingGate], PendingGateDecision]:
    def decide(gate: WaitingGate) -> PendingGateDecision:
        return GateAnswer(frame_key=gate.frame_key, request=gate.request.request,
                          response=response, provided_by=by)

    return decide


def _gate_outcomes(node: str, *outcomes: str) -> Callable[[RunProjection], None]:
    def check(projection: RunProjection) -> None:
        gates = [g for g in projection.gates.values() if g.node_id == node]
        assert len(gates) == 1, projection.gates
        assert [r.outcome for r in gates[0].history] == list(outcomes), gates[0].history

    return check


def _output(node: str, field_path: str, value: Any) -> Callable[[RunProjection], None]:
    def check(projection: RunProjection) -> None:
        found = [o for k, o in projection.outputs.items() if k.split(":", 1)[0] == node]
        assert found and found[0].items[0].json_[field_path] == value, found

    return check


def _all(*checks: Callable[[RunProjection], None]) -> Callable[[RunProjection], None]:
    def check(projection: RunProjection) -> None:
        for each in checks:
            each(projection)

    return check


def _violations(projection: RunProjection) -> None:
    (key,) = [k for k in projection.attempts if k.startswith("think:")]
    (attempt,) = projection.attempts[key]
    assert attempt.result == "ok" and attempt.usage is not None
    turns = attempt.usage.turns
    assert [t.outcome for t in turns] == ["invalid", "invalid", "accepted"], turns
    assert "$.score: 'high' is not of type 'integer'" in turns[0].problems
    assert "$.score: 'low' is not of type 'integer'" in turns[1].problems
    assert attempt.usage.tokens == sum(t.input_tokens + t.output_tokens for t in turns) > 0
    assert projection.usage.tokens == attempt.usage.tokens
    assert projection.node_usage["think"].tokens == attempt.usage.tokens


def _budget(budget: str, node: str) -> Callable[[RunProjection], None]:
    def check(projection: RunProjection) -> None:
        cause = projection.interruption
        assert cause is not None and cause.kind == "budget_exhausted", cause
        assert cause.budget == budget and cause.node_id == node, cause  # type: ignore[union-attr]
        assert projection.node_status_by_id.get(node, "pending") == "pending"
        assert not any(k.startswith(f"{node}:") for k in projection.attempts)

    return check


def _automatic(node: str, automatic: bool) -> Callable[[RunProjection], None]:
    def check(projection: RunProjection) -> None:
        gate = next(g for g in projection.gates.values() if g.node_id == node)
        assert bool(gate.history[-1].automatic) is automatic, gate.history

    return check


def _node_budget(budget: str, node: str) -> Callable[[RunProjection], None]:
    def check(projection: RunProjection) -> None:
        cause = projection.interruption
        assert cause is not None and cause.kind == "budget_exhausted", cause
        assert (cause.budget, cause.node_id) == (budget, node), cause  # type: ignore[union-attr]

    return check


def _feedback(node: str, text: str) -> Callable[[RunProjection], None]:
    def check(projection: RunProjection) -> None:
        gate = next(g for g in projection.gates.values() if g.node_id == node)
        assert gate.history[-1].feedback == text, gate.history

    return check


def _spent_under_token_budget(projection: RunProjection) -> None:
    cause = projection.interruption
    assert cause is not None and cause.spent == projection.usage.tokens < 200  # type: ignore[union-attr]
    assert "up to 500 more tokens" in (cause.detail or "")  # type: ignore[union-attr]


def _costed(projection: RunProjection) -> None:
    spent = projection.usage
    assert spent.unpriced_tokens == 0 and spent.cost_usd >= 0.01
    assert math.isclose(spent.cost_usd, spent.tokens * 0.001)
    assert projection.interruption.spent == spent.cost_usd  # type: ignore[union-attr]


def _turn_budget(projection: RunProjection) -> None:
    (key,) = [k for k in projection.attempts if k.startswith("think:")]
    (attempt,) = projection.attempts[key]
    assert attempt.error is not None and attempt.error.name == "budget_exhausted"
    assert attempt.usage is not None and [t.outcome for t in attempt.usage.turns] == ["invalid"]
    assert projection.node_status_by_id["think"] == "failed"


def _wall_time(projection: RunProjection) -> None:
    (key,) = [k for k in projection.attempts if k.startswith("work:")]
    (attempt,) = projection.attempts[key]
    assert attempt.result == "lost" and attempt.error is not None
    assert attempt.error.name == "StartToCloseTimeout"
    assert [f.node_id for f in projection.indeterminate] == ["work"]
    cause = projection.interruption
    assert cause is not None and cause.limit == 1.0  # type: ignore[union-attr]


def _context_window(projection: RunProjection) -> None:
    (key,) = [k for k in projection.attempts if k.startswith("think:")]
    (attempt,) = projection.attempts[key]
    assert attempt.result == "failed" and attempt.error is not None
    assert attempt.error.name == "context_window_exceeded", attempt.error
    assert projection.interruption is not None and projection.interruption.kind == "node_failed"


def _provenance(label: str) -> Callable[[RunProjection], None]:
    def check(projection: RunProjection) -> None:
        (verdict,) = projection.verdicts.values()
        assert verdict.check is not None and verdict.check.provenance == label, verdict.check
        for value in verdict.check.values:
            assert value.origins, value
            assert value.obtained_by == ("model" if label == "asserted" else "runtime")

    return check


def _measure_origin(obtained_by: str) -> Callable[[RunProjection], None]:
    def check(projection: RunProjection) -> None:
        (key,) = [k for k in projection.arg_origins if k.startswith("measure:")]
        (origin,) = projection.arg_origins[key]["n"]
        assert origin.obtained_by == obtained_by, origin

    return check


AUTONOMOUS = SETTINGS.model_copy(update={"autonomous": True})
FORM = FormInput(fields=(FormField(id="name", label="Name", type="text", required=True),
                         FormField(id="age", label="Age", type="number")))
GATE_SCENARIOS: dict[str, Scenario] = {
    "gate_arguments_approved": Scenario(
        gated(), {"s": "hi"}, "completed", gates={"work": [[Say(approve())]]},
        check=_all(_gate_outcomes("work", "approved"), _output("after", "value", "hi")),
    ),
    "gate_arguments_edited": Scenario(
        gated(editable=("s",)), {"s": "hi"}, "completed",
        gates={"work": [[Say(approve(args={"s": "hello"}))]]},
        check=_all(_gate_outcomes("work", "approved"), _output("work", "value", "hello")),
    ),
    "gate_edit_not_allowed": Scenario(
        gated(), {"s": "hi"}, "completed",
        gates={"work": [[Say(approve(args={"s": "hello"}), "edit_not_allowed"),
                         Say(approve())]]},
        check=_output("work", "value", "hi"),
    ),
    "gate_stale_arguments": Scenario(
        gated(), {"s": "hi"}, "completed",
        gates={"work": [[Say(approve(digest="0" * 64), "stale_arguments"), Say(approve())]]},
    ),
    "gate_duplicate_decision": Scenario(
        gated(then_gate=True), {"s": "hi"}, "completed",
        gates={"work": [[Say(approve("alice")), Say(approve("bob"), "gate_already_decided")]],
               "after": [[Say(approve("carol"))]]},
        check=_gate_outcomes("work", "approved"),
    ),
    "gate_result_approved": Scenario(
        gated("result"), {"s": "hi"}, "completed", gates={"work": [[Say(approve())]]},
        check=_all(_gate_outcomes("work", "approved"), _output("after", "value", "hi")),
    ),
    "gate_result_rejected_with_feedback": Scenario(
        gated("result", error_edge=True), {"s": "hi"}, "completed",
        gates={"work": [[Say(reject(feedback="wrong recipient"))]]},
        check=_all(_status("rescue", "done"), _status("after", "pending"),
                   _feedback("work", "wrong recipient")),
    ),
    "gate_rejected_unhandled": Scenario(
        gated(), {"s": "hi"}, "aborted", gates={"work": [[Say(reject(feedback="no"))]]},
        check=_status("work", "failed"),
    ),
    "gate_answer_to_an_approval": Scenario(
        gated(), {"s": "hi"}, "completed",
        gates={"work": [[Say(answer("yes"), "not_an_input_gate"), Say(approve())]]},
    ),
    "gate_timeout_reject": Scenario(
        gated(timeout="300ms", on_timeout="reject", error_edge=True), {"s": "hi"}, "completed",
        check=_all(_gate_outcomes("work", "timed_out"), _status("rescue", "done")),
    ),
    "gate_timeout_halt": Scenario(
        gated(timeout="300ms"), {"s": "hi"}, "halted",
        check=_gate_outcomes("work", "timed_out"),
    ),
    "gate_autonomous_allowed": Scenario(
        gated(autonomous=True), {"s": "hi"}, "completed", settings=AUTONOMOUS,
        check=_all(_automatic("work", True), _output("after", "value", "hi")),
    ),
    "gate_autonomous_not_allowed": Scenario(
        gated(), {"s": "hi"}, "completed", settings=AUTONOMOUS,
        gates={"work": [[Say(approve())]]}, check=_automatic("work", False),
    ),
    "input_text": Scenario(
        asking(TextInput()), {"s": "x"}, "completed", gates={"ask": [[Say(answer("Ada"))]]},
        check=_all(_output("ask", "text", "Ada"), _output("use", "value", "Ada")),
    ),
    "input_choice_invalid_then_valid": Scenario(
        asking(CHOICE, read="choice"), {"s": "x"}, "completed",
        gates={"ask": [[Say(answer("asia"), "invalid_response"),
                        Say(approve(), "answer_required"), Say(answer("us"))]]},
        check=_output("use", "value", "us"),
    ),
    "input_form": Scenario(
        asking(FORM, read="name"), {"s": "x"}, "completed",
        gates={"ask": [[Say(answer({"age": 3}), "invalid_response"),
                        Say(answer({"name": "Ada", "age": 36}))]]},
        check=_output("ask", "age", 36),
    ),
    "input_file": Scenario(
        asking(FileInput(accept=(".pdf",)), read="uri"), {"s": "x"}, "completed",
        gates={"ask": [[Say(answer({"name": "cv.pdf", "size": 10, "uri": "s3://b/cv.pdf"}))]]},
        check=_output("use", "value", "s3://b/cv.pdf"),
    ),
    "input_declined": Scenario(
        asking(TextInput()), {"s": "x"}, "aborted",
        gates={"ask": [[Say(reject(feedback="not mine to answer"))]]},
        check=_gate_outcomes("ask", "rejected"),
    ),
    "input_timeout_default_late_answer": Scenario(
        asking(CHOICE, timeout="300ms", on_timeout="default", default="eu", read="choice",
               then_gate=True),
        {"s": "x"}, "completed",
        gates={"ask": [[Say(answer("us"), "skipped", late=True)]], "use": [[Say(approve())]]},
        check=_all(_gate_outcomes("ask", "timed_out"), _output("use", "value", "eu")),
    ),
    "input_timeout_halt": Scenario(
        asking(TextInput(), timeout="300ms"), {"s": "x"}, "halted",
        check=_gate_outcomes("ask", "timed_out"),
    ),
    "questions_twice_then_answer": Scenario(
        asking_model, {"s": "Lisbon"}, "completed",
        gates={"think": [[Say(answer({"city": "Porto"}))],
                         [Say(answer({"size": "xl"}), "invalid_response"),
                          Say(answer({"size": "l"}))]]},
        check=_all(_gate_outcomes("think", "answered", "answered"),
                   _output("think", "answer", "Porto/l"), _output("use", "value", "Porto/l")),
    ),
}


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
        one_call("flaky"),
        {"s": "x"},
        "completed",
        check=_all(
            _status("work", "done"),
            _attempts(
                "work", ("failed", None), ("failed", "transient_error"), ("ok", "transient_error")
            ),
        ),
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
    "map_no_items": Scenario(mapped(), {"n": 0, "bad": 0}, "completed", check=_mapped("done", [])),
    "map_one_item": Scenario(
        mapped(), {"n": 1, "bad": 0}, "completed", check=_mapped("done", [(True, "F0")])
    ),
    "map_many_items": Scenario(
        mapped(concurrency=2),
        {"n": 4, "bad": 0},
        "completed",
        check=_mapped("done", [(True, "F0"), (True, "F1"), (True, "F2"), (True, "F3")]),
    ),
    "map_over_max_items": Scenario(
        mapped(max_items=3),
        {"n": 4, "bad": 0},
        "completed",
        check=_mapped("failed"),
    ),
    "map_tolerance_met": Scenario(
        mapped(tolerated_failures=1),
        {"n": 3, "bad": 1},
        "completed",
        check=_mapped("done", [(True, "F0"), (True, "F1"), (False, None)]),
    ),
    "map_tolerance_exceeded": Scenario(
        mapped(tolerated_failure_percent=25),
        {"n": 4, "bad": 2},
        "completed",
        check=_mapped("failed"),
    ),
    "map_body_gated": Scenario(
        gated_map,
        {"s": "x"},
        "completed",
        gates={"inspect": [[Say(approve())]]},
        check=_mapped("done", [(True, "F0"), (True, "F1")]),
    ),
    "map_in_batches": Scenario(
        mapped(max_items=12, concurrency=3),
        {"n": 10, "bad": 0},
        "completed",
        check=_mapped("done", [(True, f"F{i}") for i in range(10)]),
        settings=BATCHED,
    ),
    "map_in_batches_tolerance_met": Scenario(
        mapped(max_items=12, concurrency=2, tolerated_failures=2),
        {"n": 9, "bad": 2},
        "completed",
        check=_mapped("done", [(True, f"F{i}") for i in range(7)] + [(False, None)] * 2),
        settings=BATCHED,
    ),
    "map_in_batches_tolerance_exceeded": Scenario(
        mapped(max_items=12, concurrency=2, tolerated_failures=1),
        {"n": 9, "bad": 2},
        "completed",
        check=_mapped("failed"),
        settings=BATCHED,
    ),
    "map_two_at_a_time": Scenario(
        paced_map,
        {"s": "x"},
        "completed",
        check=_mapped("done", [(True, "awake")] * 4),
        settings=CONCURRENT,
    ),
    "loop_converges": Scenario(
        looped(2, 5), {"cap": 9}, "completed", check=_looped("done", "until", ["v0", "v1"])
    ),
    "loop_max_iterations": Scenario(
        looped(99, 3),
        {"cap": 9},
        "completed",
        check=_looped("done", "max_iterations", ["v0", "v1", "v2"]),
    ),
    "loop_stuck": Scenario(
        looped(99, 5, watch=True),
        {"cap": 1},
        "completed",
        check=_looped("done", "stuck", ["v0", "v1", "v1"]),
    ),
    "loop_body_gated": Scenario(
        looped(2, 5, gate=True),
        {"cap": 9},
        "completed",
        gates={"step": [[Say(approve())]]},
        check=_looped("done", "until", ["v0", "v1"]),
    ),
    "loop_unmet_fails": Scenario(
        looped(99, 2, fail_unless_met=True), {"cap": 9}, "completed", check=_looped("failed")
    ),
    "loop_until_raises": Scenario(
        looped(2, 5, evaluator="explode"), {"cap": 9}, "completed", check=_looped("failed")
    ),
    "reason_invalid_twice": Scenario(
        thinking,
        {"s": "x"},
        "completed",
        check=_violations,
        reasoner=_scripted(think=[{"score": "high"}, {"score": "low"}, {"score": 7}]),
    ),
    "reason_provider_error_retried": Scenario(
        thinking,
        {"s": "x"},
        "completed",
        check=_attempts("think", ("failed", None), ("ok", "provider_error")),
        reasoner=_provider_fails_once,
    ),
    "context_window_not_retried": Scenario(
        thinking,
        {"s": "x"},
        "aborted",
        check=_context_window,
        reasoner=_scripted(think=ContextWindowExceededError("prompt is too long", 400)),
    ),
    "token_budget": Scenario(
        token_budget,
        {"s": "x"},
        "halted",
        check=_all(_budget("maxTokens", "second"), _spent_under_token_budget),
        reasoner=_scripted(),
    ),
    "cost_budget": Scenario(
        cost_budget,
        {"s": "x"},
        "halted",
        check=_all(_budget("maxCostUsd", "second"), _costed),
        reasoner=_scripted(),
        prices=PRICES,
    ),
    "reason_turn_budget": Scenario(
        _own_budget(thinking, "think", NodeBudget(max_tokens=50)),
        {"s": "x"},
        "halted",
        check=_all(_turn_budget, _node_budget("node.maxTokens", "think")),
        reasoner=_scripted(think=[{"score": "high"}, {"score": 7}]),
    ),
    "wall_time_budget": Scenario(
        _own_budget(one_call("lost"), "work", NodeBudget(max_seconds=1.0)),
        {"s": "x"},
        "halted",
        check=_all(_wall_time, _node_budget("node.maxSeconds", "work")),
    ),
    "verified_branch": Scenario(
        branch,
        {"n": 42},
        "completed",
        check=_all(_provenance("verified"), _measure_origin("runtime")),
    ),
    "asserted_branch": Scenario(
        model_branch,
        {"n": 3},
        "completed",
        check=_all(_provenance("asserted"), _measure_origin("model"), _status("yes", "done")),
        reasoner=_scripted(think={"score": 12}),
    ),
}
SCENARIOS.update(GATE_SCENARIOS)
