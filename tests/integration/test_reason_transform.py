"""Reason nodes, transforms over artifacts and expression cells, on a real dev server.

Every run is also replayed in the real sandbox (``harness.replay``), so each test proves the
workflow code that dispatched these nodes is deterministic.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import ApplicationError

from orchestration.plan.encoding import NodeRef
from orchestration.predicates import LuaCell
from orchestration.run.messages import PlanRunResult, ReasonResponse, RunSettings
from orchestration.run.routes import BranchId, EdgeSegment, frame_key
from orchestration.store.sqlite import SqlitePlanStore
from orchestration.testing import PlanSketch, ScriptedReasoner
from orchestration.types import (
    EdgeTaken,
    NodeSettled,
    NumberField,
    OutcomeFailed,
    RawPlanView,
    RunEvent,
    StringField,
    TransformStep,
)
from tests.support.hosts import replay_all
from tests.support.processes import kill, worker_process
from workers.devserver import DevServer
from workers.worker import build_worker

from . import artifact_tools, drill_tools
from .harness import replay, start_run, unique_plan_id

ARTIFACT_TOOLS = "tests.integration.artifact_tools:TOOLBOX"

pytestmark = pytest.mark.asyncio(loop_scope="session")

SCORE = json.dumps(
    {
        "type": "object",
        "properties": {"score": {"type": "integer", "minimum": 0, "maximum": 10}},
        "required": ["score"],
        "additionalProperties": False,
    }
)


def step(name: str, **args: Any) -> TransformStep:
    return TransformStep(name=name, args=args or None)


def worker(
    client: Client,
    task_queue: str,
    store: SqlitePlanStore,
    tmp_path: Path,
    reasoner: Any = None,
) -> Any:
    from orchestration.artifacts import FileSpoolStore

    return build_worker(
        client,
        task_queue=task_queue,
        toolbox=artifact_tools.TOOLBOX,
        store=store,
        reasoner=reasoner,
        spool=FileSpoolStore(tmp_path / "spool"),
        evaluators=[LuaCell()],
    )


async def outcome_of(handle: WorkflowHandle[Any, PlanRunResult]) -> PlanRunResult:
    """The run's result: returned when it completed, else carried by the execution's failure.

    A halted or aborted run fails its execution with a non-retryable ``ApplicationError``
    whose type is the outcome and whose first detail is the result.
    """
    try:
        return await asyncio.wait_for(handle.result(), timeout=60)
    except WorkflowFailureError as failure:
        cause = failure.cause
        assert isinstance(cause, ApplicationError) and cause.non_retryable, cause
        result = PlanRunResult.model_validate(cause.details[0])
        assert cause.type == result.outcome, (cause.type, result.outcome)
        return result


async def run(
    client: Client,
    task_queue: str,
    store: SqlitePlanStore,
    view: RawPlanView,
    run_input: dict[str, Any],
    **kw: Any,
) -> tuple[PlanRunResult, list[RunEvent], WorkflowHandle[Any, Any]]:
    handle, stored = await start_run(client, task_queue, store, view, run_input, **kw)
    result = await outcome_of(handle)
    return result, await replay(client, stored.plan_id, store), handle


def settled(events: list[RunEvent], node_id: str) -> NodeSettled:
    return next(e for e in events if isinstance(e, NodeSettled) and e.frame.node_id == node_id)


def edges_from(events: list[RunEvent], node_id: str) -> list[EdgeTaken]:
    return [e for e in events if isinstance(e, EdgeTaken) and e.from_.node_id == node_id]


def outputs_of(events: list[RunEvent], node_id: str) -> list[dict[str, Any]]:
    outcome = settled(events, node_id).outcome
    assert outcome.status == "ok", outcome
    return [item.json_ for item in outcome.output.items]  # type: ignore[union-attr]


# -- reason ------------------------------------------------------------------------------------


async def test_reason_node_succeeds_on_a_retry(
    client: Client, task_queue: str, store: SqlitePlanStore, tmp_path: Path
) -> None:
    """An invalid first answer is fed back; the valid second one is the node's one output."""
    reasoner = ScriptedReasoner({"rate": [{"score": 11}, {"score": 7}]})
    view = (
        PlanSketch(unique_plan_id("reason-retry"))
        .entry(StringField(path="topic"))
        .reason(
            "rate", "Rate ", NodeRef("entry", path="topic"), output_schema=SCORE, max_attempts=3
        )
        .chain("entry", "rate")
        .view()
    )
    async with worker(client, task_queue, store, tmp_path, reasoner):
        result, events, handle = await run(client, task_queue, store, view, {"topic": "kittens"})
    assert result.outcome == "completed"
    assert outputs_of(events, "rate") == [{"score": 7}]
    assert [t.prompt for t in reasoner.turns] == ["Rate kittens"] * 2
    assert "$.score: 11 is greater than the maximum of 10" in reasoner.turns[1].history[0].feedback
    history = await handle.fetch_history()
    scheduled = [
        e for e in history.events if e.HasField("activity_task_scheduled_event_attributes")
    ]
    attributes = scheduled[0].activity_task_scheduled_event_attributes
    key = frame_key("rate", BranchId(segments=(EdgeSegment(edge="e0"),)))
    assert attributes.activity_type.name == "plan.reason" and attributes.activity_id == f"{key}#1"
    completed = next(
        e for e in history.events if e.HasField("activity_task_completed_event_attributes")
    )
    payloads = list(completed.activity_task_completed_event_attributes.result.payloads)
    [response] = await client.data_converter.decode(payloads, [ReasonResponse])
    assert [a.outcome for a in response.attempts] == ["invalid", "accepted"]
    assert all(a.input_tokens > 0 and a.output_tokens > 0 for a in response.attempts)
    assert response.input_tokens == sum(a.input_tokens for a in response.attempts)


