"""The in-memory store against the shared conformance suite."""

from __future__ import annotations

from pathlib import Path

from orchestration.store import MemoryPlanStore, PlanStore, PlanStoreConformance


class TestMemoryPlanStore(PlanStoreConformance):
    async def make_store(self, tmp_path: Path) -> PlanStore:
        return MemoryPlanStore()
