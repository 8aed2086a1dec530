"""The engine at gates: waiting holds no slot, decisions move it on, and a resumed or continued
run waits at the same requests (or asks again after a halt)."""

from __future__ import annotations

from typing import Any

import pytest

from orchestration.errors import EngineStateError, GateRefusedError, MalformedRunLogError
from orchestration.plan.encoding import NodeRef
from orchestration.run.engine.machine import RunEngine
from orchestration.run.engine.results import Asked, Succeeded
from orchestration.run.expand import expand_log, project_log
from orchestration.run.fold import fold_run
from orchestration.run.gates import apply_decision, check_decision
from orchestration.run.log import LogEntry, LogGateDecided, LogGateOpen, LogGateTimeout
from orchestration.run.messages import GateAnswer, GateApproval
from orchestration.testing import PlanSketch, TickClock
from orchestration.types import (
    ApprovalGate,
    AskPolicy,
    ChoiceInput,
    InputChoice,
    Question,
    RawPlanView,
    StringField,
    TextInput,
)

CHOICE = ChoiceInput(options=(InputChoice(id="a", label="A"), InputChoice(id="b", label="B")))


def plan(timeout: str | None = None) -> RawPlanView:
    """entry → call (gated before) → input → think (asks) → keep (result held)."""
    s = PlanSketch("p").entry(StringField(path="s"))
    s.call("call", args={"s": NodeRef("entry", path="s")}, output=[StringField(path="value")],
           gate=ApprovalGate(on="arguments", editable=("s",), timeout=timeout))
    s.input("pick", CHOICE, "Pick for ", NodeRef("call", path="value"))
    s.reason("think", "think", output_schema='{"type": "object"}', asks=AskPolicy(max_rounds=1))
    s.call("keep", output=[StringField(path="value")], gate=ApprovalGate(on="result"))
    return s.chain("entry", "call", "pick", "think", "keep").view()


class Run:
    """An engine driven by hand, its whole log kept."""

    def __init__(self, view: RawPlanView, engine: RunEngine | None = None,
                 log: list[LogEntry] | None = None) -> None:
        self.now = TickClock()
        self.engine = engine or RunEngine.start(view, "run-1", {"s": "hi"}, self.now())
        self.log: list[LogEntry] = list(log or [])
        self.drain()

    def drain(self) -> list[LogEntry]:
        new = self.engine.drain()
        self.log.extend(new)
        return new

    def ready(self) -> list[Any]:
        out = self.engine.ready(self.now())
        self.drain()
        return out

    def decide(self, decision: Any) -> Any:
        ack = apply_decision(self.engine, decision, self.now())
        self.drain()
        return ack


def test_a_gated_call_waits_unentered_and_runs_what_was_approved() -> None:
    """Before a call: no enter, no window taken; the edit is what runs, its digest bound."""
    run = Run(plan())
    assert run.ready() == []
    assert run.engine.waiting == ("call:e2:e0",) and run.engine.in_flight == ()
    opened = [e for e in run.log if isinstance(e, LogGateOpen)]
    assert opened[0].args == {"s": "hi"} and opened[0].digest
    assert not any(e.kind == "enter" and e.frame == 1 for e in run.log)
    run.decide(GateApproval(frame_key="call:e2:e0", decision="approved", args={"s": "yo"}))
    (dispatch,) = run.ready()
    assert dispatch.args == {"s": "yo"} and dispatch.args_digest is not None
    decided = next(e for e in run.log if isinstance(e, LogGateDecided))
    assert decided.args == {"s": "yo"} and decided.digest == dispatch.args_digest


def test_each_kind_of_pause_and_the_fold_of_every_prefix() -> None:
    """Arguments, input, questions and a held result, in order; each prefix folds like the
    whole, and the fold says who waits for what."""
    run = Run(plan())
    run.ready()
    run.decide(GateApproval(frame_key="call:e2:e0", decision="approved"))
    (call,) = run.ready()
    run.engine.settle(call.key, Succeeded.one({"value": "HI"}), run.now())
    run.drain()
    assert run.ready() == []
    projection = project_log(run.log)
    (pick,) = [g for g in projection.gates.values() if g.node_id == "pick"]
    assert pick.status == "awaiting_input" and pick.current is not None
    assert pick.current.prompt == "Pick for HI"
    run.decide(GateAnswer(frame_key=run.engine.waiting[0], response="b"))
    (think,) = run.ready()
    assert think.rounds == ()
    question = Question(id="q", prompt="why?", schema=TextInput())
    run.engine.ask(think.key, Asked(questions=(question,), call="c1"), run.now())
    run.drain()
    assert run.engine.in_flight == () and run.engine.waiting == (think.key,)
    run.decide(GateAnswer(frame_key=think.key, response={"q": "because"}))
    (again,) = run.ready()
    assert again.attempt == 2 and again.tries == 1
    assert again.rounds[0].answers == {"q": "because"} and again.rounds[0].call == "c1"
    run.engine.settle(again.key, Succeeded.one({"answer": "x"}), run.now())
    run.drain()
    (keep,) = run.ready()
    run.engine.settle(keep.key, Succeeded.one({"value": "held"}), run.now())
    run.drain()
    held = project_log(run.log)
    assert held.gates[keep.key].status == "awaiting_approval"
    assert held.indeterminate == ()  # its attempt completed; only its result waits
    assert keep.key not in held.outputs
    run.decide(GateApproval(frame_key=keep.key, decision="approved", decided_by="carol"))
    run.ready()
    assert run.engine.outcome == "completed"
    final = fold_run(expand_log(run.log))
    assert final.outputs[keep.key].items[0].json_ == {"value": "held"}
    assert final.outputs[run.log[0].entry + ":"].items[0].json_ == {"s": "hi"}
    for length in range(1, len(run.log) + 1):
        assert project_log(run.log[:length]) == fold_run(expand_log(run.log[:length]))


