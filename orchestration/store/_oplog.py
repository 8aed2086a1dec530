"""The parsed op logs of recently used plans, kept by the SQL store.

An append refolds the whole log; this spares it re-parsing the log too. A remembered log stays
exact across processes and hosts because ops are append-only and a committed position never
changes, so only the rows past a remembered prefix are ever read and parsed. A log a transaction
parsed is remembered only once that transaction committed.

Transactions may run on worker threads (SQLite's) while committed logs are remembered on the
event loop's, so the cache takes its own lock.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence

from orchestration.types import PlanOp

from . import _rows

__all__ = ["OpLogCache", "extended", "prefix"]

_CACHED_LOGS = 64
"""How many plans' parsed op logs a store keeps, most recently used first."""


class OpLogCache:
    """Committed op-log prefixes by plan id; each transaction collects its logs in a ``seen`` map.

    Logs handed out may be shared with the cache; callers copy them before handing them on.
    """

    def __init__(self) -> None:
        self._logs: OrderedDict[str, list[PlanOp]] = OrderedDict()
        self._lock = threading.Lock()

    def known(self, seen: Mapping[str, list[PlanOp]], plan_id: str) -> list[PlanOp]:
        """The longest prefix of the plan's log at hand: this transaction's, else one committed."""
        log = seen.get(plan_id)
        if log:
            return log
        with self._lock:
            return self._logs.get(plan_id, [])

    def remember(self, seen: Mapping[str, list[PlanOp]]) -> None:
        """Keep the logs of a committed transaction, never one shorter than what is kept.

        Transactions of one store may commit out of order (a pool runs several at once), so a
        later commit may carry an older, shorter log of the same plan.
        """
        with self._lock:
            for plan_id, log in seen.items():
                if len(log) >= len(self._logs.get(plan_id, ())):
                    self._logs[plan_id] = log
                self._logs.move_to_end(plan_id)
            while len(self._logs) > _CACHED_LOGS:
                self._logs.popitem(last=False)


def extended(
    seen: dict[str, list[PlanOp]],
    plan_id: str,
    known: list[PlanOp],
    rows: Iterable[Sequence[str]],
    *,
    whole: bool,
) -> list[PlanOp]:
    """``known`` and the op bodies read past it; noted in ``seen`` when it is the ``whole`` log."""
    log = [*known, *_rows.ops(rows)]
    if whole:
        seen[plan_id] = log
    return log


def prefix(log: list[PlanOp], through: int) -> list[PlanOp]:
    """The first ``through`` ops of ``log``; ``log`` itself when that is all of it."""
    return log[:through] if len(log) > through else log
