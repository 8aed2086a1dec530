"""The ``orch`` command line: one console script, one group per concern.

Groups register themselves (``register(subcommands)``) so each lives in its own module. Every
command runs through :func:`orchestration.cli.failures.run_command`, so a failure of any
command, usage errors included, prints one ``error[<code>]: <what happened> — <what to do>``
line and exits with a documented status (the table is in ``orch --help``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib import metadata
from typing import NoReturn

from orchestration.cli.failures import (
    EXIT_STATUS_HELP,
    CliError,
    ExitCode,
    describe_failure,
    report,
    run_command,
)
from orchestration.exiting import exit_process

__all__ = ["OrchParser", "build_parser", "console_main", "main"]


class OrchParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are refusals like any other.

    argparse prints its usage and exits 2 on a bad argument; here the error becomes a
    ``usage`` refusal instead, so it is one line on stderr (and a JSON document under
    ``--json``) with the same exit status. Subparsers inherit the class.
    """

    def error(self, message: str) -> NoReturn:
        """Raise the usage error as a refusal naming the command's help."""
        raise CliError(
            "usage",
            f"{self.prog}: {message} — see `{self.prog} --help`",
            exit_code=ExitCode.REFUSED,
        )


def _version() -> str:
    try:
        return metadata.version("orchestration")
    except metadata.PackageNotFoundError:  # pragma: no cover - run from a source tree
        return "unknown"


def build_parser() -> OrchParser:
    """The full ``orch`` parser."""
    from orchestration.cli import (
        demo,
        dev,
        mcp,
        plan,
        replay_check,
        run,
        schema,
        template,
        tools,
    )

    parser = OrchParser(
        prog="orch",
        description="Author plans, review and approve them, and run them once on Temporal.",
        epilog=EXIT_STATUS_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"orch {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    plan.register(commands)
    template.register(commands)
    tools.register(commands)
    run.register(commands)
    dev.register(commands)
    mcp.register(commands)
    schema.register(commands)
    replay_check.register(commands)
    demo.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``orch`` console script; returns the exit status."""
    words = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(words)
    except SystemExit:
        raise
    except BaseException as exc:  # noqa: BLE001 - usage errors and `--help | head` alike
        failure = describe_failure(exc)
        report(failure, json_mode="--json" in words, exc=exc)
        return int(failure.exit_code)
    return run_command(args.handler, args)


def console_main() -> NoReturn:
    """The ``orch`` console script: :func:`main`, then an exit that cannot abort in finalisation."""
    exit_process(main())


if __name__ == "__main__":  # pragma: no cover
    console_main()
