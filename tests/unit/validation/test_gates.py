"""Gate checks: every pause can be asked, timed and answered as written; each fix is named."""

from __future__ import annotations

from typing import Any

from orchestration.plan.authoring import ref, text
from orchestration.tools.toolbox import Toolbox
from orchestration.types import (
    ApprovalGate,
    AskPolicy,
    ChoiceInput,
    FormField,
    FormInput,
    InputChoice,
    PlanOp,
    TextInput,
)

from .helpers import SCHEMA, author, call, check, codes, only

OPTIONS = (InputChoice(id="eu", label="Europe"), InputChoice(id="us", label="Americas"))


def _gated(gate: ApprovalGate, **overrides: Any) -> list[PlanOp]:
    a = author()
    return [a.entry(), call(a, "fetch", gate=gate, **overrides),
            a.edge("entry", "fetch", edge_id="e1")]


def _asking(schema: Any = None, **definition: Any) -> list[PlanOp]:
    a = author()
    return [
        a.entry(),
        a.input("pick", prompt=["Which region?"], schema=schema or ChoiceInput(options=OPTIONS),
                **definition),
        call(a, "fetch", args={"url": "https://example.org", "region": ref("pick", path="choice")},
             declassifies=["body"]),
        a.edge("entry", "pick", edge_id="e1"),
        a.edge("pick", "fetch", edge_id="e2"),
    ]


def test_a_gated_plan_freezes() -> None:
    """Approvals before a call and of a result, an input with a default, questions: no issue."""
    a = author()
    ops = [
        a.entry(),
        a.input("pick", prompt=[text("Which region?")], schema=ChoiceInput(options=OPTIONS),
                timeout="PT1H", on_timeout="default", default="eu"),
        call(a, "fetch", args={"url": "https://example.org", "region": ref("pick", path="choice")},
             declassifies=["body"],
             gate=ApprovalGate(on="arguments", editable=("url",), timeout="15m",
                               on_timeout="reject", autonomous=True)),
        a.reason("judge", prompt=[text("ok?")], output_schema=SCHEMA,
                 asks=AskPolicy(max_rounds=2, timeout="1d"), gate=ApprovalGate(on="result")),
        a.edge("entry", "pick", edge_id="e1"),
        a.edge("pick", "fetch", edge_id="e2"),
        a.edge("fetch", "judge", edge_id="e3"),
    ]
    assert check(ops) == []


def test_a_timeout_that_does_not_parse() -> None:
    """Each kind of pause refuses a timeout it cannot read, naming the forms it can."""
    issue = only(check(_gated(ApprovalGate(on="arguments", timeout="soon"))),
                 "invalid_gate_timeout")
    assert issue.node_id == "fetch" and "PT30M" in issue.message and "15m" in issue.message
    assert "invalid_gate_timeout" in codes(check(_asking(timeout="30 minutes")))


def test_arguments_gate_only_on_a_call() -> None:
    """A reason node sends no arguments: the fix is a gate on its result."""
    a = author()
    ops = [a.entry(), a.reason("judge", prompt=[text("x")], output_schema=SCHEMA,
                               gate=ApprovalGate(on="arguments")),
           a.edge("entry", "judge", edge_id="e1")]
    issue = only(check(ops), "gate_not_applicable")
    assert '"on": "result"' in issue.message


def test_editable_arguments_must_be_the_calls() -> None:
    """The approver may change only arguments the call stages or its tool takes."""
    issue = only(check(_gated(ApprovalGate(on="arguments", editable=("urll",)))),
                 "unknown_editable_argument")
    assert '"url"' in issue.message
    tools = Toolbox()

    @tools.tool("web.fetch")
    def fetch(url: str, timeout: float = 10.0) -> str:
        return url

    ops = _gated(ApprovalGate(on="arguments", editable=("timeout",)))
    assert "unknown_editable_argument" not in codes(check(ops, tools=tools))
    assert "gate_not_applicable" in codes(
        check(_gated(ApprovalGate(on="result", editable=("url",))))
    )


def test_malformed_schemas_are_refused() -> None:
    """No options, repeated choice ids, a form with nothing in it: each refused with its fix."""
    assert "invalid_input_schema" in codes(check(_asking(ChoiceInput())))
    twice = ChoiceInput(options=(InputChoice(id="eu", label="A"), InputChoice(id="eu", label="B")))
    issue = next(i for i in check(_asking(twice)) if i.code == "duplicate_choice_id")
    assert issue.node_id == "pick" and "own id" in issue.message
    a = author()
    ops = [a.entry(), a.input("form", prompt=["x"], schema=FormInput()),
           a.edge("entry", "form", edge_id="e1")]
    assert "at least one" in only(check(ops), "invalid_input_schema").message


def test_a_default_that_does_not_fit() -> None:
    """A default response is checked against the schema at freeze."""
    issue = only(check(_asking(on_timeout="default", timeout="1h", default="asia")),
                 "gate_default_invalid")
    assert "eu, us" in issue.message


def test_a_default_policy_needs_a_default() -> None:
    """onTimeout default without a default is refused; a default never used is reported."""
    assert "missing_gate_default" in codes(check(_asking(on_timeout="default", timeout="1h")))
    unused = check(_asking(default="eu"))
    assert codes(unused) == ["unused_gate_default"] and unused[0].severity == "advisory"


def test_references_to_an_input_are_checked() -> None:
    """A reference to a field the input's schema does not yield is refused like any other."""
    a = author()
    ops = [
        a.entry(),
        a.input("name", prompt=["Your name?"], schema=TextInput()),
        call(a, "fetch", args={"url": ref("name", path="txt")}),
        a.edge("entry", "name", edge_id="e1"),
        a.edge("name", "fetch", edge_id="e2"),
    ]
    found = check(ops)
    assert "undeclared_field" in codes(found)
    assert '"text"' in next(i for i in found if i.code == "undeclared_field").message


def test_an_inputs_response_is_tainted() -> None:
    """What a person types is input: a call reading it must declassify, like a run's input."""
    a = author()
    ops = [
        a.entry(),
        a.input("name", prompt=["Your name?"], schema=TextInput()),
        call(a, "fetch", args={"url": ref("name", path="text")}),
        a.edge("entry", "name", edge_id="e1"),
        a.edge("name", "fetch", edge_id="e2"),
    ]
    issue = only(check(ops), "tainted_call_arg")
    assert "input request name.text" in issue.message


def test_questions_need_a_round() -> None:
    """maxRounds below one is refused."""
    a = author()
    ops = [a.entry(), a.reason("judge", prompt=[text("x")], output_schema=SCHEMA,
                               asks=AskPolicy(max_rounds=0)),
           a.edge("entry", "judge", edge_id="e1")]
    assert "1 or more" in only(check(ops), "invalid_asks").message


def test_form_fields_become_checked_fields() -> None:
    """A form's field ids are what references read; a typed reference is checked by type."""
    form = FormInput(fields=(FormField(id="who", label="Who", type="text", required=True),))
    a = author()
    ops = [
        a.entry(),
        a.input("ask", prompt=["?"], schema=form),
        call(a, "fetch", args={"url": ref("ask", path="who")}, declassifies=["body"]),
        a.edge("entry", "ask", edge_id="e1"),
        a.edge("ask", "fetch", edge_id="e2"),
    ]
    assert check(ops) == []
