"""``orch run``: start a plan's one run, watch it, read it, stop it, answer a halted call.

These commands talk to a Temporal server (``--address``, env ``TEMPORAL_ADDRESS``) on which a
worker polls ``--task-queue`` (env ``ORCH_TASK_QUEUE``, default ``plans``): ``orch dev`` starts
both on this machine.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from orchestration.cli.common import (
    CliError,
    add_json_flag,
    add_store_flag,
    emit,
    open_store,
    run_async,
)
from orchestration.cli.progress import describe_event, describe_projection, follow_run

__all__ = ["add_temporal_flags", "register"]

T = TypeVar("T")


def add_temporal_flags(parser: argparse.ArgumentParser) -> None:
    """``--address``, ``--namespace``, ``--task-queue`` (with environment defaults)."""
    parser.add_argument(
        "--address",
        default=os.environ.get("TEMPORAL_ADDRESS", "127.0.0.1:7233"),
        help="Temporal frontend (env TEMPORAL_ADDRESS; default %(default)s)",
    )
    parser.add_argument("--namespace", default=os.environ.get("TEMPORAL_NAMESPACE", "default"))
    parser.add_argument(
        "--task-queue",
        default=os.environ.get("ORCH_TASK_QUEUE", "plans"),
        help="task queue the workers poll (env ORCH_TASK_QUEUE; default %(default)s)",
    )


def register(commands: Any) -> None:
    """Add the ``run`` group."""
    run = commands.add_parser("run", help="start, watch and operate a plan's one run")
    sub = run.add_subparsers(dest="run_command", required=True, metavar="COMMAND")

    start = sub.add_parser("start", help="start an approved plan's one run")
    start.add_argument("plan_id")
    start.add_argument("--input", default="{}", help="the run input as a JSON object")
    start.add_argument("--input-file", help="read the run input from a JSON file")
    start.add_argument("--watch", action="store_true", help="follow progress until it settles")
    start.add_argument("--resume", metavar="RUN_ID", help="attach to the plan's existing run")

    resume = sub.add_parser(
        "resume",
        help="resume the plan's run: the frames that never ran run (a completed run cannot be)",
    )
    resume.add_argument("plan_id")
    resume.add_argument("--watch", action="store_true", help="follow progress until it settles")

    start_input = sub.add_parser(
        "input",
        help="print the exact PlanRun input to start the plan's run from any Temporal client",
    )
    start_input.add_argument("plan_id")
    start_input.add_argument("--input", default="{}", help="the run input as a JSON object")
    start_input.add_argument("--input-file", help="read the run input from a JSON file")
    start_input.add_argument(
        "--inline",
        action="store_true",
        help="embed the plan itself (default: by id and digest; the workers load it from "
        "their plan store)",
    )

    watch = sub.add_parser("watch", help="follow a run's progress until it settles")
    watch.add_argument("plan_id")

    show = sub.add_parser("show", help="the run's projection (folded from its whole log)")
    show.add_argument("plan_id")

    log = sub.add_parser("log", help="the run's event log")
    log.add_argument("plan_id")

    stop = sub.add_parser("stop", help="stop gracefully (calls in flight settle)")
    stop.add_argument("plan_id")
    stop.add_argument("--cancel", action="store_true", help="cancel instead (turn_abort)")

    resolve = sub.add_parser("resolve", help="answer a halted indeterminate call")
    resolve.add_argument("plan_id")
    resolve.add_argument("frame_key", help="the halted frame (see `orch run show`)")
    resolve.add_argument("decision", choices=["retry", "skip", "abort"])
    resolve.add_argument("--by", default=os.environ.get("USER", "operator"))

    for parser, handler in (
        (start, _start),
        (resume, _resume),
        (start_input, _start_input),
        (watch, _watch),
        (show, _show),
        (log, _log),
        (stop, _stop),
        (resolve, _resolve),
    ):
        add_store_flag(parser)
        add_temporal_flags(parser)
        add_json_flag(parser)
        parser.set_defaults(handler=handler)


async def _runs(args: argparse.Namespace) -> Any:
    from workers.runs import TemporalRuns
    from workers.worker import connect

    try:
        client = await connect(args.address, args.namespace)
    except Exception as exc:  # noqa: BLE001 - any connection failure has the same fix
        raise CliError(
            "temporal_unreachable",
            f"cannot reach Temporal at {args.address} ({exc}); start one with `orch dev` or "
            "pass --address",
        ) from exc
    return TemporalRuns(client, open_store(args.store), task_queue=args.task_queue)


def _with_runs(args: argparse.Namespace, work: Callable[[Any], Awaitable[T]]) -> T:
    """Connect to Temporal and the store, run ``work(runs)`` to completion, close the store."""

    async def runner() -> T:
        runs = await _runs(args)
        try:
            return await work(runs)
        finally:
            await runs.store.close()

    return run_async(runner)


def _input(args: argparse.Namespace) -> dict[str, Any]:
    text = Path(args.input_file).read_text() if args.input_file else args.input
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError("bad_input", f"the run input is not JSON ({exc}); pass an object") from exc
    if not isinstance(value, dict):
        raise CliError("bad_input", "the run input must be a JSON object of the entry's fields")
    from orchestration.encoding import from_json_value

    return {k: from_json_value(v, "none", k) for k, v in value.items()}


def _start(args: argparse.Namespace) -> int:
    async def go(runs: Any) -> Any:
        handle = await runs.start(args.plan_id, _input(args), resume_run_id=args.resume)
        if args.watch:
            await follow_run(runs, args.plan_id, print)
            return await runs.projection(args.plan_id)
        return {"runId": handle.id, "planId": args.plan_id}

    result = _with_runs(args, go)
    if args.watch:
        emit(args, result, lambda: describe_projection(result))
    else:
        emit(
            args,
            result,
            lambda: f"started {result['runId']}; follow it: orch run watch {args.plan_id}",
        )
    return 0


def _resume(args: argparse.Namespace) -> int:
    from orchestration.execution import workflow_id_for

    async def go(runs: Any) -> Any:
        handle = await runs.start(args.plan_id, {}, resume_run_id=workflow_id_for(args.plan_id))
        if args.watch:
            await follow_run(runs, args.plan_id, print)
            return await runs.projection(args.plan_id)
        return {"runId": handle.id, "planId": args.plan_id, "resumed": True}

    result = _with_runs(args, go)
    if args.watch:
        emit(args, result, lambda: describe_projection(result))
    else:
        emit(
            args,
            result,
            lambda: f"resumed {result['runId']}; follow it: orch run watch {args.plan_id}",
        )
    return 0


def _start_input(args: argparse.Namespace) -> int:
    from orchestration.cli.common import with_store
    from orchestration.execution import PlanRef, PlanRunInput
    from orchestration.run.admission import admit

    run_input = _input(args)

    async def go(store: Any) -> PlanRunInput:
        from orchestration.execution import workflow_id_for

        admitted = await admit(
            store, args.plan_id, run_input, run_id=workflow_id_for(args.plan_id)
        )
        view = admitted.view
        return PlanRunInput(
            plan=view if args.inline else None,
            plan_ref=None if args.inline else PlanRef(plan_id=view.plan_id, digest=view.digest),
            approval=admitted.approval,
            run_input=admitted.run_input,
        )

    request = with_store(args, go)
    print(request.model_dump_json(by_alias=True))
    return 0


def _watch(args: argparse.Namespace) -> int:
    async def go(runs: Any) -> Any:
        await follow_run(runs, args.plan_id, print)
        return await runs.projection(args.plan_id)

    projection = _with_runs(args, go)
    emit(args, projection, lambda: describe_projection(projection))
    return 0


def _show(args: argparse.Namespace) -> int:
    async def go(runs: Any) -> Any:
        return await runs.projection(args.plan_id)

    projection = _with_runs(args, go)
    emit(args, projection, lambda: describe_projection(projection))
    return 0


def _log(args: argparse.Namespace) -> int:
    async def go(runs: Any) -> Any:
        return await runs.read_events(args.plan_id)

    events = _with_runs(args, go)
    emit(args, events, lambda: "\n".join(line for e in events if (line := describe_event(e))))
    return 0


def _stop(args: argparse.Namespace) -> int:
    async def go(runs: Any) -> None:
        if args.cancel:
            await runs.cancel(args.plan_id)
        else:
            await runs.stop(args.plan_id)

    _with_runs(args, go)
    verb = "cancellation" if args.cancel else "stop"
    emit(args, {"requested": verb}, lambda: f"{verb} requested; calls in flight will settle first")
    return 0


def _resolve(args: argparse.Namespace) -> int:
    async def go(runs: Any) -> str:
        answer: str = await runs.resolve(args.plan_id, args.frame_key, args.decision, args.by)
        return answer

    answer = _with_runs(args, go)
    emit(args, {"answer": answer}, lambda: answer)
    return 0
