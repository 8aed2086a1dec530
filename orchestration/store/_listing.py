"""The rules of the store listings (``list_plans``, ``list_runs``) every bundled store shares.

A listing pages by plan id: ``after`` is the last plan of the previous page, and the store
continues right after it in the listing's order (plans: creation order; runs: newest claim
first). That keyset is a position no later write moves, so a page never repeats or skips a
row while plans are created and runs claimed. What a run's row says is decided here from the
run's record and the two ends of its stored log, so the stores cannot describe a run apart.
"""

from __future__ import annotations

from typing import get_args

from orchestration.errors import InvalidListingError
from orchestration.run.log import LogEnd, LogEntry, LogStart
from orchestration.types import RunOutcome, RunSummary

from ._rules import LOG_ENTRY_JSON
from .base import RunOutcomeFilter

__all__ = [
    "NO_LIMIT",
    "cursor_not_found",
    "run_summary",
    "run_summary_of_bodies",
    "screen_limit",
    "screen_outcome",
]

NO_LIMIT = 2**62
"""The row limit a SQL store binds for "all": both databases take a number there."""

_FILTERS: tuple[str, ...] = get_args(RunOutcomeFilter)


def screen_limit(method: str, limit: int | None) -> int:
    """The number of rows to return: ``limit``, or :data:`NO_LIMIT` for ``None``.

    Raises:
        InvalidListingError: ``limit`` is negative.

    """
    if limit is None:
        return NO_LIMIT
    if limit < 0:
        raise InvalidListingError(f"{method}: limit ({limit}) must not be negative")
    return limit


def screen_outcome(outcome: str | None) -> str | None:
    """The outcome filter as asked, checked to be one :data:`RunOutcomeFilter` names.

    Raises:
        InvalidListingError: any other value.

    """
    if outcome is not None and outcome not in _FILTERS:
        raise InvalidListingError(
            f"list_runs: {outcome!r} is not an outcome to filter on; use one of "
            + ", ".join(_FILTERS)
        )
    return outcome


def cursor_not_found(method: str, after: str, *, needs_run: bool) -> InvalidListingError:
    """The error for a cursor that names no plan (for runs: no plan with a run)."""
    what = "no plan with a run" if needs_run else "no plan"
    return InvalidListingError(
        f"{method}: the cursor {after!r} names {what} in this store; pass the plan id of the "
        "last row of the previous page"
    )


def run_summary(
    plan_id: str,
    run_id: str,
    execution: str | None,
    outcome: RunOutcome | None,
    claimed_at: str | None,
    first: LogEntry | None,
    last: LogEntry | None,
    log_length: int,
) -> RunSummary:
    """A run's listing row from its record and the two ends of its stored log.

    ``started_at`` is the first entry's time when that is the ``start`` entry; ``ended_at`` is
    the last entry's when the run has an outcome and the log ends with ``end`` (a resumed run
    that ended again: its last end).
    """
    return RunSummary(
        plan_id=plan_id,
        run_id=run_id,
        execution=execution,
        outcome=outcome,
        claimed_at=claimed_at,
        started_at=first.at if isinstance(first, LogStart) else None,
        ended_at=last.at if outcome is not None and isinstance(last, LogEnd) else None,
        log_length=log_length,
    )


def run_summary_of_bodies(
    plan_id: str,
    run_id: str,
    execution: str | None,
    outcome: RunOutcome | None,
    claimed_at: str | None,
    first: str | None,
    last: str | None,
    log_length: int,
) -> RunSummary:
    """:func:`run_summary` from the stored JSON bodies of the log's first and last entries."""
    return run_summary(
        plan_id,
        run_id,
        execution,
        outcome,
        claimed_at,
        None if first is None else LOG_ENTRY_JSON.validate_json(first),
        None if last is None else LOG_ENTRY_JSON.validate_json(last),
        log_length,
    )
