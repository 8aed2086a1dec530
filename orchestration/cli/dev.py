"""``orch dev``: a local Temporal dev server and a worker, until Ctrl-C.

The server persists to a SQLite file under ``--data`` (so runs survive a restart), serves the
Web UI, and has the plan search attributes registered; the worker runs ``PlanRun`` with the
toolbox named by ``--toolbox``, spools artifacts under ``--data``, and answers reason nodes with
the reasoner the environment configures (``ORCH_REASONER``; none by default). With
``ORCH_CODEC_KEYS`` set, the worker encrypts every payload with those keys, exactly as
``python -m workers`` does. With ``--deployment-name`` the worker is a Worker Deployment Version
(as ``python -m workers --deployment-name`` is) and, being the only worker, makes itself the
deployment's current version, so new runs start on it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
from pathlib import Path
from typing import Any

from orchestration.cli.common import CliError, add_store_flag, load_object, open_store, run_async
from orchestration.cli.temporal import add_deployment_flags
from orchestration.tools.toolbox import Toolbox

__all__ = ["register"]


def register(commands: Any) -> None:
    """Add the ``dev`` command."""
    dev = commands.add_parser(
        "dev",
        help="run a local Temporal dev server and a worker",
        description="Run a local Temporal dev server (persisted in SQLite, Web UI on) and one "
        "worker polling a task queue, until Ctrl-C. Then `orch run start` in another terminal "
        "runs approved plans on it.",
    )
    dev.add_argument(
        "--data",
        default=".data/dev",
        help="folder for the server's SQLite file (temporal.sqlite3), its log and the artifact "
        "spool; runs survive a restart with the same folder (default %(default)s, relative "
        "to the current directory)",
    )
    dev.add_argument(
        "--toolbox",
        default="workers.example_tools:TOOLBOX",
        help="module:attribute of the worker's Toolbox: the tools plans may call (default "
        "%(default)s, files and SQLite tools for trying things out)",
    )
    dev.add_argument(
        "--port",
        type=int,
        default=7233,
        help="the Temporal frontend's port: what --address (TEMPORAL_ADDRESS) of the other "
        "commands points at, as 127.0.0.1:PORT (default %(default)s)",
    )
    dev.add_argument(
        "--ui-port",
        type=int,
        default=8233,
        help="the Temporal Web UI's port, http://127.0.0.1:PORT (default %(default)s)",
    )
    dev.add_argument(
        "--task-queue",
        default="plans",
        help="the task queue the worker polls; `orch run start --task-queue` must name the "
        "same one (default %(default)s)",
    )
    dev.add_argument(
        "--prices",
        default=os.environ.get("ORCH_PRICES") or None,
        metavar="PATH",
        help="JSON price table reason attempts are costed by (env ORCH_PRICES; see "
        "workers/prices.example.json; default: none, tokens recorded unpriced)",
    )
    add_store_flag(dev)
    add_deployment_flags(dev)
    dev.set_defaults(handler=_dev)


def _dev(args: argparse.Namespace) -> int:
    from orchestration.artifacts import FileSpoolStore
    from workers.client import DevServer, configure_logging, reasoner_from_env

    configure_logging(os.environ.get("ORCH_LOG_LEVEL", "INFO"))  # JSON lines on stderr
    from workers.client import (
        DeploymentSettingsError,
        LivenessMonitor,
        build_worker,
        codec_from_env,
        connect,
        deployment_config,
        load_prices,
        make_current,
    )

    try:
        versioning = deployment_config(args.deployment_name, args.build_id)
    except DeploymentSettingsError as exc:
        raise CliError("bad_deployment", str(exc)) from exc
    try:
        prices = load_prices(args.prices) if args.prices else None
    except ValueError as exc:
        raise CliError("bad_prices", f"{exc} — fix the file or leave --prices out") from exc

    async def go() -> int:
        data = Path(args.data).resolve()
        toolbox = load_object(args.toolbox)
        if not isinstance(toolbox, Toolbox):
            raise CliError(
                "bad_toolbox",
                f"{args.toolbox} is a {type(toolbox).__name__}, not a Toolbox — point --toolbox "
                "at an orchestration.tools.toolbox.Toolbox",
            )
        codec = codec_from_env()
        server = DevServer(
            db_file=data / "temporal.sqlite3",
            port=args.port,
            ui_port=args.ui_port,
            log_file=data / "temporal.log",
        )
        store = open_store(args.store)
        async with server:
            client = await connect(server.address, payload_codec=codec)
            worker = build_worker(
                client,
                task_queue=args.task_queue,
                toolbox=toolbox,
                store=store,
                reasoner=reasoner_from_env(os.environ),
                spool=FileSpoolStore(data / "spool"),
                deployment_config=versioning,
                prices=prices,
            )
            # Stalled calls are reported (a log line, metrics), never acted on.
            stop = asyncio.Event()
            watching = asyncio.create_task(
                LivenessMonitor(client, args.task_queue, every=5.0).run(stop)
            )
            async with worker:
                if versioning is not None:
                    await make_current(client, versioning.version)
                print(f"Temporal at {server.address}; Web UI at {server.ui_url}")
                if client.data_converter.payload_codec is not None:
                    print("payloads are encrypted with the keys in ORCH_CODEC_KEYS")
                print(
                    f"worker polling task queue {args.task_queue!r} with tools: "
                    f"{', '.join(toolbox.names())}"
                )
                if versioning is not None:
                    print(
                        f"worker deployment version {versioning.version.to_canonical_string()} "
                        "is current; runs are pinned to the version they start on"
                    )
                print("Ctrl-C to stop.")
                loop = asyncio.get_running_loop()
                for sig in (signal.SIGINT, signal.SIGTERM):
                    loop.add_signal_handler(sig, stop.set)
                await stop.wait()
            await watching
        await store.close()
        print("stopped")
        return 0

    return run_async(go)
