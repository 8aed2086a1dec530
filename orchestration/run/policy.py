"""What a host decides after each attempt of a frame: one set of rules for every host.

Both hosts (the ``PlanRun`` workflow and the in-process host) hand every attempt's outcome to
:func:`after_attempt` and do what it says, so a tool error, a transient failure or a lost call
ends the same way wherever the plan runs (ruling 33).

The rules (rulings 1 and 29):

* A result (``Succeeded``, ``Decided``) settles the frame.
* A failure settles the frame ``failed`` with the error's name (the exception's class name) and
  message, unless it is **transient** (a network or timeout error, or one the tool marks
  transient) and the frame may be repeated (a replay-safe call, or a reason or transform
  node, which have no side effect of their own): then the frame is tried again after a bounded,
  growing pause, up to the run's ``maximum_attempts``. An argument error (``TypeError`` from an
  unknown or missing argument) is never transient.
* A branch or select whose cell does not answer in time fails ``predicate``: the run halts
  ``predicate_unevaluatable`` (ruling 31) instead of asking the cell again.
* A **lost** attempt (it started and never reported: a start-to-close or heartbeat timeout, a
  worker that died) is indeterminate. A frame that may be repeated is tried again whatever its
  ``onIndeterminate``, up to ``maximum_attempts``; once those are spent, or for a call that is
  not replay-safe, the node's ``onIndeterminate`` decides: ``skip`` settles it skipped, ``halt``
  (and ``retry`` on an unsafe call, which freeze refuses anyway) halts the frame for an
  operator, and a spent ``retry`` fails it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from orchestration.run.engine.results import Asked, Decided, Failed, Skipped, Succeeded
from orchestration.run.messages import RetrySettings
from orchestration.types import CallNode, ErrorInfo, PlanNode, RetryReason

__all__ = [
    "Attempt",
    "Outcome",
    "Halt",
    "Lost",
    "LostBy",
    "Retry",
    "Settle",
    "Verdict",
    "PROVIDER_ERRORS",
    "after_attempt",
    "backoff_seconds",
    "lost_error",
    "repeatable",
    "retry_reason",
]

LostBy = Literal["start_to_close", "heartbeat", "unknown"]
"""What lost an attempt: its start-to-close timeout, its heartbeat timeout, or nothing the
host saw (a call found entered and unsettled when its run resumed)."""


@dataclass(frozen=True, slots=True)
class Lost:
    """An attempt that started and never reported: its outcome is unknown.

    ``detail`` is the host's own words (they differ between hosts, so nothing recorded reads
    them); ``by`` says what lost it, in the same words on every host.
    """

    detail: str
    by: LostBy = "unknown"


Outcome = Succeeded | Decided | Failed | Skipped | Lost
"""What an attempt came to that :func:`after_attempt` decides on."""

Attempt = Outcome | Asked
"""What one attempt of a frame came to (``Skipped`` only from a scripted test double;
``Asked``: a reason frame asked questions, and waits for their answers instead)."""


@dataclass(frozen=True, slots=True)
class Settle:
    """Settle the frame with this result."""

    result: Succeeded | Decided | Failed | Skipped


@dataclass(frozen=True, slots=True)
class Retry:
    """Hand the frame out again after ``delay`` seconds (``reason`` says why)."""

    delay: float
    reason: Literal["transient_error", "indeterminate"]


@dataclass(frozen=True, slots=True)
class Halt:
    """Halt the frame (``process_death``) until an operator retries, skips or aborts it."""

    detail: str


Verdict = Settle | Retry | Halt
"""What the host does next with a frame."""


def repeatable(node: PlanNode) -> bool:
    """Whether running the node again is safe: a replay-safe call, or any other kind."""
    if isinstance(node, CallNode):
        return bool(node.definition.replay_safe)
    return True


def backoff_seconds(attempt: int, retry: RetrySettings) -> float:
    """The pause before attempt ``attempt + 1``: exponential from the first, capped."""
    delay = retry.initial_interval_seconds * retry.backoff_coefficient ** max(0, attempt - 1)
    return float(min(delay, retry.maximum_interval_seconds))


def after_attempt(node: PlanNode, attempt: int, outcome: Outcome, retry: RetrySettings) -> Verdict:
    """What to do with a frame whose attempt number ``attempt`` came to ``outcome``.

    ``attempt`` counts the attempts of the frame's current round (a reason node's questions
    start a new round).
    """
    if isinstance(outcome, Succeeded | Decided | Skipped):
        return Settle(outcome)
    can_repeat = repeatable(node) and attempt < retry.maximum_attempts
    if isinstance(outcome, Failed):
        if outcome.transient and can_repeat:
            return Retry(backoff_seconds(attempt, retry), "transient_error")
        return Settle(outcome)
    if node.kind == "branch" or node.kind == "select":
        # A cell that does not answer in time is unevaluatable, not worth asking again.
        message = "the cell did not answer within its time; simplify the predicate"
        return Settle(Failed("PredicateTimeoutError", message, "predicate"))
    if can_repeat:
        return Retry(backoff_seconds(attempt, retry), "indeterminate")
    policy = node.definition.on_indeterminate if isinstance(node, CallNode) else "retry"
    if policy == "skip":
        return Settle(Skipped())
    if policy == "retry" and repeatable(node):
        # The detail (which timeout) differs between hosts; the message must not.
        return Settle(Failed("IndeterminateError", f"no outcome after {attempt} attempt(s)"))
    return Halt(outcome.detail)


PROVIDER_ERRORS = frozenset({"reasoner_unavailable", "ReasonerUnavailableError"})
"""Failure names of a model provider that failed to answer (a ``provider_error`` retry)."""

_LOST_ERRORS = {
    "start_to_close": ErrorInfo(
        name="StartToCloseTimeout",
        message="the attempt did not report within its start-to-close timeout; its outcome is "
        "unknown",
    ),
    "heartbeat": ErrorInfo(
        name="HeartbeatTimeout",
        message="the attempt stopped heartbeating past its heartbeat timeout; its outcome is "
        "unknown",
    ),
    "unknown": ErrorInfo(
        name="IndeterminateError",
        message="the attempt was found started and unsettled when the run resumed; its "
        "outcome is unknown",
    ),
}


def lost_error(lost: Lost) -> ErrorInfo:
    """What a lost attempt records as its error: the same words on every host."""
    return _LOST_ERRORS[lost.by]


def retry_reason(outcome: Attempt) -> RetryReason:
    """Why a frame is tried again after an attempt came to ``outcome`` (a failure or a loss)."""
    if isinstance(outcome, Lost):
        if outcome.by == "start_to_close":
            return "timeout"
        if outcome.by == "heartbeat":
            return "heartbeat_timeout"
        return "indeterminate"
    if isinstance(outcome, Failed) and outcome.name in PROVIDER_ERRORS:
        return "provider_error"
    return "transient_error"
