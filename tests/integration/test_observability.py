"""Metrics, traces and logs of a real run on the dev server."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import urllib.request

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio.client import Client

from orchestration.plan.encoding import NodeRef
from orchestration.store.sqlite import SqlitePlanStore
from orchestration.testing import PlanSketch
from orchestration.types import NumberField, RawPlanView, StringField
from workers.devserver import DevServer
from workers.logging import configure_logging
from workers.telemetry import prometheus_runtime, tracing_interceptors
from workers.worker import build_worker, connect

from .harness import FAST_RETRY, make_toolbox, start_run, unique_plan_id

pytestmark = pytest.mark.asyncio(loop_scope="session")

_SAMPLE = re.compile(r"^(\w+)(?:\{(.*)\})? (\S+)$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def chain(plan_id: str) -> RawPlanView:
    return (
        PlanSketch(plan_id)
        .entry(StringField(path="s"))
        .call(
            "a", "upper", args={"s": NodeRef("entry", path="s")}, output=[StringField(path="value")]
        )
        .call(
            "b", "upper", args={"s": NodeRef("a", path="value")}, output=[StringField(path="value")]
        )
        .chain("entry", "a", "b")
        .view()
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def samples(text: str, name: str, task_queue: str) -> list[tuple[dict[str, str], float]]:
    """The samples of metric ``name`` recorded for ``task_queue``."""
    found = []
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match and match.group(1) == name:
            labels = dict(_LABEL.findall(match.group(2) or ""))
            if labels.get("task_queue") == task_queue:
                found.append((labels, float(match.group(3))))
    return found


def value(found: list[tuple[dict[str, str], float]], **labels: str) -> float:
    return sum(v for have, v in found if all(have.get(k) == x for k, x in labels.items()))


async def test_prometheus_endpoint_serves_plan_counters_and_sdk_metrics(
    dev_server: DevServer, task_queue: str, store: SqlitePlanStore
) -> None:
    port = free_port()
    client = await connect(dev_server.address, runtime=prometheus_runtime(f"127.0.0.1:{port}"))
    plan_id = unique_plan_id("metrics")
    # b times out after starting: an indeterminate frame that its policy settles as skipped.
    sketch = PlanSketch(plan_id).entry(StringField(path="s"))
    sketch.call(
        "a", "upper", args={"s": NodeRef("entry", path="s")}, output=[StringField(path="value")]
    )
    sketch.call(
        "b",
        "slow",
        args={"seconds": 5.0},
        output=[StringField(path="value"), NumberField(path="n")],
        replay_safe=False,
        on_indeterminate="skip",
    )
    view = sketch.chain("entry", "a", "b").view()
    settings = FAST_RETRY.model_copy(update={"start_to_close_seconds": 0.5})
    async with build_worker(client, task_queue=task_queue, toolbox=make_toolbox(), store=store):
        handle, _ = await start_run(client, task_queue, store, view, {"s": "x"}, settings=settings)
        result = await handle.result()
        assert result.outcome == "completed"
        url = f"http://127.0.0.1:{port}/metrics"
        # The SDK exports on its own cadence, and records a workflow's completion only once
        # the server acknowledged it: poll until both our counter and the SDK's are there.
        text = ""
        for _ in range(100):
            text = await asyncio.to_thread(lambda: urllib.request.urlopen(url).read().decode())
            if samples(text, "plan_runs_settled", task_queue) and samples(
                text, "temporal_workflow_completed", task_queue
            ):
                break
            await asyncio.sleep(0.1)
    started = samples(text, "plan_nodes_started", task_queue)
    settled = samples(text, "plan_nodes_settled", task_queue)
    assert value(started, kind="call") == 2
    assert value(settled, kind="call", status="ok") == 1
    assert value(settled, kind="call", status="skipped") == 1
    assert value(samples(text, "plan_runs_settled", task_queue), outcome="completed") == 1
    assert value(samples(text, "plan_indeterminate_frames", task_queue)) == 1
    assert value(samples(text, "temporal_workflow_completed", task_queue)) >= 1


async def test_tracing_interceptor_records_a_span_per_node_activity(
    dev_server: DevServer, task_queue: str, store: SqlitePlanStore
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    client = await connect(dev_server.address, interceptors=tracing_interceptors(tracer))
    async with build_worker(client, task_queue=task_queue, toolbox=make_toolbox(), store=store):
        handle, _ = await start_run(
            client, task_queue, store, chain(unique_plan_id("trace")), {"s": "x"}
        )
        assert (await handle.result()).outcome == "completed"
    spans = exporter.get_finished_spans()
    names = [span.name for span in spans]
    assert names.count("RunActivity:plan.call") == 2
    assert names.count("StartActivity:plan.call") == 2
    assert "StartWorkflow:PlanRun" in names
    assert len({span.context.trace_id for span in spans}) == 1


async def test_call_activity_logs_json_lines_with_the_frame_bound(
    dev_server: DevServer,
    client: Client,
    task_queue: str,
    store: SqlitePlanStore,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import logging

    import structlog

    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    configure_logging("INFO")
    try:
        plan_id = unique_plan_id("logs")
        async with build_worker(client, task_queue=task_queue, toolbox=make_toolbox(), store=store):
            handle, _ = await start_run(client, task_queue, store, chain(plan_id), {"s": "x"})
            assert (await handle.result()).outcome == "completed"
        err = capsys.readouterr().err
    finally:
        root.handlers[:], level = saved
        root.setLevel(level)
        structlog.reset_defaults()
    lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    ours = [line for line in lines if line.get("plan_id") == plan_id]
    assert [(line["event"], line["node_id"]) for line in ours] == [
        ("tool call started", "a"),
        ("tool call ended", "a"),
        ("tool call started", "b"),
        ("tool call ended", "b"),
    ]
    for line in ours:
        assert line["run_id"] == f"plan/{plan_id}"
        assert line["tool"] == "upper"
        assert line["level"] == "info" and line["logger"] == "orchestration.run.work"
    assert [line["status"] for line in ours if line["event"] == "tool call ended"] == ["ok", "ok"]
