"""Paged listings (``orch plan list``, ``orch run list``): the flags, the page, the next cursor.

A listing shows at most ``--limit`` rows (default 50) and, when there are more, says how to
ask for the next page: ``--after CURSOR``, where the cursor is the plan id of the page's last
row. The store continues right after that plan in the listing's order (see
:mod:`orchestration.store._listing`), so paging never skips or repeats a row while plans are
created or runs claimed. To know whether there is a next page, a command asks the store for
one row more than it shows.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from orchestration.cli.failures import CliError
from orchestration.errors import InvalidListingError

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "add_paging_flags",
    "checked_limit",
    "next_page",
    "paged",
]

DEFAULT_LIMIT = 50
MAX_LIMIT = 1000
"""The largest page a listing shows: a bigger listing is paged, not printed at once."""

T = TypeVar("T")


def add_paging_flags(parser: argparse.ArgumentParser, what: str) -> None:
    """``--limit N`` and ``--after CURSOR`` for a listing of ``what`` (``"plans"``)."""
    parser.add_argument(
        "--limit",
        type=int,
        default=DEFAULT_LIMIT,
        help=f"show at most this many {what} (1 to {MAX_LIMIT}; default %(default)s)",
    )
    parser.add_argument(
        "--after",
        metavar="CURSOR",
        help="continue after this cursor: the plan id the previous page printed as its next cursor",
    )


def checked_limit(args: argparse.Namespace) -> int:
    """The page size asked for.

    Raises:
        CliError: ``bad_limit`` when it is not from 1 to :data:`MAX_LIMIT`.

    """
    limit: int = args.limit
    if not 1 <= limit <= MAX_LIMIT:
        raise CliError(
            "bad_limit",
            f"--limit {limit} is not a page size — pass a number from 1 to {MAX_LIMIT}, and "
            "--after the printed cursor for the next page",
        )
    return limit


async def paged(
    args: argparse.Namespace,
    fetch: Callable[[int, str | None], Awaitable[Sequence[T]]],
    *,
    cursors: str,
) -> tuple[list[T], bool]:
    """One page: ``fetch(limit + 1, after)``'s first ``limit`` rows, and whether more follow.

    Args:
        args: The command's arguments (``--limit``, ``--after``, ``--store``).
        fetch: Asks the store for ``limit`` rows after the cursor.
        cursors: What a cursor of this listing names, for the refusal (``"a plan"``).

    Raises:
        CliError: ``bad_limit`` (see :func:`checked_limit`), or ``bad_cursor`` when
            ``--after`` names nothing the listing can continue after.

    """
    limit = checked_limit(args)
    try:
        rows = list(await fetch(limit + 1, args.after))
    except InvalidListingError as exc:
        raise CliError(
            "bad_cursor",
            f"--after {args.after!r} is not a cursor of this listing: it must name {cursors} "
            f"in the store {args.store} — pass the cursor a previous page printed, or leave "
            "--after out to start from the first page",
        ) from exc
    return rows[:limit], len(rows) > limit


def next_page(command: Sequence[str], args: argparse.Namespace, cursor: str) -> str:
    """The line that says how to get the next page: ``command`` continued after ``cursor``.

    ``command`` is the listing's words with its filters (``orch run list --outcome halted``);
    a page size other than the default is kept, and every word is quoted for a POSIX shell.
    """
    limit = ["--limit", str(args.limit)] if args.limit != DEFAULT_LIMIT else []
    return "next page: " + shlex.join([*command, *limit, "--after", cursor])
