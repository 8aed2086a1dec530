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
    ├── MalformedRunLogError           malformed_run_log
    ├── InvalidRunInputError           invalid_run_input
    ├── UnrunnablePlanError            unrunnable_plan
    ├── EngineStateError               engine_state
    └── RunRefusedError                (code per refusal: not_executable, run_already_claimed,
                                        run_already_settled, invalid_run_input, ...)

``ValueRefusedError`` also derives from :class:`ValueError` so pydantic reports it inside a
``ValidationError`` when a model is built from bad input. None of these is retryable: the same
input fails the same way every time, which is what lets a Temporal activity mark them
non-retryable.
"""

from __future__ import annotations

__all__ = [
    "ConflictingOpError",
    "EngineStateError",
    "InvalidRunInputError",
    "MalformedRunLogError",
    "OrchestrationError",
    "PlanNotFoundError",
    "RevisionOutOfRangeError",
    "RunRefusedError",
    "RunNotFoundError",
    "UndecodableValueError",
    "UnrunnablePlanError",
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


class InvalidRunInputError(OrchestrationError):
    """A run's input does not satisfy the entry node's declared fields.

    Raised before anything is recorded, so a refused input never leaves a started run behind.

    Attributes:
        problems: One model-addressed sentence per field at fault, each naming the fix.

    """

    code = "invalid_run_input"

    def __init__(self, message: str, problems: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.problems = problems


class UnrunnablePlanError(OrchestrationError):
    """A plan view the engine cannot walk: no single entry, a dangling edge, or a cycle.

    Freeze refuses all of these; the engine re-checks only what it needs to stay total.
    """

    code = "unrunnable_plan"


class EngineStateError(OrchestrationError):
    """An engine call its state does not admit.

    Settling a frame that is not in flight, acting on a settled run, or handing back a result of
    the wrong kind for the frame's node: a bug in the host that drives the engine, never a
    property of the plan.
    """

    code = "engine_state"


class RunRefusedError(OrchestrationError):
    """Starting (or attaching to) a plan's run was refused before anything ran.

    Raised before the run is claimed whenever the refusal does not depend on the claim, so a
    refused start leaves the plan runnable.

    Attributes:
        code: Why: ``not_executable``, ``approval_missing``, ``invalid_run_input``,
            ``run_already_claimed``, ``run_already_settled``, ``run_not_found``,
            ``digest_mismatch``.
        existing_run_id: The plan's run id, when it already has one.
    """

    def __init__(self, code: str, message: str, existing_run_id: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.existing_run_id = existing_run_id
