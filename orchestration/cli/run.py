"""``orch run``: start a plan's one run, watch it, read it, stop it, answer a halted call.

The gates where a run waits for a person are listed and answered by ``run gates``, ``run
decide`` and ``run answer`` (:mod:`orchestration.cli.gates`).

These commands talk to a Temporal server (``--address``, env ``TEMPORAL_ADDRESS``) on which a
worker polls ``--task-queue`` (env ``ORCH_TASK_QUEUE``, default ``plans``): ``orch dev`` starts
both on this machine.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from orchestration.cli.common import (
    CliError,
    add_json_flag,
    add_store_flag,
    emit,
    load_json_text,
    open_store,
    read_text_file,
    run_async,
)
from orchestration.cli.failures import outcome_exit
from orchestration.cli.gates import register_gates
from orchestration.cli.progress import describe_events, describe_run, follow_run
from orchestration.cli.run_list import register_list
from orchestration.cli.temporal import add_temporal_flags, connect_client

__all__ = ["add_temporal_flags", "register"]

T = TypeVar("T")


def register(commands: Any) -> None:
    """Add the ``run`` group."""
    run = commands.add_parser("run", help="start, watch and operate a plan's one run")
    sub = run.add_subparsers(dest="run_command", required=True, metavar="COMMAND")

    start = sub.add_parser(
        "start",
        help="start an approved plan's one run",
        description="Start an approved plan's one run. With --watch, follow it and exit 0 "
        "only if it completed (4 halted, 5 aborted, 6 cancelled; see `orch --help`).",
    )
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

    watch = sub.add_parser(
        "watch",
        help="follow a run's progress until it settles",
        description="Follow a run until it settles; exit 0 only if it completed (4 halted, "
        "5 aborted, 6 cancelled, 7 closed without settling; see `orch --help`).",
    )
    watch.add_argument("plan_id")

    show = sub.add_parser("show", help="the run's projection (folded from its whole log)")
    show.add_argument("plan_id")
    show.add_argument(
        "--render",
        action="store_true",
        help="print the plan as executed: each node's status, the edges taken with their "
        "evidence, and what each reference read",
    )
    show.add_argument(
        "--lifecycle",
        action="store_true",
        help="also list each frame's steps with their times: entered, each attempt dispatched "
        "and ended, waiting, settled",
    )
    show.add_argument(
        "--audience",
        choices=["operator", "model"],
        default="operator",
        help="with --render: operator prose (default) or the model's wire-form references",
    )

    log = sub.add_parser("log", help="the run's event log")
    log.add_argument("plan_id")

    stop = sub.add_parser("stop", help="stop gracefully (calls in flight settle)")
    stop.add_argument("plan_id")
    stop.add_argument("--cancel", action="store_true", help="cancel instead (turn_abort)")

    resolve = sub.add_parser("resolve", help="answer a halted indeterminate call")
    resolve.add_argument("plan_id")
    resolve.add_argument("frame_key", help="the halted frame (see `orch run show`)")
    resolve.add_argument("decision", choices=["retry", "skip", "abort"])
    resolve.add_argument(
        "--by",
        default=os.environ.get("USER", "operator"),
        help="who decides, recorded with the decision in the run's history (default: $USER, "
        "here %(default)s)",
    )

    graph = sub.add_parser(
        "graph",
        help="draw the plan with each node coloured by its status in the run",
        description="Draw the plan (mermaid, dot or svg) with each node coloured by its "
        "status in the run and the edges the run took drawn bold.",
    )
    graph.add_argument("plan_id")
    graph.add_argument("--format", choices=["mermaid", "dot", "svg"], default="mermaid")
    graph.add_argument("--output", "-o", metavar="PATH", help="write to PATH instead of stdout")

    register_list(sub)
    handlers: list[tuple[argparse.ArgumentParser, Any]] = [
        (start, _start),
        (resume, _resume),
        (start_input, _start_input),
        (watch, _watch),
        (show, _show),
        (log, _log),
        (stop, _stop),
        (resolve, _resolve),
        (graph, _graph),
    ]
    register_gates(sub, handlers)

    for parser, handler in handlers:
        add_store_flag(parser)
        add_temporal_flags(parser)
        add_json_flag(parser)
        parser.set_defaults(handler=handler)


async def _runs(args: argparse.Namespace) -> Any:
    from workers.client import TemporalRuns

    client = await connect_client(args.address, args.namespace)
    return TemporalRuns(client, open_store(args.store), task_queue=args.task_queue)


def _with_runs(
    args: argparse.Namespace, work: Callable[[Any], Awaitable[T]], *, reads: bool = False
) -> T:
    """Connect to Temporal and the store, run ``work(runs)`` to completion, close the store.

    With ``reads``, first check that this client can decode the run's payloads (see
    :func:`_check_readable`).
    """

    async def runner() -> T:
        runs = await _runs(args)
        try:
            if reads:
                await _check_readable(runs, args.plan_id)
            return await work(runs)
        finally:
            await runs.store.close()

    return run_async(runner)


async def _check_readable(runs: Any, plan_id: str) -> None:
    """Decode the run's first payload, so a missing or wrong codec key is refused by name.

    A closed run's log is rebuilt by replaying its history; a payload the codec cannot open
    would fail inside the replayer as an opaque workflow-task failure. One payload decoded
    here raises the codec's own error (``codec_key``, ``codec_decrypt_failed``) instead.
    """
    from orchestration.run.messages import workflow_id_for

    codec = runs.client.data_converter.payload_codec
    handle = runs.client.get_workflow_handle(workflow_id_for(plan_id))
    async for event in handle.fetch_history_events(page_size=1):
        payloads = list(event.workflow_execution_started_event_attributes.input.payloads)
        if codec is not None and payloads:
            await codec.decode(payloads)
        return


def _input(args: argparse.Namespace) -> dict[str, Any]:
    if args.input_file:
        text, where = read_text_file(args.input_file, "the run input file"), args.input_file
    else:
        text, where = args.input, "--input"
    value = load_json_text(text, f"the run input ({where})", "bad_input")
    if not isinstance(value, dict):
        raise CliError("bad_input", "the run input must be a JSON object of the entry's fields")
    from orchestration.plan.encoding import from_json_value

    try:
        return {k: from_json_value(v, "none", k) for k, v in value.items()}
    except ValueError as exc:
        raise CliError("bad_input", f"the run input holds a value it cannot use ({exc})") from exc


def _progress(args: argparse.Namespace) -> Callable[[str], None]:
    """Where live progress lines go: stdout, or stderr when stdout carries the JSON."""
    stream = sys.stderr if args.json else sys.stdout
    return lambda line: print(line, file=stream, flush=True)


def _start(args: argparse.Namespace) -> int:
    run_input = _input(args)

    async def go(runs: Any) -> Any:
        handle = await runs.start(args.plan_id, run_input, resume_run_id=args.resume)
        if args.watch:
            return await _read(runs, args.plan_id, _progress(args))
        return {"runId": handle.id, "planId": args.plan_id}

    result = _with_runs(args, go)
    if args.watch:
        projection, events, nodes = result
        emit(args, projection, lambda: describe_run(projection, events, nodes))
        return outcome_exit(projection, args.plan_id)
    emit(
        args,
        result,
        lambda: f"started {result['runId']}; follow it: orch run watch {args.plan_id}",
    )
    return 0


def _resume(args: argparse.Namespace) -> int:
    from orchestration.run.messages import workflow_id_for

    async def go(runs: Any) -> Any:
        handle = await runs.start(args.plan_id, {}, resume_run_id=workflow_id_for(args.plan_id))
        if args.watch:
            return await _read(runs, args.plan_id, _progress(args))
        return {"runId": handle.id, "planId": args.plan_id, "resumed": True}

    result = _with_runs(args, go)
    if args.watch:
        projection, events, nodes = result
        emit(args, projection, lambda: describe_run(projection, events, nodes))
        return outcome_exit(projection, args.plan_id)
    else:
        emit(
            args,
            result,
            lambda: f"resumed {result['runId']}; follow it: orch run watch {args.plan_id}",
        )
    return 0


def _start_input(args: argparse.Namespace) -> int:
    from orchestration.cli.common import with_store
    from orchestration.run.admission import admit
    from orchestration.run.messages import PlanRef, PlanRunInput

    run_input = _input(args)

    async def go(store: Any) -> PlanRunInput:
        from orchestration.run.messages import workflow_id_for

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


async def _read(
    runs: Any, plan_id: str, follow: Callable[[str], None] | None = None
) -> tuple[Any, list[Any], list[str]]:
    """The run's projection, its whole log's events and the plan's node ids.

    With ``follow``, the run is followed to its end first, its progress printed there.
    """
    from orchestration.run.fold import fold_run

    if follow is not None:
        events = await follow_run(runs, plan_id, follow)
    else:
        events = await runs.read_events(plan_id)
    view = (await runs.store.fold(plan_id)).view
    return fold_run(events), events, [node.id for node in view.nodes]


def _watch(args: argparse.Namespace) -> int:
    async def go(runs: Any) -> Any:
        return await _read(runs, args.plan_id, _progress(args))

    projection, events, nodes = _with_runs(args, go, reads=True)
    emit(args, projection, lambda: describe_run(projection, events, nodes))
    return outcome_exit(projection, args.plan_id)


def _show(args: argparse.Namespace) -> int:
    from orchestration.run.expand import expand_log
    from orchestration.run.fold import fold_run
    from orchestration.run.log import started_build

    async def go(runs: Any) -> Any:
        log = await runs.read_log(args.plan_id)
        events = expand_log(log)
        projection = fold_run(events)
        if projection.outcome == "running":
            projection = await _with_liveness(runs, args.plan_id, projection)
        view = (await runs.store.fold(args.plan_id)).view
        nodes = [node.id for node in view.nodes]
        if not args.render:
            return projection, events, nodes, None, started_build(log)
        from orchestration.review.render import render_plan

        text = render_plan(view, args.audience, view="as_executed", run=projection)
        return projection, events, nodes, text, started_build(log)

    projection, events, nodes, text, build = _with_runs(args, go, reads=True)
    if text is None and args.lifecycle:
        from orchestration.cli.lifecycle import describe_lifecycles

        payload = {"projection": projection, "lifecycles": lifecycles_of(events)}
        emit(
            args,
            payload,
            lambda: _with_build(describe_run(projection, events, nodes), build)
            + "\n"
            + describe_lifecycles(events),
        )
    elif text is None:
        emit(args, projection, lambda: _with_build(describe_run(projection, events, nodes), build))
    else:
        payload = {"planId": args.plan_id, "projection": projection, "text": text}
        emit(args, payload, lambda: text.rstrip("\n"))
    return 0


async def _with_liveness(runs: Any, plan_id: str, projection: Any) -> Any:
    """An open run's projection with its calls' liveness, read from the server (best effort)."""
    from orchestration.run.liveness import with_liveness

    try:
        observed = await runs.liveness(plan_id)
    except Exception:  # noqa: BLE001 - a closed or unreachable run has no liveness to show
        return projection
    return with_liveness(projection, observed)


def lifecycles_of(events: Any) -> dict[str, Any]:
    """Each frame's steps, for ``--json`` (see :mod:`orchestration.run.history`)."""
    from orchestration.run.history import frame_lifecycles

    return {key: list(steps) for key, steps in frame_lifecycles(events).items()}


