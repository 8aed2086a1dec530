"""The run's own local activities on the plan store: the claim, and the log's mirror.

They run in the worker that runs the workflow (local activities: no task-queue round trip, and
their results, not their inputs, are recorded in history), against the worker's plan store:

* ``plan.claim`` wins (or is refused) the plan's one run for this execution chain (ruling
  30): a second execution of the same plan, under any workflow id or reuse policy, loses here
  before any node is entered. A resume claims with ``resume`` (ruling 28).
* ``plan.mirror`` writes log entries into the store from a global position; it is idempotent
  by position, so a retried local activity writes nothing twice, and what a lost workflow
  task mirrored is replaced by what its retry mirrors (the store's ``replace_tail``).
* ``plan.fast_tools`` names the tools this worker runs on the fast path (local activities for
  replay-safe calls of short tools); recorded in history, so a replay takes the same path
  whatever the replaying process is configured with.
"""

from __future__ import annotations

from collections.abc import Collection

from temporalio import activity

from orchestration.run.messages import ClaimRequest, ClaimResponse, MirrorRequest
from orchestration.store.base import ClaimOk, PlanStore

__all__ = ["RunStoreActivities"]


class RunStoreActivities:
    """The claim, mirror and fast-tools activities over one worker's plan store and toolbox."""

    def __init__(self, store: PlanStore, *, fast_tools: Collection[str] = ()) -> None:
        self.store = store
        self.fast = tuple(sorted(set(fast_tools)))

    @activity.defn(name="plan.fast_tools")
    async def fast_tools(self) -> list[str]:
        """The tools whose replay-safe calls this worker runs as local activities."""
        return list(self.fast)

    @activity.defn(name="plan.claim")
    async def claim(self, request: ClaimRequest) -> ClaimResponse:
        """Claim the plan's run for this execution (``ok`` or the refusal's reason)."""
        answer = await self.store.claim_run(
            request.plan_id,
            request.digest,
            request.run_id,
            execution=request.execution,
            resume=request.resume,
        )
        if isinstance(answer, ClaimOk):
            return ClaimResponse(ok=True, log_length=answer.log_length)
        return ClaimResponse(
            ok=False, reason=answer.reason, existing_run_id=answer.existing_run_id
        )

    @activity.defn(name="plan.mirror")
    async def mirror(self, request: MirrorRequest) -> int:
        """Write the entries from ``start``; returns the stored log's length.

        The workflow's history is the log, so the mirror replaces what differs
        (``replace_tail``): entries an earlier try of the same workflow task wrote before the
        task was lost, stamped with that try's times.
        """
        return await self.store.append_run_log(
            request.plan_id, request.run_id, request.start, request.entries, replace_tail=True
        )
