"""``orch run list``: the runs in the plan store, newest claim first, a page at a time.

The plan store holds every run's claim at once and its log as the workers mirror it, so the
listing needs neither Temporal nor a worker: it reads the store (``--store``) every client
and worker of a deployment shares. A run the store knows no outcome of is ``running``; its
start is its log's ``start`` entry once mirrored, else the time the store recorded its claim.
"""

from __future__ import annotations

import argparse
import datetime as dt
from typing import Any

from orchestration.cli.common import add_json_flag, add_store_flag, emit, with_store
from orchestration.cli.labels import format_duration, seconds_between
from orchestration.cli.paging import add_paging_flags, next_page, paged
from orchestration.types import RunSummary

__all__ = ["register_list", "run_rows"]

_OUTCOMES = ("completed", "halted", "aborted", "running")


def register_list(sub: Any) -> None:
    """Add ``run list`` to the ``run`` group's subcommands."""
    listing = sub.add_parser(
        "list",
        help="the runs in the plan store, newest first: outcome, start, duration",
        description="List the plans' runs from the plan store, newest claim first: plan, run "
        "id, outcome (running until the store holds its end), when it started (UTC; until the "
        "worker mirrors its log, when it was claimed) and how long it took. Needs no Temporal "
        "server.",
    )
    listing.add_argument("--outcome", choices=_OUTCOMES, help="only runs that ended so")
    listing.add_argument(
        "--plan-prefix", default="", metavar="PREFIX", help="only plans whose id starts so"
    )
    add_paging_flags(listing, "runs")
    add_store_flag(listing)
    add_json_flag(listing)
    listing.set_defaults(handler=_list)


def _list(args: argparse.Namespace) -> int:
    async def go(store: Any) -> tuple[list[RunSummary], bool]:
        async def fetch(limit: int, after: str | None) -> list[RunSummary]:
            runs: list[RunSummary] = await store.list_runs(
                outcome=args.outcome, prefix=args.plan_prefix, limit=limit, after=after
            )
            return runs

        return await paged(args, fetch, cursors="a plan with a run")

    runs, more = with_store(args, go)
    cursor = runs[-1].plan_id if more else None
    now = dt.datetime.now(dt.UTC).isoformat()
    emit(args, {"runs": runs, "next": cursor}, lambda: _text(args, runs, cursor, now))
    return 0


def _text(args: argparse.Namespace, runs: list[RunSummary], cursor: str | None, now: str) -> str:
    if not runs:
        return "(no runs)"
    rows = [("PLAN", "RUN", "OUTCOME", "STARTED (UTC)", "DURATION"), *run_rows(runs, now)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    if cursor is not None:
        filters = [
            *(["--outcome", args.outcome] if args.outcome else []),
            *(["--plan-prefix", args.plan_prefix] if args.plan_prefix else []),
        ]
        lines.append(next_page(["orch", "run", "list", *filters], args, cursor))
    return "\n".join(lines)


def run_rows(runs: list[RunSummary], now: str) -> list[tuple[str, str, str, str, str]]:
    """Each run as the text columns: plan, run id, outcome, start, duration.

    A running run's duration is the time since it started, as of ``now``, marked so.
    """
    rows: list[tuple[str, str, str, str, str]] = []
    for run in runs:
        started = run.started_at or run.claimed_at
        if started is None:
            took = "—"
        elif run.outcome is None:
            took = f"{format_duration(seconds_between(started, now))} so far"
        elif run.ended_at is not None:
            took = format_duration(seconds_between(started, run.ended_at))
        else:
            took = "—"
        rows.append((run.plan_id, run.run_id, run.outcome or "running", _utc(started), took))
    return rows


def _utc(instant: str | None) -> str:
    """``2026-01-01 09:30:01``: the instant in UTC to the second (``—`` when unknown)."""
    if instant is None:
        return "—"
    moment = dt.datetime.fromisoformat(instant).astimezone(dt.UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S")
