"""The provider adapters against fake servers speaking each wire format over real HTTP."""

from __future__ import annotations

import asyncio

import pytest

from activities.reasoners import (
    AnthropicMessagesReasoner,
    OpenAIChatReasoner,
    ProviderSettings,
    reasoner_from_env,
)
from orchestration.errors import ReasonerRejectedError, ReasonerUnavailableError
from orchestration.testing import ScriptedReasoner
from orchestration.tools.reasoning import Reasoner, ReasonOutcome, reason

from .fake_providers import (
    FakeProvider,
    anthropic_refusal,
    anthropic_tool_use,
    error,
    openai_refusal,
    openai_tool_call,
    serve,
)

SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": ["go", "stop"]}},
    "required": ["verdict"],
}
VALID = '{"verdict": "go"}'


def settings(url: str, **overrides: object) -> ProviderSettings:
    values: dict[str, object] = dict(
        base_url=url, model="m", api_key="k-123", backoff_seconds=0.01, max_retries=2
    )
    values.update(overrides)
    return ProviderSettings(**values)  # type: ignore[arg-type]


def ask(reasoner: Reasoner, attempts: int = 3) -> ReasonOutcome:
    return asyncio.run(
        reason(reasoner, prompt="Decide.", schema=SCHEMA, max_attempts=attempts, node_id="n")
    )


# -- OpenAI Chat Completions --------------------------------------------------------------------


def test_openai_forces_the_tool_and_retries_a_malformed_answer() -> None:
    """Undecodable arguments go back as a tool message answering that call; the retry wins."""
    fake = FakeProvider(
        [
            (200, openai_tool_call('{"verdict": "go",'), {}),
            (200, openai_tool_call(VALID, call_id="call_2"), {}),
        ]
    )
    with serve(fake) as url:
        outcome = ask(OpenAIChatReasoner(settings(url + "/v1")))
    assert outcome.arguments == {"verdict": "go"}
    assert [a.outcome for a in outcome.attempts] == ["malformed", "accepted"]
    assert [(a.usage.input_tokens, a.usage.output_tokens) for a in outcome.attempts] == [
        (11, 7)
    ] * 2
    first, second = fake.requests
    assert fake.paths == ["/v1/chat/completions"] * 2
    assert fake.headers[0]["authorization"] == "Bearer k-123"
    assert first["tool_choice"] == {"type": "function", "function": {"name": "submit_reasoning"}}
    assert first["tools"][0]["function"]["parameters"] == SCHEMA
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "tool"]
    call = second["messages"][2]["tool_calls"][0]
    assert call["id"] == "call_1" and call["function"]["arguments"] == '{"verdict": "go",'
    assert second["messages"][3]["tool_call_id"] == "call_1"
    assert "not a JSON object" in second["messages"][3]["content"]


def test_openai_refusal_is_a_rejected_attempt() -> None:
    """A refusal costs an attempt and is replayed as the assistant's words plus feedback."""
    fake = FakeProvider(
        [(200, openai_refusal("I can't do that"), {}), (200, openai_tool_call(VALID), {})]
    )
    with serve(fake) as url:
        outcome = ask(OpenAIChatReasoner(settings(url)))
    assert [a.outcome for a in outcome.attempts] == ["refused", "accepted"]
    replay = fake.requests[1]["messages"]
    assert replay[2] == {"role": "assistant", "content": "I can't do that"}
    assert replay[3]["role"] == "user" and "The model refused" in replay[3]["content"]


def test_openai_provider_errors_are_retried_then_surface() -> None:
    """503 and 429 (with Retry-After) are retried; still failing gives ReasonerUnavailableError."""
    fake = FakeProvider(
        [
            (503, error(503, "overloaded"), {}),
            (429, error(429, "slow down"), {"retry-after": "0"}),
            (200, openai_tool_call(VALID), {}),
        ]
    )
    with serve(fake) as url:
        outcome = ask(OpenAIChatReasoner(settings(url, api_key=None)))
    assert outcome.ok and len(fake.requests) == 3
    assert "authorization" not in fake.headers[0]  # a local server needs no key
    failing = FakeProvider([(500, error(500, "boom"), {})])
    with serve(failing) as url, pytest.raises(ReasonerUnavailableError, match="boom"):
        ask(OpenAIChatReasoner(settings(url, max_retries=1)))
    assert len(failing.requests) == 2


