"""What a run carries across continue-as-new: its frontier, each value once, and nothing else.

A continued execution must be able to go on from where the last one stopped, with no history of
its own. The engine's state at that point is its frontier: the live frames (each with its
route and its branch-local tables) and the open barriers. :class:`Checkpoint` holds exactly
that, in a size that does not grow with how long the run has been going:

* **Routes once, packed.** Every route the frontier needs (live frames, parked arrivals, fork
  frames, the producers of carried outputs) is one record ``(frame, parent frame, segment)``
  where the segment is the index of an edge or a join in the plan; the records are varints
  in base64, a few bytes each whatever the ids, and shared ancestors appear once.
* **Only outputs that can still be read.** A table entry is carried only when some node the
  frontier can still reach may read it: a reference in its arguments, prompt or transform
  source, or a structured predicate's path. A node whose cell reads outputs it does not name
  (any cell but the structured one) keeps every entry. So a long chain carries the few
  outputs its remaining nodes name, not everything it produced.
* **Tables by reference.** Live frames that share a table (every frame of a fan-out) point to
  one carried table.

* **Open gates.** A frame waiting for a person carries its open request as recorded (what was
  asked, its deadline), so the continued execution waits at the same request; a call approved
  before it ran carries its approved arguments, and a reason frame its rounds of questions.
  Every gated frame's last request number and outcome travel too, so a decision that comes
  late is still told it no longer applies.

The plan itself is not carried: the continued execution loads it by id and digest.

Also carried, additively (absent from the wire form when empty, so an older checkpoint reads
unchanged): what the run's attempts spent on models (``spent``, so its token and cost budgets
hold across executions), and for each carried output whether it traces back to a model
(``model``; absent reads as unknown, which provenance takes as a model's: fail-closed).
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import Field

from orchestration.errors import MalformedRunLogError
from orchestration.plan.encoding import NodeRef
from orchestration.plan.graph import reachable
from orchestration.plan.references import reference_sites
from orchestration.predicates.structured import (
    AllOf,
    AnyOf,
    Leaf,
    Not,
    StructuredPredicate,
    parse_structured_predicate,
)
from orchestration.run.budgets import Spend
from orchestration.run.engine.builders import edge_segment
from orchestration.run.engine.compiled import CompiledPlan
from orchestration.run.engine.gating import Waiting
from orchestration.run.engine.state import Barrier, Frame, Items
from orchestration.run.log import AskedRound, LogGateOpen
from orchestration.run.restore import RestoredGate, RestoredRun
from orchestration.run.routes import Route, edge_token, segments_key
from orchestration.run.tables import FrameTable
from orchestration.types import (
    ArtifactHandle,
    BranchNode,
    GateOutcome,
    OutputItem,
    PlanNode,
    SelectNode,
    UsageTotals,
    ValueMap,
    WireModel,
)

__all__ = ["Checkpoint", "make_checkpoint", "readable_nodes", "restore_checkpoint"]


class CarriedOutput(WireModel):
    """One output a frontier table holds: the producing frame and its items."""

    frame: int
    items: tuple[OutputItem, ...]
    model: bool | None = Field(default=None, exclude_if=lambda v: v is None)
    """Whether the output traces back to a model (``None``: not known)."""


class CarriedArtifact(WireModel):
    """One artifact handle a frontier table holds."""

    frame: int
    handle: ArtifactHandle
    model: bool | None = Field(default=None, exclude_if=lambda v: v is None)
    """Whether its producer's output traces back to a model (``None``: not known)."""


class CarriedGate(WireModel):
    """A frontier frame's gates: the request it waits at, what was approved, its rounds."""

    open: LogGateOpen | None = None
    approved: ValueMap | None = None
    rounds: tuple[AskedRound, ...] = ()
    tries_before: int = 0
    attempt: int = 0


class CarriedHistory(WireModel):
    """A gated frame's last request and how it closed (``None``: it is open)."""

    key: str
    request: int
    outcome: GateOutcome | None = None


class CarriedFrame(WireModel):
    """A frontier frame: its number, its tables (indexes into ``Checkpoint.tables``)."""

    frame: int
    outputs: int
    artifacts: int
    reentry: bool = False
    gate: CarriedGate | None = None


class CarriedBarrier(WireModel):
    """An open barrier: its join, fork frame, required count and arrivals in order."""

    node: str
    fork: int
    required: int
    arrivals: tuple[CarriedFrame, ...]


