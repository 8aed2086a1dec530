"""Plan stores: the ``PlanStore`` protocol, its result values, and the bundled stores.

``PlanStoreConformance`` is resolved on first access, so importing this package never imports
pytest: only a test suite that asks for the conformance suite needs it installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import (
    AppendOk,
    AppendRefused,
    AppendResult,
    ClaimOk,
    ClaimRefused,
    ClaimRunResult,
    CreateOk,
    CreateRefused,
    CreateResult,
    PlanStateRecord,
    PlanStore,
    RevisionState,
    RunOutcomeFilter,
    RunRecord,
    StateDigest,
    TransitionOk,
    TransitionRefused,
    TransitionRequest,
    TransitionResult,
)
from .memory import MemoryPlanStore
from .sqlite import SqlitePlanStore

if TYPE_CHECKING:
    from .conformance import PlanStoreConformance

__all__ = [
    "AppendOk",
    "AppendRefused",
    "AppendResult",
    "ClaimOk",
    "ClaimRefused",
    "ClaimRunResult",
    "CreateOk",
    "CreateRefused",
    "CreateResult",
    "MemoryPlanStore",
    "PlanStateRecord",
    "PlanStore",
    "PlanStoreConformance",
    "RevisionState",
    "RunOutcomeFilter",
    "RunRecord",
    "SqlitePlanStore",
    "StateDigest",
    "TransitionOk",
    "TransitionRefused",
    "TransitionRequest",
    "TransitionResult",
]


def __getattr__(name: str) -> object:
    if name == "PlanStoreConformance":
        from .conformance import PlanStoreConformance

        return PlanStoreConformance
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
