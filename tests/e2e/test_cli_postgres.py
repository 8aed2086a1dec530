"""The CLI on the shared PostgreSQL plan store: `--store postgresql://...`."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import psycopg

from tests.postgres_cluster import PostgresCluster

from .cli import orch, orch_json
from .test_cli_plan import OPS

TOOLS = ["--tools", "workers.example_tools:TOOLBOX"]


def test_cli_authors_freezes_and_approves_on_postgres(
    postgres: PostgresCluster, tmp_path: Path
) -> None:
    """Author, freeze, render and approve through a DSN; every command sees the same plan."""
    dsn = postgres.new_database()
    ops = copy.deepcopy(OPS)
    ops[1]["node"]["definition"]["declassifies"] = ["value"]
    ops_file = tmp_path / "ops.json"
    ops_file.write_text(json.dumps(ops))
    store: Any = dsn  # handed to --store verbatim (a Path would fold the "//")
    orch("plan", "new", "p1", "--label", "shared", store=store)
    applied = orch_json("plan", "apply", "p1", str(ops_file), store=store)
    assert applied["revision"] == 3
    orch("plan", "freeze", "p1", *TOOLS, store=store)
    rendered = orch_json("plan", "render", "p1", store=store)
    assert rendered["digest"] == applied["digest"]
    orch("plan", "approve", "p1", "--digest", rendered["digest"], "--by", "op", store=store)
    listing = orch_json("plan", "list", store=store)["plans"]
    assert [(p["planId"], p["state"], p["label"]) for p in listing] == [
        ("p1", "executable", "shared")
    ]
    with psycopg.connect(dsn) as conn:  # it really is in PostgreSQL
        row = conn.execute("SELECT state FROM orch_plans WHERE plan_id = 'p1'").fetchone()
    assert row == ("executable",)
