"""The reason activity (``plan.reason``): one reason frame, answered through a forced tool call.

The workflow has joined the prompt (each reference's value rendered in place); this activity
decodes the output schema, runs :func:`orchestration.reasoning.reason` against the worker's
:class:`~orchestration.reasoning.Reasoner` (the model is forced to call one tool whose input
schema is that schema; invalid arguments go back to it with the validation errors, up to
``maxAttempts``), and returns the accepted arguments as the node's one output item.

Token usage is recorded per attempt: logged as each attempt ends, and returned in
:class:`~orchestration.execution.ReasonResponse` (so it is in the workflow's history and the
UI). It never enters the node's output, which is exactly the validated arguments.

Failures (``ApplicationError.type``):

* ``output_schema_violation``: every attempt was rejected; non-retryable (the workflow records
  the run's ``output_schema_violation`` unless an ``error`` edge handles it). The details
  carry every attempt's accounting.
* ``no_reasoner`` / ``invalid_output_schema``: nothing to ask, or nothing valid to ask for;
  non-retryable.
* ``reasoner_unavailable``: the provider is overloaded or unreachable after the adapter's own
  retries; retryable, so Temporal's retry policy asks again later.
* ``reasoner_rejected``: the provider refused the request (key, model); non-retryable.
"""

from __future__ import annotations

from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.heartbeat import heartbeating
from orchestration.errors import ReasonerError
from orchestration.execution import AttemptUsage, ReasonRequest, ReasonResponse
from orchestration.reasoning import AttemptRecord, Reasoner, ReasonOutcome, reason
from orchestration.references import decode_output_schema
from orchestration.types import OutputItem
from orchestration.validation.schemas import schema_problem

__all__ = ["ReasonActivities"]


def _refuse(code: str, message: str, *details: Any) -> ApplicationError:
    return ApplicationError(message, *details, type=code, non_retryable=True)


def _usage(outcome: ReasonOutcome) -> tuple[AttemptUsage, ...]:
    return tuple(
        AttemptUsage(
            attempt=a.attempt,
            outcome=a.outcome,
            input_tokens=a.usage.input_tokens,
            output_tokens=a.usage.output_tokens,
            problems=a.problems,
        )
        for a in outcome.attempts
    )


class ReasonActivities:
    """The reason activity, bound to one worker's reasoner (``None``: reason nodes fail)."""

    def __init__(self, reasoner: Reasoner | None) -> None:
        self.reasoner = reasoner

    @activity.defn(name="plan.reason")
    async def run_reason(self, request: ReasonRequest) -> ReasonResponse:
        """Ask the model until its forced tool call validates, or the attempts run out."""
        reasoner = self.reasoner
        if reasoner is None:
            raise _refuse(
                "no_reasoner",
                f"reason node {request.node_id!r} needs a reasoner, and this worker has none; "
                "start the worker with ORCH_REASONER (openai, anthropic or scripted) or pass "
                "reasoner= to build_worker",
            )
        schema = decode_output_schema(request.output_schema)
        problem = (
            "it does not decode to a JSON object"
            if schema is None
            else schema_problem(schema, object_only=True)
        )
        if schema is None or problem is not None:
            raise _refuse(
                "invalid_output_schema",
                f"reason node {request.node_id!r} has an unusable outputSchema: {problem}",
            )
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
            outcome = await heartbeating(
                reason(
                    reasoner,
                    prompt=request.prompt,
                    schema=schema,
                    max_attempts=request.max_attempts,
                    node_id=request.node_id,
                    frame_key=request.frame_key,
                    on_attempt=record,
                )
            )
        except ReasonerError as exc:
            raise ApplicationError(
                f"{reasoner.name}: {exc.message}",
                type=exc.code,
                non_retryable=not exc.retryable,
            ) from exc
        usage = _usage(outcome)
        if outcome.arguments is None:
            last = outcome.attempts[-1].problems if outcome.attempts else ()
            raise _refuse(
                "output_schema_violation",
                f"reason node {request.node_id!r}: no valid structured result after "
                f"{len(outcome.attempts)} attempt(s); last rejection: {'; '.join(last)}",
                [u.model_dump(mode="json") for u in usage],
            )
        try:
            item = OutputItem.model_validate({"json": outcome.arguments})
        except ValueError as exc:
            raise _refuse(
                "output_schema_violation",
                f"reason node {request.node_id!r}: the accepted arguments are not encodable: {exc}",
            ) from exc
        total = outcome.usage
        return ReasonResponse(
            items=(item,),
            attempts=usage,
            reasoner=reasoner.name,
            model=outcome.model,
            input_tokens=total.input_tokens,
            output_tokens=total.output_tokens,
        )
