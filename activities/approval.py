"""The local activity that checks an approval's signature against the worker's public keys.

Key material lives on the worker, never in workflow input: the workflow asks this activity
(as a local activity, so the check adds no task round trip) and records a refusal as
``deviation_abort``. The worker registers it, and tells the workflow to call it, only when it
is configured with keys (:func:`workers.worker.build_worker`).
"""

from __future__ import annotations

from collections.abc import Iterable

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from temporalio import activity

from orchestration.review.signing import public_keys_by_id, signature_problem
from orchestration.types import ApprovalRecord

__all__ = ["VERIFY_APPROVAL", "ApprovalVerifier"]

VERIFY_APPROVAL = "plan.verify_approval"
"""The activity's registered name."""


class ApprovalVerifier:
    """Holds the trusted public keys; its activity answers "" (verified) or the refusal."""

    def __init__(self, keys: Iterable[Ed25519PublicKey]) -> None:
        self._keys = public_keys_by_id(keys)
        if not self._keys:
            raise ValueError("an approval verifier needs at least one public key")

    @activity.defn(name=VERIFY_APPROVAL)
    async def verify(self, approval: ApprovalRecord) -> str:
        """The reason the approval is refused, or ``""`` when an allowed key signed it."""
        return signature_problem(approval, self._keys) or ""
