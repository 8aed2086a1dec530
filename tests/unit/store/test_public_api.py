"""The store package's public surface."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

import orchestration.store as store_package
from orchestration.store import MemoryPlanStore, PlanStore, SqlitePlanStore
from orchestration.store.postgres import PostgresPlanStore

PROTOCOL_METHODS = sorted(
    name for name in vars(PlanStore) if inspect.iscoroutinefunction(getattr(PlanStore, name))
)


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


@pytest.mark.parametrize("store", [MemoryPlanStore, SqlitePlanStore, PostgresPlanStore])
def test_each_store_implements_the_protocol_and_shows_its_contract(store: type) -> None:
    """Every PlanStore method is an override whose help is the protocol's, or the store's own."""
    assert issubclass(store, PlanStore)
    for name in PROTOCOL_METHODS:
        method = getattr(store, name)
        assert getattr(method, "__override__", False), f"{store.__name__}.{name}"
        contract = inspect.getdoc(getattr(PlanStore, name))
        assert method.__doc__ is None or inspect.getdoc(method) != contract, name
        assert inspect.getdoc(method)
