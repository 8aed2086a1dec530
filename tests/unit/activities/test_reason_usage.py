"""A reason attempt's usage, cost, budgets and provider errors, through the real adapters.

The fake servers speak each provider's wire format over real HTTP (usage included), so what
is recorded is what a provider's answer says, priced at the host's table.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from activities.reasoners import AnthropicMessagesReasoner, OpenAIChatReasoner, ProviderSettings
from activities.reasoners.http import is_context_window_error
from orchestration.errors import ContextWindowExceededError
from orchestration.run.messages import ReasonRequest
from orchestration.run.work import FrameWork, WorkFailed
from orchestration.tools.pricing import ModelPrice, PriceTable
from orchestration.tools.reasoning import Reasoner, ReasonTurn, forced_tool

from .fake_providers import FakeProvider, anthropic_tool_use, openai_tool_call, serve

SCHEMA = json.dumps(
    {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
)
PRICES = PriceTable({"fake-gpt": ModelPrice(input_per_million=2.0, output_per_million=8.0)})


def settings(url: str) -> ProviderSettings:
    return ProviderSettings(
        base_url=url, model="m", api_key="k", backoff_seconds=0.01, max_retries=0
    )


def request(**overrides: object) -> ReasonRequest:
    values: dict[str, object] = dict(
        plan_id="p",
        run_id="plan/p",
        node_id="think",
        frame_key="think:e2:e0",
        prompt="Count.",
        output_schema=SCHEMA,
        max_attempts=3,
    )
    values.update(overrides)
    return ReasonRequest(**values)  # type: ignore[arg-type]


def reason(reasoner: Reasoner, ask: ReasonRequest, prices: PriceTable | None = PRICES) -> object:
    return asyncio.run(FrameWork(reasoner=reasoner, prices=prices).reason(ask))


def failure(reasoner: Reasoner, ask: ReasonRequest) -> WorkFailed:
    with pytest.raises(WorkFailed) as caught:
        reason(reasoner, ask)
    return caught.value


def test_every_turns_tokens_are_reported_and_priced() -> None:
    """Two turns (one rejected): their tokens as the provider reported them, priced per model."""
    fake = FakeProvider(
        [(200, openai_tool_call('{"n": "two"}'), {}), (200, openai_tool_call('{"n": 2}'), {})]
    )
    with serve(fake) as url:
        response = reason(OpenAIChatReasoner(settings(url)), request())
    usage = response.usage()  # type: ignore[attr-defined]
    assert [t.outcome for t in usage.turns] == ["invalid", "accepted"]
    assert "$.n: 'two' is not of type 'integer'" in usage.turns[0].problems
    assert (usage.input_tokens, usage.output_tokens, usage.model) == (22, 14, "fake-gpt")
    assert usage.cost_usd == pytest.approx((22 * 2.0 + 14 * 8.0) / 1e6)


def test_a_model_without_a_price_is_recorded_unpriced() -> None:
    """No price for the model: its tokens are recorded, its cost is unknown (None), not zero."""
    fake = FakeProvider([(200, anthropic_tool_use({"n": 1}), {})])
    with serve(fake) as url:
        response = reason(AnthropicMessagesReasoner(settings(url)), request())
    usage = response.usage()  # type: ignore[attr-defined]
    assert usage.tokens == 22 and usage.cost_usd is None


def test_a_context_window_exceeded_is_final_and_keeps_the_turns_spent() -> None:
    """OpenAI's context_length_exceeded after a rejected turn: not transient, usage kept."""
    too_long = {
        "error": {
            "message": "This model's maximum context length is 8192 tokens.",
            "type": "invalid_request_error",
            "code": "context_length_exceeded",
        }
    }
    fake = FakeProvider([(200, openai_tool_call('{"n": "x"}'), {}), (400, too_long, {})])
    with serve(fake) as url:
        failed = failure(OpenAIChatReasoner(settings(url)), request())
    assert failed.name == "context_window_exceeded" and not failed.transient
    assert failed.usage is not None and [t.outcome for t in failed.usage.turns] == ["invalid"]
    assert failed.usage.tokens == 18 and len(fake.requests) == 2


