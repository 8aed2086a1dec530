"""Heartbeats while an activity awaits slow work (a model, a big artifact).

A heartbeat timeout is how a dead worker is noticed quickly; an activity that waits on one
long call without heartbeating would be declared dead while healthy. The cadence is a third of
the heartbeat timeout (at most every five seconds), as in the call activity.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from temporalio import activity

__all__ = ["heartbeating"]

T = TypeVar("T")

_EVERY_SECONDS = 5.0


async def heartbeating(work: Awaitable[T]) -> T:
    """Await ``work``, heartbeating while it runs; cancelling the activity cancels it."""
    task = asyncio.ensure_future(work)
    timeout = activity.info().heartbeat_timeout
    every = _EVERY_SECONDS
    if timeout is not None:
        every = min(every, max(timeout.total_seconds() / 3, 0.05))
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=every)
            if done:
                return task.result()
            activity.heartbeat()
    except asyncio.CancelledError:
        task.cancel()
        raise
