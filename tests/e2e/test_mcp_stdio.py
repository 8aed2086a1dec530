"""`orch mcp` over real stdio: every line gets an answer, a bad one a JSON-RPC error."""

from __future__ import annotations

import json
import select
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .cli import ORCH


class Session:
    """A JSON-RPC conversation with an `orch mcp` subprocess, one line per message."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc

    def send(self, message: dict[str, Any] | str) -> None:
        line = message if isinstance(message, str) else json.dumps(message)
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def receive(self, timeout: float = 20) -> dict[str, Any]:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        assert ready, f"no answer within {timeout} s"
        answer: dict[str, Any] = json.loads(self.proc.stdout.readline())
        return answer


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    proc = subprocess.Popen(
        [ORCH, "mcp", "--tools", "workers.example_tools:TOOLBOX",
         "--store", str(tmp_path / "plans.sqlite3")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    talk = Session(proc)
    talk.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}})
    assert talk.receive()["id"] == 1
    talk.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    yield talk
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(timeout=30)
    assert proc.stderr is not None
    assert "Traceback" not in proc.stderr.read().decode()


def test_a_line_that_is_not_json_gets_a_parse_error(session: Session) -> None:
    """JSON-RPC's parse error, id null; the session goes on."""
    session.send("this is not json")
    answer = session.receive()
    assert answer["id"] is None and answer["error"]["code"] == -32700
    session.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert session.receive()["id"] == 2


def test_arguments_nested_100000_deep_get_an_error_for_their_request(session: Session) -> None:
    """The request's own id is answered with an error naming the fix, not left waiting."""
    deep = "[" * 100_000 + "]" * 100_000
    session.send('{"jsonrpc": "2.0", "id": "deep-1", "method": "tools/call", "params": '
                 '{"name": "get_plan", "arguments": {"planId": ' + deep + '}}}')
    answer = session.receive()
    assert answer["id"] == "deep-1" and answer["error"]["code"] == -32600
    assert "nested" in answer["error"]["message"]
    session.send({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
    assert session.receive()["id"] == 3


def test_json_that_is_not_a_jsonrpc_message_is_an_invalid_request(session: Session) -> None:
    """An object missing jsonrpc/method is answered with -32600 and its id."""
    session.send({"id": 7, "hello": "there"})
    answer = session.receive()
    assert answer["id"] == 7 and answer["error"]["code"] == -32600


def test_as_executed_without_a_reachable_temporal_is_a_refusal_value(session: Session) -> None:
    """get_plan's as-executed view answers with a refusal when no run can be read."""
    session.send({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
        "name": "create_plan", "arguments": {}}})
    created = session.receive()
    assert created["id"] == 4, created
    plan_id = created["result"]["structuredContent"]["data"]["planId"]
    session.send({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
        "name": "get_plan", "arguments": {"planId": plan_id, "view": "as_executed"}}})
    answer = session.receive(timeout=40)
    assert answer["id"] == 5 and answer["result"]["isError"] is True, answer
    assert answer["result"]["structuredContent"]["code"] in (
        "temporal_unreachable", "run_not_found")
