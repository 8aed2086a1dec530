"""Pictures of a plan: Mermaid and Graphviz DOT text, optionally coloured by a run.

People read a DAG faster as a picture than as prose, so a plan can be drawn as Mermaid (which
GitHub, many editors and the Temporal Web UI's Markdown render) or as DOT (for Graphviz, which
makes an SVG with no browser). Both drawings show the same facts:

* every node, its kind by shape (entry: stadium, call: box, reason: rounded box, transform:
  parallelogram, branch: diamond, select: hexagon, join: circle) and, for a call, its tool;
  a join says how many arrivals its barrier waits for (``first 2 of 3`` for a quorum);
* every edge with its handle (an unlabelled edge is ``always``); ``error`` edges are dashed;
* with a run (:class:`~orchestration.types.RunProjection`): each node coloured by its status
  (``RunProjection.node_status_by_id``; the status is also written in the label, for readers
  who cannot tell the colours apart) and each edge the run took (``edges_taken``) drawn thick.

Pure and deterministic: the same view (and run) gives the same text, nodes and edges in view
order, node names by position (``n0``, ``n1``, ...) so no plan id can break the syntax.
:func:`plan_mermaid` is the plain picture a workflow can put in its static details.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from orchestration.plan.graph import PlanStructure
from orchestration.review.render import node_run_status
from orchestration.types import (
    CallDefinition,
    JoinDefinition,
    LoopDefinition,
    MapDefinition,
    PlanEdge,
    RawPlanView,
    RunProjection,
)

__all__ = ["STATUS_COLOURS", "DiagramFormat", "plan_dot", "plan_mermaid", "render_diagram"]

DiagramFormat = Literal["mermaid", "dot"]

STATUS_COLOURS: dict[str, tuple[str, str]] = {
    "done": ("#c8e6c9", "#2e7d32"),
    "running": ("#fff59d", "#f9a825"),
    "failed": ("#ffcdd2", "#c62828"),
    "skipped": ("#e0e0e0", "#616161"),
    "pending": ("#ffffff", "#9e9e9e"),
    "not reached": ("#ffffff", "#bdbdbd"),
}
"""Fill and stroke colour per node status."""

_MERMAID_SHAPES: dict[str, tuple[str, str]] = {
    "entry": ('(["', '"])'),
    "call": ('["', '"]'),
    "reason": ('("', '")'),
    "transform": ('[/"', '"/]'),
    "branch": ('{"', '"}'),
    "select": ('{{"', '"}}'),
    "join": ('(("', '"))'),
    "input": ('[\\"', '"\\]'),
    "map": ('[["', '"]]'),
    "loop": ('[["', '"]]'),
}

_DOT_SHAPES: dict[str, str] = {
    "entry": 'shape=box, style="rounded,filled", peripheries=2',
    "call": 'shape=box, style="filled"',
    "reason": 'shape=box, style="rounded,filled"',
    "transform": 'shape=parallelogram, style="filled"',
    "branch": 'shape=diamond, style="filled"',
    "select": 'shape=hexagon, style="filled"',
    "join": 'shape=circle, style="filled"',
    "input": 'shape=invhouse, style="filled"',
    "map": 'shape=box3d, style="filled"',
    "loop": 'shape=box3d, style="rounded,filled"',
}

_TAKEN_COLOUR = "#2e7d32"
_ERROR_COLOUR = "#c62828"


def plan_mermaid(view: RawPlanView, run: RunProjection | None = None) -> str:
    """The plan as a Mermaid flowchart (top to bottom), coloured by ``run`` when given."""
    return render_diagram(view, "mermaid", run)


def plan_dot(view: RawPlanView, run: RunProjection | None = None) -> str:
    """The plan as a Graphviz ``digraph``, coloured by ``run`` when given."""
    return render_diagram(view, "dot", run)


def render_diagram(
    view: RawPlanView, fmt: DiagramFormat, run: RunProjection | None = None
) -> str:
    """The plan in ``fmt`` (``mermaid`` or ``dot``); see the module docstring for the facts."""
    picture = _Picture(
        view=view,
        labels=_labels(view, run),
        names={node.id: f"n{i}" for i, node in reversed(list(enumerate(view.nodes)))},
        taken={record.edge_id for record in run.edges_taken} if run is not None else set(),
        status={node.id: node_run_status(run, node.id) for node in view.nodes} if run else {},
        coloured=run is not None,
    )
    lines = _mermaid(picture) if fmt == "mermaid" else _dot(picture)
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class _Picture:
    """What both drawings show: nodes' labels and names, taken edges, statuses."""

    view: RawPlanView
    labels: list[list[str]]
    names: dict[str, str]
    taken: set[str]
    status: dict[str, str]
    coloured: bool

    def edges(self) -> Iterator[tuple[PlanEdge, str, str]]:
        """Each edge whose endpoints exist, with its source's and target's names."""
        for edge in self.view.edges:
            source, target = self.names.get(edge.from_), self.names.get(edge.to)
            if source is not None and target is not None:
                yield edge, source, target


