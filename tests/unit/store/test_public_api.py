"""The store package's public surface."""

from __future__ import annotations

import subprocess
import sys

import orchestration.store as store_package


def test_store_package_exports_exactly_its_public_names() -> None:
    """__all__ is pinned, and every name in it resolves."""
    assert sorted(store_package.__all__) == [
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
    for name in store_package.__all__:
        assert getattr(store_package, name) is not None


def test_importing_the_store_package_does_not_import_pytest() -> None:
    """Only asking for PlanStoreConformance loads pytest, so deployments need no test tools."""
    probe = (
        "import sys, orchestration.store as s\n"
        "assert 'pytest' not in sys.modules\n"
        "s.PlanStoreConformance\n"
        "assert 'pytest' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", probe], check=True, timeout=60)