def test_anthropic_prompt_too_long_is_a_context_window_error() -> None:
    """Anthropic says it in words: a 400 invalid_request_error "prompt is too long"."""
    body = {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "prompt is too long: 210000 tokens > 200000 maximum",
        },
    }
    fake = FakeProvider([(400, body, {})])
    turn = ReasonTurn(prompt="x", tool=forced_tool({"type": "object"}))
    with serve(fake) as url, pytest.raises(ContextWindowExceededError, match="too long"):
        asyncio.run(AnthropicMessagesReasoner(settings(url)).turn(turn))
    assert len(fake.requests) == 1


def test_context_window_classification() -> None:
    """Only a 400/413 whose code or words say so; other client errors are plain rejections."""
    assert is_context_window_error(400, {"error": {"code": "context_length_exceeded"}})
    assert is_context_window_error(
        400, {"error": {"message": "input length and `max_tokens` exceed context limit"}}
    )
    assert is_context_window_error(413, {"error": {"message": "Prompt is too long"}})
    assert not is_context_window_error(400, {"error": {"message": "max_tokens: required"}})
    assert not is_context_window_error(401, {"error": {"code": "context_length_exceeded"}})


def test_an_attempt_stops_between_turns_once_its_tokens_are_spent() -> None:
    """Allowed 18 tokens: the first turn spends 18, so no second turn is asked for."""
    fake = FakeProvider(
        [(200, openai_tool_call('{"n": "x"}'), {}), (200, openai_tool_call('{"n": 2}'), {})]
    )
    with serve(fake) as url:
        failed = failure(OpenAIChatReasoner(settings(url)), request(max_tokens=18))
    assert (failed.name, failed.kind) == ("budget_exhausted", "budget")
    assert "spent 18 tokens" in failed.message and len(fake.requests) == 1
    assert failed.usage is not None and failed.usage.tokens == 18


def test_an_attempt_stops_between_turns_once_its_cost_is_spent() -> None:
    """Allowed a cost the first turn reaches; an unpriced model stops a cost-bounded attempt."""
    first_turn = (11 * 2.0 + 7 * 8.0) / 1e6
    fake = FakeProvider(
        [(200, openai_tool_call('{"n": "x"}'), {}), (200, openai_tool_call('{"n": 2}'), {})]
    )
    with serve(fake) as url:
        failed = failure(OpenAIChatReasoner(settings(url)), request(max_cost_usd=first_turn))
    assert failed.kind == "budget" and len(fake.requests) == 1
    fake = FakeProvider(
        [(200, openai_tool_call('{"n": "x"}'), {}), (200, openai_tool_call('{"n": 2}'), {})]
    )
    with serve(fake) as url, pytest.raises(WorkFailed, match="no price") as caught:
        reason(OpenAIChatReasoner(settings(url)), request(max_cost_usd=1.0), prices=None)
    assert caught.value.kind == "budget"


def test_a_scripted_reasoner_can_be_told_its_answers(tmp_path: object) -> None:
    """ORCH_REASONER_SCRIPT answers per node and turn (here: invalid twice, then valid)."""
    from pathlib import Path

    from activities.reasoners import reasoner_from_env

    script = Path(str(tmp_path)) / "answers.json"
    script.write_text(json.dumps({"think": [{"n": "x"}, {"n": "y"}, {"n": 3}]}))
    reasoner = reasoner_from_env({"ORCH_REASONER": "scripted", "ORCH_REASONER_SCRIPT": str(script)})
    assert reasoner is not None
    usage = reason(reasoner, request()).usage()  # type: ignore[attr-defined]
    assert [t.outcome for t in usage.turns] == ["invalid", "invalid", "accepted"]
    script.write_text("[]")
    with pytest.raises(ValueError, match="object by node id"):
        reasoner_from_env({"ORCH_REASONER": "scripted", "ORCH_REASONER_SCRIPT": str(script)})