class Checkpoint(WireModel):
    """A run's frontier for a continued execution (see the module docstring).

    Attributes:
        run_id: The run's id; ``digest`` the plan digest it runs against.
        next_frame: The number the next new frame gets.
        steps: Node entries so far.
        routes: The packed route records.
        outputs: Every output a carried table holds, once.
        artifacts: Every artifact handle a carried table holds, once.
        tables: Each distinct carried table, as the frame numbers of its entries.
        frames: The live frames, in creation order.
        barriers: The open barriers, in the order they opened.
        spent: What the run's attempts spent on models so far (absent: nothing).
        node_spent: The same per node id (bounded by the plan's size).
        gate_history: Every gated frame's last request and how it closed.

    """

    run_id: str
    digest: str
    next_frame: int
    steps: int
    routes: str
    outputs: tuple[CarriedOutput, ...] = ()
    artifacts: tuple[CarriedArtifact, ...] = ()
    tables: tuple[tuple[int, ...], ...] = ()
    frames: tuple[CarriedFrame, ...] = ()
    barriers: tuple[CarriedBarrier, ...] = ()
    spent: UsageTotals | None = Field(default=None, exclude_if=lambda v: v is None)
    node_spent: dict[str, UsageTotals] = Field(default_factory=dict, exclude_if=lambda v: not v)
    gate_history: tuple[CarriedHistory, ...] = ()


# -- what may still be read --------------------------------------------------------------------


def _leaf_paths(predicate: StructuredPredicate, out: list[str]) -> None:
    if isinstance(predicate, Leaf):
        out.append(predicate.path)
    elif isinstance(predicate, AllOf | AnyOf):
        for member in predicate.members:
            _leaf_paths(member, out)
    elif isinstance(predicate, Not):
        _leaf_paths(predicate.member, out)


def _path_head(path: str) -> str | None:
    """The node a structured path reads: ``node:branchKey.field`` or ``node.field``."""
    if not path:
        return None
    cut = path.find(":")
    if cut > 0:
        return path[:cut]
    head = path.split(".", 1)[0]
    return head or None


def _predicate_reads(node: BranchNode | SelectNode) -> set[str] | None:
    """The nodes a structured predicate names, or ``None`` when it may read any."""
    definition = node.definition
    if definition.evaluator != "structured":
        return None
    trees: list[Any] = []
    if isinstance(node, SelectNode) and isinstance(definition.predicate, dict):
        trees.extend(definition.predicate.values())
    else:
        trees.append(definition.predicate)
    paths: list[str] = []
    for tree in trees:
        try:
            _leaf_paths(parse_structured_predicate(tree), paths)
        except Exception:  # noqa: BLE001 - an unparsable predicate may read anything
            return None
    heads: set[str] = set()
    for path in paths:
        head = _path_head(path)
        if head is None:
            return None
        heads.add(head)
    return heads


def node_reads(node: PlanNode) -> set[str] | None:
    """The nodes whose outputs ``node`` may read, or ``None`` when it may read any."""
    if isinstance(node, BranchNode | SelectNode):
        return _predicate_reads(node)
    return {site.ref.node for site in reference_sites(node) if isinstance(site.ref, NodeRef)}


def readable_nodes(plan: CompiledPlan, from_nodes: Iterable[str]) -> set[str] | None:
    """Nodes whose outputs a frame on ``from_nodes`` or after may still read (``None``: any)."""
    graph = plan.graph
    roots = [graph.index[n] for n in from_nodes if n in graph.index]
    seen = reachable(graph, roots)
    needed: set[str] = set()
    for index, hit in enumerate(seen):
        if not hit:
            continue
        reads = node_reads(plan.nodes[graph.ids[index]])
        if reads is None:
            return None
        needed |= reads
    return needed


# -- packing routes ----------------------------------------------------------------------------


def _varints(values: Iterable[int]) -> bytes:
    out = bytearray()
    for value in values:
        while True:
            byte = value & 0x7F
            value >>= 7
            if value:
                out.append(byte | 0x80)
            else:
                out.append(byte)
                break
    return bytes(out)


def _read_varints(data: bytes) -> list[int]:
    values: list[int] = []
    value = shift = 0
    for byte in data:
        value |= (byte & 0x7F) << shift
        if byte & 0x80:
            shift += 7
        else:
            values.append(value)
            value = shift = 0
    if shift:
        raise MalformedRunLogError("a checkpoint's packed routes end mid-number")
    return values


