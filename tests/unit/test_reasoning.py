"""The reasoning loop: forced-tool answers validated, rejected ones fed back, tokens counted."""

from __future__ import annotations

import asyncio

import jsonschema

from orchestration.testing import NoToolCall, Refusal, ScriptedReasoner, example_for_schema
from orchestration.tools.reasoning import MAX_FEEDBACK_ERRORS, SUBMIT_TOOL, reason, schema_errors

SCHEMA = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": ["go", "stop"]},
        "score": {"type": "integer", "minimum": 0},
    },
    "required": ["verdict", "score"],
    "additionalProperties": False,
}


def run(scripts: object, attempts: int = 3):  # type: ignore[no-untyped-def]
    reasoner = ScriptedReasoner({"think": scripts})
    outcome = asyncio.run(
        reason(reasoner, prompt="Decide.", schema=SCHEMA, max_attempts=attempts, node_id="think")
    )
    return reasoner, outcome


def test_a_valid_first_answer_is_the_output() -> None:
    """The first answer that validates is returned after one attempt."""
    _, outcome = run({"verdict": "go", "score": 3})
    assert outcome.ok and outcome.arguments == {"verdict": "go", "score": 3}
    assert [a.outcome for a in outcome.attempts] == ["accepted"]


def test_invalid_answers_go_back_to_the_model_with_every_error() -> None:
    """A rejected attempt's validation errors (with paths) are in the next turn's history."""
    reasoner, outcome = run([{"verdict": "maybe", "score": -1}, {"verdict": "stop", "score": 0}])
    assert outcome.arguments == {"verdict": "stop", "score": 0}
    assert [a.outcome for a in outcome.attempts] == ["invalid", "accepted"]
    second = reasoner.turns[1]
    assert second.attempt == 2 and len(second.history) == 1
    feedback = second.history[0].feedback
    assert "$.score: -1 is less than the minimum of 0" in feedback
    assert "$.verdict: 'maybe' is not one of ['go', 'stop']" in feedback
    assert SUBMIT_TOOL in feedback


def test_malformed_refused_and_prose_answers_are_attempts_too() -> None:
    """Undecodable arguments, a refusal and an answer without the tool each cost an attempt."""
    _, outcome = run(['{"verdict": "go", score}', Refusal("no"), NoToolCall("prose")], attempts=3)
    assert not outcome.ok and outcome.arguments is None
    assert [a.outcome for a in outcome.attempts] == ["malformed", "refused", "no_tool_call"]


def test_exhausting_the_attempts_reports_each_one_and_sums_tokens() -> None:
    """After maxAttempts rejections the outcome is not ok; usage is the sum over attempts."""
    _, outcome = run({"verdict": "go"}, attempts=2)
    assert not outcome.ok and len(outcome.attempts) == 2
    assert "$: 'score' is a required property" in outcome.attempts[-1].problems
    per_attempt = [a.usage for a in outcome.attempts]
    assert all(u.input_tokens > 0 and u.output_tokens > 0 for u in per_attempt)
    assert outcome.usage.input_tokens == sum(u.input_tokens for u in per_attempt)
    assert per_attempt[1].input_tokens > per_attempt[0].input_tokens  # the feedback was sent


def test_feedback_is_capped() -> None:
    """At most MAX_FEEDBACK_ERRORS errors are listed, then a count of the rest."""
    wide = {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(15)}}
    reasoner = ScriptedReasoner({"n": [{f"p{i}": "x" for i in range(15)}, {}]})
    asyncio.run(reason(reasoner, prompt="", schema=wide, max_attempts=2, node_id="n"))
    feedback = reasoner.turns[1].history[0].feedback
    assert feedback.count("\n- $.") == MAX_FEEDBACK_ERRORS and "and 5 more" in feedback


def test_schema_errors_list_all_errors_in_a_stable_order() -> None:
    """Every error is reported, sorted by path, the root written as $."""
    errors = schema_errors(SCHEMA, {"verdict": 1, "extra": True})
    assert errors == [
        "$: 'score' is a required property",
        "$: Additional properties are not allowed ('extra' was unexpected)",
        "$.verdict: 1 is not of type 'string'",
        "$.verdict: 1 is not one of ['go', 'stop']",
    ]


def test_example_for_schema_satisfies_simple_schemas() -> None:
    """The scripted reasoner's default answer validates against the node's schema."""
    jsonschema.validate(example_for_schema(SCHEMA), SCHEMA)
    nested = {
        "type": "object",
        "properties": {
            "tags": {"type": "array", "minItems": 2, "items": {"type": "string", "minLength": 1}}
        },
        "required": ["tags"],
    }
    jsonschema.validate(example_for_schema(nested), nested)


def test_scripted_answers_depend_only_on_the_attempt() -> None:
    """Asking again for the same attempt gives the same answer (a retried activity agrees)."""
    reasoner = ScriptedReasoner({"n": [{"a": 1}, {"a": 2}]})
    first = asyncio.run(
        reason(reasoner, prompt="", schema={"type": "object"}, max_attempts=1, node_id="n")
    )
    again = asyncio.run(
        reason(reasoner, prompt="", schema={"type": "object"}, max_attempts=1, node_id="n")
    )
    assert first.arguments == again.arguments == {"a": 1}
