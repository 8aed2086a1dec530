"""Outline and slices: a plan read one flat level at a time, in exact surface forms.

A model editing a large plan cannot hold all of it, so it reads an outline (one entry per phase
label, in authoring order, with the VERBATIM node ids and tool names it must cite, and how many
freeze issues fall in each phase) and then slices (the nodes of one phase, or one node, in full,
with the ids just across the slice's boundary so it can keep linking without a second read).
Phases are labels for reading only; edges alone order execution.

An issue falls in a phase when the node it names is in that phase, or, for an issue naming only
an edge, when the edge's source is.
"""

from __future__ import annotations

from collections.abc import Sequence

from orchestration.errors import OrchestrationError
from orchestration.types import (
    CallDefinition,
    LoopDefinition,
    MapDefinition,
    PlanIssue,
    PlanNode,
    PlanState,
    RawPlanView,
    WireModel,
)

__all__ = [
    "Boundary",
    "PhaseEntry",
    "PlanOutline",
    "PlanSlice",
    "UnknownSliceError",
    "plan_outline",
    "plan_slice",
]


class PhaseEntry(WireModel):
    """One phase of an outline, in exact surface forms (never paraphrase)."""

    phase: str
    """The phase label (``""`` for the unphased entry)."""
    summary: str
    """One line: node count by kind."""
    node_ids: tuple[str, ...]
    """Verbatim node ids, in view order: what a reference must cite."""
    tools: tuple[str, ...]
    """Verbatim tool names of the phase's call nodes, in view order."""
    issue_count: int
    """How many freeze issues fall in this phase."""


class PlanOutline(WireModel):
    """A plan at one flat level: its phases and the nodes that have none."""

    plan_id: str
    state: PlanState
    """The lifecycle state now (read from the store, not folded)."""
    digest: str
    node_count: int
    phases: tuple[PhaseEntry, ...]
    """One entry per phase label, in order of first appearance."""
    unphased: PhaseEntry | None = None
    """Nodes without a phase, addressed the same way; ``None`` when every node has one."""


class Boundary(WireModel):
    """The ids just outside a slice: predecessors and successors of its nodes."""

    incoming: tuple[str, ...] = ()
    outgoing: tuple[str, ...] = ()


class PlanSlice(WireModel):
    """Some nodes in full, with their boundary and the issues that fall within them."""

    nodes: tuple[PlanNode, ...]
    phase: str | None = None
    """The phase this slice was taken from, when taken by phase."""
    boundary: Boundary
    issues: tuple[PlanIssue, ...] = ()


class UnknownSliceError(OrchestrationError):
    """A slice named a phase or node the plan does not have; the message lists the valid ones."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _phase_of(node: PlanNode) -> str:
    return node.phase or ""


def _issues_by_node(view: RawPlanView, issues: Sequence[PlanIssue]) -> list[tuple[PlanIssue, str]]:
    """Each issue with the node it falls on (its node, else its edge's source); others dropped."""
    sources = {e.id: e.from_ for e in view.edges}
    placed: list[tuple[PlanIssue, str]] = []
    for issue in issues:
        node_id = issue.node_id
        if node_id is None and issue.edge_id is not None:
            node_id = sources.get(issue.edge_id)
        if node_id is not None:
            placed.append((issue, node_id))
    return placed


def plan_outline(
    view: RawPlanView, state: PlanState, issues: Sequence[PlanIssue] = ()
) -> PlanOutline:
    """The outline of ``view``, with ``state`` as the store reports it now.

    Args:
        view: The folded plan.
        state: Its lifecycle state now.
        issues: Its freeze issues, counted per phase.

    """
    groups: dict[str, list[PlanNode]] = {}
    for node in view.nodes:
        groups.setdefault(_phase_of(node), []).append(node)
    phase_of_node = {node.id: _phase_of(node) for node in view.nodes}
    counts: dict[str, int] = {}
    for _, node_id in _issues_by_node(view, issues):
        phase = phase_of_node.get(node_id)
        if phase is not None:
            counts[phase] = counts.get(phase, 0) + 1
    entries = {phase: _entry(phase, nodes, counts.get(phase, 0)) for phase, nodes in groups.items()}
    return PlanOutline(
        plan_id=view.plan_id,
        state=state,
        digest=view.digest,
        node_count=len(view.nodes),
        phases=tuple(entry for phase, entry in entries.items() if phase),
        unphased=entries.get(""),
    )


def _entry(phase: str, nodes: Sequence[PlanNode], issue_count: int) -> PhaseEntry:
    kinds = {kind: sum(1 for n in nodes if n.kind == kind) for kind in ("call", "reason")}
    transforms = sum(1 for n in nodes if n.kind == "transform")
    summary = (
        f"{phase or 'unphased'}: {len(nodes)} node(s) — {kinds['call']} call, "
        f"{kinds['reason']} reason, {transforms} transform"
    )
    regions = [
        f"map {n.id} (≤ {n.definition.max_items} items)"
        if isinstance(n.definition, MapDefinition)
        else f"loop {n.id} (≤ {n.definition.max_iterations} rounds)"
        for n in nodes
        if isinstance(n.definition, MapDefinition | LoopDefinition)
    ]
    if regions:
        # Only plans with a map or a loop say so: every other outline reads as it did.
        summary += ", " + ", ".join(regions)
    return PhaseEntry(
        phase=phase,
        summary=summary,
        node_ids=tuple(n.id for n in nodes),
        tools=tuple(n.definition.tool for n in nodes if isinstance(n.definition, CallDefinition)),
        issue_count=issue_count,
    )


def plan_slice(
    view: RawPlanView,
    *,
    phase: str | None = None,
    node: str | None = None,
    issues: Sequence[PlanIssue] = (),
) -> PlanSlice:
    """The nodes of one phase (``""`` for the unphased nodes), or one node, with their boundary.

    Raises:
        UnknownSliceError: ``unknown_phase`` / ``unknown_node`` (listing the valid values), or
            ``bad_selection`` unless exactly one of ``phase`` and ``node`` is given.

    """
    if (phase is None) == (node is None):
        raise UnknownSliceError(
            "bad_selection", "slice by exactly one of phase or node; name one of them"
        )
    if node is not None:
        chosen = [n for n in view.nodes if n.id == node]
        if not chosen:
            valid = ", ".join(n.id for n in view.nodes) or "(none)"
            raise UnknownSliceError(
                "unknown_node", f'no node "{node}" in plan {view.plan_id}; valid node ids: {valid}'
            )
    else:
        chosen = [n for n in view.nodes if _phase_of(n) == phase]
        if not chosen:
            phases = list(dict.fromkeys(_phase_of(n) for n in view.nodes))
            valid = ", ".join(repr(p) for p in phases) or "(none)"
            raise UnknownSliceError(
                "unknown_phase",
                f'no phase "{phase}" in plan {view.plan_id}; valid phases ("" is unphased): '
                f"{valid}",
            )
    inside = {n.id for n in chosen}
    incoming: dict[str, None] = {}
    outgoing: dict[str, None] = {}
    for edge in view.edges:
        if edge.to in inside and edge.from_ not in inside:
            incoming[edge.from_] = None
        if edge.from_ in inside and edge.to not in inside:
            outgoing[edge.to] = None
    falling = tuple(issue for issue, node_id in _issues_by_node(view, issues) if node_id in inside)
    return PlanSlice(
        nodes=tuple(chosen),
        phase=phase or None,
        boundary=Boundary(incoming=tuple(incoming), outgoing=tuple(outgoing)),
        issues=falling,
    )
