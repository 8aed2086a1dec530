"""``python -m workers``: run a worker for a toolbox until SIGINT/SIGTERM."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys

import structlog

from orchestration.cli.common import load_object
from orchestration.toolbox import Toolbox
from workers.logging import configure_logging
from workers.worker import build_worker, connect


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The worker's command line."""
    parser = argparse.ArgumentParser(prog="python -m workers", description=__doc__)
    parser.add_argument(
        "--toolbox", required=True, help="module:attribute of the worker's Toolbox"
    )
    parser.add_argument("--task-queue", default=os.environ.get("ORCH_TASK_QUEUE", "plans"))
    parser.add_argument("--address", default=os.environ.get("TEMPORAL_ADDRESS", "127.0.0.1:7233"))
    parser.add_argument("--namespace", default=os.environ.get("TEMPORAL_NAMESPACE", "default"))
    parser.add_argument("--log-level", default=os.environ.get("ORCH_LOG_LEVEL", "INFO"))
    return parser.parse_args(argv)


async def serve(args: argparse.Namespace) -> None:
    """Connect, build the worker, and run it until a stop signal."""
    log = structlog.get_logger("workers")
    toolbox = load_object(args.toolbox)
    if not isinstance(toolbox, Toolbox):
        raise SystemExit(f"{args.toolbox} is not a Toolbox; point --toolbox at one")
    client = await connect(args.address, args.namespace)
    worker = build_worker(client, task_queue=args.task_queue, toolbox=toolbox)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    log.info("worker started", task_queue=args.task_queue, address=args.address,
             tools=list(toolbox.names()))
    async with worker:
        await stop.wait()
    log.info("worker stopped")


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    args = parse_args(argv)
    configure_logging(args.log_level)
    asyncio.run(serve(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
