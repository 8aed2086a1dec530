"""The as-executed view (semantics.md 12.1): what a run did, in the operator view's layout.

Regenerate the golden after an intended change with ``UPDATE_GOLDENS=1``.
"""

from __future__ import annotations

from typing import Any

import pytest

from orchestration.api import create_orchestration
from orchestration.errors import RunNotFoundError
from orchestration.plan.encoding import NodeRef
from orchestration.review.render import describe_interruption, render_plan
from orchestration.run.engine.machine import Failed
from orchestration.run.fold import fold_run
from orchestration.run.routes import BranchId, EdgeSegment, frame_key
from orchestration.store.memory import MemoryPlanStore
from orchestration.testing import FakeToolbox, PlanSketch, run_in_process
from orchestration.tools.allowlist import ToolAllowlist
from orchestration.types import (
    AuthorityClaim,
    AuthorityRevoked,
    BudgetExhausted,
    CallDefinition,
    CallNode,
    DeviationAbort,
    EdgeTakenRecord,
    FrameRef,
    GateTimeout,
    JoinUnsatisfiable,
    NodeFailed,
    OperatorStop,
    OutputSchemaViolation,
    PredicateUnevaluatable,
    ProcessDeath,
    RawPlanView,
    RunEvent,
    StringField,
    TurnAbort,
)

from .test_render import _golden

VALUE = [StringField(path="value")]


def _plan(alert_tool: str = "mail.send") -> RawPlanView:
    """entry → shout → gate (match → save, no match → skip_it), shout --error--> alert."""
    shouted = frame_key("shout", BranchId(segments=(EdgeSegment(edge="e_shout"),)))
    sketch = (
        PlanSketch("p")
        .entry(StringField(path="q"))
        .call("shout", "text.upper", args={"s": NodeRef("entry", path="q")}, output=VALUE)
        .branch("gate", {"path": f"{shouted}.value", "op": "eq", "value": "HI"})
        .call("save", "files.write", args={"text": NodeRef("shout", path="value")},
              output=VALUE, replay_safe=False, on_indeterminate="halt")
        .call("skip_it", "text.lower", args={"s": "nothing"}, output=VALUE)
        .add(CallNode(id="alert", definition=CallDefinition(
            tool=alert_tool, args={"to": "ops"}, output=tuple(VALUE), on_missing_value="fail",
            replay_safe=True, on_indeterminate="retry",
            authority=(AuthorityClaim(capability="mail", scope="ops", verb="create"),))))
        .edge("entry", "shout", edge_id="e_shout")
        .edge("shout", "gate", edge_id="e_gate")
        .edge("gate", "save", "match", edge_id="e_match")
        .edge("gate", "skip_it", "no_match", edge_id="e_no")
        .edge("shout", "alert", "error", edge_id="e_alert")
    )
    return sketch.view()


async def _run(view: RawPlanView, tools: dict[str, Any]) -> tuple[list[RunEvent], Any]:
    return await run_in_process(view, {"q": "hi"}, FakeToolbox(tools=tools))


@pytest.mark.asyncio
async def test_a_completed_run_as_executed_matches_its_golden() -> None:
    """Statuses, taken edges with evidence, resolved references, the run's header."""
    view = _plan()
    _, projection = await _run(view, {"text.upper": lambda d: {"value": d.args["s"].upper()}})
    text = render_plan(view, "operator", view="as_executed", run=projection)
    lines = text.splitlines()
    assert "Operator view, as executed: what the run did." in lines
    assert "run: run-1 · outcome: completed" in lines
    assert "2. CALL `shout` — tool text.upper [done]" in lines
    assert any(line.endswith("[not reached]") and "`skip_it`" in line for line in lines)
    assert '       s: ← entry.q (first) ⇒ "hi"' in lines
    assert '       text: ← shout.value (first) ⇒ "HI"' in lines
    # The structured cell gives evidence for its verdict, and the view prints it.
    assert any(
        line.startswith("       on match → save (step 4, edge e_match)  [taken · evidence: ")
        for line in lines
    )
    assert "       on no match → skip_it (step 5, edge e_no)" in lines
    assert "To approve" not in text
    _golden("as_executed.operator.txt", text)


@pytest.mark.asyncio
async def test_a_taken_edge_shows_its_evidence_and_how_often() -> None:
    """Evidence recorded on edge_taken is printed; an edge taken twice says 2×."""
    view = _plan()
    _, projection = await _run(view, {"text.upper": lambda d: {"value": d.args["s"].upper()}})
    taken = (
        EdgeTakenRecord(edge_id="e_match", handle="match", evidence={"matched": True}),
        EdgeTakenRecord(edge_id="e_shout", handle="always"),
        EdgeTakenRecord(edge_id="e_shout", handle="always"),
    )
    text = render_plan(view, view="as_executed",
                       run=projection.model_copy(update={"edges_taken": taken}))
    assert '(step 4, edge e_match)  [taken · evidence: {"matched": true}]' in text
    assert "(step 2, edge e_shout)  [taken 2×]" in text


@pytest.mark.asyncio
async def test_an_aborted_run_says_why_in_the_contract_words() -> None:
    """An unhandled failure: the header names the node; the failed node says failed."""
    view = _plan()
    tools = {"text.upper": Failed(name="RuntimeError", message="boom"),
             "mail.send": Failed(name="RuntimeError", message="down")}
    _, projection = await _run(view, tools)
    text = render_plan(view, "operator", view="as_executed", run=projection)
    assert "run: run-1 · outcome: aborted" in text
    assert "interrupted: node alert failed (unhandled)" in text
    assert "2. CALL `shout` — tool text.upper [failed]" in text
    assert "(step 6, edge e_alert)  [taken]" in text


