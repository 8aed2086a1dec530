"""An MCP server exposing one forge tier, built on the official ``mcp`` SDK.

Any MCP client (a desktop assistant, an agent framework) can then author plans: ``tools/list``
advertises the tier's tools with their JSON Schemas (and whether each changes a plan), and
``tools/call`` runs one. A refusal comes back as a normal result flagged ``isError`` with the
refusal's text (its code and fix) and its structured form, so the model reads it and corrects
itself; the protocol-level error channel is never used for a plan's problems.

``orch mcp --tier authoring --store plans.sqlite3 --tools pkg.tools:TOOLS`` serves it over
stdio. Requires the ``mcp`` extra (``pip install 'orchestration[mcp]'``).

Every line a client sends gets an answer: the SDK's stdio transport drops a line it cannot
parse (the client would wait for ever), so :func:`serve_stdio` answers it with a JSON-RPC
error itself: ``-32700`` (parse error, id ``null``) for a line that is not JSON, ``-32600``
(invalid request) for JSON that is not a JSON-RPC message or is nested more deeply than the
SDK's parser reads, with the request's id whenever one can be found at the top level, so a
client waiting on that request is answered.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from types import TracebackType
from typing import Any

import anyio
import mcp.types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from orchestration.forge import ForgeTool, call_tool

__all__ = ["build_mcp_server", "error_reply", "serve_stdio"]

_INSTRUCTIONS = (
    "Tools for authoring plans that a person reviews and approves before they run once. "
    "Build or instantiate a plan, read its issues (each names its fix), fix them, then "
    "submit_plan it. No tool approves a plan: an operator does."
)


def _annotations(tool: ForgeTool) -> types.ToolAnnotations:
    return types.ToolAnnotations(
        read_only_hint=not tool.mutating,
        destructive_hint=False,
        idempotent_hint=not tool.mutating,
        open_world_hint=False,
    )


def build_mcp_server(
    tools: Mapping[str, ForgeTool], *, name: str = "orchestration", version: str = "0.1.0"
) -> Server[Any]:
    """A low-level MCP ``Server`` listing and running ``tools`` (one forge tier).

    Args:
        tools: The forged tools, as ``Orchestration.tools(tier)`` returns them.
        name: The server name clients see.
        version: The server version clients see.

    """

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=tool.name,
                    description=tool.description,
                    input_schema=dict(tool.parameters),
                    annotations=_annotations(tool),
                )
                for tool in tools.values()
            ]
        )

    async def run_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        result = await call_tool(tools, params.name, params.arguments)
        return types.CallToolResult(
            content=[types.TextContent(text=result.text)],
            structured_content=result.to_json(),
            is_error=not result.ok,
        )

    return Server(
        name,
        version=version,
        instructions=_INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=run_tool,
    )


async def serve_stdio(server: Server[Any]) -> None:
    """Serve ``server`` over this process's stdin and stdout until the client disconnects.

    Lines the transport could not parse are answered with :func:`error_reply`.
    """
    async with stdio_server() as (read_stream, write_stream):
        answering = _AnsweringReadStream(read_stream, write_stream)
        await server.run(answering, write_stream, server.create_initialization_options())


_PARSE_ERROR = -32700
_INVALID_REQUEST = -32600
_TOP_LEVEL_ID = re.compile(r'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')


def error_reply(exc: Exception) -> types.JSONRPCError:
    """The JSON-RPC error answering a line the transport failed to parse (its exception)."""
    line: Any = None
    kind, detail = "", str(exc)
    if isinstance(exc, ValidationError) and exc.errors():
        first = exc.errors()[0]
        line, kind, detail = first.get("input"), first["type"], first["msg"]
    if kind == "json_invalid" and "recursion limit" not in detail:
        return _error(None, _PARSE_ERROR, f"Parse error: the line is not JSON ({detail}).")
    request_id = _top_level_id(line) if isinstance(line, str) else _id_of(line)
    if kind == "json_invalid":
        message = (
            "Invalid Request: the message is nested more deeply than this server reads; send "
            "arguments nested less deeply (at most about 250 levels)."
        )
    else:
        message = f"Invalid Request: not a JSON-RPC 2.0 message ({detail})."
    return _error(request_id, _INVALID_REQUEST, message)


def _error(request_id: int | str | None, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(
        jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message)
    )


def _id_of(value: Any) -> int | str | None:
    candidate = value.get("id") if isinstance(value, dict) else None
    return candidate if type(candidate) in (int, str) else None


def _top_level_id(text: str) -> int | str | None:
    """The ``id`` member of the top-level JSON object in ``text``, read without recursion.

    The text may be too deep for any recursive parser, so this scans it once, tracking the
    nesting depth outside strings, and parses only the small ``"id": <value>`` it finds at
    depth one.
    """
    depth = 0
    in_string = escaped = False
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            continue
        if char == '"':
            if depth == 1:
                match = _TOP_LEVEL_ID.match(text, index)
                if match is not None:
                    value = json.loads(match.group(1))
                    return value if type(value) in (int, str) else None
            in_string = True
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
    return None


class _AnsweringReadStream:
    """The transport's read stream, minus unparsable lines, which it answers with an error.

    Everything else (messages, the sender's context for each, closing) passes through.
    """

    def __init__(self, inner: Any, write: Any) -> None:
        self._inner = inner
        self._write = write

    @property
    def last_context(self) -> Any:
        """The sender's context of the last message (the SDK restores it per request)."""
        return getattr(self._inner, "last_context", None)

    async def _answer(self, exc: Exception) -> None:
        await self._write.send(SessionMessage(error_reply(exc)))

    async def receive(self) -> SessionMessage:
        """The next parsed message; unparsable lines are answered and skipped."""
        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item  # type: ignore[no-any-return]
            await self._answer(item)

    def __aiter__(self) -> _AnsweringReadStream:
        return self

    async def __anext__(self) -> SessionMessage:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        """Close the transport's stream."""
        await self._inner.aclose()

    async def __aenter__(self) -> _AnsweringReadStream:
        await self._inner.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None:
        result: bool | None = await self._inner.__aexit__(exc_type, exc_val, exc_tb)
        return result
