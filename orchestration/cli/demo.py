"""``orch demo``: the whole story on the embedded default, printed as it happens.

It authors a real plan through ops (a fan-out forked at the entry, a diamond join, a branch,
an error edge), stores it in a SQLite plan store, folds it, prints the operator's rendering
and digest, then edits it as a second author would and prints the diff between the two
revisions. Every step goes through the public API, so the demo doubles as a usage example.
"""

from __future__ import annotations

import argparse
import secrets
from pathlib import Path
from typing import Any

from orchestration.authoring import PlanAuthor, claim, ref
from orchestration.cli.common import open_store, run_async
from orchestration.routes import BranchId, EdgeSegment, frame_key
from orchestration.types import NumberField, PlanOp, StringField

__all__ = ["build_demo_plan", "edit_demo_plan", "register"]


def register(commands: Any) -> None:
    """Add the ``demo`` command."""
    cmd = commands.add_parser("demo", help="author, store and inspect a real plan end to end")
    cmd.add_argument(
        "--data", default=".data/demo", help="folder for the demo's files (default %(default)s)"
    )
    cmd.set_defaults(handler=_demo)


def build_demo_plan(author: PlanAuthor, workspace: str) -> list[PlanOp]:
    """The demo plan's first revision: inventory a workspace, then report on it.

    ``entry`` forks to two reads (a diamond forked at the entry), a join waits for both, a
    branch decides whether there is enough to report, and the report is written.
    """
    count_key = frame_key("count_orders", BranchId(segments=(EdgeSegment(edge="e_orders"),)))
    return [
        author.entry(
            input=[StringField(path="workspace"), NumberField(path="min_orders")], phase="input"
        ),
        author.call(
            "scan_files",
            tool="files.list",
            args={"dir": ref("entry", path="workspace")},
            output=[NumberField(path="count"), StringField(path="names")],
            authority=[claim("files", workspace, "list")],
            declassifies=["count", "names"],
            phase="gather",
            replay_safe=True,
            on_indeterminate="retry",
        ),
        author.call(
            "count_orders",
            tool="sqlite.query",
            args={"db": f"{workspace}/orders.sqlite3", "sql": "select count(*) as count from orders"},
            output=[NumberField(path="count")],
            authority=[claim("sqlite", "orders", "read")],
            phase="gather",
            replay_safe=True,
            on_indeterminate="retry",
        ),
        author.join("gathered", phase="gather"),
        author.branch(
            "enough_orders",
            predicate={"path": f"{count_key}.count", "op": "gte", "value": 1},
            phase="decide",
        ),
        author.call(
            "write_report",
            tool="files.write",
            args={
                "path": f"{workspace}/report.txt",
                "text": ref("scan_files", path="names"),
            },
            output=[StringField(path="path")],
            authority=[claim("files", f"{workspace}/report.txt", "create")],
            replay_safe=False,
            on_indeterminate="halt",
            phase="report",
        ),
        author.edge("entry", "scan_files", edge_id="e_files"),
        author.edge("entry", "count_orders", edge_id="e_orders"),
        author.edge("scan_files", "gathered", edge_id="e_files_done"),
        author.edge("count_orders", "gathered", edge_id="e_orders_done"),
        author.edge("gathered", "enough_orders", edge_id="e_decide"),
        author.edge("enough_orders", "write_report", "match", edge_id="e_report"),
    ]


def edit_demo_plan(author: PlanAuthor, workspace: str) -> list[PlanOp]:
    """A second author's edit: a fallback note when the report cannot be written."""
    return [
        author.call(
            "note_failure",
            tool="files.write",
            args={"path": f"{workspace}/report-failed.txt", "text": "the report was not written"},
            output=[StringField(path="path")],
            authority=[claim("files", f"{workspace}/report-failed.txt", "create")],
            replay_safe=True,
            on_indeterminate="retry",
            phase="report",
        ),
        author.edge("write_report", "note_failure", "error", edge_id="e_report_failed"),
        author.set_field("count_orders", "args.sql", "select count(*) as count from orders where 1"),
    ]


def _section(title: str) -> None:
    print(f"\n== {title} " + "=" * max(0, 74 - len(title)))


def _demo(args: argparse.Namespace) -> int:
    data = Path(args.data).resolve()
    data.mkdir(parents=True, exist_ok=True)
    workspace = str(data / "workspace")
    plan_id = f"demo-{secrets.token_hex(3)}"

    async def go() -> int:
        from orchestration.raw import raw_diff
        from orchestration.render import render_diff, render_plan

        store = open_store(str(data / "plans.sqlite3"))
        try:
            _section(f"1. author plan {plan_id} (actor: planner)")
            await store.create_plan(plan_id, label="demo: workspace inventory report")
            planner = PlanAuthor("planner")
            first = await store.append_ops(plan_id, build_demo_plan(planner, workspace))
            print(f"appended {first.revision} ops; digest {first.digest}")

            _section("2. the folded plan, as an operator reads it")
            view, issues = await store.fold(plan_id)
            print(render_plan(view, audience="operator"))

            _section("3. a second author edits it (actor: reviewer)")
            reviewer = PlanAuthor("reviewer").observe(await store.read_ops(plan_id))
            second = await store.append_ops(
                plan_id, edit_demo_plan(reviewer, workspace), expected_revision=first.revision
            )
            print(f"revision {first.revision} -> {second.revision}; digest {second.digest}")

            _section(f"4. what changed between revisions {first.revision} and {second.revision}")
            diff = await raw_diff(store, plan_id, first.revision, second.revision)
            print(render_diff(diff))
            _section("done")
            print(f"plan store: {data / 'plans.sqlite3'}   plan id: {plan_id}")
            print(f"inspect it: orch plan show {plan_id} --store {data / 'plans.sqlite3'}")
            return 0
        finally:
            await store.close()

    return run_async(go)
