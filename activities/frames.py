"""The node activities: ``plan.call``, ``plan.reason``, ``plan.transform``, ``plan.evaluate``.

Each is a thin wrapper around :class:`~orchestration.run.work.FrameWork`, the work the
in-process host does too, so a frame is checked, run and named the same way on both hosts.
A wrapper adds only what Temporal needs: heartbeats while the work runs (so a dead worker is
noticed by its heartbeat timeout) and the failure as an ``ApplicationError``.

Every failure is non-retryable for Temporal: whether a frame is tried again is the run's own
policy (:mod:`orchestration.run.policy`), applied by the workflow, which records every attempt.
The error's ``type`` is the failure's name (a stable code, or the tool's exception class name),
its message the failure's message, and its first detail ``{"transient": bool, "kind": str}``
(with ``usage`` for a reason attempt that spent tokens before it failed).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from datetime import timedelta
from typing import TypeVar

from temporalio import activity
from temporalio.exceptions import ApplicationError

from orchestration.run.messages import (
    CallRequest,
    CallResponse,
    EvaluateRequest,
    EvaluateResponse,
    ReasonRequest,
    ReasonResponse,
    TransformRequest,
    TransformResponse,
)
from orchestration.run.work import FrameWork, WorkFailed
from orchestration.tools.reasoning import AttemptRecord

__all__ = ["FrameActivities", "application_error", "heartbeating"]

T = TypeVar("T")

_EVERY_SECONDS = 5.0
_MARGIN = 0.9
"""The share of the evaluate activity's start-to-close timeout a cell may use before the
activity gives up on it and fails (non-retryably) while there is still time to report."""


def application_error(failure: WorkFailed) -> ApplicationError:
    """A frame's failed work as the activity's (non-retryable) failure.

    Its first detail holds the facts the run records: ``transient``, ``kind`` and, for a reason
    attempt, ``usage`` (what its model turns spent before it failed).
    """
    facts: dict[str, object] = {"transient": failure.transient, "kind": failure.kind}
    if failure.usage is not None:
        facts["usage"] = failure.usage.model_dump(mode="json")
    return ApplicationError(
        failure.message,
        facts,
        *failure.details,
        type=failure.name,
        non_retryable=True,
    )


async def heartbeating(work: Awaitable[T]) -> T:
    """Await ``work``, heartbeating while it runs; cancelling the activity cancels it.

    The cadence is a quarter of the heartbeat timeout, at most every five seconds: with the
    worker's heartbeat throttle (see ``workers.worker.build_worker``) the server's last-heartbeat
    time stays well under half the timeout old while the worker lives, which is what a run's
    liveness reads as ``healthy`` (:mod:`orchestration.run.liveness`).
    """
    task = asyncio.ensure_future(work)
    timeout = activity.info().heartbeat_timeout
    every = _EVERY_SECONDS
    if timeout is not None:
        every = min(every, max(timeout.total_seconds() / 4, 0.05))
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=every)
            if done:
                return task.result()
            activity.heartbeat()
    except asyncio.CancelledError:
        task.cancel()
        raise


class FrameActivities:
    """The node activities of one worker, bound to its :class:`FrameWork`."""

    def __init__(self, work: FrameWork) -> None:
        self.work = work

    @activity.defn(name="plan.call")
    async def call(self, request: CallRequest) -> CallResponse:
        """Run one call frame's tool, after re-checking what may run."""
        try:
            return await heartbeating(
                self.work.call(
                    request, attempt=activity.info().attempt, heartbeat=activity.heartbeat
                )
            )
        except WorkFailed as failure:
            raise application_error(failure) from failure

    @activity.defn(name="plan.reason")
    async def reason(self, request: ReasonRequest) -> ReasonResponse:
        """Ask the model until its forced tool call validates, or the attempts run out."""
        log = activity.logger

        def record(attempt: AttemptRecord) -> None:
            log.info(
                "reason attempt %d of %d for %s: %s (%d input, %d output tokens)",
                attempt.attempt,
                request.max_attempts,
                request.frame_key,
                attempt.outcome,
                attempt.usage.input_tokens,
                attempt.usage.output_tokens,
                extra={
                    "node_id": request.node_id,
                    "attempt": attempt.attempt,
                    "outcome": attempt.outcome,
                    "input_tokens": attempt.usage.input_tokens,
                    "output_tokens": attempt.usage.output_tokens,
                },
            )
            activity.heartbeat(attempt.attempt)

        try:
            return await heartbeating(self.work.reason(request, on_attempt=record))
        except WorkFailed as failure:
            raise application_error(failure) from failure

    @activity.defn(name="plan.transform")
    async def transform(self, request: TransformRequest) -> TransformResponse:
        """Apply one transform frame's steps to its source artifact."""
        try:
            return await heartbeating(self.work.transform(request))
        except WorkFailed as failure:
            raise application_error(failure) from failure

    @activity.defn(name="plan.evaluate")
    async def evaluate(self, request: EvaluateRequest) -> EvaluateResponse:
        """Decide one branch or select frame with a cell the workflow does not run inline.

        It never lets a cell run into the local activity's start-to-close timeout (a timeout
        is retried whatever the failure): it stops waiting a little before it and fails at
        once, ``predicate_unevaluatable``. A cell running in a process of its own (the Lua
        cell) stops its work at its own deadline; an in-process cell that ignores time cannot
        be stopped, only no longer waited for.
        """
        try:
            return await asyncio.wait_for(self.work.evaluate(request), _deadline())
        except TimeoutError as exc:
            failure = WorkFailed(
                "predicate_unevaluatable",
                f"cell {request.node.definition.evaluator!r} on node {request.node.id!r} gave "
                "no verdict within the evaluate activity's deadline; bound the predicate's "
                "work (or the cell's time limit)",
                kind="predicate",
            )
            raise application_error(failure) from exc
        except WorkFailed as failure:
            raise application_error(failure) from failure


def _deadline() -> float | None:
    """Seconds a cell may take: most of the activity's start-to-close timeout, if it has one."""
    timeout = activity.info().start_to_close_timeout
    if not isinstance(timeout, timedelta) or timeout <= timedelta(0):
        return None
    return timeout.total_seconds() * _MARGIN
