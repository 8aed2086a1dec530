"""``orch replay-check``: replay a sample of real ``PlanRun`` histories on this code.

The release gate for a candidate build (see :mod:`workers.replay_check`): run it with the
candidate's code against the live namespace (and the workers' plan store) before rolling the
build out. It prints one line per execution and exits 0 only when every one replayed; a
nondeterministic replay, any other replay failure, or an execution whose plan the store cannot
give exits 2 with one ``error[...]`` line. An empty sample is refused too (a gate that checked
nothing must not pass silently) unless ``--allow-empty`` says a namespace with no runs is fine.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from orchestration.cli.common import (
    CliError,
    add_json_flag,
    add_store_flag,
    emit,
    open_store,
    run_async,
)
from orchestration.cli.temporal import add_temporal_flags, connect_client

__all__ = ["register"]

DEFAULT_QUERY = "WorkflowType='PlanRun'"


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def register(commands: Any) -> None:
    """Add the ``replay-check`` command."""
    cmd = commands.add_parser(
        "replay-check",
        help="replay real PlanRun histories on this code (a release gate)",
        description="Fetch up to --limit executions matching --query from a live namespace and "
        "replay each history on this process's workflow code, as a worker of this build would. "
        "Exit 0 only if every one replays; 2 if any is nondeterministic on this code, fails to "
        "replay, or needs a plan the store lacks.",
    )
    cmd.add_argument(
        "--query",
        default=DEFAULT_QUERY,
        help="visibility query selecting the executions (default %(default)s; for example "
        "\"PlanBuild='orchestration.0.1.0-3f2a9c1b7d4e'\" for one build's runs)",
    )
    cmd.add_argument(
        "--limit",
        type=_positive,
        default=50,
        help="replay at most this many executions, newest first (default %(default)s)",
    )
    cmd.add_argument(
        "--allow-empty",
        action="store_true",
        help="exit 0 when no execution matches (a namespace with no runs yet)",
    )
    add_temporal_flags(cmd, task_queue=False)
    add_store_flag(cmd)
    add_json_flag(cmd)
    cmd.set_defaults(handler=_replay_check)


def _replay_check(args: argparse.Namespace) -> int:
    from temporalio.service import RPCError, RPCStatusCode

    from workers.client import ReplayOutcome, check_histories

    async def go() -> list[ReplayOutcome]:
        client = await connect_client(args.address, args.namespace)
        store = open_store(args.store)
        outcomes: list[ReplayOutcome] = []
        try:
            async for outcome in check_histories(
                client, query=args.query, limit=args.limit, store=store
            ):
                outcomes.append(outcome)
                if not args.json:
                    print(_line(outcome), flush=True)
        except RPCError as exc:
            if exc.status == RPCStatusCode.INVALID_ARGUMENT:
                raise CliError(
                    "bad_query",
                    f"Temporal refused the query {args.query!r} ({exc.message}) — fix --query "
                    "(a visibility query over registered search attributes, e.g. "
                    f"{DEFAULT_QUERY!r})",
                ) from exc
            raise
        finally:
            await store.close()
        return outcomes

    outcomes = run_async(go)
    failed = [o for o in outcomes if o.status != "ok"]
    summary = {
        "ok": not failed and (bool(outcomes) or args.allow_empty),
        "checked": len(outcomes),
        "results": [
            {
                "workflowId": o.workflow_id,
                "runId": o.run_id,
                "status": o.status,
                "build": o.build,
                "detail": o.detail,
            }
            for o in outcomes
        ],
    }
    if args.json:
        emit(args, summary, lambda: "")
    elif outcomes:
        print(f"{len(outcomes)} replayed: {len(outcomes) - len(failed)} ok, {len(failed)} not")
    if not outcomes:
        if args.allow_empty:
            print(f"no execution matches {args.query!r}", file=sys.stderr)
            return 0
        raise CliError(
            "replay_no_histories",
            f"no execution matches {args.query!r} on {args.address} (namespace "
            f"{args.namespace}), so nothing was checked — check --query, --address and "
            "--namespace, or pass --allow-empty for a namespace with no runs yet",
        )
    if failed:
        kinds = sorted({o.status for o in failed})
        raise CliError(
            "replay_failed",
            f"{len(failed)} of {len(outcomes)} histories do not replay on this code "
            f"({', '.join(kinds)}; see the lines above) — do not run these executions on this "
            "build: roll it out only as a new worker deployment version (pinned runs stay on "
            "their build), or guard the change with workflow.patched; for plan_missing, pass "
            "the workers' plan store with --store",
        )
    return 0


def _line(outcome: Any) -> str:
    """``status  workflow id  run id  build  [— detail]``."""
    build = outcome.build or "unversioned"
    detail = f"  — {outcome.detail}" if outcome.detail else ""
    return (
        f"{outcome.status:<16} {outcome.workflow_id}  {outcome.run_id}  {build}{detail}"
    )