async def test_reason_node_exhausting_its_attempts(
    client: Client, task_queue: str, store: SqlitePlanStore, tmp_path: Path
) -> None:
    """Unhandled: the run aborts with output_schema_violation; with an error edge it goes on."""
    reasoner = ScriptedReasoner({"rate": {"score": "high"}})
    bare = (
        PlanSketch(unique_plan_id("reason-exhausted"))
        .entry(StringField(path="topic"))
        .reason("rate", "Rate it", output_schema=SCORE, max_attempts=2)
        .chain("entry", "rate")
        .view()
    )
    handled = (
        PlanSketch(unique_plan_id("reason-handled"))
        .entry(StringField(path="topic"))
        .reason("rate", "Rate it", output_schema=SCORE, max_attempts=2)
        .call("fallback", "stamp", output=[StringField(path="value")])
        .chain("entry", "rate")
        .edge("rate", "fallback", "error")
        .view()
    )
    async with worker(client, task_queue, store, tmp_path, reasoner):
        aborted, events, _ = await run(client, task_queue, store, bare, {"topic": "x"})
        recovered, handled_events, _ = await run(client, task_queue, store, handled, {"topic": "x"})
    assert aborted.outcome == "aborted"
    assert aborted.interruption.kind == "output_schema_violation"
    assert aborted.interruption.node_id == "rate"
    failure = settled(events, "rate").outcome
    assert isinstance(failure, OutcomeFailed) and failure.error.name == "output_schema_violation"
    assert "after 2 attempt(s)" in failure.error.message
    assert recovered.outcome == "completed"
    assert settled(handled_events, "rate").outcome.status == "failed"
    assert outputs_of(handled_events, "fallback") == [{"value": "fallback"}]
    assert len([t for t in reasoner.turns if t.node_id == "rate"]) == 4


# -- transforms and cells ----------------------------------------------------------------------