def test_decisions_that_are_refused_or_skipped() -> None:
    """Unknown frames and requests are refused, a second decision too; a decision after its
    request timed out (here halting the run) is skipped, saying why."""
    run = Run(plan(timeout="1s"))
    run.ready()
    key = run.engine.waiting[0]
    with pytest.raises(GateRefusedError) as caught:
        check_decision(run.engine, GateApproval(frame_key="ghost", decision="approved"))
    assert caught.value.code == "gate_not_open"
    with pytest.raises(GateRefusedError) as caught:
        check_decision(run.engine, GateApproval(frame_key=key, request=2, decision="approved"))
    assert caught.value.code == "gate_not_open"
    with pytest.raises(GateRefusedError) as caught:
        check_decision(run.engine, GateApproval(frame_key=key, decision="approved"),
                       pending={key})
    assert caught.value.code == "gate_already_decided"
    run.engine.time_out(key, run.now())
    run.drain()
    late = apply_decision(run.engine, GateApproval(frame_key=key, decision="approved"),
                          run.now())
    assert late.outcome == "skipped" and "ended" in (late.reason or "")
    assert isinstance(run.log[-3], LogGateTimeout) and run.engine.outcome == "halted"


def test_resume_waits_at_the_same_request_or_asks_again_after_a_halt() -> None:
    """A log cut while a request is open resumes waiting at it (nothing new recorded); a run
    halted by a gate's timeout asks again, with a new request and deadline."""
    view = plan(timeout="1s")
    run = Run(view)
    run.ready()
    cut = list(run.log)
    resumed = RunEngine.resume(view, cut, at="2026-06-01T00:00:00Z")
    new = resumed.drain()
    assert not any(isinstance(e, LogGateOpen) for e in new)
    (open_gate,) = resumed.open_gates()
    assert open_gate.request.request == 1 and open_gate.deadline == cut[-1].deadline
    run.engine.time_out(run.engine.waiting[0], run.now())
    run.drain()
    assert run.engine.outcome == "halted"
    again = RunEngine.resume(view, run.log, reopen=True, at="2026-06-01T00:00:00Z")
    reopened = [e for e in again.drain() if isinstance(e, LogGateOpen)]
    assert [(e.request, e.deadline) for e in reopened] == [(2, "2026-06-01T00:00:01.000Z")]
    assert again.waiting == ("call:e2:e0",)


def test_continue_as_new_carries_open_and_approved_gates() -> None:
    """A checkpoint with a request open and a call approved but not run: the continued engine
    waits at the same request, and the approved call runs with its approved arguments."""
    s = PlanSketch("p").entry(StringField(path="s"))
    s.call("left", args={"s": NodeRef("entry", path="s")}, output=[StringField(path="value")],
           gate=ApprovalGate(on="arguments", editable=("s",)))
    s.input("ask", TextInput(), "name?")
    view = s.edge("entry", "left").edge("entry", "ask").view()
    run = Run(view)
    run.ready()
    assert set(run.engine.waiting) == {"left:e2:e0", "ask:e2:e1"}
    run.decide(GateApproval(frame_key="left:e2:e0", decision="approved", args={"s": "edit"}))
    checkpoint = run.engine.checkpoint(run.now())
    assert [c.gate is not None for c in checkpoint.frames] == [True, True]
    continued = RunEngine.continued(view, checkpoint, at=run.now())
    continued.drain()
    assert continued.waiting == ("ask:e2:e1",)
    (left,) = continued.ready(run.now())
    assert left.args == {"s": "edit"}
    with pytest.raises(GateRefusedError) as caught:
        check_decision(continued, GateApproval(frame_key="left:e2:e0", decision="approved"))
    assert caught.value.code == "gate_already_decided"


def test_engine_refuses_decisions_it_cannot_apply() -> None:
    """Approving an input request, or any request not open, is a defect the engine names."""
    run = Run(plan())
    run.ready()
    with pytest.raises(EngineStateError):
        run.engine.answer("call:e2:e0", "x", run.now(), item={"text": "no"})
    with pytest.raises(EngineStateError):
        run.engine.approve("ghost", "x", run.now())


def test_a_log_that_closes_a_request_it_never_opened_is_malformed() -> None:
    """The trace refuses a decision for a request no entry opened."""
    run = Run(plan())
    bad = [*run.log, LogGateDecided(frame=1, request=1, decision="approved", by="x", at="t")]
    with pytest.raises(MalformedRunLogError):
        expand_log(bad)


def test_a_log_without_gates_folds_as_before() -> None:
    """No gate entries: no gates in the projection, and nothing else changes."""
    view = PlanSketch("p").entry(StringField(path="s")).call("a").edge("entry", "a").view()
    run = Run(view)
    (a,) = run.ready()
    run.engine.settle(a.key, Succeeded.one({}), run.now())
    run.drain()
    projection = project_log(run.log)
    assert projection.gates == {} and projection.outcome == "completed"
    assert "gates" in projection.model_dump(by_alias=True)
