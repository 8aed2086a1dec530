"""The OpenAI Chat Completions adapter (and any server that speaks that wire format).

One turn is one ``POST {base_url}/chat/completions`` with the forced tool as the only
function and ``tool_choice`` naming it, so the model must answer through it. Earlier rejected
attempts are replayed as the conversation the format expects: the assistant's tool call, then a
``tool`` message (answering that call's id) carrying the feedback; an attempt that did not call
the tool is replayed as the assistant's text followed by the feedback as a user message.

A node that may still ask offers the questions tool too, with ``tool_choice: "required"`` (one
of the two must be called); each answered round of questions is replayed before the attempts,
as the assistant's ``ask_questions`` call and a ``tool`` message holding the answers.

Local servers that implement the same API (vLLM, llama.cpp's server, Ollama's OpenAI endpoint)
work with their own ``base_url``; the key is optional.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from activities.reasoners.decode import decode_arguments
from activities.reasoners.http import JsonPoster, ProviderSettings
from orchestration.errors import ReasonerUnavailableError
from orchestration.tools.reasoning import ASK_TOOL, ReasonReply, ReasonTurn, TokenUsage

__all__ = ["OpenAIChatReasoner"]


class OpenAIChatReasoner:
    """A :class:`~orchestration.tools.reasoning.Reasoner` over OpenAI Chat Completions.

    Args:
        settings: Base URL (``https://api.openai.com/v1`` or a compatible server's), model,
            key, timeouts and retries.
        client: An ``httpx.AsyncClient`` to share (optional).

    """

    def __init__(self, settings: ProviderSettings, *, client: httpx.AsyncClient | None = None):
        self.settings = settings
        headers = {"content-type": "application/json"}
        if settings.api_key:
            headers["authorization"] = f"Bearer {settings.api_key}"
        self._http = JsonPoster(settings, headers, client)

    @property
    def name(self) -> str:
        """``openai:<model>``."""
        return f"openai:{self.settings.model}"

    async def aclose(self) -> None:
        """Close the HTTP client this adapter created."""
        await self._http.aclose()

    def request_body(self, turn: ReasonTurn) -> dict[str, Any]:
        """The Chat Completions request for ``turn``."""
        tool = turn.tool
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": turn.system},
            {"role": "user", "content": turn.prompt},
        ]
        for answered in turn.rounds:
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": answered.call_id,
                            "type": "function",
                            "function": {
                                "name": ASK_TOOL,
                                "arguments": json.dumps(dict(answered.arguments)),
                            },
                        }
                    ],
                }
            )
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": answered.call_id,
                    "content": json.dumps({"answers": dict(answered.answers)}),
                }
            )
        for rejected in turn.history:
            reply = rejected.reply
            if reply.tool_called and reply.call_id:
                arguments = reply.raw_arguments
                if arguments is None:
                    arguments = json.dumps(reply.arguments)
                messages.append(
                    {
                        "role": "assistant",
                        "content": reply.text or None,
                        "tool_calls": [
                            {
                                "id": reply.call_id,
                                "type": "function",
                                "function": {
                                    "name": reply.tool_name or tool.name,
                                    "arguments": arguments,
                                },
                            }
                        ],
                    }
                )
                messages.append(
                    {"role": "tool", "tool_call_id": reply.call_id, "content": rejected.feedback}
                )
            else:
                said = reply.refusal or reply.text or "(no answer)"
                messages.append({"role": "assistant", "content": said})
                messages.append({"role": "user", "content": rejected.feedback})
        offered = [tool] if turn.ask is None else [tool, turn.ask]
        return {
            "model": self.settings.model,
            "messages": messages,
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": each.name,
                        "description": each.description,
                        "parameters": dict(each.input_schema),
                    },
                }
                for each in offered
            ],
            "tool_choice": (
                {"type": "function", "function": {"name": tool.name}}
                if turn.ask is None
                else "required"
            ),
        }

    def parse(
        self, body: dict[str, Any], tool_name: str, ask_name: str | None = None
    ) -> ReasonReply:
        """The reply a Chat Completions response carries.

        Raises:
            ReasonerUnavailableError: the response is not a chat completion.

        """
        try:
            choice = body["choices"][0]
            message = choice["message"]
        except (KeyError, IndexError, TypeError) as exc:
            raise ReasonerUnavailableError(
                f"the response is not a chat completion (no choices[0].message): {exc!r}"
            ) from exc
        raw_usage = body.get("usage") or {}
        usage = TokenUsage(
            int(raw_usage.get("prompt_tokens") or 0), int(raw_usage.get("completion_tokens") or 0)
        )
        model = str(body.get("model") or self.settings.model)
        text = message.get("content") or ""
        refusal = message.get("refusal")
        if not refusal and choice.get("finish_reason") == "content_filter":
            refusal = "the provider's content filter stopped the answer"
        calls = [c for c in message.get("tool_calls") or () if isinstance(c, dict)]
        names = {tool_name} if ask_name is None else {tool_name, ask_name}
        call = next((c for c in calls if (c.get("function") or {}).get("name") in names), None)
        if call is None or refusal:
            return ReasonReply(text=str(text), refusal=refusal or None, usage=usage, model=model)
        raw = (call.get("function") or {}).get("arguments")
        arguments, malformed = decode_arguments(raw)
        return ReasonReply(
            tool_called=True,
            arguments=arguments,
            malformed=malformed,
            call_id=str(call.get("id") or "call_0"),
            raw_arguments=raw if isinstance(raw, str) else json.dumps(raw),
            text=str(text),
            usage=usage,
            model=model,
            tool_name=str((call.get("function") or {}).get("name") or tool_name),
        )

    async def turn(self, turn: ReasonTurn) -> ReasonReply:
        """One Chat Completions request for ``turn``."""
        body = await self._http.post("/chat/completions", self.request_body(turn))
        return self.parse(body, turn.tool.name, turn.ask.name if turn.ask is not None else None)
