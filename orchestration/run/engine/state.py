"""The engine's two internal records: a live frame, and a partial join barrier.

They are mutable, engine-private bookkeeping; what leaves the engine is always a compact log
entry (:mod:`orchestration.run.log`).

A barrier also keeps the one number ``join_unsatisfiable`` needs: how many live frames may still
arrive. A frame may arrive when its node lies in the join's region (after the fork, able to
reach the join) and its route extends the barrier's prefix (it descends from this execution of
the fork). The engine adjusts the count as frames come and go, so the check is O(open
barriers) per frame instead of a graph search per settlement.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from orchestration.run.budgets import Spend
from orchestration.run.engine.compiled import JoinFacts
from orchestration.run.engine.results import Dispatch
from orchestration.run.log import AskedRound
from orchestration.run.routes import Route
from orchestration.run.tables import FrameTable
from orchestration.types import ArtifactHandle, OutputItem, PlanNode

if TYPE_CHECKING:  # batching reads this module's frames: a type only, not an import cycle
    from orchestration.run.batching import BatchResult

__all__ = ["Barrier", "Frame", "ItemRun", "Items", "LoopRun", "MapRun"]

Items = tuple[OutputItem, ...]
"""A settled frame's output, as the engine's tables hold it."""


class Frame:
    """A live frame: its number and route, its node, and its branch-local tables.

    Built once per frame on the engine's hottest path, so it holds plain slots and computes
    nothing it can be handed.

    Attributes:
        number: Its number in the compact log (creation order; the entry's frame is 0).
        route: Its interned route (parent pointer plus one segment).
        ident: Its name (``Route.ident``): the contract key when short.
        node: The plan node; ``node_id`` its id, ``kind`` its kind.
        via: The edge that produced it (``None`` for the entry).
        outputs: The branch-local table of output items, by frame number.
        artifacts: The branch-local table of artifact handles, by frame number.
        dispatch: What was handed out, once it was.
        attempt: 1, plus one per retry (and per round of a reason node's questions).
        reentry: Entered before (a resume, a round of questions); entering it again is not
            a new step.
        spend: What its attempts spent (``None`` until one ended), for its node's budget.
        started: When its first attempt started (``None`` until then), for its wall time.
        entered_at: When it was last entered (a resumed frame's lost attempt started then).
        approved: A call's arguments as approved at its gate (``None``: not yet approved, or
            no gate before it); what it sends.
        rounds: A reason frame's answered rounds of questions, in order.
        tries_before: Attempts spent before the current round of questions (the retry budget
            counts from there).
        item: The innermost map item (or loop round) it runs for (``None`` outside every
            body).
        check: For a loop round's ``until`` check, the loop's run (``None`` otherwise).

    """

    __slots__ = (
        "approved",
        "artifacts",
        "attempt",
        "check",
        "dispatch",
        "entered_at",
        "ident",
        "item",
        "kind",
        "node",
        "node_id",
        "number",
        "outputs",
        "reentry",
        "rounds",
        "route",
        "spend",
        "started",
        "tries_before",
        "via",
    )

    def __init__(
        self,
        number: int,
        route: Route,
        node: PlanNode,
        via: str | None,
        outputs: FrameTable[Items],
        artifacts: FrameTable[ArtifactHandle],
    ) -> None:
        self.number = number
        self.route = route
        self.node = node
        self.node_id = node_id = node.id
        self.kind = node.kind
        self.via = via
        self.ident = route.ident(node_id)
        self.outputs = outputs
        self.artifacts = artifacts
        self.dispatch: Dispatch | None = None
        self.attempt = 1
        self.reentry = False
        self.spend: Spend | None = None
        self.started: str | None = None
        self.entered_at: str | None = None
        self.approved: Mapping[str, Any] | None = None
        self.rounds: tuple[AskedRound, ...] = ()
        self.tries_before = 0
        self.item: ItemRun | None = None
        self.check: LoopRun | None = None


class Barrier:
    """A partial barrier: its arrivals, and how many live frames may still arrive.

    Attributes:
        facts: The join's facts (fork, required, merged segment, region).
        key: ``(join id, fork frame number)``: one barrier per execution of the fork.
        prefix: The fork frame's route (the arriving routes truncated at the fork).
        arrivals: The arrival frames, in arrival order.
        live: Live frames that may still arrive here.

    """

    __slots__ = ("_seen", "arrivals", "facts", "key", "live", "prefix")

    def __init__(self, facts: JoinFacts, prefix: Route) -> None:
        self.facts = facts
        self.prefix = prefix
        self.key = (facts.node_id, prefix.frame)
        self.arrivals: list[Frame] = []
        self.live = 0
        self._seen: set[tuple[str | None, int]] = set()

    @property
    def complete(self) -> bool:
        """Whether enough fork→join routes have arrived: all of them, or the join's quorum."""
        return len(self.arrivals) >= self.facts.needed

    def add(self, arrival: Frame) -> bool:
        """Record an arrival; a repeat of one (edge, route) pair is ignored (returns False)."""
        ident = (arrival.via, arrival.route.parent.frame if arrival.route.parent else -1)
        if ident in self._seen:
            return False
        self._seen.add(ident)
        self.arrivals.append(arrival)
        return True


class MapRun:
    """One run of a map node: its frame (entered, settled once every item ran) and its items.

    Attributes:
        head: The map's frame (live while the items run).
        values: The list being mapped, one entry per item.
        next: The index of the next item to start.
        active: Items started and not yet finished.
        limit: How many items may run at once.
        results: Each finished item's result row, by index.
        failed: How many items failed so far.
        model: Whether the list traces back to a model (its items inherit it).
        starting: Set while items are being started (a finishing item then only records).
        first: The index of ``values[0]`` (a batch's sub-run maps a slice of the list).
        batches: For a map whose items run in batches, each batch's ``(first, end)`` indexes;
            ``None`` when the items run here.
        next_batch: The next batch to start; ``taken`` the next whose result to record (in
            batch order); ``returned`` the results that came back before their turn.

    """

    __slots__ = (
        "active",
        "batches",
        "failed",
        "first",
        "head",
        "limit",
        "model",
        "next",
        "next_batch",
        "results",
        "returned",
        "starting",
        "taken",
        "values",
    )

    def __init__(self, head: Frame, values: list[object], limit: int, first: int = 0) -> None:
        self.head = head
        self.values = values
        self.limit = limit
        self.first = first
        self.next = first
        self.active = 0
        self.failed = 0
        self.results: dict[int, dict[str, object]] = {}
        self.model: bool | None = None
        self.starting = False
        self.batches: list[tuple[int, int]] | None = None
        self.next_batch = 0
        self.taken = 0
        self.returned: dict[int, tuple[str, BatchResult]] = {}

    @property
    def end(self) -> int:
        """One past the index of the last item this run maps."""
        return self.first + len(self.values)


class LoopRun(MapRun):
    """One run of a loop node: a map run whose items are rounds, started one at a time.

    Attributes:
        rounds: Each finished round's result, by index.
        fingerprint: The digest of the watched output after the round before (``None``
            before the first round, or when it was missing).

    """

    __slots__ = ("fingerprint", "rounds")

    def __init__(self, head: Frame) -> None:
        super().__init__(head, [], 1)
        self.rounds: list[object] = []
        self.fingerprint: str | None = None


class ItemRun:
    """One item of a map's run (a round of a loop's): its live frames, and how it ends.

    Attributes:
        map: The map run it belongs to; ``index`` its position in the list.
        live: Live frames of the body running for it (parked join arrivals excluded).
        result: The output of the last body frame that settled ``ok`` with no edge to fire.
        error: The first unhandled failure in its body, ``{node, name, message}``.
        last: That frame (the item's own frame until one settled), whose route and tables a
            loop's ``until`` check extends.
        outputs: ``last``'s tables after it settled.

    """

    __slots__ = ("artifacts", "error", "index", "last", "live", "map", "outputs", "result")

    def __init__(
        self,
        map_run: MapRun,
        index: int,
        last: Frame,
        outputs: FrameTable[Items],
        artifacts: FrameTable[ArtifactHandle],
    ) -> None:
        self.map = map_run
        self.index = index
        self.live = 0
        self.result: object = None
        self.error: dict[str, str] | None = None
        self.last = last
        self.outputs = outputs
        self.artifacts = artifacts