def _with_build(summary: str, build: str | None) -> str:
    """The summary with, after its first line, the build the run started on (when recorded).

    The build is not part of the contract's projection, so ``--json`` (the projection) omits it.
    """
    if build is None:
        return summary
    head, _, rest = summary.partition("\n")
    return f"{head}\nbuild: {build}\n{rest}" if rest else f"{head}\nbuild: {build}"


def _log(args: argparse.Namespace) -> int:
    async def go(runs: Any) -> Any:
        return await runs.read_events(args.plan_id)

    events = _with_runs(args, go, reads=True)
    emit(args, events, lambda: "\n".join(describe_events(events)))
    return 0


async def _require_open(runs: Any, plan_id: str) -> None:
    """Refuse to operate a run that has closed: a signal or cancel would change nothing."""
    from temporalio.client import WorkflowExecutionStatus

    from orchestration.run.messages import workflow_id_for

    description = await runs.client.get_workflow_handle(workflow_id_for(plan_id)).describe()
    if description.status != WorkflowExecutionStatus.RUNNING:
        raise CliError(
            "run_closed",
            f"the run of plan {plan_id} has already ended, so it can no longer be stopped or "
            f"answered — read how it ended with `orch run show {plan_id}`",
        )


def _stop(args: argparse.Namespace) -> int:
    async def go(runs: Any) -> None:
        await _require_open(runs, args.plan_id)
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
        await _require_open(runs, args.plan_id)
        answer: str = await runs.resolve(args.plan_id, args.frame_key, args.decision, args.by)
        return answer

    answer = _with_runs(args, go)
    emit(args, {"answer": answer}, lambda: answer)
    return 0


def _graph(args: argparse.Namespace) -> int:
    from orchestration.cli.pictures import draw

    async def go(runs: Any) -> Any:
        projection = await runs.projection(args.plan_id)
        view = (await runs.store.fold(args.plan_id)).view
        return view, projection

    view, projection = _with_runs(args, go, reads=True)
    return draw(args, view, projection)
