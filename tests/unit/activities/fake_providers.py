"""A fake model provider on 127.0.0.1: real HTTP, scripted answers, every request recorded.

Each queued answer is ``(status, json_body, headers)``; the server answers requests in order
(the last answer repeats), so a test scripts exactly the exchange an adapter must handle.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = tuple[int, Any, dict[str, str]]


class FakeProvider:
    """Answers POSTs from a script; see the module docstring."""

    def __init__(self, answers: list[Answer]) -> None:
        self.answers = answers
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()

    def _next(self) -> Answer:
        with self._lock:
            index = min(len(self.requests) - 1, len(self.answers) - 1)
            return self.answers[index]

    def handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with fake._lock:
                    fake.requests.append(body)
                    fake.paths.append(self.path)
                    fake.headers.append({k.lower(): v for k, v in self.headers.items()})
                status, answer, headers = fake._next()
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return

        return Handler


@contextmanager
def serve(fake: FakeProvider) -> Iterator[str]:
    """Run ``fake`` on a free loopback port; yields its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), fake.handler())
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def openai_tool_call(
    arguments: str, *, call_id: str = "call_1", prompt_tokens: int = 11, completion_tokens: int = 7
) -> dict[str, Any]:
    """A Chat Completions answer calling ``submit_reasoning`` with raw ``arguments``."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "fake-gpt",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": "submit_reasoning", "arguments": arguments},
                        }
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens},
    }


def openai_refusal(text: str) -> dict[str, Any]:
    """A Chat Completions answer whose message is a refusal."""
    return {
        "model": "fake-gpt",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": None, "refusal": text},
            }
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2},
    }


def anthropic_tool_use(arguments: Any, *, use_id: str = "toolu_1") -> dict[str, Any]:
    """A Messages answer with a ``tool_use`` block for ``submit_reasoning``."""
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "fake-claude",
        "stop_reason": "tool_use",
        "content": [
            {"type": "tool_use", "id": use_id, "name": "submit_reasoning", "input": arguments}
        ],
        "usage": {"input_tokens": 13, "output_tokens": 9},
    }


def anthropic_refusal(text: str) -> dict[str, Any]:
    """A Messages answer the model stopped with ``stop_reason: refusal``."""
    return {
        "type": "message",
        "role": "assistant",
        "model": "fake-claude",
        "stop_reason": "refusal",
        "content": [{"type": "text", "text": text}],
        "usage": {"input_tokens": 4, "output_tokens": 1},
    }


def error(status: int, message: str) -> dict[str, Any]:
    """A provider error body (both formats nest ``error.message``)."""
    return {"type": "error", "error": {"type": "api_error", "message": message}}