def _labels(view: RawPlanView, run: RunProjection | None) -> list[list[str]]:
    """Each node's label lines: its id, its kind (and tool, or barrier), its run status."""
    structure = PlanStructure.of(view)
    out: list[list[str]] = []
    for index, node in enumerate(view.nodes):
        detail: str = node.kind
        if isinstance(node.definition, CallDefinition):
            detail = f"call · {node.definition.tool}"
        elif node.kind == "join":
            shape = structure.joins.get(index)
            if shape is not None and shape.is_diamond:
                needed = (
                    node.definition.needed if isinstance(node.definition, JoinDefinition) else None
                )
                if needed is None or needed >= shape.routes:
                    detail = f"join · waits for {shape.routes}"
                else:
                    detail = f"join · first {needed} of {shape.routes}"
        elif isinstance(node.definition, MapDefinition):
            at_once = node.definition.concurrency
            detail = f"map · ≤ {node.definition.max_items} items" + (
                f", {at_once} at a time" if at_once is not None else ""
            )
        elif isinstance(node.definition, LoopDefinition):
            detail = f"loop · ≤ {node.definition.max_iterations} rounds"
        lines = [node.id, detail]
        if run is not None:
            lines.append(f"[{node_run_status(run, node.id)}]")
        out.append(lines)
    return out


# -- Mermaid -----------------------------------------------------------------------------------


def _mermaid_text(text: str) -> str:
    """Text safe inside a quoted Mermaid label (entity codes for the syntax characters)."""
    for raw, code in (("#", "#35;"), ('"', "#quot;"), ("<", "#lt;"), (">", "#gt;"), ("|", "#124;")):
        text = text.replace(raw, code)
    return text


def _mermaid(picture: _Picture) -> list[str]:
    lines = ["flowchart TD"]
    for index, node in enumerate(picture.view.nodes):
        opening, closing = _MERMAID_SHAPES.get(node.kind, ('["', '"]'))
        label = "<br/>".join(_mermaid_text(part) for part in picture.labels[index])
        lines.append(f"  n{index}{opening}{label}{closing}")
    for edge, source, target in picture.edges():
        taken = edge.id in picture.taken
        arrow = "==>" if taken else ("-.->" if edge.handle == "error" else "-->")
        label = "" if edge.handle == "always" else f"|{_mermaid_text(edge.handle)}|"
        lines.append(f"  {source} {arrow}{label} {target}")
    if picture.coloured:
        classes: list[str] = []
        for name, (fill, stroke) in STATUS_COLOURS.items():
            members = [
                f"n{i}"
                for i, node in enumerate(picture.view.nodes)
                if picture.status[node.id] == name
            ]
            if members:
                lines.append(
                    f"  classDef {_class_name(name)} fill:{fill},stroke:{stroke},color:#000"
                )
                classes.append(f"  class {','.join(members)} {_class_name(name)}")
        lines += classes
    return lines


def _class_name(status: str) -> str:
    return status.replace(" ", "_")


# -- DOT ---------------------------------------------------------------------------------------


def _dot_text(text: str) -> str:
    """Text safe inside a quoted DOT string."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _dot(picture: _Picture) -> list[str]:
    view = picture.view
    title = f"Plan {view.plan_id} · revision {view.revision} · digest {view.digest[:12]}"
    lines = [
        "digraph plan {",
        f'  graph [rankdir=TB, labelloc=t, fontname="Helvetica", label="{_dot_text(title)}"];',
        '  node [fontname="Helvetica", fontsize=11, fillcolor="#ffffff"];',
        '  edge [fontname="Helvetica", fontsize=10];',
    ]
    for index, node in enumerate(view.nodes):
        label = "\\n".join(_dot_text(part) for part in picture.labels[index])
        attrs = _DOT_SHAPES.get(node.kind, 'shape=box, style="filled"')
        if picture.coloured:
            fill, stroke = STATUS_COLOURS[picture.status[node.id]]
            attrs += f', fillcolor="{fill}", color="{stroke}"'
        lines.append(f'  n{index} [label="{label}", {attrs}];')
    for edge, source, target in picture.edges():
        edge_attrs: list[str] = []
        if edge.handle != "always":
            edge_attrs.append(f'label="{_dot_text(edge.handle)}"')
        if edge.handle == "error":
            edge_attrs.append(f'style=dashed, color="{_ERROR_COLOUR}"')
        if edge.id in picture.taken:
            edge_attrs.append(f'penwidth=2.5, color="{_TAKEN_COLOUR}"')
        suffix = f" [{', '.join(edge_attrs)}]" if edge_attrs else ""
        lines.append(f"  {source} -> {target}{suffix};")
    lines.append("}")
    return lines
