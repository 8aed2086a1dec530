"""Tools for the failure drills: each call is written to an external SQLite ledger.

The ledger lives outside Temporal, so a drill can see whether (and how often) a side effect
really happened, whatever the workflow believes.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
from typing import Any

from orchestration.tools.toolbox import Toolbox, ToolContext

TOOLBOX = Toolbox()


def _ledger(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=10)
    conn.execute("create table if not exists ledger (key text, event text, pid integer)")
    return conn


def record(path: str, key: str, event: str) -> None:
    """Append one row to the ledger."""
    with _ledger(path) as conn:
        conn.execute("insert into ledger values (?, ?, ?)", (key, event, os.getpid()))


def rows(path: str) -> list[tuple[str, str]]:
    """Every (key, event) row in order."""
    with _ledger(path) as conn:
        return [(k, e) for k, e, _ in conn.execute("select * from ledger order by rowid")]


@TOOLBOX.tool("ledger.write")
async def ledger_write(ledger: str, seconds: float, context: ToolContext) -> dict[str, Any]:
    """Record 'started', work for ``seconds`` (only on the first attempt), record 'done'."""
    started_before = sum(
        1 for k, e in rows(ledger) if k == context.idempotency_key and e == "started"
    )
    record(ledger, context.idempotency_key, "started")
    if started_before == 0:
        await asyncio.sleep(seconds)
    record(ledger, context.idempotency_key, "done")
    return {"value": context.node_id}


@TOOLBOX.tool("upper")
def upper(s: str) -> str:
    """``s`` in capitals: the call the gate drills approve (its input shape is ``{s: str}``)."""
    return s.upper()


@TOOLBOX.tool("huge")
def huge() -> str:
    """A result far over Temporal's 2 MiB payload limit."""
    return "x" * 2_500_000


@TOOLBOX.tool("ledger.hold")
async def ledger_hold(ledger: str, gate: str, context: ToolContext) -> dict[str, Any]:
    """Record 'started', wait until the file ``gate`` exists (the test opens it), record 'done'.

    A call that stays in flight exactly as long as a drill needs, whatever the machine's speed.
    """
    record(ledger, context.idempotency_key, "started")
    while not os.path.exists(gate):
        await asyncio.sleep(0.05)
    record(ledger, context.idempotency_key, "done")
    return {"value": context.node_id}


def pids(path: str, plan_id: str) -> dict[str, set[int]]:
    """For each node of ``plan_id`` in the ledger, the processes that worked on it."""
    found: dict[str, set[int]] = {}
    with _ledger(path) as conn:
        for key, _, pid in conn.execute("select * from ledger order by rowid"):
            if key.startswith(f"{plan_id}/"):
                node = key[len(plan_id) + 1 :].split(":", 1)[0]
                found.setdefault(node, set()).add(pid)
    return found
