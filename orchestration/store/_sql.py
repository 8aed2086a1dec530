"""The SQL every SQL store runs, written once and rendered per dialect.

The SQLite and PostgreSQL stores keep the same tables with the same columns and decide with the
same rules, so their statements differ only where the databases do: the table names
(PostgreSQL's carry an ``orch_`` prefix so they can share a database with other applications),
the placeholder style, how a list of op ids is passed, the row locks and where a run's place in
claim order comes from. Each database module spells those in its :class:`Dialect`; the SQL
store renders :class:`Statements` once for it. The schema DDL stays with each database.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from ._rows import SUMMARY_COLUMNS

__all__ = ["Dialect", "RowLock", "Statements"]

RowLock = Literal["update", "share"]
"""The lock a transaction takes on a plan row it decides on: to write it, or to copy from it."""


@dataclass(frozen=True)
class Dialect:
    """What one database spells differently in the shared statements."""

    table_prefix: str
    placeholder: str
    op_id_in: str
    """The condition that ``op_id`` is in a list bound as one parameter (``{p}``)."""
    op_ids: Callable[[Sequence[str]], object]
    """Encodes that list as the parameter: SQLite has no array type, so it takes JSON text."""
    for_update: str
    """The suffix of a plan-row read that locks the row to write it."""
    for_share: str
    """The suffix of a plan-row read that locks the row against writes while it is copied."""
    next_run_seq: str
    """The next place in claim order, for a run claimed now (``{plans}`` is rendered)."""

    def render(self, template: str) -> str:
        """``template`` with ``{p}`` as this dialect's placeholder and its table names."""
        return template.format(
            p=self.placeholder,
            plans=f"{self.table_prefix}plans",
            ops=f"{self.table_prefix}ops",
            run_log=f"{self.table_prefix}run_log",
        )


class Statements:
    """Every statement the SQL store runs, rendered for one dialect.

    The parameters of the writes are built by :mod:`._rows`, in the column order written here.
    """

    def __init__(self, dialect: Dialect) -> None:
        self._dialect = dialect
        render = dialect.render
        self.plan_exists = render("SELECT 1 FROM {plans} WHERE plan_id = {p}")
        # Two creators of one id cannot both succeed: the loser inserts nothing (rowcount 0).
        self.insert_plan = render(
            "INSERT INTO {plans} (plan_id, state, revision, digest, node_count, label, provenance,"
            " updated_at) VALUES ({p}, 'editable', {p}, {p}, {p}, {p}, {p}, {p})"
            " ON CONFLICT (plan_id) DO NOTHING"
        )
        self.copy_ops = render(
            "INSERT INTO {ops} (plan_id, position, op_id, fingerprint, body)"
            " SELECT {p}, position, op_id, fingerprint, body FROM {ops}"
            " WHERE plan_id = {p} AND position < {p}"
        )
        self.op_bodies = render(
            "SELECT body FROM {ops} WHERE plan_id = {p} AND position >= {p} AND position < {p}"
            " ORDER BY position"
        )
        self.known_fingerprints = render(
            f"SELECT op_id, fingerprint FROM {{ops}} WHERE plan_id = {{p}} AND {dialect.op_id_in}"
        )
        self.insert_ops = render(
            "INSERT INTO {ops} (plan_id, position, op_id, fingerprint, body)"
            " VALUES ({p}, {p}, {p}, {p}, {p})"
        )
        self.set_log = render(
            "UPDATE {plans} SET revision = {p}, digest = {p}, node_count = {p}, updated_at = {p}"
            " WHERE plan_id = {p}"
        )
        self.set_state = render(
            "UPDATE {plans} SET state = {p}, approval = COALESCE({p}, approval), updated_at = {p}"
            " WHERE plan_id = {p}"
        )
        # The first claim of a run gives it its place in claim order and its claim time; a
        # bind, retry or resume keeps both (SET reads the row as it was before the update).
        self.set_run = render(
            "UPDATE {plans} SET run_id = {p}, run_execution = {p}, run_outcome = {p},"
            " updated_at = {p},"
            " run_claimed_at = CASE WHEN run_seq IS NULL THEN {p} ELSE run_claimed_at END,"
            f" run_seq = COALESCE(run_seq, {dialect.next_run_seq}) WHERE plan_id = {{p}}"
        )
        self.set_run_outcome = render(
            "UPDATE {plans} SET run_outcome = {p}, updated_at = {p} WHERE plan_id = {p}"
        )
        # Positions are written contiguously from 0, so the next one is the length.
        self.run_log_length = render(
            "SELECT COALESCE(MAX(position) + 1, 0) FROM {run_log} WHERE plan_id = {p}"
        )
        self.run_log_bodies = render(
            "SELECT body FROM {run_log} WHERE plan_id = {p} AND position >= {p} AND position < {p}"
            " ORDER BY position"
        )
        self.whole_run_log = render(
            "SELECT body FROM {run_log} WHERE plan_id = {p} ORDER BY position"
        )
        self.cut_run_log = render("DELETE FROM {run_log} WHERE plan_id = {p} AND position >= {p}")
        self.insert_run_log = render(
            "INSERT INTO {run_log} (plan_id, position, body) VALUES ({p}, {p}, {p})"
        )
        # The state filter is bound twice; the cast lets PostgreSQL type a NULL parameter.
        # Paging is by seq: the rows after the cursor plan's (-1 for the first page).
        self.list_plans = render(
            f"SELECT {SUMMARY_COLUMNS} FROM {{plans}}"
            " WHERE (CAST({p} AS TEXT) IS NULL OR state = {p}) AND seq > {p}"
            " ORDER BY seq LIMIT {p}"
        )
        # Newest claim first, below the cursor's place; the outcome filter is bound twice
        # (NULL: any), the prefix as its length and itself. Only an ended run's last entry is
        # read: a running run's may be a large settle, and its time is not an end.
        self.list_runs = render(
            "SELECT p.plan_id, p.run_id, p.run_execution, p.run_outcome, p.run_claimed_at,"
            " (SELECT l.body FROM {run_log} l WHERE l.plan_id = p.plan_id AND l.position = 0),"
            " CASE WHEN p.run_outcome IS NULL THEN NULL ELSE"
            " (SELECT l.body FROM {run_log} l WHERE l.plan_id = p.plan_id"
            " ORDER BY l.position DESC LIMIT 1) END,"
            " (SELECT COALESCE(MAX(l.position) + 1, 0) FROM {run_log} l"
            " WHERE l.plan_id = p.plan_id)"
            " FROM {plans} p"
            " WHERE p.run_seq IS NOT NULL AND p.run_seq < {p}"
            " AND (CAST({p} AS TEXT) IS NULL OR COALESCE(p.run_outcome, 'running') = {p})"
            " AND substr(p.plan_id, 1, CAST({p} AS INTEGER)) = {p}"
            " ORDER BY p.run_seq DESC LIMIT {p}"
        )

    def plan(self, columns: str, lock: RowLock | None = None) -> str:
        """Read ``columns`` of one plan's row, taking ``lock`` on it."""
        dialect = self._dialect
        suffix = {None: "", "update": dialect.for_update, "share": dialect.for_share}[lock]
        return dialect.render(f"SELECT {columns} FROM {{plans}} WHERE plan_id = {{p}}{suffix}")

    def op_ids(self, op_ids: Sequence[str]) -> object:
        """The parameter of :attr:`known_fingerprints` for these op ids."""
        return self._dialect.op_ids(op_ids)