async def test_transform_chains_on_json_and_markdown_feed_cells(
    client: Client, task_queue: str, store: SqlitePlanStore, tmp_path: Path
) -> None:
    """JSON get → filter → pluck feeds a CEL branch; Markdown text → grep → head feeds a Lua
    select; each decision's evidence is on the edge it fired."""
    sketch = PlanSketch(unique_plan_id("chains"), max_concurrent_frames=1).entry(
        StringField(path="s")
    )
    sketch.call("report", "json.report", output=[NumberField(path="count")])
    sketch.transform(
        "big",
        NodeRef("report"),
        step("artifact_json_get", path="$.files"),
        step("artifact_json_filter", path="$[?@.size > 10]"),
        step("artifact_json_pluck", path="$.name"),
        emit="names",
        output=[StringField(path="names")],
    )
    sketch.branch(
        "has_b",
        "big.names.contains('b.txt') && report.count == 3"
        " && report.at < timestamp('2030-01-01T00:00:00Z')",
        evaluator="cel",
    )
    sketch.call("notes", "md.notes")
    sketch.transform(
        "status",
        NodeRef("notes"),
        step("artifact_md_text", startLine=4),
        step("artifact_grep", pattern="^status:", flags="i"),
        step("artifact_head", n=1),
        emit="line",
        output=[StringField(path="line")],
    )
    sketch.select(
        "colour",
        ["red", "green"],
        "local line = outputs.status.line "
        "if line:find('red') then return 'red' elseif line:find('green') then return 'green' end",
        evaluator="lua",
    )
    for node in ("json_yes", "red", "other"):
        sketch.call(node, "stamp", output=[StringField(path="value")])
    view = (
        sketch.chain("entry", "report", "big", "has_b")
        .edge("has_b", "json_yes", "match")
        .chain("entry", "notes", "status", "colour")
        .edge("colour", "red", "case_red")
        .edge("colour", "other", "case_green")
        .edge("colour", "other", "default")
        .view()
    )
    async with worker(client, task_queue, store, tmp_path):
        result, events, _ = await run(client, task_queue, store, view, {"s": "x"})
    assert result.outcome == "completed"
    assert outputs_of(events, "big") == [{"names": "b.txt\nc.md"}]
    assert outputs_of(events, "status") == [{"line": "Status: red (two blockers)"}]
    [branch_edge] = edges_from(events, "has_b")
    assert branch_edge.handle == "match"
    assert branch_edge.evidence == {"cell": "cel", "result": True}
    [select_edge] = edges_from(events, "colour")
    assert select_edge.handle == "case_red" and select_edge.to.node_id == "red"
    assert select_edge.evidence == {"cell": "lua", "result": "red"}
    handle = settled(events, "report")
    assert handle.outcome.status == "ok"
    [to_big] = edges_from(events, "report")
    [artifact] = to_big.artifacts.values()
    assert artifact.tag == "fs" and artifact.artifact_class == "json"
    assert "b.txt" not in artifact.locator  # a pointer, never the bytes


async def test_artifact_is_read_after_a_diamond_join(
    client: Client, task_queue: str, store: SqlitePlanStore, tmp_path: Path
) -> None:
    """An artifact made before a fan-out reaches a transform after the join (both arms carry it)."""
    sketch = PlanSketch(unique_plan_id("diamond-artifact"), max_concurrent_frames=4)
    sketch.entry(StringField(path="s")).call(
        "fork", "json.report", output=[NumberField(path="count")]
    )
    sketch.call("left", "stamp", output=[StringField(path="value")])
    sketch.call("right", "stamp", output=[StringField(path="value")])
    sketch.join("j")
    sketch.transform(
        "first",
        NodeRef("fork"),
        step("artifact_json_get", path="$.files[0].name"),
        emit="name",
        output=[StringField(path="name")],
    )
    view = (
        sketch.chain("entry", "fork")
        .edge("fork", "left")
        .edge("fork", "right")
        .edge("left", "j")
        .edge("right", "j")
        .chain("j", "first")
        .view()
    )
    async with worker(client, task_queue, store, tmp_path):
        result, events, _ = await run(client, task_queue, store, view, {"s": "x"})
    assert result.outcome == "completed"
    assert outputs_of(events, "first") == [{"name": "a.txt"}]
    for arm in ("left", "right"):
        [edge] = edges_from(events, arm)
        assert [k.split(":")[0] for k in edge.artifacts] == ["fork"]


async def test_a_missing_reader_resolver_fails_the_transform_naming_the_tag(
    client: Client, task_queue: str, store: SqlitePlanStore, tmp_path: Path
) -> None:
    """The producing call settles; the transform fails with E_NO_READER_RESOLVER and the tag."""
    view = (
        PlanSketch(unique_plan_id("no-resolver"))
        .entry(StringField(path="s"))
        .call(
            "vault",
            "vault.report",
            args={"folder": str(tmp_path / "vault")},
            output=[NumberField(path="count")],
        )
        .transform("peek", NodeRef("vault"), "artifact_json_keys", emit=None)
        .chain("entry", "vault", "peek")
        .view()
    )
    async with worker(client, task_queue, store, tmp_path):
        result, events, _ = await run(client, task_queue, store, view, {"s": "x"})
    assert result.outcome == "aborted" and result.interruption.node_id == "peek"
    assert settled(events, "vault").outcome.status == "ok"
    failure = settled(events, "peek").outcome
    assert isinstance(failure, OutcomeFailed) and failure.error.name == "E_NO_READER_RESOLVER"
    assert "'vault'" in failure.error.message


