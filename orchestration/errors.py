"""The error tree: one root, small leaves, a stable code on each.

Every refusal the library raises carries a ``code`` that callers may branch on and a message
that names the fix. Expected precondition failures of a store (a stale revision, a plan that
is no longer editable) are *values*, not exceptions (see :mod:`orchestration.store.base`);
what remains here is misuse and input that can never be made valid.

::

    OrchestrationError                 code
    ├── ValueRefusedError              (base for bad staged values; also a ValueError)
    │   ├── UnencodableValueError      unencodable_value
    │   └── UndecodableValueError      undecodable_value
    ├── PlanNotFoundError              plan_not_found
    ├── RunNotFoundError               run_not_found
    ├── RevisionOutOfRangeError        revision_out_of_range
    ├── ConflictingOpError             conflicting_op
    └── MalformedRunLogError           malformed_run_log

``ValueRefusedError`` also derives from :class:`ValueError` so pydantic reports it inside a
``ValidationError`` when a model is built from bad input. None of these is retryable: the same
input fails the same way every time, which is what lets a Temporal activity mark them
non-retryable.
"""

from __future__ import annotations

__all__ = [
    "ConflictingOpError",
    "MalformedRunLogError",
    "OrchestrationError",
    "PlanNotFoundError",
    "RevisionOutOfRangeError",
    "RunNotFoundError",
    "UndecodableValueError",
    "UnencodableValueError",
    "ValueRefusedError",
]


class OrchestrationError(Exception):
    """Root of every error this library raises on purpose.

    Attributes:
        code: Stable identifier, safe to branch on and to show to a model.

    """

    code: str = "orchestration_error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"


class ValueRefusedError(OrchestrationError, ValueError):
    """A value outside the encodable subset, or bytes that do not decode to one.

    Attributes:
        path: Where in the value the refusal happened, as a dotted/indexed path
            (``args.headers[2]``); empty for the value itself.

    """

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(message)
        self.path = path


class UnencodableValueError(ValueRefusedError):
    """A staged value holds something the canonical encoding refuses (a function, NaN, ...)."""

    code = "unencodable_value"


class UndecodableValueError(ValueRefusedError):
    """Bytes or a tagged JSON form that do not decode to an encodable value."""

    code = "undecodable_value"


class PlanNotFoundError(OrchestrationError):
    """No plan with that id exists in the store."""

    code = "plan_not_found"


class RunNotFoundError(OrchestrationError):
    """The plan has no run, or not the run named."""

    code = "run_not_found"


class RevisionOutOfRangeError(OrchestrationError):
    """A revision outside ``[0, current]`` was asked for."""

    code = "revision_out_of_range"


class ConflictingOpError(OrchestrationError):
    """An op id already in the log arrived again with different content."""

    code = "conflicting_op"


class MalformedRunLogError(OrchestrationError):
    """A run-event list that no fold can read (empty, or not opening with ``run_started``)."""

    code = "malformed_run_log"
