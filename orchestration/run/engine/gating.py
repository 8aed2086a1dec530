"""The engine's gate records: a frame waiting for a person, and what each frame's gates did.

A gated frame does not occupy the in-flight window while it waits (it holds no worker: on
Temporal a wait is workflow state and a durable timer), and it stays live, so a barrier
downstream still counts it. What it waits with depends on the pause:

* **before a call** (``arguments``): the frame is not entered; its arguments were resolved
  once, and the run will send exactly the approved ones (or the approver's edit of them);
* **of a result** (``result``): the frame ran and its output is held, recorded with the
  request, so a resumed run never runs it again;
* **an input request** (``input``): the frame was entered and asked its resolved prompt;
* **a model's questions** (``questions``): the reason frame's attempt asked instead of
  answering; its answers become one more round of the same conversation.

Everything here is plain bookkeeping; the engine records the entries
(:mod:`orchestration.run.log`) and decides what a decision or a timeout does.
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestration.plan.gates import WaitPolicy
from orchestration.run.engine.state import Frame
from orchestration.run.log import LogGateOpen
from orchestration.types import ApprovalGate, GateOutcome

__all__ = ["GateStatus", "Waiting"]


@dataclass(slots=True)
class Waiting:
    """A frame waiting at a gate, with its open request.

    Attributes:
        frame: The frame.
        request: The open request, as recorded (what the person is shown).
        policy: Its timeout and what the timeout means.
        gate: The node's approval gate (for an approval): ``autonomous``, ``editable``.

    """

    frame: Frame
    request: LogGateOpen
    policy: WaitPolicy
    gate: ApprovalGate | None = None

    @property
    def key(self) -> str:
        """The frame's key (its ``ident``)."""
        return self.frame.ident

    @property
    def deadline(self) -> str | None:
        """When the open request times out."""
        return self.request.deadline


@dataclass(frozen=True, slots=True)
class GateStatus:
    """What a frame's gates stand at, for deciding whether a decision applies.

    Attributes:
        waiting: The frame's open request, when one is open and the run is not ending.
        request: The number of its last request (0: it never met a gate).
        outcome: How its last request closed (``None`` while open or when there is none).

    """

    waiting: Waiting | None
    request: int
    outcome: GateOutcome | None
