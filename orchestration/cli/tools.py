"""``orch tools list``: the allowed tools, each with what it takes and returns.

``--tools module:attr`` (env ``ORCH_TOOLS``) names the allowlist, as for freeze. A toolbox lists
each tool's signature (``files.list(dir: string)``), what it returns and its description;
``--json`` prints the full input and output JSON Schemas. A plain allowlist of names has no
shapes: its tools are listed without ``signature`` and ``inputSchema`` (freeze does not check
their calls' arguments).
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from orchestration.cli.common import CliError, add_json_flag, emit
from orchestration.cli.review import load_tools
from orchestration.tools.toolbox import catalog_lines, tool_catalog

__all__ = ["register"]


def register(commands: Any) -> None:
    """Add the ``tools`` group (``tools list``)."""
    group = commands.add_parser("tools", help="the tools plans may call, with their shapes")
    sub = group.add_subparsers(dest="tools_command", required=True, metavar="COMMAND")
    listing = sub.add_parser("list", help="each allowed tool: signature, returns, description")
    listing.add_argument(
        "--tools",
        default=os.environ.get("ORCH_TOOLS"),
        help="module:attr of the tool allowlist (env ORCH_TOOLS)",
    )
    add_json_flag(listing)
    listing.set_defaults(handler=_list)


def _list(args: argparse.Namespace) -> int:
    if not args.tools:
        raise CliError(
            "tools_required",
            "name the tool allowlist: pass --tools module:attr (or set ORCH_TOOLS)",
        )
    entries = tool_catalog(load_tools(args.tools))
    emit(args, {"tools": entries}, lambda: "\n".join(catalog_lines(entries)))
    return 0
