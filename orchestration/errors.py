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
    ├── RunLogConflictError            run_log_conflict
    ├── RevisionOutOfRangeError        revision_out_of_range
    ├── ConflictingOpError             conflicting_op
    ├── MalformedRunLogError           malformed_run_log
    ├── InvalidListingError            invalid_listing
    ├── InvalidRunInputError           invalid_run_input
    ├── UnrunnablePlanError            unrunnable_plan
    ├── EngineStateError               engine_state
    ├── RunRefusedError                (code per refusal: not_executable, run_already_claimed,
    │                                   run_already_settled, invalid_run_input, ...)
    ├── GateRefusedError               (code per refusal: gate_not_open, gate_already_decided,
    │                                   invalid_response, stale_arguments, edit_not_allowed,
    │                                   answer_required, not_an_input_gate, invalid_arguments)
    ├── CellUnavailableError           E_ORCH_CELL_UNAVAILABLE
    ├── ArtifactError                  (base for reading artifacts)
    │   ├── NoReaderResolverError      E_NO_READER_RESOLVER
    │   ├── UnknownArtifactClassError  unknown_artifact_class
    │   ├── ArtifactUnreadableError    artifact_unreadable
    │   └── ArtifactMethodError        artifact_method_failed
    ├── TransformError                 (code per refusal: transform_unknown_step,
    │                                   transform_step_args, transform_step_failed,
    │                                   transform_emit)
    └── ReasonerError                  (base for a model provider's failures)
        ├── ReasonerUnavailableError   reasoner_unavailable  (retryable: 429, 5xx, network)
        └── ReasonerRejectedError      reasoner_rejected     (the provider refused the request)
            └── ContextWindowExceededError  context_window_exceeded  (the request is larger
                                            than the model's context: final for the frame)

``ValueRefusedError`` also derives from :class:`ValueError` so pydantic reports it inside a
``ValidationError`` when a model is built from bad input. None of these is retryable (the same
input fails the same way every time, which is what lets a Temporal activity mark them
non-retryable) except :class:`ReasonerUnavailableError`, whose ``retryable`` says so: a
provider that is overloaded now may answer later.
"""

from __future__ import annotations

__all__ = [
    "ArtifactError",
    "ArtifactMethodError",
    "ArtifactUnreadableError",
    "CellUnavailableError",
    "ConflictingOpError",
    "ContextWindowExceededError",
    "EngineStateError",
    "GateRefusedError",
    "InvalidListingError",
    "InvalidRunInputError",
    "MalformedRunLogError",
    "NoReaderResolverError",
    "OrchestrationError",
    "PlanNotFoundError",
    "ReasonerError",
    "ReasonerRejectedError",
    "ReasonerUnavailableError",
    "RevisionOutOfRangeError",
    "RunRefusedError",
    "RunLogConflictError",
    "RunNotFoundError",
    "TransformError",
    "UndecodableValueError",
    "UnknownArtifactClassError",
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


class RunLogConflictError(OrchestrationError):
    """A run-log write or read at positions that do not fit the stored log.

    The log is written by position so that a retried mirror of it is harmless: a position the
    store already holds must hold the same entry. A different entry there (two writers with two
    histories of one run), a write that would leave a gap, or a negative position is refused
    whole, and nothing is written.
    """

    code = "run_log_conflict"


class RevisionOutOfRangeError(OrchestrationError):
    """A revision outside ``[0, current]`` was asked for."""

    code = "revision_out_of_range"


class ConflictingOpError(OrchestrationError):
    """An op id already in the log arrived again with different content."""

    code = "conflicting_op"


class MalformedRunLogError(OrchestrationError):
    """A run-event list that no fold can read (empty, or not opening with ``run_started``)."""

    code = "malformed_run_log"


class InvalidListingError(OrchestrationError):
    """A store listing asked for a page it cannot give.

    A negative ``limit``, an outcome filter that is not a run's, or an ``after`` cursor that
    names no plan of the store (for runs: no plan with a run). A cursor is the id of the last
    plan of the previous page, and plans are never deleted, so a cursor the store handed out
    stays valid.
    """

    code = "invalid_listing"


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


class GateRefusedError(OrchestrationError):
    """A decision on a gate was refused: it never reaches the run (nor its history).

    Attributes:
        code: Why: ``gate_not_open`` (no such request), ``gate_already_decided`` (a second
            decision), ``invalid_response`` (it does not fit the schema), ``stale_arguments``
            (the arguments shown are not the ones waiting), ``edit_not_allowed`` /
            ``invalid_arguments`` (an edit the plan does not allow, or the tool does not take),
            ``answer_required`` (an input request is answered, not approved),
            ``not_an_input_gate`` (an approval is decided, not answered).

    A decision that merely no longer applies is not refused: it is answered as skipped.
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class CellUnavailableError(OrchestrationError):
    """A predicate cell's optional package is not installed (or failed to import).

    Raised by the cell's ``load()``, so a deployment that wires a cell it cannot run fails at
    construction, naming the package and the command that installs it.
    """

    code = "E_ORCH_CELL_UNAVAILABLE"

    def __init__(self, cell_id: str, install: str, cause: str) -> None:
        super().__init__(
            f"orchestration cell '{cell_id}' is unavailable: its optional package could not be "
            f"loaded. Install it with: {install}. Underlying error: {cause}"
        )
        self.cell_id = cell_id
        self.install = install


class ArtifactError(OrchestrationError):
    """An artifact could not be opened or read."""

    code = "artifact_error"


class NoReaderResolverError(ArtifactError):
    """A handle's ``tag`` has no registered reader resolver, so its bytes cannot be reached.

    A durable spool's resolver must be registered on every worker that may read its handles:
    registering it is what makes a resumed transform work, not optional hygiene.

    Attributes:
        tag: The tag no resolver is registered for.

    """

    code = "E_NO_READER_RESOLVER"

    def __init__(self, tag: str, registered: tuple[str, ...] = ()) -> None:
        known = ", ".join(f"'{t}'" for t in registered) or "(none)"
        super().__init__(
            f"no reader resolver is registered for artifact tag '{tag}' (registered: {known}); "
            f"register the resolver of the store that wrote it on this worker"
        )
        self.tag = tag


class UnknownArtifactClassError(ArtifactError):
    """A handle names an artifact class this process has not registered."""

    code = "unknown_artifact_class"


class ArtifactUnreadableError(ArtifactError):
    """The resolver was found but the bytes behind the locator could not be read."""

    code = "artifact_unreadable"


class ArtifactMethodError(ArtifactError):
    """An artifact method could not produce a result (bad JSON, a path that does not parse...)."""

    code = "artifact_method_failed"


class TransformError(OrchestrationError):
    """A transform step or its emit could not be applied.

    Attributes:
        code: ``transform_unknown_step``, ``transform_step_args``, ``transform_step_failed``
            or ``transform_emit``.

    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class ReasonerError(OrchestrationError):
    """A model provider failed to answer a reasoning turn.

    Attributes:
        retryable: Whether asking again later may succeed.
        status: The provider's HTTP status, when there was one.

    """

    code = "reasoner_error"
    retryable = False

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ReasonerUnavailableError(ReasonerError):
    """The provider is overloaded, rate limiting, failing (5xx) or unreachable."""

    code = "reasoner_unavailable"
    retryable = True


class ReasonerRejectedError(ReasonerError):
    """The provider refused the request itself (bad key, unknown model, malformed request)."""

    code = "reasoner_rejected"


class ContextWindowExceededError(ReasonerRejectedError):
    """The request is larger than the model's context window.

    Final for the frame that sent it (seed 002's ``context-window-exceeded``): the next turn of
    the same frame sends the same prompt and transcript, or more, so it can only fail again.
    """

    code = "context_window_exceeded"
