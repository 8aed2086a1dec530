"""The convergent op-log fold: ``fold_ops(plan_id, ops) -> FoldResult(view, issues)``.

Several authors (people or models, online or not) edit one plan by appending ops. The fold must
give the same view and digest whatever order the ops arrived in, and however often an op was
delivered, so two logs that hold the same ops converge when they meet. That holds because:

* ops are **deduplicated by identity** ``(lamport, actorId, opId)`` and **applied in that total
  order**; ``at`` is informational and never orders anything;
* every op is last-writer-wins on what it touches, and a removal cascades only to the edge ids
  *recorded in the op*, never to whatever edges happen to exist when it is applied;
* the fold reads nothing but its arguments (no clock, no hash order) and never mutates them:
  models are frozen, and a field edit copies the containers along its path.

The fold never raises on a well-typed log. Whatever it had to resolve is returned beside the
view as issues: ``duplicate_edge_id`` (a same-id edge collision, resolved by LWW; advisory),
``dangling_edge`` (an edge whose endpoint is gone, dropped; advisory), ``unknown_node`` (edits
of a node absent at the end; advisory), ``conflicting_op`` (two different ops with one identity;
advisory), and ``invalid_node_field`` / ``invalid_node_definition`` (an edit that would leave a
node invalid for its kind, not applied; blocking, so freeze refuses until it is fixed).

The seed of the fold is :data:`~orchestration.types.DEFAULT_PLAN_BOUNDS`, so an empty log has a
complete view and a well-defined digest.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from operator import attrgetter
from typing import Any, NamedTuple

from pydantic import ValidationError

from orchestration.plan.encoding import canonical_digest
from orchestration.run.routes import branch_key, frame_key
from orchestration.types import (
    DEFAULT_PLAN_BOUNDS,
    AddEdgeOp,
    AddNodeOp,
    CallDefinition,
    PlanBounds,
    PlanEdge,
    PlanIssue,
    PlanNode,
    PlanOp,
    PlanProvenance,
    RawPlanView,
    RemoveEdgeOp,
    RemoveNodeOp,
    SetBoundsOp,
    SetNodeDefinitionOp,
    SetNodeFieldOp,
    SetNodePhaseOp,
)

__all__ = ["FoldResult", "branch_key", "fold_ops", "frame_key", "plan_digest", "sort_ops"]


class FoldResult(NamedTuple):
    """The folded view and what the fold had to resolve on the way."""

    view: RawPlanView
    issues: list[PlanIssue]


def plan_digest(view: RawPlanView) -> str:
    """The lossless content digest of a view.

    The whole view is hashed (plan id and revision included, so a clone never shares its
    parent's digest), with its own ``digest`` field taken as the empty string.
    """
    return canonical_digest(view if view.digest == "" else view.model_copy(update={"digest": ""}))


_ORDER = attrgetter("lamport", "actor_id", "op_id")


def sort_ops(ops: Iterable[PlanOp]) -> list[PlanOp]:
    """Deduplicate by identity and order by ``(lamport, actorId, opId)``."""
    return _dedupe_sorted(ops, [])


def _dedupe_sorted(ops: Iterable[PlanOp], issues: list[PlanIssue]) -> list[PlanOp]:
    """Sort, drop repeats of one identity, and report two *different* ops under one identity.

    Of conflicting ops (a corrupt or hand-merged log) the one whose JSON sorts last is kept, so
    the choice is the same in every process whatever the arrival order.
    """
    kept: list[PlanOp] = []
    previous: tuple[int, str, str] | None = None
    conflicted = False
    for op in sorted(ops, key=_ORDER):
        key = _ORDER(op)
        if key != previous:
            kept.append(op)
            previous = key
            conflicted = False
            continue
        last = kept[-1]
        if op is last or op == last:
            continue
        if not conflicted:
            conflicted = True
            issues.append(
                PlanIssue(
                    code="conflicting_op",
                    message=(
                        f'Two different ops share the identity opId "{op.op_id}", actor '
                        f'"{op.actor_id}", lamport {op.lamport}; one was ignored. Give every op '
                        "a unique opId and re-append the lost edit."
                    ),
                    severity="advisory",
                )
            )
        if op.model_dump_json() > last.model_dump_json():
            kept[-1] = op
    return kept


def fold_ops(
    plan_id: str,
    ops: Iterable[PlanOp],
    provenance: PlanProvenance | None = None,
) -> FoldResult:
    """Fold an op log into the plan view it describes. Pure, total and order-independent.

    Args:
        plan_id: The plan's id (part of the digest).
        ops: The log, in any order, possibly with repeats.
        provenance: The plan's lineage, when it was cloned or instantiated (part of the digest).

    Returns:
        The view (``revision`` = number of distinct ops) and the issues met on the way.

    """
    issues: list[PlanIssue] = []
    ordered = _dedupe_sorted(ops, issues)

    nodes = _Nodes()
    edges: dict[str, PlanEdge] = {}
    bounds: PlanBounds = DEFAULT_PLAN_BOUNDS
    edge_claims: dict[str, tuple[tuple[str, str, str], set[tuple[str, str, str]]]] = {}
    edited: dict[str, None] = {}

    for op in ordered:
        if isinstance(op, SetNodeFieldOp):
            edited[op.node_id] = None
            nodes.set_field(op, issues)
        elif isinstance(op, AddNodeOp):
            nodes.put(op.node)
        elif isinstance(op, AddEdgeOp):
            _claim_edge(op.edge, edge_claims, issues)
            edges[op.edge.id] = op.edge
        elif isinstance(op, RemoveNodeOp):
            nodes.remove(op.node_id)
            for edge_id in op.incident_edge_ids:
                edges.pop(edge_id, None)
        elif isinstance(op, RemoveEdgeOp):
            edges.pop(op.edge_id, None)
        elif isinstance(op, SetNodePhaseOp):
            edited[op.node_id] = None
            nodes.set_phase(op.node_id, op.phase)
        elif isinstance(op, SetNodeDefinitionOp):
            edited[op.node_id] = None
            nodes.set_definition(op, issues)
        elif isinstance(op, SetBoundsOp):
            bounds = op.bounds

    final_nodes = nodes.materialize_all()
    kept_edges: list[PlanEdge] = []
    for edge in edges.values():
        if edge.from_ in final_nodes and edge.to in final_nodes:
            kept_edges.append(edge)
        else:
            issues.append(
                PlanIssue(
                    code="dangling_edge",
                    message=(
                        f'Edge "{edge.id}" ({edge.from_} → {edge.to}) references a node that '
                        "does not exist after folding; the edge was dropped."
                    ),
                    edge_id=edge.id,
                    severity="advisory",
                )
            )
    for node_id in edited:
        if node_id not in final_nodes:
            issues.append(
                PlanIssue(
                    code="unknown_node",
                    message=(
                        f'Node "{node_id}" does not exist in the folded plan; add it or remove '
                        "the ops that reference it."
                    ),
                    node_id=node_id,
                    severity="advisory",
                )
            )

    view = RawPlanView.model_construct(
        plan_id=plan_id,
        digest="",
        revision=len(ordered),
        nodes=tuple(final_nodes.values()),
        edges=tuple(kept_edges),
        bounds=bounds,
        provenance=provenance,
    )
    return FoldResult(view.model_copy(update={"digest": plan_digest(view)}), issues)


def _claim_edge(
    edge: PlanEdge,
    claims: dict[str, tuple[tuple[str, str, str], set[tuple[str, str, str]]]],
    issues: list[PlanIssue],
) -> None:
    signature = (edge.from_, edge.to, edge.handle)
    claim = claims.get(edge.id)
    if claim is None:
        claims[edge.id] = (signature, {signature})
        return
    first, seen = claim
    if signature in seen:
        return
    seen.add(signature)
    issues.append(
        PlanIssue(
            code="duplicate_edge_id",
            message=(
                f'Edge id "{edge.id}" is used by two different edges: {first[0]}→{first[1]} '
                f"({first[2]}) and {edge.from_}→{edge.to} ({edge.handle}); rename one of them."
            ),
            edge_id=edge.id,
            severity="advisory",
        )
    )


def _with_path(container: Any, segments: Sequence[str], value: Any) -> Any:
    """Copy ``container`` with ``value`` at ``segments``; missing intermediates become ``{}``."""
    head, rest = segments[0], segments[1:]
    if type(container) is list and head.isdigit() and int(head) < len(container):
        index = int(head)
        copied_list = list(container)
        copied_list[index] = value if not rest else _with_path(container[index], rest, value)
        return copied_list
    copied: dict[str, Any] = dict(container) if type(container) is dict else {}
    copied[head] = value if not rest else _with_path(copied.get(head), rest, value)
    return copied


def _invalid(code: str, node_id: str, what: str, error: ValidationError) -> PlanIssue:
    first = error.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    return PlanIssue(
        code=code,
        message=(
            f'{what} on node "{node_id}" was not applied: {where or "definition"}: '
            f"{first['msg']}. Set a value of the type that field takes."
        ),
        node_id=node_id,
        severity="blocking",
    )


class _Nodes:
    """The fold's node table, with pending argument and phase edits kept as drafts.

    The frequent edits (a call argument, a phase) go into a draft owned by the fold and are
    turned into a new frozen node once, at the end, instead of copying the node on every op.
    """

    def __init__(self) -> None:
        self.nodes: dict[str, PlanNode] = {}
        self.args: dict[str, dict[str, Any]] = {}
        self.phases: dict[str, str | None] = {}

    def put(self, node: PlanNode) -> None:
        self.nodes[node.id] = node
        self.args.pop(node.id, None)
        self.phases.pop(node.id, None)

    def remove(self, node_id: str) -> None:
        self.nodes.pop(node_id, None)
        self.args.pop(node_id, None)
        self.phases.pop(node_id, None)

    def set_phase(self, node_id: str, phase: str | None) -> None:
        if node_id in self.nodes:
            self.phases[node_id] = phase

    def materialize(self, node_id: str) -> PlanNode:
        node = self.nodes[node_id]
        args = self.args.pop(node_id, None)
        if args is not None:
            definition = node.definition.model_copy(update={"args": args})
            node = node.model_copy(update={"definition": definition})
        if node_id in self.phases:
            node = node.model_copy(update={"phase": self.phases.pop(node_id)})
        self.nodes[node_id] = node
        return node

    def materialize_all(self) -> dict[str, PlanNode]:
        for node_id in list(self.args) + list(self.phases):
            if node_id in self.nodes:
                self.materialize(node_id)
        return self.nodes

    def set_field(self, op: SetNodeFieldOp, issues: list[PlanIssue]) -> None:
        node = self.nodes.get(op.node_id)
        if node is None:
            return
        segments = op.path.split(".")
        if isinstance(node.definition, CallDefinition) and segments[0] == "args":
            if len(segments) > 1:
                # "Point this argument at that output": the value was checked as an ArgValue
                # when the op was built, so the fold's own copy of args takes it directly.
                args = self.args.get(op.node_id)
                if args is None:
                    args = self.args[op.node_id] = dict(node.definition.args)
                head, rest = segments[1], segments[2:]
                args[head] = op.value if not rest else _with_path(args.get(head), rest, op.value)
                return
        node = self.materialize(op.node_id)
        definition = node.definition
        dump = definition.model_dump(by_alias=True, exclude_none=True)
        try:
            new_definition = type(definition).model_validate(_with_path(dump, segments, op.value))
        except ValidationError as exc:
            issues.append(_invalid("invalid_node_field", node.id, f'Setting "{op.path}"', exc))
            return
        self.nodes[op.node_id] = node.model_copy(update={"definition": new_definition})

    def set_definition(self, op: SetNodeDefinitionOp, issues: list[PlanIssue]) -> None:
        if op.node_id not in self.nodes:
            return
        node = self.materialize(op.node_id)
        try:
            new_definition = type(node.definition).model_validate(op.definition)
        except ValidationError as exc:
            issues.append(
                _invalid("invalid_node_definition", node.id, f"A new {node.kind} definition", exc)
            )
            return
        self.nodes[op.node_id] = node.model_copy(update={"definition": new_definition})
