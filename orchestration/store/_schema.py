"""The schema of the SQL stores: the columns every database declares, and its versions.

Each database writes its own migration steps (keys, table options and column changes are
where the databases differ most) around the column lists here, and records its layout's version
its own way (SQLite in ``PRAGMA user_version``, PostgreSQL in a table). What a version means is
shared: steps run once each, in order, and a database written by a newer layout is refused
rather than rewritten, since this code cannot know what that layout needs.
"""

from __future__ import annotations

from collections.abc import Sequence

from orchestration.errors import OrchestrationError

__all__ = [
    "PLAN_COLUMNS",
    "Migration",
    "SchemaVersionError",
    "log_columns",
    "op_columns",
    "pending",
]

Migration = tuple[int, str]
"""``(version, DDL)``: the step that takes a database from the previous version to this one."""

PLAN_COLUMNS = """\
    state       TEXT NOT NULL CHECK (state IN ('editable', 'reviewable', 'executable')),
    revision    INTEGER NOT NULL,
    digest      TEXT NOT NULL,
    node_count  INTEGER NOT NULL,
    label       TEXT,
    provenance  TEXT,
    approval    TEXT,
    run_id      TEXT,
    updated_at  TEXT NOT NULL"""
"""The columns of version 1's plans table after its keys (``seq``, ``plan_id``), which each
database declares its own way."""


def op_columns(plans: str) -> str:
    """The columns of the ops table, whose rows belong to the plans table ``plans``."""
    return f"""\
    plan_id     TEXT NOT NULL REFERENCES {plans} (plan_id),
    position    INTEGER NOT NULL,
    op_id       TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    body        TEXT NOT NULL,
    PRIMARY KEY (plan_id, position),
    UNIQUE (plan_id, op_id)"""


def log_columns(plans: str) -> str:
    """The columns of a run's log by position (version 1's ``run_events``, then ``run_log``)."""
    return f"""\
    plan_id     TEXT NOT NULL REFERENCES {plans} (plan_id),
    position    INTEGER NOT NULL,
    body        TEXT NOT NULL,
    PRIMARY KEY (plan_id, position)"""


class SchemaVersionError(OrchestrationError):
    """The database was written by a newer layout than this version of the store understands."""

    code = "schema_version_unsupported"


def pending(migrations: Sequence[Migration], found: int, where: str) -> list[str]:
    """The DDL of every step after version ``found``, in order (none when it is current).

    Raises:
        SchemaVersionError: ``found`` is past the last step; ``where`` names the database.

    """
    latest = migrations[-1][0]
    if found > latest:
        raise SchemaVersionError(
            f"{where} has schema version {found}; this store reads version {latest}. "
            "Upgrade the library to open it."
        )
    return [ddl for version, ddl in migrations if version > found]