async def test_artifact_handles_survive_continue_as_new(
    client: Client, task_queue: str, store: SqlitePlanStore, tmp_path: Path
) -> None:
    """A handle made in the first segment is read by a transform after the run continued as new."""
    sketch = PlanSketch(unique_plan_id("can-artifact"), max_concurrent_frames=4)
    sketch.entry(StringField(path="s")).call(
        "report", "json.report", output=[NumberField(path="count")]
    )
    previous = "report"
    for i in range(30):
        sketch.call(f"n{i}", "stamp", output=[StringField(path="value")]).edge(previous, f"n{i}")
        previous = f"n{i}"
    sketch.transform(
        "last",
        NodeRef("report"),
        step("artifact_json_get", path="$.files[2].name"),
        emit="name",
        output=[StringField(path="name")],
    )
    view = sketch.chain("entry", "report").edge(previous, "last").view()
    settings = RunSettings(continue_as_new_after_events=100)
    async with worker(client, task_queue, store, tmp_path):
        handle, _ = await start_run(client, task_queue, store, view, {"s": "x"}, settings=settings)
        result = await asyncio.wait_for(handle.result(), timeout=60)
    assert result.outcome == "completed" and result.segments >= 2
    from workers.runs import TemporalRuns

    runs = TemporalRuns(client, store, task_queue=task_queue)
    outputs = (await runs.projection(view.plan_id)).outputs
    [last] = [output for key, output in outputs.items() if key.startswith("last:")]
    assert [item.json_ for item in last.items] == [{"name": "c.md"}]
    await replay_all(client, view.plan_id, store)  # every execution of the chain


# -- a worker killed while an artifact is in flight --------------------------------------------


async def test_run_resumes_after_a_worker_kill_with_an_artifact_in_flight(
    dev_server: DevServer, client: Client, task_queue: str, tmp_path: Path
) -> None:
    """The artifact spooled by a killed worker is read by the transform on the next worker."""
    ledger, spool = tmp_path / "ledger.sqlite3", tmp_path / "spool"
    drill_tools.record(str(ledger), "-", "init")
    view = (
        PlanSketch(unique_plan_id("kill-artifact"))
        .entry(StringField(path="s"))
        .call("report", "json.report", output=[NumberField(path="count")])
        .call(
            "wait",
            "ledger.wait",
            args={"ledger": str(ledger), "seconds": 30.0},
            output=[StringField(path="value")],
        )
        .transform(
            "sizes",
            NodeRef("report"),
            step("artifact_json_get", path="$.files"),
            step("artifact_json_pluck", path="$.size"),
            emit=None,
            output=[NumberField(path="value")],
        )
        .chain("entry", "report", "wait")
        .edge("wait", "sizes")
        .view()
    )
    settings = RunSettings(heartbeat_seconds=1.0, start_to_close_seconds=60)
    plans = tmp_path / "workers.sqlite3"  # the plan store the worker processes share
    store = SqlitePlanStore(plans)
    first = worker_process(
        dev_server.address, task_queue, tmp_path / "w1.log", plans, toolbox=ARTIFACT_TOOLS,
        flags=("--spool-dir", str(spool)),
    )
    try:
        handle, _ = await start_run(client, task_queue, store, view, {"s": "x"}, settings=settings)
        deadline = asyncio.get_running_loop().time() + 30
        while not any(e == "started" for _, e in drill_tools.rows(str(ledger))):
            assert asyncio.get_running_loop().time() < deadline, "the wait never started"
            await asyncio.sleep(0.05)
    finally:
        kill(first)
    assert [p for p in spool.rglob("*") if p.is_file()], "the artifact was spooled to disk"
    second = worker_process(
        dev_server.address, task_queue, tmp_path / "w2.log", plans, toolbox=ARTIFACT_TOOLS,
        flags=("--spool-dir", str(spool)),
    )
    try:
        result = await asyncio.wait_for(handle.result(), timeout=60)
    finally:
        kill(second)
    assert result.outcome == "completed"
    events = await replay(client, view.plan_id, store)
    await store.close()
    assert outputs_of(events, "sizes") == [{"value": 4}, {"value": 40}, {"value": 400}]
    waits = [e for k, e in drill_tools.rows(str(ledger)) if k.startswith(f"{view.plan_id}/wait:")]
    assert waits == ["started", "started", "done"]
    [carried] = edges_from(events, "wait")
    assert [h.tag for h in carried.artifacts.values()] == ["fs"]