@pytest.mark.asyncio
async def test_the_model_audience_keeps_wire_form_references() -> None:
    """As executed for a model: references stay in their $ref form, values follow."""
    view = _plan()
    _, projection = await _run(view, {"text.upper": lambda d: {"value": d.args["s"].upper()}})
    text = render_plan(view, "model", view="as_executed", run=projection)
    assert "Model view, as executed" in text
    assert '{"$ref": {"node": "shout", "select": "first", "path": "value"}} ⇒ "HI"' in text


def test_as_executed_needs_the_run() -> None:
    """Asking for what a run did without the run is a programming error, named."""
    with pytest.raises(ValueError, match="run="):
        render_plan(_plan(), view="as_executed")


@pytest.mark.parametrize(("cause", "label"), [
    (TurnAbort(), "turn abort"),
    (OperatorStop(), "operator stop"),
    (GateTimeout(), "gate timeout"),
    (ProcessDeath(), "process death"),
    (BudgetExhausted(settled=7), "step budget exhausted after 7 settlement(s)"),
    (DeviationAbort(detail="digest differs"), "deviation abort: digest differs"),
    (NodeFailed(node_id="x"), "node x failed (unhandled)"),
    (PredicateUnevaluatable(node_id="g"), "predicate unevaluatable at node g"),
    (JoinUnsatisfiable(node_id="j"), "join j unsatisfiable"),
    (OutputSchemaViolation(node_id="r"), "output schema violated at node r"),
    (AuthorityRevoked(claim=AuthorityClaim(capability="files", scope="/", verb="delete")),
     "authority revoked: files · / · delete"),
])
def test_interruption_labels_are_the_contracts(cause: Any, label: str) -> None:
    """Every interruption cause has the contract's label."""
    assert describe_interruption(cause) == label


class _Host:
    """A run host that only reads (what the as-executed view asks of it)."""

    def __init__(self, events: list[RunEvent]) -> None:
        self.events = events
        self.asked: list[str] = []

    async def start(self, plan_id: str, run_input: Any, *, resume_run_id: Any = None) -> Any:
        raise AssertionError("the view never starts a run")

    async def execute(self, plan_id: str, run_input: Any, *, resume_run_id: Any = None) -> Any:
        raise AssertionError("the view never runs a plan")

    async def read_events(self, plan_id: str) -> list[RunEvent]:
        self.asked.append(plan_id)
        return self.events

    async def projection(self, plan_id: str) -> Any:
        return fold_run(await self.read_events(plan_id))


@pytest.mark.asyncio
async def test_the_facade_renders_a_run_from_its_host() -> None:
    """Orchestration.render(view='as_executed') folds the log its run host reads."""
    view = _plan()
    events, _ = await _run(view, {"text.upper": lambda d: {"value": d.args["s"].upper()}})
    store = MemoryPlanStore()
    await store.create_plan("p")
    host = _Host(events)
    orch = await create_orchestration(store=store, invocable=ToolAllowlist(), runs=host)
    with_reader = await orch.render("p", view="as_executed")
    assert host.asked == ["p"] and "run: run-1 · outcome: completed" in with_reader
    bare = await create_orchestration(store=store, invocable=ToolAllowlist())
    with pytest.raises(RunNotFoundError):
        await bare.render("p", view="as_executed")


def test_no_heading_without_a_body() -> None:
    """An empty plan, an empty prompt and a transform with no steps say so on the line."""
    assert "Steps: none (the plan has no nodes yet)." in render_plan(PlanSketch("e").view())
    view = PlanSketch("p").entry().reason("think").transform(
        "slice", NodeRef("think")).chain("entry", "think", "slice").view()
    lines = render_plan(view).splitlines()
    assert "     prompt: (empty)" in lines and "     steps: (none)" in lines
    for i, line in enumerate(lines):
        if not line.rstrip().endswith(":"):
            continue
        following = next((f for f in lines[i + 1:] if f.strip()), "")
        indent = len(line) - len(line.lstrip())
        deeper = len(following) - len(following.lstrip()) > indent
        assert deeper or following[:1].isdigit(), f"heading without a body: {line!r}"


def test_total_authority_is_every_call_grouped_by_capability() -> None:
    """The closing section lists each capability's scopes and verbs (list < read < create)."""
    text = render_plan(_plan())
    tail = text[text.index("Total authority requested"):]
    assert tail.splitlines()[1:3] == ["  mail:", "    · ops · create"]
    unreachable = PlanSketch("u").entry().add(CallNode(id="orphan", definition=CallDefinition(
        tool="files.delete", args={}, output=(), on_missing_value="fail", replay_safe=True,
        on_indeterminate="retry",
        authority=(AuthorityClaim(capability="files", scope="/", verb="delete"),)))).view()
    assert "    · / · delete  (unreachable call: not bound)" in render_plan(unreachable)


@pytest.mark.asyncio
async def test_a_halted_call_waiting_for_a_decision_says_how_to_answer() -> None:
    """A run waiting on an indeterminate call names it and the command that answers it."""
    view = _plan()
    _, projection = await _run(view, {"text.upper": lambda d: {"value": d.args["s"].upper()}})
    frame = FrameRef(node_id="save", kind="call", branch_id=BranchId(segments=()))
    waiting = projection.model_copy(update={
        "outcome": "running", "indeterminate": (frame,), "interruption": ProcessDeath()})
    text = render_plan(view, view="as_executed", run=waiting)
    assert "interrupted: process death" in text
    assert (f"waiting for you: call save has an unknown outcome; answer it with "
            f"`orch run resolve p {frame.key} retry|skip|abort`") in text