def test_openai_client_errors_are_not_retried() -> None:
    """A 401 is the provider refusing the request: one attempt, ReasonerRejectedError."""
    fake = FakeProvider([(401, error(401, "bad key"), {})])
    with serve(fake) as url, pytest.raises(ReasonerRejectedError, match="bad key"):
        ask(OpenAIChatReasoner(settings(url)))
    assert len(fake.requests) == 1


# -- Anthropic Messages ------------------------------------------------------------------------


def test_anthropic_forces_the_tool_and_retries_a_malformed_answer() -> None:
    """A tool_use input that is not an object is answered with an error tool_result."""
    fake = FakeProvider(
        [
            (200, anthropic_tool_use("not an object"), {}),
            (200, anthropic_tool_use({"verdict": "stop"}, use_id="toolu_2"), {}),
        ]
    )
    with serve(fake) as url:
        outcome = ask(AnthropicMessagesReasoner(settings(url)))
    assert outcome.arguments == {"verdict": "stop"}
    assert [a.outcome for a in outcome.attempts] == ["malformed", "accepted"]
    assert outcome.attempts[0].usage.input_tokens == 13
    first, second = fake.requests
    assert fake.paths == ["/v1/messages"] * 2
    assert fake.headers[0]["x-api-key"] == "k-123"
    assert fake.headers[0]["anthropic-version"] == "2023-06-01"
    assert first["tool_choice"] == {"type": "tool", "name": "submit_reasoning"}
    assert first["tools"][0]["input_schema"] == SCHEMA and first["max_tokens"] > 0
    assert "submission tool" in first["system"]
    assistant, result = second["messages"][1], second["messages"][2]
    assert assistant["content"][-1]["type"] == "tool_use"
    assert assistant["content"][-1]["id"] == "toolu_1"
    assert result["content"][0]["tool_use_id"] == "toolu_1"
    assert result["content"][0]["is_error"] is True


def test_anthropic_schema_violation_then_refusal_exhausts() -> None:
    """An invalid answer and a refusal use up two attempts: no output."""
    fake = FakeProvider(
        [(200, anthropic_tool_use({"verdict": "maybe"}), {}), (200, anthropic_refusal("No."), {})]
    )
    with serve(fake) as url:
        outcome = ask(AnthropicMessagesReasoner(settings(url)), attempts=2)
    assert not outcome.ok
    assert [a.outcome for a in outcome.attempts] == ["invalid", "refused"]
    feedback = fake.requests[1]["messages"][2]["content"][0]["content"]
    assert "'maybe' is not one of ['go', 'stop']" in feedback


def test_anthropic_overload_is_retried_and_bad_requests_are_not() -> None:
    """529 (overloaded) is retried; a 400 is rejected at once."""
    fake = FakeProvider(
        [(529, error(529, "Overloaded"), {}), (200, anthropic_tool_use({"verdict": "go"}), {})]
    )
    with serve(fake) as url:
        assert ask(AnthropicMessagesReasoner(settings(url))).ok
    assert len(fake.requests) == 2
    bad = FakeProvider([(400, error(400, "max_tokens: required"), {})])
    with serve(bad) as url, pytest.raises(ReasonerRejectedError, match="max_tokens"):
        ask(AnthropicMessagesReasoner(settings(url)))


# -- configuration -----------------------------------------------------------------------------


def test_environment_picks_the_adapter() -> None:
    """ORCH_REASONER selects the wire format; base URL, model and key come from the env."""
    openai = reasoner_from_env(
        {
            "ORCH_REASONER": "openai",
            "ORCH_REASONER_MODEL": "local",
            "ORCH_REASONER_BASE_URL": "http://127.0.0.1:9/v1",
        }
    )
    assert isinstance(openai, OpenAIChatReasoner) and openai.name == "openai:local"
    assert openai.settings.api_key is None
    claude = reasoner_from_env({"ORCH_REASONER": "anthropic", "ANTHROPIC_API_KEY": "a"})
    assert isinstance(claude, AnthropicMessagesReasoner) and claude.settings.api_key == "a"
    assert isinstance(reasoner_from_env({"ORCH_REASONER": "scripted"}), ScriptedReasoner)
    assert reasoner_from_env({}) is None
    with pytest.raises(ValueError, match="not one of"):
        reasoner_from_env({"ORCH_REASONER": "mystery"})
