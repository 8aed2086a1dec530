"""The evaluate activity (``plan.evaluate``): predicate cells that cannot run in workflow code.

The workflow decides ``branch``/``select`` nodes inline only with the deterministic cells it
ships (structured, CEL). Every other cell (the Lua cell, a consumer's own) is a worker-side
dependency registered by id on the worker, and runs here, as a LOCAL activity: it is cheap and
short, its result is recorded in history like any activity's (so replay never re-runs it), and
it needs no task-queue round trip. A cell exposing a blocking ``decide`` (the Lua cell) runs on
a worker thread so a busy predicate never stalls the worker's event loop.

Failures (``ApplicationError.type``, all non-retryable, all settling the node as a predicate
failure, so the run stops ``predicate_unevaluatable``): ``unwired_evaluator`` (no cell with that
id on this worker), ``E_ORCH_CELL_UNAVAILABLE`` (its package is missing),
``predicate_limit_exceeded`` / ``lua_memory_exceeded`` (the predicate ran past its cell's
instruction, memory or time ceiling), and ``predicate_unevaluatable`` (the cell raised, or did
not answer within the activity's own deadline).

Non-retryable matters: the same predicate over the same outputs fails the same way, and a
retried local activity would make the workflow wait out every attempt. For the same reason the
activity never lets a cell run into the local activity's start-to-close timeout (a timeout is
retried whatever the failure type): it stops waiting a little before it and fails at once. A
cell that runs in a process of its own (the Lua cell) stops its work at its own deadline; a
consumer's in-process cell that ignores time cannot be stopped, only no longer waited for.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import timedelta

from temporalio import activity
from temporalio.exceptions import ApplicationError

from orchestration.contracts import (
    BranchVerdict,
    ExplainingEvaluator,
    Judgement,
    PredicateContext,
    PredicateEvaluator,
)
from orchestration.errors import OrchestrationError
from orchestration.execution import EvaluateRequest, EvaluateResponse
from orchestration.types import BranchNode, SelectNode

__all__ = ["EvaluateActivities", "judge"]

_MARGIN = 0.9
"""The share of the activity's start-to-close timeout a cell may use before the activity gives up
on it and fails (non-retryably) while there is still time to report."""


def _refuse(code: str, message: str) -> ApplicationError:
    return ApplicationError(message, type=code, non_retryable=True)


async def judge(
    cell: PredicateEvaluator, node: BranchNode | SelectNode, ctx: PredicateContext
) -> Judgement:
    """The cell's verdict, with its evidence when it offers any.

    A non-deterministic cell with a synchronous ``decide(node, ctx)`` (returning a
    ``Judgement`` or a verdict) is called on a worker thread: such cells do blocking work.
    """
    decide = getattr(cell, "decide", None)
    if callable(decide) and not cell.deterministic:
        result = await asyncio.to_thread(decide, node, ctx)
        return result if isinstance(result, Judgement) else Judgement(result)
    if isinstance(cell, ExplainingEvaluator):
        return await cell.judge(node, ctx)
    return Judgement(await cell.evaluate(node, ctx))


class EvaluateActivities:
    """The evaluate activity, bound to one worker's cells (by id)."""

    def __init__(self, cells: Sequence[PredicateEvaluator] = ()) -> None:
        self.cells = {cell.id: cell for cell in cells}

    @activity.defn(name="plan.evaluate")
    async def run_evaluate(self, request: EvaluateRequest) -> EvaluateResponse:
        """Decide one branch or select frame with the cell its node names."""
        node = request.node
        wanted = node.definition.evaluator
        cell = self.cells.get(wanted)
        if cell is None:
            raise _refuse(
                "unwired_evaluator",
                f"node {node.id!r} names cell {wanted!r}, which this worker does not have "
                f"(it has: {', '.join(sorted(self.cells)) or 'none'}); register it on the worker",
            )
        try:
            await cell.load()
            ctx = PredicateContext(outputs=request.outputs, frame=request.frame)
            judgement = await asyncio.wait_for(judge(cell, node, ctx), _deadline())
        except TimeoutError as exc:
            raise _refuse(
                "predicate_unevaluatable",
                f"cell {wanted!r} on node {node.id!r} gave no verdict within the evaluate "
                "activity's deadline; bound the predicate's work (or the cell's time limit)",
            ) from exc
        except OrchestrationError as exc:
            raise _refuse(exc.code, f"cell {wanted!r} on node {node.id!r}: {exc.message}") from exc
        except Exception as exc:  # noqa: BLE001 - a raising cell is a predicate failure
            raise _refuse(
                "predicate_unevaluatable",
                f"cell {wanted!r} raised on node {node.id!r}: {type(exc).__name__}: {exc}",
            ) from exc
        verdict = judgement.verdict
        if isinstance(verdict, BranchVerdict):
            return EvaluateResponse(
                kind="branch", matched=verdict.matched, evidence=judgement.evidence
            )
        return EvaluateResponse(
            kind="select", case_label=verdict.case_label, evidence=judgement.evidence
        )


def _deadline() -> float | None:
    """Seconds a cell may take: most of the activity's start-to-close timeout, if it has one."""
    try:
        timeout = activity.info().start_to_close_timeout
    except RuntimeError:  # called outside an activity
        return None
    if not isinstance(timeout, timedelta) or timeout <= timedelta(0):
        return None
    return timeout.total_seconds() * _MARGIN
