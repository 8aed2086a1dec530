"""Metrics and tracing for a worker process, through the Temporal SDK's own hooks.

* **Metrics**: :func:`prometheus_runtime` builds a Temporal ``Runtime`` whose exporter serves
  Prometheus text on ``host:port`` (``/metrics``). A client connected with it, and every worker
  built on that client, reports the SDK's metrics (``temporal_workflow_completed``,
  ``temporal_activity_execution_latency``, ...) and those ``PlanRun`` records through the
  replay-safe ``workflow.metric_meter()`` (``plan_nodes_started``, ``plan_nodes_settled``,
  ``plan_runs_settled``, ``plan_indeterminate_frames``). A ``Runtime`` owns native threads and
  one listening socket, so a process builds one and shares it.
* **Tracing**: :func:`tracing_interceptors` returns the SDK's OpenTelemetry
  ``TracingInterceptor``; passed to the client, workers built on that client inherit it, and
  every node's activity gets ``StartActivity:<name>``/``RunActivity:<name>`` spans in the run's
  trace. Spans go to the process's global tracer provider; :func:`configure_tracing` installs
  one (needs the ``otel`` extra).
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

from temporalio.client import Interceptor
from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.trace import Tracer

__all__ = ["client_options", "configure_tracing", "prometheus_runtime", "tracing_interceptors"]

SERVICE_NAME = "orchestration-worker"


def prometheus_runtime(bind_address: str) -> Runtime:
    """A Temporal runtime that serves Prometheus metrics on ``bind_address`` (``host:port``).

    The endpoint starts listening when the runtime is built; a port already in use fails here,
    at start-up, rather than silently dropping metrics.
    """
    return Runtime(telemetry=TelemetryConfig(metrics=PrometheusConfig(bind_address=bind_address)))


def tracing_interceptors(tracer: Tracer | None = None) -> list[Interceptor]:
    """The SDK's OpenTelemetry tracing interceptor (client and worker sides in one object).

    Without ``tracer`` it uses the global tracer provider's.
    """
    from temporalio.contrib.opentelemetry import TracingInterceptor

    return [TracingInterceptor(tracer)]


def configure_tracing(exporter: SpanExporter | None = None) -> TracerProvider:
    """Install an OpenTelemetry SDK tracer provider as the global one and return it.

    Spans go to ``exporter`` if given; otherwise to OTLP (``OTEL_EXPORTER_OTLP_*`` settings)
    when ``opentelemetry-exporter-otlp-proto-grpc`` is installed, else to stderr as JSON so
    that tracing never silently goes nowhere.
    """
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    if exporter is None:
        try:
            otlp = importlib.import_module("opentelemetry.exporter.otlp.proto.grpc.trace_exporter")
            exporter = otlp.OTLPSpanExporter()
        except ImportError:
            exporter = ConsoleSpanExporter(out=sys.stderr)
    provider = TracerProvider(resource=Resource.create({"service.name": SERVICE_NAME}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return provider


def client_options(*, metrics_bind: str | None = None, otel: bool = False) -> dict[str, Any]:
    """Keyword arguments for :func:`workers.worker.connect` that turn the options on."""
    options: dict[str, Any] = {}
    if metrics_bind:
        options["runtime"] = prometheus_runtime(metrics_bind)
    if otel:
        options["interceptors"] = tracing_interceptors()
    return options
