"""``orch dev``: a local Temporal dev server and a worker, until Ctrl-C.

The server persists to a SQLite file under ``--data`` (so runs survive a restart), serves the
Web UI, and has the plan search attributes registered; the worker runs ``PlanRun`` with the
toolbox named by ``--toolbox``, spools artifacts under ``--data``, and answers reason nodes with
the reasoner the environment configures (``ORCH_REASONER``; none by default).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
from pathlib import Path
from typing import Any

from orchestration.cli.common import add_store_flag, load_object, open_store, run_async

__all__ = ["register"]


def register(commands: Any) -> None:
    """Add the ``dev`` command."""
    dev = commands.add_parser("dev", help="run a local Temporal dev server and a worker")
    dev.add_argument("--data", default=".data/dev", help="folder for the server's SQLite file")
    dev.add_argument("--toolbox", default="workers.example_tools:TOOLBOX")
    dev.add_argument("--port", type=int, default=7233)
    dev.add_argument("--ui-port", type=int, default=8233)
    dev.add_argument("--task-queue", default="plans")
    add_store_flag(dev)
    dev.set_defaults(handler=_dev)


def _dev(args: argparse.Namespace) -> int:
    from activities.reasoners import reasoner_from_env
    from orchestration.artifacts import FileSpoolStore
    from workers.devserver import DevServer
    from workers.logging import configure_logging

    configure_logging(os.environ.get("ORCH_LOG_LEVEL", "INFO"))  # JSON lines on stderr
    from workers.worker import build_worker, connect

    async def go() -> int:
        data = Path(args.data).resolve()
        toolbox = load_object(args.toolbox)
        server = DevServer(
            db_file=data / "temporal.sqlite3",
            port=args.port,
            ui_port=args.ui_port,
            log_file=data / "temporal.log",
        )
        store = open_store(args.store)
        async with server:
            client = await connect(server.address)
            worker = build_worker(
                client,
                task_queue=args.task_queue,
                toolbox=toolbox,
                store=store,
                reasoner=reasoner_from_env(os.environ),
                spool=FileSpoolStore(data / "spool"),
            )
            async with worker:
                print(f"Temporal at {server.address}; Web UI at {server.ui_url}")
                print(
                    f"worker polling task queue {args.task_queue!r} with tools: "
                    f"{', '.join(toolbox.names())}"
                )
                print("Ctrl-C to stop.")
                stop = asyncio.Event()
                loop = asyncio.get_running_loop()
                for sig in (signal.SIGINT, signal.SIGTERM):
                    loop.add_signal_handler(sig, stop.set)
                await stop.wait()
        await store.close()
        print("stopped")
        return 0

    return run_async(go)
