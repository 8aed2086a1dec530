"""The engine's two internal records: a live frame, and a partial join barrier.

They are mutable, engine-private bookkeeping; what leaves the engine is always a wire model
(``PendingFrame``, ``JoinState``), built when a snapshot first needs it and cached here so later
snapshots reuse it.

A barrier also keeps the one number ``join_unsatisfiable`` needs: how many live frames may still
arrive. A frame may arrive when its node lies in the join's region (after the fork, able to
reach the join) and its route extends the barrier's prefix (it descends from this execution of
the fork). The engine adjusts the count as frames come and go, so the check is O(open
barriers) per frame instead of a graph search per settlement.
"""

from __future__ import annotations

from orchestration.engine_events import join_state
from orchestration.engine_plan import JoinFacts
from orchestration.engine_types import Dispatch
from orchestration.routes import EdgeSegment, JoinSegment
from orchestration.tables import Table
from orchestration.types import (
    ArtifactHandle,
    FrameRef,
    JoinArrival,
    JoinState,
    NodeOutput,
    PendingFrame,
    PlanNode,
)

__all__ = ["Barrier", "Frame"]


class Frame:
    """A live frame: its identity and route key, its node, and its branch-local tables.

    Built once per frame on the engine's hottest path, so it holds plain slots and computes
    nothing it can be handed.

    Attributes:
        key: ``<nodeId>:<branchKey>``.
        bkey: The branch key alone (routes extend it, barriers test prefixes of it).
        ref: The frame reference every event about this frame shares.
        segments: The route (``ref.branch_id.segments``).
        node: The plan node; ``node_id`` its id, ``kind`` its kind.
        outputs: The branch-local value table.
        artifacts: The branch-local artifact handle table.
        pending: The ``PendingFrame`` snapshots list it as, once one has (built lazily).
        dispatch: What was handed out, once it was.
        attempt: 1, plus one per retry.
        reentry: Entered before a resume; entering it again is not a new step.

    """

    __slots__ = (
        "artifacts",
        "attempt",
        "bkey",
        "dispatch",
        "key",
        "kind",
        "node",
        "node_id",
        "outputs",
        "pending",
        "ref",
        "reentry",
        "segments",
    )

    def __init__(
        self,
        key: str,
        bkey: str,
        ref: FrameRef,
        segments: tuple[EdgeSegment | JoinSegment, ...],
        node: PlanNode,
        outputs: Table[NodeOutput],
        artifacts: Table[ArtifactHandle],
    ) -> None:
        self.key = key
        self.bkey = bkey
        self.ref = ref
        self.segments = segments
        self.node = node
        self.node_id = node.id
        self.kind = node.kind
        self.outputs = outputs
        self.artifacts = artifacts
        self.pending: PendingFrame | None = None
        self.dispatch: Dispatch | None = None
        self.attempt = 1
        self.reentry = False


class Barrier:
    """A partial barrier: its arrivals, and how many live frames may still arrive.

    Attributes:
        facts: The join's facts (fork, required, merged segment, region).
        key: The correlation key ``<join>@<branchKey of the prefix>``.
        prefix: The arriving routes truncated at the fork.
        prefix_key: That prefix's branch key.
        arrivals: What landed, in arrival order; ``bkeys`` and ``frame_keys`` run parallel.
        live: Live frames that may still arrive here.

    """

    __slots__ = (
        "_seen",
        "_state",
        "arrivals",
        "bkeys",
        "facts",
        "frame_keys",
        "key",
        "live",
        "prefix",
        "prefix_key",
    )

    def __init__(
        self,
        facts: JoinFacts,
        key: str,
        prefix: tuple[EdgeSegment | JoinSegment, ...],
        prefix_key: str,
    ) -> None:
        self.facts = facts
        self.key = key
        self.prefix = prefix
        self.prefix_key = prefix_key
        self.arrivals: list[JoinArrival] = []
        self.bkeys: list[str] = []
        self.frame_keys: list[str] = []
        self.live = 0
        self._seen: dict[tuple[str, str], None] = {}
        self._state: JoinState | None = None

    @property
    def complete(self) -> bool:
        """Whether every fork→join route has arrived."""
        return len(self.arrivals) >= self.facts.required

    def add(self, arrival: JoinArrival, bkey: str, frame_key: str) -> bool:
        """Record an arrival; a repeat of one (edge, route) pair is ignored (returns False)."""
        ident = (arrival.edge_id, bkey)
        if ident in self._seen:
            return False
        self._seen[ident] = None
        self.arrivals.append(arrival)
        self.bkeys.append(bkey)
        self.frame_keys.append(frame_key)
        self._state = None
        return True

    def state(self) -> JoinState:
        """The barrier as a ``JoinState`` (built once per change)."""
        state = self._state
        if state is None:
            state = self._state = join_state(
                self.facts.node_id, self.key, tuple(self.arrivals), self.facts.required
            )
        return state
