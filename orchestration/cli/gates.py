"""``orch run gates``, ``decide`` and ``answer``: what waits for a person, and the decision.

``gates`` reads the plan store alone (no Temporal, no worker): a run mirrors its whole log
there before it waits for a person, so the store shows every open request with what it asks
(the resolved arguments and their digest before a call, the held result, the prompt and form
of an input request, a model's questions). Without a plan it looks across every running run.

``decide`` (approve or reject, with ``--feedback``; before a call, ``--args`` changes the
arguments the plan lets the approver edit) and ``answer`` (an input request's response, or
``{question id: answer}`` for a model's questions) send the decision to the run as a Temporal
update. A refused decision (not open, already decided, a response that does not fit) is an
``error[<code>]`` line and exit status 2, and never reaches the run; a decision that no longer
applies (its request timed out or the run moved on) is answered ``skipped`` with the reason,
exit status 0. The response is never printed back. The same decision sent again for the
same request (``--request N``) is answered from the first (the update id is derived from the
decision and its request); sent again without ``--request`` once its request is decided, it
is refused (``gate_already_decided``, or ``gate_not_open`` when the frame is named by its
node). Either way a retried command cannot decide twice.

``answer --json RESPONSE`` takes the response as JSON text (and answers in JSON); ``--file``
reads it from a file (``-``: stdin). ``--json`` alone, as on every command, prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from orchestration.cli.common import (
    CliError,
    add_json_flag,
    add_store_flag,
    emit,
    load_json_text,
    open_store,
    read_text_file,
    run_async,
    with_store,
)
from orchestration.cli.temporal import add_temporal_flags, connect_client

__all__ = ["register_gates"]


def register_gates(sub: Any, handlers: list[tuple[argparse.ArgumentParser, Any]]) -> None:
    """Add ``gates``, ``decide`` and ``answer`` to the ``run`` group.

    ``decide`` and ``answer`` are appended to ``handlers`` so they get the group's store,
    Temporal and (for ``decide``) JSON flags; ``gates`` needs no Temporal and is wired here.
    """
    gates = sub.add_parser(
        "gates",
        help="what waits for a person: every open gate request, with what it asks",
        description="List the open gate requests of a plan's run (or of every running run): "
        "the arguments a call will send with their digest, a held result, an input request's "
        "prompt and form, a model's questions; and the command that answers each. Reads the "
        "plan store; needs no Temporal server.",
    )
    gates.add_argument("plan_id", nargs="?", help="the plan (default: every running run)")
    add_store_flag(gates)
    add_json_flag(gates)
    gates.set_defaults(handler=_gates)

    decide = sub.add_parser(
        "decide",
        help="approve or reject a gate request (an approval, or decline an input request)",
        description="Approve or reject the open request of a frame at a gate. Exit 0 when it "
        "was applied or no longer applies (then it says why); 2 when it was refused.",
    )
    decide.add_argument("plan_id")
    decide.add_argument("frame", help="the waiting frame's key, or its node id when only one waits")
    decide.add_argument("decision", choices=["approve", "reject"])
    decide.add_argument(
        "--feedback", help="why (recorded with the decision; a rejection's message)"
    )
    decide.add_argument(
        "--args",
        metavar="JSON",
        help="before a call: a JSON object of the arguments to change (only those the plan "
        "lets the approver edit); the call runs with them",
    )
    decide.add_argument("--args-file", metavar="PATH", help="read --args from a file")
    decide.add_argument(
        "--digest",
        help="the digest of the arguments you were shown (`orch run gates`); refused if the "
        "waiting arguments differ",
    )
    decide.add_argument("--request", type=int, help="the request number (default: the open one)")
    _by(decide)
    handlers.append((decide, _decide))

    answer = sub.add_parser(
        "answer",
        help="answer an input request or a model's questions",
        description="Answer the open input request (or questions) of a frame. The response is "
        "checked against the request's schema and never printed. Exit 0 when it was applied or "
        "no longer applies; 2 when it was refused.",
    )
    answer.add_argument("plan_id")
    answer.add_argument("frame", help="the waiting frame's key, or its node id when only one waits")
    answer.add_argument(
        "--json",
        nargs="?",
        const=True,
        default=False,
        metavar="RESPONSE",
        help="the response as JSON text (and answer in JSON); alone: print JSON",
    )
    answer.add_argument("--file", help="read the response (JSON) from a file; - for stdin")
    answer.add_argument("--request", type=int, help="the request number (default: the open one)")
    _by(answer)
    add_store_flag(answer)
    add_temporal_flags(answer)
    answer.set_defaults(handler=_answer)


def _by(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--by",
        default=os.environ.get("USER", "operator"),
        help="who decides, recorded with the decision (default: $USER, here %(default)s)",
    )


# -- gates ---------------------------------------------------------------------------------------


def _gates(args: argparse.Namespace) -> int:
    from orchestration.run.expand import project_log

    async def go(store: Any) -> list[dict[str, Any]]:
        if args.plan_id:
            plans = [args.plan_id]
        else:
            runs = await store.list_runs(outcome="running", limit=1000)
            plans = [run.plan_id for run in runs]
        rows: list[dict[str, Any]] = []
        for plan_id in plans:
            log = await store.read_run_log(plan_id)
            if not log:
                continue
            projection = project_log(log)
            if projection.outcome != "running":
                continue
            for key, gates in projection.gates.items():
                if gates.current is not None:
                    rows.append(
                        {
                            "planId": plan_id,
                            "frameKey": key,
                            "nodeId": gates.node_id,
                            "status": gates.status,
                            "request": gates.current,
                        }
                    )
        return rows

    rows = with_store(args, go)
    emit(args, {"gates": rows}, lambda: _gates_text(rows))
    return 0


def _gates_text(rows: list[dict[str, Any]]) -> str:
    from orchestration.review.gate_text import describe_schema

    if not rows:
        return "(nothing waits for a person)"
    lines: list[str] = []
    for row in rows:
        request = row["request"]
        plan, key = row["planId"], row["frameKey"]
        what = {
            "arguments": "approval of the arguments before the call",
            "result": "approval of its result",
            "input": "input",
            "questions": "answers to the model's questions",
        }[request.gate]
        due = f", times out {request.deadline}" if request.deadline else ""
        lines.append(
            f"{plan}  {key}  ({row['nodeId']}) waits for {what} since {request.requested_at}"
            f"{due} [request {request.request}]"
        )
        if request.summary:
            lines.append(f"  asks: {request.summary}")
        if request.args is not None:
            lines.append(f"  arguments (digest {request.digest}): {_json(request.args)}")
            if request.editable:
                lines.append(f"  editable: {', '.join(request.editable)}")
        if request.items is not None:
            lines.append(f"  result: {_json([item.json_ for item in request.items])}")
        if request.prompt is not None:
            lines.append(f"  prompt: {request.prompt}")
        if request.schema_ is not None:
            lines.append(f"  asks for: {describe_schema(request.schema_)}")
        for question in request.questions or ():
            lines.append(
                f"  question {question.id}: {question.prompt} ({describe_schema(question.schema_)})"
            )
        if request.gate in ("input", "questions"):
            lines.append(f"  answer: orch run answer {plan} {key} --json '<response>'")
        else:
            lines.append(f"  decide: orch run decide {plan} {key} approve|reject")
    return "\n".join(lines)


def _json(value: Any) -> str:
    from orchestration.plan.encoding import to_json_value

    return json.dumps(to_json_value(value), ensure_ascii=False, sort_keys=True)


# -- decide and answer ---------------------------------------------------------------------------


def _with_open_run(args: argparse.Namespace, work: Any) -> Any:
    """Connect to Temporal and the store; refuse a closed run; run ``work(runs)``."""

    async def runner() -> Any:
        from temporalio.client import WorkflowExecutionStatus

        from orchestration.run.messages import workflow_id_for
        from workers.client import TemporalRuns

        client = await connect_client(args.address, args.namespace)
        runs = TemporalRuns(client, open_store(args.store), task_queue=args.task_queue)
        try:
            handle = client.get_workflow_handle(workflow_id_for(args.plan_id))
            if (await handle.describe()).status != WorkflowExecutionStatus.RUNNING:
                raise CliError(
                    "run_closed",
                    f"the run of plan {args.plan_id} has already ended, so its gates can no "
                    f"longer be decided — read how it ended with `orch run show {args.plan_id}`",
                )
            return await work(runs)
        finally:
            await runs.store.close()

    return run_async(runner)


async def _frame_key(runs: Any, plan_id: str, frame: str) -> str:
    """The frame key ``frame`` names: itself, or the one waiting frame of that node."""
    if ":" in frame:
        return frame
    waiting = await runs.waiting(plan_id)
    keys = [gate.frame_key for gate in waiting if gate.node_id == frame]
    if len(keys) == 1:
        return str(keys[0])
    open_keys = ", ".join(g.frame_key for g in waiting) or "none"
    raise CliError(
        "gate_not_open",
        f"node {frame!r} has {'no' if not keys else 'more than one'} frame waiting at a gate — "
        f"name the frame key (waiting: {open_keys}; see `orch run gates {plan_id}`)",
    )


def _object(text: str, where: str) -> dict[str, Any]:
    from orchestration.plan.encoding import from_json_value

    value = load_json_text(text, where, "bad_input")
    if not isinstance(value, dict):
        raise CliError("bad_input", f"{where} must be a JSON object of argument names to values")
    try:
        return {k: from_json_value(v, "none", k) for k, v in value.items()}
    except ValueError as exc:
        raise CliError("bad_input", f"{where} holds a value it cannot use ({exc})") from exc


def _decide(args: argparse.Namespace) -> int:
    from orchestration.run.messages import GateApproval

    change: dict[str, Any] | None = None
    if args.args is not None and args.args_file is not None:
        raise CliError("bad_input", "give the arguments once — --args or --args-file, not both")
    if args.args_file is not None:
        change = _object(read_text_file(args.args_file, "the arguments file"), args.args_file)
    elif args.args is not None:
        change = _object(args.args, "--args")
    if change is not None and args.decision == "reject":
        raise CliError("bad_input", "a rejection changes no arguments — drop --args")

    async def go(runs: Any) -> Any:
        key = await _frame_key(runs, args.plan_id, args.frame)
        decision = GateApproval(
            frame_key=key,
            request=args.request,
            decision="approved" if args.decision == "approve" else "rejected",
            decided_by=args.by,
            feedback=args.feedback,
            args=change,
            digest=args.digest,
        )
        return await runs.decide(args.plan_id, decision)

    ack = _with_open_run(args, go)
    emit(args, ack, lambda: _ack_text(ack))
    return 0


def _answer(args: argparse.Namespace) -> int:
    from orchestration.plan.encoding import from_json_value
    from orchestration.run.messages import GateAnswer

    given = args.json if isinstance(args.json, str) else None
    if (given is None) == (args.file is None):
        raise CliError(
            "bad_input",
            "give the response once — --json RESPONSE (JSON text) or --file PATH, not both "
            "and not neither",
        )
    text = given if given is not None else read_text_file(args.file, "the response file")
    where = "--json" if given is not None else args.file
    raw = load_json_text(text, f"the response ({where})", "bad_input")
    try:
        response = from_json_value(raw, "none", "response")
    except ValueError as exc:
        raise CliError("bad_input", f"the response holds a value it cannot use ({exc})") from exc

    async def go(runs: Any) -> Any:
        key = await _frame_key(runs, args.plan_id, args.frame)
        answer = GateAnswer(
            frame_key=key, request=args.request, response=response, provided_by=args.by
        )
        return await runs.decide(args.plan_id, answer)

    ack = _with_open_run(args, go)
    emit(args, ack, lambda: _ack_text(ack))
    return 0


def _ack_text(ack: Any) -> str:
    if ack.applied:
        return f"{ack.outcome} request {ack.request} of {ack.frame_key}"
    return f"skipped: {ack.reason} (nothing was changed)"