def _segment_code(plan: CompiledPlan, route: Route) -> int:
    segment = route.segment
    if segment is None:
        return 0
    if hasattr(segment, "edge"):
        return plan.edge_index[segment.edge] * 2 + 2
    return plan.node_index[route.node] * 2 + 3


def _pack_routes(plan: CompiledPlan, routes: Iterable[Route]) -> str:
    """Records ``(number delta, number - parent, segment code)`` for every route and ancestor."""
    known: dict[int, Route] = {}
    for route in routes:
        walk: Route | None = route
        while walk is not None and walk.frame not in known:
            known[walk.frame] = walk
            walk = walk.parent
    values: list[int] = []
    previous = 0
    for number in sorted(known):
        route = known[number]
        parent = route.parent
        values += [
            number - previous,
            0 if parent is None else number - parent.frame,
            _segment_code(plan, route),
        ]
        previous = number
    return base64.b64encode(_varints(values)).decode("ascii")


def _unpack_routes(plan: CompiledPlan, packed: str) -> dict[int, Route]:
    values = _read_varints(base64.b64decode(packed))
    if len(values) % 3:
        raise MalformedRunLogError("a checkpoint's packed routes are not whole records")
    routes: dict[int, Route] = {}
    edges, nodes = plan.view.edges, plan.view.nodes
    number = 0
    for i in range(0, len(values), 3):
        number += values[i]
        back, code = values[i + 1], values[i + 2]
        if back == 0:
            routes[number] = Route.root(plan.entry.id, number)
            continue
        parent = routes.get(number - back)
        if parent is None or code < 2:
            raise MalformedRunLogError(f"checkpoint route {number} names no known parent")
        if code % 2 == 0:
            edge = edges[(code - 2) // 2]
            routes[number] = parent.child(
                edge_segment(edge.id), edge_token(edge.id), edge.to, number
            )
        else:
            join = nodes[(code - 3) // 2].id
            segment = plan.join(join).segment
            routes[number] = parent.child(segment, segments_key((segment,)), join, number)
    return routes


# -- making and restoring ----------------------------------------------------------------------


def make_checkpoint(
    plan: CompiledPlan,
    *,
    run_id: str,
    digest: str,
    next_frame: int,
    steps: int,
    frames: list[Frame],
    barriers: list[Barrier],
    spent: UsageTotals | None = None,
    node_spent: dict[str, UsageTotals] | None = None,
    waiting: Mapping[str, Waiting] | None = None,
    gate_history: Mapping[str, tuple[int, GateOutcome | None]] | None = None,
    needed: frozenset[str] | None = None,
) -> Checkpoint:
    """The checkpoint of a frontier with nothing in flight (see the module docstring).

    ``needed`` limits the outputs carried to those nodes' (a map's batch carries what its body
    reads); without it, every output a frame from the frontier on may read is carried.
    """
    waits = waiting or {}
    if needed is None:
        starts = [f.node_id for f in frames] + [b.facts.node_id for b in barriers]
        readable = readable_nodes(plan, starts)
        needed = None if readable is None else frozenset(readable)
    tables: list[tuple[int, ...]] = []
    table_index: dict[tuple[int, ...], int] = {}
    seen_tables: dict[int, int] = {}
    outputs: dict[int, CarriedOutput] = {}
    artifacts: dict[int, CarriedArtifact] = {}
    routes: list[Route] = []

    def carry(table: FrameTable[Any], values: dict[int, Any], artifact: bool) -> int:
        known = seen_tables.get(id(table))
        if known is not None:
            return known
        kept: list[int] = []
        for number, entry in table.entries():
            if needed is not None and entry.node not in needed:
                continue
            kept.append(number)
            if number not in values:
                routes.append(entry.route)
                model = entry.route.model
                values[number] = (
                    CarriedArtifact(frame=number, handle=entry.value, model=model)
                    if artifact
                    else CarriedOutput(frame=number, items=entry.value, model=model)
                )
        key = tuple(kept)
        index = table_index.get(key)
        if index is None:
            index = table_index[key] = len(tables)
            tables.append(key)
        seen_tables[id(table)] = index
        return index

    def carried(frame: Frame) -> CarriedFrame:
        routes.append(frame.route)
        gate: CarriedGate | None = None
        parked = waits.get(frame.ident)
        if parked is not None or frame.approved is not None or frame.rounds:
            gate = CarriedGate(
                open=parked.request if parked is not None else None,
                approved=None if frame.approved is None else dict(frame.approved),
                rounds=frame.rounds,
                tries_before=frame.tries_before,
                attempt=frame.attempt,
            )
        return CarriedFrame(
            frame=frame.number,
            outputs=carry(frame.outputs, outputs, False),
            artifacts=carry(frame.artifacts, artifacts, True),
            reentry=frame.reentry,
            gate=gate,
        )

    carried_frames = tuple(carried(f) for f in frames)
    carried_barriers = []
    for barrier in barriers:
        routes.append(barrier.prefix)
        carried_barriers.append(
            CarriedBarrier(
                node=barrier.facts.node_id,
                fork=barrier.prefix.frame,
                required=barrier.facts.required,
                arrivals=tuple(carried(a) for a in barrier.arrivals),
            )
        )
    return Checkpoint(
        run_id=run_id,
        digest=digest,
        next_frame=next_frame,
        steps=steps,
        routes=_pack_routes(plan, routes),
        outputs=tuple(outputs[n] for n in sorted(outputs)),
        artifacts=tuple(artifacts[n] for n in sorted(artifacts)),
        tables=tuple(tables),
        frames=carried_frames,
        barriers=tuple(carried_barriers),
        spent=spent,
        node_spent=node_spent or {},
        gate_history=tuple(
            CarriedHistory(key=key, request=request, outcome=outcome)
            for key, (request, outcome) in (gate_history or {}).items()
        ),
    )


def restore_checkpoint(checkpoint: Checkpoint, plan: CompiledPlan) -> RestoredRun:
    """The engine state a checkpoint holds, over the plan it was made with.

    Raises:
        MalformedRunLogError: the checkpoint names a frame, route or table it does not hold.
        UnrunnablePlanError: it names a node the plan does not have.

    """
    from orchestration.run.restore import frame_on

    routes = _unpack_routes(plan, checkpoint.routes)
    outputs: Mapping[int, Items] = {o.frame: o.items for o in checkpoint.outputs}
    handles: Mapping[int, ArtifactHandle] = {a.frame: a.handle for a in checkpoint.artifacts}
    marks = [(o.frame, o.model) for o in checkpoint.outputs]
    marks += [(a.frame, a.model) for a in checkpoint.artifacts]
    for number, model in marks:
        carried_route = routes.get(number)
        if carried_route is not None and model is not None:
            carried_route.model = model
    built: dict[tuple[int, bool], FrameTable[Any]] = {}

    def route(number: int) -> Route:
        found = routes.get(number)
        if found is None:
            raise MalformedRunLogError(f"the checkpoint has no route for frame {number}")
        return found

    def table(index: int, artifact: bool) -> FrameTable[Any]:
        key = (index, artifact)
        known = built.get(key)
        if known is not None:
            return known
        values: Mapping[int, Any] = handles if artifact else outputs
        result: FrameTable[Any] = FrameTable()
        for number in checkpoint.tables[index]:
            entry_route = route(number)
            result = result.set(number, entry_route.node, entry_route, values[number])
        built[key] = result
        return result

    def frame(carried: CarriedFrame) -> Frame:
        restored = frame_on(
            plan,
            route(carried.frame),
            table(carried.outputs, False),
            table(carried.artifacts, True),
        )
        restored.reentry = carried.reentry
        return restored

    run = RestoredRun(
        run_id=checkpoint.run_id,
        digest=checkpoint.digest,
        next_frame=checkpoint.next_frame,
        steps=checkpoint.steps,
        outcome="running",
        cause=None,
        entry_entered=True,
        entry_settled=True,
        spend=Spend.of(checkpoint.spent),
        node_spend={node: Spend.of(t) for node, t in checkpoint.node_spent.items()},
    )
    run.frames = [(frame(f), False) for f in checkpoint.frames]
    for carried_frame in checkpoint.frames:
        gate = carried_frame.gate
        if gate is not None:
            run.gates[carried_frame.frame] = RestoredGate(
                open=gate.open,
                approved=None if gate.approved is None else dict(gate.approved),
                rounds=gate.rounds,
                tries_before=gate.tries_before,
                attempt=gate.attempt,
            )
    run.gate_history = {h.key: (h.request, h.outcome) for h in checkpoint.gate_history}
    for carried_barrier in checkpoint.barriers:
        barrier = Barrier(plan.join(carried_barrier.node), route(carried_barrier.fork))
        for arrival in carried_barrier.arrivals:
            barrier.add(frame(arrival))
        run.barriers.append(barrier)
    return run
