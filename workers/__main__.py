"""``python -m workers``: run a worker for a toolbox until SIGINT/SIGTERM.

The worker claims every run, and mirrors every run's log, in the plan store ``--store``
(``ORCH_STORE``; default ``.data/plans.sqlite3``, the CLI's default): workers and the clients
that start runs must share it (one SQLite file on one machine, a ``postgresql://`` DSN across
machines). Reason nodes use the reasoner ``ORCH_REASONER`` and its ``ORCH_REASONER_*``
variables describe (see :mod:`activities.reasoners.config`); tools spool artifacts to
``--spool-dir`` (``ORCH_SPOOL_DIR``), and every worker that may resume a run must see the same
folder. A reason attempt's cost is priced by ``--prices`` (``ORCH_PRICES``: a JSON price table,
see ``workers/prices.example.json``; without one, tokens are recorded unpriced). With
``--deployment-name`` (``ORCH_DEPLOYMENT_NAME``) the worker joins Temporal Worker Versioning
as ``<name>.<build id>`` (``--build-id``, ``ORCH_BUILD_ID``; see :mod:`workers.versioning`),
and each run stays on the version it started on.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from pathlib import Path

import structlog
from temporalio.worker import WorkerDeploymentConfig

from activities.reasoners import reasoner_from_env
from orchestration.artifacts import FileSpoolStore
from orchestration.cli.common import load_object, open_store
from orchestration.cli.temporal import add_deployment_flags, add_temporal_flags
from orchestration.exiting import exit_process
from orchestration.review.signing import load_public_key
from orchestration.tools.toolbox import Toolbox
from workers.codec import KEYS_ENV, codec_from_env
from workers.liveness import LivenessMonitor
from workers.logging import configure_logging
from workers.prices import load_prices
from workers.telemetry import client_options, configure_tracing
from workers.versioning import DeploymentSettingsError, deployment_config
from workers.worker import build_worker, connect


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The worker's command line."""
    parser = argparse.ArgumentParser(prog="python -m workers", description=__doc__)
    parser.add_argument("--toolbox", required=True, help="module:attribute of the worker's Toolbox")
    add_temporal_flags(parser)
    add_deployment_flags(parser)
    parser.add_argument("--log-level", default=os.environ.get("ORCH_LOG_LEVEL", "INFO"))
    parser.add_argument(
        "--store",
        default=os.environ.get("ORCH_STORE", ".data/plans.sqlite3"),
        help="plan store the worker claims runs in: a SQLite file or a postgresql:// DSN, shared "
        "with the clients that start runs (env ORCH_STORE; default .data/plans.sqlite3)",
    )
    parser.add_argument(
        "--spool-dir",
        default=os.environ.get("ORCH_SPOOL_DIR", ".data/spool"),
        help="folder of the file-system artifact spool, shared by the workers of a task queue",
    )
    parser.add_argument(
        "--prices",
        default=os.environ.get("ORCH_PRICES") or None,
        metavar="PATH",
        help="JSON price table (US dollars per million tokens, per model) that reason attempts "
        "are costed by (env ORCH_PRICES; default: none, tokens recorded unpriced)",
    )
    parser.add_argument(
        "--liveness-every",
        type=float,
        default=float(os.environ.get("ORCH_LIVENESS_EVERY") or 5.0),
        metavar="SECONDS",
        help="how often to look for stalled calls of this task queue's runs and report them "
        "(a log line and metrics, never an action; env ORCH_LIVENESS_EVERY; 0: never; "
        "default 5)",
    )
    parser.add_argument(
        "--approval-key",
        action="append",
        default=[p for p in os.environ.get("ORCH_APPROVAL_KEYS", "").split(os.pathsep) if p],
        metavar="PATH",
        help="operator public key (PEM); with any, only signed approvals run (repeatable; "
        "env ORCH_APPROVAL_KEYS, path-separated)",
    )
    parser.add_argument(
        "--metrics-bind",
        default=os.environ.get("ORCH_METRICS_BIND") or None,
        metavar="HOST:PORT",
        help="serve Prometheus metrics on HOST:PORT/metrics (env ORCH_METRICS_BIND; default off)",
    )
    parser.add_argument(
        "--otel",
        action="store_true",
        default=os.environ.get("ORCH_OTEL", "") not in ("", "0", "false"),
        help="trace workflows and activities with OpenTelemetry (env ORCH_OTEL; needs the "
        "otel extra; OTLP when its exporter is installed, else spans as JSON on stderr)",
    )
    return parser.parse_args(argv)


async def serve(
    args: argparse.Namespace, versioning: WorkerDeploymentConfig | None = None
) -> None:
    """Connect, build the worker, and run it until a stop signal.

    With ``versioning`` the worker is that Worker Deployment Version; without, unversioned.
    """
    log = structlog.get_logger("workers")
    toolbox = load_object(args.toolbox)
    if not isinstance(toolbox, Toolbox):
        raise SystemExit(f"{args.toolbox} is not a Toolbox; point --toolbox at one")
    # Encryption is on exactly when ORCH_CODEC_KEYS holds keys (see workers/codec.py).
    codec = codec_from_env()
    if args.otel:
        configure_tracing()
    telemetry = client_options(metrics_bind=args.metrics_bind, otel=args.otel)
    client = await connect(args.address, args.namespace, payload_codec=codec, **telemetry)
    approval_keys = [load_public_key(Path(path).read_bytes()) for path in args.approval_key]
    reasoner = reasoner_from_env(os.environ)
    prices = load_prices(args.prices) if args.prices else None
    store = open_store(args.store)
    worker = build_worker(
        client,
        task_queue=args.task_queue,
        toolbox=toolbox,
        store=store,
        approval_keys=approval_keys,
        reasoner=reasoner,
        spool=FileSpoolStore(args.spool_dir),
        deployment_config=versioning,
        prices=prices,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    log.info(
        "worker started",
        task_queue=args.task_queue,
        address=args.address,
        tools=list(toolbox.names()),
        encrypted=codec is not None,
        signed_approvals_only=bool(approval_keys),
        codec_keys_env=KEYS_ENV,
        store=args.store,
        metrics=args.metrics_bind,
        tracing=args.otel,
        deployment_version=(
            versioning.version.to_canonical_string() if versioning is not None else None
        ),
    )
    log.info(
        "reasoning and artifacts",
        reasoner=reasoner.name if reasoner is not None else None,
        spool=str(Path(args.spool_dir).resolve()),
        prices=args.prices,
        priced_models=sorted(prices.prices) if prices is not None else [],
    )
    watching: asyncio.Task[None] | None = None
    if args.liveness_every > 0:
        monitor = LivenessMonitor(client, args.task_queue, every=args.liveness_every)
        watching = asyncio.create_task(monitor.run(stop))
    async with worker:
        await stop.wait()
    if watching is not None:
        await watching
    await store.close()
    close = getattr(reasoner, "aclose", None)
    if close is not None:
        await close()
    log.info("worker stopped")


def main(argv: list[str] | None = None) -> int:
    """Entry point; a setting that cannot work is refused in one line before connecting."""
    args = parse_args(argv)
    try:
        versioning = deployment_config(args.deployment_name, args.build_id)
    except DeploymentSettingsError as exc:
        print(f"error[bad_deployment]: {exc}", file=sys.stderr)
        return 2
    if args.prices:
        try:
            load_prices(args.prices)
        except ValueError as exc:
            print(f"error[bad_prices]: {exc}", file=sys.stderr)
            return 2
    configure_logging(args.log_level)
    asyncio.run(serve(args, versioning))
    return 0


if __name__ == "__main__":
    exit_process(main())
