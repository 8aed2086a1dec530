"""The Anthropic Messages adapter.

One turn is one ``POST {base_url}/v1/messages`` with the forced tool as the only tool and
``tool_choice: {type: "tool", name}``, so the model must answer through it. Earlier rejected
attempts are replayed as the format expects: the assistant's ``tool_use`` block, then a user
message holding a ``tool_result`` (``is_error: true``) for that block's id with the feedback; an
attempt that did not call the tool is replayed as the assistant's text and the feedback as the
next user message. A ``stop_reason`` of ``refusal`` is the model refusing.

A node that may still ask offers the questions tool too, with ``tool_choice: {type: "any"}``
(one of the two must be called); each answered round of questions is replayed before the
attempts, as the assistant's ``ask_questions`` block and a ``tool_result`` with the answers.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from activities.reasoners.decode import decode_arguments
from activities.reasoners.http import JsonPoster, ProviderSettings
from orchestration.errors import ReasonerUnavailableError
from orchestration.tools.reasoning import ASK_TOOL, ReasonReply, ReasonTurn, TokenUsage

__all__ = ["ANTHROPIC_VERSION", "AnthropicMessagesReasoner"]

ANTHROPIC_VERSION = "2023-06-01"
"""The ``anthropic-version`` header this adapter speaks."""


class AnthropicMessagesReasoner:
    """A :class:`~orchestration.tools.reasoning.Reasoner` over the Anthropic Messages API.

    Args:
        settings: Base URL (``https://api.anthropic.com``), model, key, timeouts, retries and
            ``max_tokens``.
        client: An ``httpx.AsyncClient`` to share (optional).

    """

    def __init__(self, settings: ProviderSettings, *, client: httpx.AsyncClient | None = None):
        self.settings = settings
        headers = {"content-type": "application/json", "anthropic-version": ANTHROPIC_VERSION}
        if settings.api_key:
            headers["x-api-key"] = settings.api_key
        self._http = JsonPoster(settings, headers, client)

    @property
    def name(self) -> str:
        """``anthropic:<model>``."""
        return f"anthropic:{self.settings.model}"

    async def aclose(self) -> None:
        """Close the HTTP client this adapter created."""
        await self._http.aclose()

    def request_body(self, turn: ReasonTurn) -> dict[str, Any]:
        """The Messages request for ``turn``."""
        tool = turn.tool
        messages: list[dict[str, Any]] = [{"role": "user", "content": turn.prompt}]
        for answered in turn.rounds:
            messages.append(
                {
                    "role": "assistant",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": answered.call_id,
                            "name": ASK_TOOL,
                            "input": dict(answered.arguments),
                        }
                    ],
                }
            )
            messages.append(
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": answered.call_id,
                            "content": json.dumps({"answers": dict(answered.answers)}),
                        }
                    ],
                }
            )
        for rejected in turn.history:
            reply = rejected.reply
            if reply.tool_called and reply.call_id:
                blocks: list[dict[str, Any]] = []
                if reply.text:
                    blocks.append({"type": "text", "text": reply.text})
                arguments = reply.arguments if isinstance(reply.arguments, dict) else {}
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": reply.call_id,
                        "name": reply.tool_name or tool.name,
                        "input": arguments,
                    }
                )
                messages.append({"role": "assistant", "content": blocks})
                messages.append(
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": reply.call_id,
                                "is_error": True,
                                "content": rejected.feedback,
                            }
                        ],
                    }
                )
            else:
                said = reply.refusal or reply.text or "(no answer)"
                messages.append({"role": "assistant", "content": said})
                messages.append({"role": "user", "content": rejected.feedback})
        return {
            "model": self.settings.model,
            "max_tokens": self.settings.max_tokens,
            "system": turn.system,
            "messages": messages,
            "tools": [
                {
                    "name": each.name,
                    "description": each.description,
                    "input_schema": dict(each.input_schema),
                }
                for each in ([tool] if turn.ask is None else [tool, turn.ask])
            ],
            "tool_choice": (
                {"type": "tool", "name": tool.name} if turn.ask is None else {"type": "any"}
            ),
        }

    def parse(
        self, body: dict[str, Any], tool_name: str, ask_name: str | None = None
    ) -> ReasonReply:
        """The reply a Messages response carries.

        Raises:
            ReasonerUnavailableError: the response is not a message.

        """
        content = body.get("content")
        if not isinstance(content, list):
            raise ReasonerUnavailableError("the response is not a message (no content list)")
        raw_usage = body.get("usage") or {}
        usage = TokenUsage(
            int(raw_usage.get("input_tokens") or 0), int(raw_usage.get("output_tokens") or 0)
        )
        model = str(body.get("model") or self.settings.model)
        blocks = [b for b in content if isinstance(b, dict)]
        text = "".join(str(b.get("text") or "") for b in blocks if b.get("type") == "text")
        if body.get("stop_reason") == "refusal":
            return ReasonReply(text=text, refusal=text or "refused", usage=usage, model=model)
        names = {tool_name} if ask_name is None else {tool_name, ask_name}
        use = next(
            (b for b in blocks if b.get("type") == "tool_use" and b.get("name") in names),
            None,
        )
        if use is None:
            return ReasonReply(text=text, usage=usage, model=model)
        raw = use.get("input")
        arguments, malformed = decode_arguments(raw)
        return ReasonReply(
            tool_called=True,
            arguments=arguments,
            malformed=malformed,
            call_id=str(use.get("id") or "toolu_0"),
            text=text,
            usage=usage,
            model=model,
            tool_name=str(use.get("name") or tool_name),
        )

    async def turn(self, turn: ReasonTurn) -> ReasonReply:
        """One Messages request for ``turn``."""
        body = await self._http.post("/v1/messages", self.request_body(turn))
        return self.parse(body, turn.tool.name, turn.ask.name if turn.ask is not None else None)
