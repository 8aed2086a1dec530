"""The operator view states every pause; as executed, every request and what became of it."""

from __future__ import annotations

import asyncio

from orchestration.plan.encoding import NodeRef
from orchestration.review.render import render_plan
from orchestration.run.engine.gating import Waiting
from orchestration.run.messages import GateAnswer, GateApproval, PendingGateDecision
from orchestration.testing import PlanSketch, run_in_process
from orchestration.types import (
    ApprovalGate,
    AskPolicy,
    ChoiceInput,
    InputChoice,
    RawPlanView,
    StringField,
)


def plan() -> RawPlanView:
    s = PlanSketch("p").entry(StringField(path="s"))
    s.call("send", args={"s": NodeRef("entry", path="s")}, output=[StringField(path="value")],
           gate=ApprovalGate(on="arguments", editable=("s",), summary="send the mail?",
                             timeout="PT30M", on_timeout="reject", autonomous=True))
    s.input("region", ChoiceInput(options=(InputChoice(id="eu", label="Europe"),
                                           InputChoice(id="us", label="Americas"))),
            "Where for ", NodeRef("send", path="value"), timeout="1h", on_timeout="default",
            default="eu")
    s.reason("think", "go", output_schema='{"type": "object"}', asks=AskPolicy(max_rounds=2))
    s.call("keep", output=[StringField(path="value")], gate=ApprovalGate(on="result"))
    return s.chain("entry", "send", "region", "think", "keep").view()


def test_every_pause_is_stated_before_approval() -> None:
    """Before a call with its arguments, after a step, for input, for questions; who may
    decide, what may change, what a timeout means."""
    text = render_plan(plan())
    assert ("the run will pause here for your approval of the arguments it will send"
            in text)
    assert "the approver may change: s" in text and "asks: send the mail?" in text
    assert "if nobody decides within PT30M: it is rejected" in text
    assert "autonomous mode may approve it by itself" in text
    assert "PAUSES FOR A PERSON'S INPUT" in text
    assert "a choice of one of: eu (Europe), us (Americas)" in text
    assert 'its default response "eu" is used (recorded as a timeout, not an answer)' in text
    assert "up to 2 rounds" in text
    assert "PAUSES AFTER IT RUNS: its result is held until you approve it" in text
    assert "autonomous mode still waits here for a person." in text


def test_as_executed_lists_each_request_and_its_decision() -> None:
    """Who decided, what was edited, the feedback; an open request names its command."""

    def on_gate(waiting: Waiting) -> PendingGateDecision | None:
        gate = waiting.request.gate
        if gate == "arguments":
            return GateApproval(frame_key=waiting.key, decision="approved", decided_by="alice",
                                args={"s": "hello"})
        if gate == "input":
            return GateAnswer(frame_key=waiting.key, response="us", provided_by="bob")
        return GateApproval(frame_key=waiting.key, decision="rejected", decided_by="carol",
                            feedback="not this one")

    _, projection = asyncio.run(run_in_process(plan(), {"s": "hi"}, on_gate=on_gate))
    text = render_plan(plan(), view="as_executed", run=projection)
    assert 'approved by alice at' in text and 'edited to {"s": "hello"}' in text
    assert "(input) at region" in text and "answered by bob" in text
    assert 'rejected by carol' in text and 'feedback: "not this one"' in text
    waiting = projection.model_copy(update={"outcome": "running"})
    gates = dict(projection.gates)
    key, last = next((k, g) for k, g in gates.items() if g.node_id == "keep")
    open_request = last.history[-1].model_copy(update={"outcome": None})
    gates[key] = last.model_copy(update={"current": open_request, "status": "awaiting_approval",
                                         "history": (open_request,)})
    text = render_plan(plan(), view="as_executed", run=waiting.model_copy(update={"gates": gates}))
    assert f"`orch run decide p {key} approve|reject`" in text
    assert ": WAITING" in text
