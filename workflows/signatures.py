"""The worker-side switch that makes ``PlanRun`` verify approval signatures, and its trace.

Whether a run verifies its approval's signature is worker configuration, not workflow input
(a starter must not be able to turn it off). The switch is an extern function the sandbox hands
to the workflow; a replay must take the same path as the run, so a replayer of a run that
verified registers the switch too. Such a run's history shows it: its first local-activity
marker is ``plan.verify_approval``.
"""

from __future__ import annotations

import json

from temporalio.client import WorkflowHistory
from temporalio.worker import (
    Interceptor,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
)

__all__ = ["APPROVAL_SIGNATURES", "SignedApprovalsOnly", "verified_signatures"]

APPROVAL_SIGNATURES = "orchestration.approval_signatures"
"""Extern function a worker with approval keys registers; its presence turns verification on."""

_VERIFY = "plan.verify_approval"


class SignedApprovalsOnly(Interceptor):
    """Tells ``PlanRun`` that this worker (or replayer) verifies approval signatures."""

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor] | None:
        """Register the switch; no workflow interception is needed beyond it."""
        input.unsafe_extern_functions[APPROVAL_SIGNATURES] = lambda: True
        return None


def verified_signatures(history: WorkflowHistory) -> bool:
    """Whether the run in ``history`` verified its approval's signature at start."""
    for event in history.events:
        if not event.HasField("marker_recorded_event_attributes"):
            continue
        data = event.marker_recorded_event_attributes.details.get("data")
        if data is None or not data.payloads:
            continue
        try:
            marker = json.loads(data.payloads[0].data)
        except ValueError:
            continue
        if isinstance(marker, dict) and marker.get("activity_type") == _VERIFY:
            return True
    return False
