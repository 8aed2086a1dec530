"""The HTTP exchange every provider adapter shares: POST JSON, retry what is worth retrying.

A provider that answers 429 (rate limited), 5xx (failing or overloaded, including Anthropic's
529), or does not answer at all (connect or read failures, timeouts), may answer later: the
request is retried here a few times with exponential backoff (honouring ``Retry-After`` when
the provider sends one), then surfaces as :class:`~orchestration.errors.ReasonerUnavailableError`
so the activity's retry policy can try again much later. Any other 4xx (a bad key, an unknown
model, a request the provider will never accept) is :class:`ReasonerRejectedError` at once; one
that says the request is larger than the model's context window (OpenAI's
``context_length_exceeded`` code, Anthropic's "prompt is too long", and the like:
:func:`is_context_window_error`) is :class:`ContextWindowExceededError`, final for the frame.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from orchestration.errors import (
    ContextWindowExceededError,
    ReasonerRejectedError,
    ReasonerUnavailableError,
)

__all__ = ["JsonPoster", "ProviderSettings", "is_context_window_error"]

_CONTEXT_CODES = frozenset({"context_length_exceeded", "context_window_exceeded"})
_CONTEXT_WORDS = re.compile(
    r"context[ _-]?(length|window)|prompt is too long|maximum context|exceeds? (the )?context"
    r"|too many (input )?tokens",
    re.IGNORECASE,
)


def is_context_window_error(status: int, body: Any) -> bool:
    """Whether a provider's 4xx answer says the request exceeds the model's context window.

    OpenAI answers ``400`` with ``error.code == "context_length_exceeded"``; Anthropic answers
    ``400`` (``invalid_request_error``) with "prompt is too long: N tokens > M maximum" or that
    the input and ``max_tokens`` exceed the context limit; compatible servers word it alike.
    """
    if status not in (400, 413):
        return False
    error = body.get("error") if isinstance(body, Mapping) else None
    if isinstance(error, Mapping):
        if str(error.get("code") or "") in _CONTEXT_CODES:
            return True
        message = str(error.get("message") or "")
    else:
        message = json.dumps(body)[:500] if body is not None else ""
    return bool(_CONTEXT_WORDS.search(message))


def _body(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return response.text[:500]


@dataclass(frozen=True)
class ProviderSettings:
    """How to reach one provider's model.

    Attributes:
        base_url: The API root (``https://api.openai.com/v1``, ``https://api.anthropic.com``,
            or a local OpenAI-compatible server such as ``http://127.0.0.1:8000/v1``).
        model: The model name the provider expects.
        api_key: The key, or ``None`` for a local server that needs none.
        timeout_seconds: Per request.
        max_retries: Retries of a retryable failure before giving up (0: none).
        backoff_seconds: The first retry's delay; doubled each time.
        max_backoff_seconds: The longest delay between retries (``Retry-After`` included).
        max_tokens: The answer's token cap (Anthropic requires one).

    """

    base_url: str
    model: str
    api_key: str | None = None
    timeout_seconds: float = 120.0
    max_retries: int = 3
    backoff_seconds: float = 1.0
    max_backoff_seconds: float = 30.0
    max_tokens: int = 4096


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def _error_message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:300] or response.reason_phrase
    error = body.get("error") if isinstance(body, Mapping) else None
    if isinstance(error, Mapping) and error.get("message"):
        return str(error["message"])
    return json.dumps(body)[:300]


class JsonPoster:
    """POSTs JSON to one provider with retries (see the module docstring).

    Args:
        settings: The provider.
        headers: Headers every request carries (auth, API version).
        client: An ``httpx.AsyncClient`` to use (its lifetime is then the caller's).

    """

    def __init__(
        self,
        settings: ProviderSettings,
        headers: Mapping[str, str],
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self.settings = settings
        self.headers = dict(headers)
        self._client = client
        self._owned = client is None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self.settings.timeout_seconds)
        return self._client

    async def aclose(self) -> None:
        """Close the client this poster created (not one it was given)."""
        if self._owned and self._client is not None:
            await self._client.aclose()
            self._client = None

    def _delay(self, retry: int, hint: float | None) -> float:
        s = self.settings
        delay = hint if hint is not None else s.backoff_seconds * (2**retry)
        return min(delay, s.max_backoff_seconds)

    async def post(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """POST ``body`` to ``base_url + path``; the decoded JSON answer.

        Raises:
            ReasonerUnavailableError: still failing after the retries.
            ReasonerRejectedError: the provider refused the request.

        """
        url = self.settings.base_url.rstrip("/") + path
        last = "no attempt was made"
        hint: float | None = None
        for retry in range(self.settings.max_retries + 1):
            if retry:
                await asyncio.sleep(self._delay(retry - 1, hint))
                hint = None
            try:
                response = await self._http().post(url, json=body, headers=self.headers)
            except httpx.TransportError as exc:
                last = f"{type(exc).__name__}: {exc}"
                continue
            status = response.status_code
            if status == 429 or status >= 500:
                hint = _retry_after(response)
                last = f"HTTP {status}: {_error_message(response)}"
                continue
            if status >= 400:
                message = f"HTTP {status}: {_error_message(response)}"
                if is_context_window_error(status, _body(response)):
                    raise ContextWindowExceededError(message, status)
                raise ReasonerRejectedError(message, status)
            try:
                decoded = response.json()
            except ValueError:
                last = f"HTTP {status} with a body that is not JSON"
                continue
            if not isinstance(decoded, dict):
                last = f"HTTP {status} with a JSON body that is not an object"
                continue
            return decoded
        raise ReasonerUnavailableError(
            f"{url} did not answer after {self.settings.max_retries + 1} attempt(s): {last}"
        )
