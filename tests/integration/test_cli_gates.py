"""`orch run gates`, `decide` and `answer` as subprocesses, against a worker process.

A plan waits at two gates at once (an approval before a call, whose argument the approver may
edit, and an input request with a form): `run gates` lists both with what they ask, `decide`
approves with an edit, `answer` answers the form, and the run completes with what was decided.
The same decision sent again for the same request is answered from the first; sent again
without naming the request, it is refused; a response that does not fit the form is refused.
The response is never printed back or written to the worker's log, and the history replays.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from orchestration.api import create_orchestration
from orchestration.plan.authoring import PlanAuthor, claim, ref
from orchestration.plan.gates import args_digest
from orchestration.review.approval import approval_record
from orchestration.run.fold import fold_run
from orchestration.store import SqlitePlanStore
from orchestration.types import (
    ApprovalGate,
    FormField,
    FormInput,
    StringField,
)
from tests.support.processes import kill, worker_process
from workers.devserver import DevServer

from . import drill_tools
from .harness import orch_cli, replay, unique_plan_id

pytestmark = pytest.mark.asyncio(loop_scope="session")

RESPONSE_NAME = "respondent-q8v3k2"
"""What the person types into the form: it must never be printed or logged."""

FORM = FormInput(
    fields=(
        FormField(id="name", label="Name", type="text", required=True),
        FormField(id="copies", label="Copies", type="number"),
    )
)


async def approved_gated(store: Path, plan_id: str) -> None:
    """entry(s) → send (upper, approved before it runs; ``s`` editable); entry → ask (a form)
    → greet (upper of the form's name): frozen and approved."""
    orch = await create_orchestration(
        store=SqlitePlanStore(str(store)), invocable=drill_tools.TOOLBOX
    )
    counter = itertools.count()
    a = PlanAuthor("tester", new_id=lambda: f"op{next(counter)}")
    read = [claim("text", "*", "read")]
    call = {"output": [StringField(path="value")], "authority": read, "replay_safe": True,
            "on_indeterminate": "retry", "declassifies": ["value"]}
    ops = [
        a.entry(input=[StringField(path="s")]),
        a.call("send", tool="upper", args={"s": ref("entry", path="s")},
               gate=ApprovalGate(on="arguments", summary="Send this text?", editable=("s",)),
               **call),  # type: ignore[arg-type]
        a.input("ask", prompt=["Who receives it?"], schema=FORM),
        a.call("greet", tool="upper", args={"s": ref("ask", path="name")}, **call),  # type: ignore[arg-type]
        a.edge("entry", "send"),
        a.edge("entry", "ask"),
        a.edge("ask", "greet"),
    ]
    await orch.store.create_plan(plan_id)
    assert (await orch.store.append_ops(plan_id, ops)).ok
    frozen = await orch.freeze_plan(plan_id)
    assert frozen.ok, [i.message for i in frozen.issues]
    view = (await orch.store.fold(plan_id)).view
    record = approval_record(view, "op", "2026-01-01T00:00:00Z")
    assert (await orch.approve_plan(plan_id, record)).ok
    await orch.store.close()


async def open_gates(plan_id: str, store: list[str], count: int) -> list[dict[str, Any]]:
    """`orch run gates PLAN --json` until it lists ``count`` open requests."""
    deadline = asyncio.get_running_loop().time() + 60
    while True:
        code, out, err = await orch_cli("run", "gates", plan_id, "--json", *store)
        assert code == 0, err
        rows: list[dict[str, Any]] = json.loads(out)["gates"]
        if len(rows) >= count:
            return rows
        assert asyncio.get_running_loop().time() < deadline, rows
        await asyncio.sleep(0.2)


async def test_gates_listed_decided_and_answered_from_the_command_line(
    dev_server: DevServer, client: Client, task_queue: str, tmp_path: Path
) -> None:
    """Both open requests are listed with what they ask; decide (with an edit) and answer
    complete the run; a repeated decision decides nothing twice; an unfitting response is
    refused with exit 2; the response text appears in no output and no worker log line."""
    path = tmp_path / "plans.sqlite3"
    plan_id = unique_plan_id("gates")
    await approved_gated(path, plan_id)
    store = ["--store", str(path)]
    temporal = ["--address", dev_server.address, "--task-queue", task_queue, *store]
    log = tmp_path / "worker.log"
    worker = worker_process(
        dev_server.address, task_queue, log, path,
        flags=("--log-level", "DEBUG", "--spool-dir", str(tmp_path / "spool")),
    )
    printed: list[str] = []
    try:
        code, out, err = await orch_cli(
            "run", "start", plan_id, "--input", '{"s": "hello there"}', *temporal
        )
        assert code == 0, err

        rows = await open_gates(plan_id, store, 2)
        by_node = {row["nodeId"]: row for row in rows}
        assert set(by_node) == {"send", "ask"}, rows
        send, ask = by_node["send"], by_node["ask"]
        assert send["status"] == "awaiting_approval" and ask["status"] == "awaiting_input"
        assert send["request"]["gate"] == "arguments"
        assert send["request"]["args"] == {"s": "hello there"}
        assert send["request"]["digest"] == args_digest({"s": "hello there"})
        assert send["request"]["editable"] == ["s"]
        assert ask["request"]["gate"] == "input"
        assert ask["request"]["prompt"] == "Who receives it?"
        assert [f["id"] for f in ask["request"]["schema"]["fields"]] == ["name", "copies"]

        code, out, err = await orch_cli("run", "gates", plan_id, *store)
        assert code == 0, err
        assert f'arguments (digest {send["request"]["digest"]}): {{"s": "hello there"}}' in out
        assert f"decide: orch run decide {plan_id} {send['frameKey']} approve|reject" in out
        assert f"answer: orch run answer {plan_id} {ask['frameKey']} --json" in out
        code, out, err = await orch_cli("run", "gates", *store)
        assert code == 0 and plan_id in out, err  # across every running run

        decide = ("run", "decide", plan_id, send["frameKey"], "approve", "--args",
                  '{"s": "edited text"}', "--feedback", "shorter", "--by", "alice")
        code, out, err = await orch_cli(*decide, "--request", "1", *temporal)
        assert code == 0, err
        assert out.strip() == f"approved request 1 of {send['frameKey']}"
        # The same decision again (same request): answered from the first, applied once.
        code, again, err = await orch_cli(*decide, "--request", "1", *temporal)
        assert code == 0 and again == out, err
        # Again without naming the request: that request is decided, so it is refused.
        code, out, err = await orch_cli(*decide, *temporal)
        assert code == 2 and err.startswith("error[gate_already_decided]: "), (out, err)

        unfit = {"name": 7, "copies": RESPONSE_NAME}
        code, out, err = await orch_cli(
            "run", "answer", plan_id, "ask", "--json", json.dumps(unfit), *temporal
        )
        printed += [out, err]
        assert code == 2 and err.startswith("error[invalid_response]: "), (out, err)
        assert json.loads(out)["error"]["code"] == "invalid_response"

        response = {"name": RESPONSE_NAME, "copies": 2}
        code, out, err = await orch_cli(
            "run", "answer", plan_id, "ask", "--json", json.dumps(response), "--by", "bob",
            *temporal,
        )
        printed += [out, err]
        assert code == 0, err
        assert json.loads(out)["outcome"] == "answered"

        code, out, err = await orch_cli("run", "watch", plan_id, *temporal)
        assert code == 0 and "run settled: completed" in out, (out, err)
        code, out, err = await orch_cli("run", "gates", plan_id, *store)
        printed += [out, err]
        assert code == 0 and out.strip() == "(nothing waits for a person)", out
    finally:
        kill(worker)

    for text in printed:
        assert RESPONSE_NAME not in text and RESPONSE_NAME.upper() not in text, text
    # At DEBUG the SDK logs each activity's result, so greet's output (the name in capitals,
    # a tool's result) may be there; the response itself is in no line.
    worker_log = log.read_text()
    assert "worker started" in worker_log
    assert RESPONSE_NAME not in worker_log

    replay_store = SqlitePlanStore(str(path))
    try:
        projection = fold_run(await replay(client, plan_id, replay_store))
    finally:
        await replay_store.close()
    assert projection.outcome == "completed"
    gates = {g.node_id: g for g in projection.gates.values()}
    (approval,) = gates["send"].history
    assert (approval.outcome, approval.decided_by, approval.feedback) == ("approved", "alice",
                                                                         "shorter")
    assert approval.args == {"s": "hello there"} and approval.edited_args == {"s": "edited text"}
    assert approval.ran_digest == args_digest({"s": "edited text"})
    (answered,) = gates["ask"].history
    assert (answered.outcome, answered.decided_by) == ("answered", "bob")
    outputs = {key.split(":", 1)[0]: out.items for key, out in projection.outputs.items()}
    assert outputs["send"][0].json_ == {"value": "EDITED TEXT"}
    assert outputs["greet"][0].json_ == {"value": RESPONSE_NAME.upper()}
