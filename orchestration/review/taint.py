"""Taint: which output fields carry data that entered through a run's input.

A run's input is the taint origin: every value in it is tainted, and taint follows references.
An input request's response is input too (a person typed it while the run waited), so an
``input`` node is an origin as well.
A node that reads a tainted field (through a call's ``args``, a reason node's ``prompt`` or a
transform's ``source``) produces tainted output: all of it, except that a call may assert in
``declassifies`` which of its output fields its tool sanitises; those fields, and only those,
come out clean. Type validation is not sanitisation, so nothing else clears taint. Branch,
select and join nodes read no data (a join's items are provenance), so they are never tainted.

A tainted value may reach a reason prompt (a model reads it) but not a call's arguments (a tool
acts on it), unless that call itself declassifies: a sanitiser must be allowed to consume what
it sanitises. Freeze reports every tainted argument with the route by which the taint arrived,
so the author sees where to insert a sanitising call.

Propagation is a worklist over references (each node is tainted at most once, and its taint
never changes afterwards: it depends only on whether it reads taint at all), so the cost is
linear in the number of references whatever order the nodes are in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from orchestration.plan.encoding import NodeRef
from orchestration.plan.references import RefSite, reference_sites
from orchestration.types import CallDefinition, PlanNode, RawPlanView

__all__ = ["TaintAnalysis", "TaintHop", "TaintedArgument", "analyse_taint", "tainted_arguments"]

Tainted = Literal["all"] | frozenset[str]
"""A node's tainted output: every field, or exactly these declared paths."""


@dataclass(frozen=True)
class TaintHop:
    """One step of taint: ``reader`` read ``source`` (at ``path``) through ``location``."""

    source: str
    path: str | None
    reader: str
    location: str

    def describe(self) -> str:
        """``source.path → reader.location``."""
        read = self.source if self.path is None else f"{self.source}.{self.path}"
        return f"{read} → {self.reader}.{self.location}"


@dataclass(frozen=True)
class TaintedArgument:
    """A call argument that reads a tainted field, with the route the taint took to it."""

    call: str
    site: RefSite
    hops: tuple[TaintHop, ...]
    origin: str = "run input"

    def route(self) -> str:
        """The taint route in prose: ``run input entry.city → a.args.q; a.out → b.args.x``."""
        return f"{self.origin} " + "; ".join(hop.describe() for hop in self.hops)


def _declassifying(node: PlanNode) -> CallDefinition | None:
    definition = node.definition
    if isinstance(definition, CallDefinition) and definition.declassifies:
        return definition
    return None


class TaintAnalysis:
    """Per-node tainted output fields, and how each tainted node came to be tainted."""

    def __init__(
        self, view: RawPlanView, sites: Mapping[str, list[RefSite]] | None = None
    ) -> None:
        self.nodes: dict[str, PlanNode] = {}
        for node in view.nodes:
            self.nodes.setdefault(node.id, node)
        self.sites: Mapping[str, list[RefSite]] = (
            sites
            if sites is not None
            else {node_id: reference_sites(node) for node_id, node in self.nodes.items()}
        )
        self.tainted: dict[str, Tainted] = {}
        self.cause: dict[str, TaintHop] = {}
        self._propagate()

    def reads_taint(self, ref: NodeRef) -> bool:
        """Whether ``ref`` reads a tainted field of its target."""
        taint = self.tainted.get(ref.node)
        if taint is None:
            return False
        if taint == "all":
            return True
        if not taint:
            return False
        path = ref.path
        if path is None:
            return True
        prefix = path + "."
        return any(f == path or f.startswith(prefix) or path.startswith(f + ".") for f in taint)

    def route_to(self, node_id: str) -> tuple[TaintHop, ...]:
        """The hops by which taint reached ``node_id``, from the run input onward."""
        hops: list[TaintHop] = []
        seen: set[str] = set()
        current = node_id
        while current in self.cause and current not in seen:
            seen.add(current)
            hop = self.cause[current]
            hops.append(hop)
            current = hop.source
        hops.reverse()
        return tuple(hops)

    def _taint_of(self, node: PlanNode) -> Tainted:
        definition = _declassifying(node)
        if definition is None:
            return "all"
        cleared = set(definition.declassifies or ())
        return frozenset(f.path for f in definition.output if f.path not in cleared)

    def _propagate(self) -> None:
        readers: dict[str, list[tuple[str, RefSite]]] = {}
        for reader, sites in self.sites.items():
            for site in sites:
                readers.setdefault(site.ref.node, []).append((reader, site))
        work: list[str] = []
        for node_id, node in self.nodes.items():
            if node.kind == "entry" or node.kind == "input":
                self.tainted[node_id] = "all"
                work.append(node_id)
        while work:
            source = work.pop()
            for reader, site in readers.get(source, ()):
                if reader in self.tainted or not self.reads_taint(site.ref):
                    continue
                self.tainted[reader] = self._taint_of(self.nodes[reader])
                self.cause[reader] = TaintHop(source, site.ref.path, reader, site.location)
                work.append(reader)


def analyse_taint(
    view: RawPlanView, sites: Mapping[str, list[RefSite]] | None = None
) -> TaintAnalysis:
    """Propagate taint from every entry node through the plan's references.

    Args:
        view: The plan.
        sites: Each node id's reference sites, when already computed.

    """
    return TaintAnalysis(view, sites)


def tainted_arguments(
    view: RawPlanView, analysis: TaintAnalysis | None = None
) -> Sequence[TaintedArgument]:
    """Every call argument that reads taint, for calls that do not themselves declassify."""
    taint = analysis or analyse_taint(view)
    found: list[TaintedArgument] = []
    for node_id, node in taint.nodes.items():
        if not isinstance(node.definition, CallDefinition) or _declassifying(node) is not None:
            continue
        for site in taint.sites[node_id]:
            if taint.reads_taint(site.ref):
                hop = TaintHop(site.ref.node, site.ref.path, node_id, site.location)
                hops = (*taint.route_to(site.ref.node), hop)
                first = taint.nodes.get(hops[0].source)
                origin = "input request" if first is not None and first.kind == "input" else None
                found.append(TaintedArgument(node_id, site, hops, origin or "run input"))
    return found
