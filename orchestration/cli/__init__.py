"""The ``orch`` command line: one console script, one group per concern.

Groups register themselves (``register(subcommands)``) so each lives in its own module.
Refusals print ``error[<code>]: <message naming the fix>`` and exit 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from orchestration.errors import OrchestrationError
from orchestration.exiting import exit_process

__all__ = ["build_parser", "console_main", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The full ``orch`` parser."""
    from orchestration.cli import demo, dev, mcp, plan, run, schema, template, tools

    parser = argparse.ArgumentParser(
        prog="orch",
        description="Author plans, review and approve them, and run them once on Temporal.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    plan.register(commands)
    template.register(commands)
    tools.register(commands)
    run.register(commands)
    dev.register(commands)
    mcp.register(commands)
    schema.register(commands)
    demo.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``orch`` console script; returns the exit status."""
    try:
        args = build_parser().parse_args(argv)
        status: int = args.handler(args)
    except OrchestrationError as exc:
        print(f"error[{exc.code}]: {exc.message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return status


def console_main() -> NoReturn:
    """The ``orch`` console script: :func:`main`, then an exit that cannot abort in finalisation."""
    exit_process(main())


if __name__ == "__main__":  # pragma: no cover
    console_main()
