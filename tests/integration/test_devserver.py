"""The embedded dev server starts even when a port it picked is taken before it binds."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from workers.devserver import DevServer, DevServerExitedError

pytestmark = pytest.mark.asyncio(loop_scope="session")


@contextmanager
def occupied(port: int) -> Iterator[None]:
    """Hold ``port`` on loopback, listening, for the duration."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", port))
        holder.listen()
        yield


async def test_a_taken_port_it_chose_is_replaced_by_a_fresh_one(tmp_path: Path) -> None:
    server = DevServer(ui=False, log_file=tmp_path / "temporal.log")
    taken = server.port
    with occupied(taken):
        async with server:
            assert server.port != taken
            client = await server.wait_ready()
            assert await client.count_workflows() is not None
    assert "address already in use" in (tmp_path / "temporal.log").read_text()


async def test_a_taken_port_the_caller_chose_is_reported_with_the_reason(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.listen()
        server = DevServer(ui=False, port=port, log_file=tmp_path / "temporal.log")
        with pytest.raises(DevServerExitedError, match="address already in use"):
            async with server:
                pass
    assert server.port == port
