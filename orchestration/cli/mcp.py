"""``orch mcp``: serve one forge tier over stdio to an MCP client.

Point an MCP client at ``orch mcp --tier authoring --store plans.sqlite3 --tools
pkg.tools:TOOLS`` (plus ``--templates`` for the front tier's templates). Stdout carries the
protocol, so nothing else is printed there; a refusal to start goes to stderr with its code.
``--address``/``--namespace`` name the Temporal server runs are read from when a tool asks for
a plan as executed; nothing connects to it before then.
"""

from __future__ import annotations

import argparse
from typing import Any

from orchestration.cli.assembly import add_assembly_flags, open_orchestration
from orchestration.cli.common import CliError, run_async

__all__ = ["register"]


def register(commands: Any) -> None:
    """Add the ``mcp`` command."""
    cmd = commands.add_parser("mcp", help="serve a forge tier to an MCP client over stdio")
    cmd.add_argument(
        "--tier",
        choices=["front", "authoring"],
        default="authoring",
        help="front: templates, outline, slices, submit; authoring: the graph edits too",
    )
    cmd.add_argument("--actor", default="mcp", help="actor id for the ops the tools mint")
    add_assembly_flags(cmd)
    cmd.set_defaults(handler=_mcp)


def _mcp(args: argparse.Namespace) -> int:
    async def go() -> int:
        # Runs are read from the plan store, where workers mirror their logs.
        orch = await open_orchestration(args)
        try:
            try:
                from orchestration.forge.mcp import build_mcp_server, serve_stdio
            except ImportError as exc:
                raise CliError(
                    "mcp_missing",
                    f"the MCP server needs the mcp package ({exc}); install it with "
                    "pip install 'orchestration[mcp]'",
                ) from exc
            server = build_mcp_server(orch.tools(args.tier, actor_id=args.actor))
            await serve_stdio(server)
        finally:
            await orch.store.close()
        return 0

    return run_async(go)
