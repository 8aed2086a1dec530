"""``orch schema``: print or write the JSON Schema of the plan IR and the run log."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from orchestration.cli.common import CliError
from orchestration.schema import default_schema_path, schema_text

__all__ = ["register"]


def register(commands: Any) -> None:
    """Add the ``schema`` command."""
    cmd = commands.add_parser("schema", help="print the JSON Schema of plans and run events")
    cmd.add_argument("--write", metavar="PATH", help="write it to PATH instead of stdout")
    cmd.add_argument(
        "--check",
        action="store_true",
        help="fail if the checked-in schema differs from the models",
    )
    cmd.set_defaults(handler=_schema)


def _schema(args: argparse.Namespace) -> int:
    text = schema_text()
    if args.check:
        path = Path(args.write) if args.write else default_schema_path()
        if not path.exists() or path.read_text() != text:
            raise CliError(
                "schema_drift",
                f"{path} differs from the wire models; regenerate it with "
                f"`orch schema --write {path}` and commit it",
            )
        print(f"{path} matches the wire models")
        return 0
    if args.write:
        Path(args.write).write_text(text)
        print(f"wrote {args.write}")
    else:
        print(text, end="")
    return 0
