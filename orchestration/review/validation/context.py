"""What every check reads: the view, the inputs, and what is computed once per validation."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from orchestration.errors import OrchestrationError
from orchestration.plan.encoding import encode_model
from orchestration.plan.graph import PlanStructure
from orchestration.plan.maps import map_bodies
from orchestration.plan.references import RefSite, reference_sites
from orchestration.review.validation.inputs import FreezeInputs
from orchestration.types import PlanNode, RawPlanView

__all__ = ["CheckContext"]


@dataclass
class CheckContext:
    """The shared state of one validation pass.

    Attributes:
        view: The plan.
        inputs: The allowlist and cells.
        structure: Graph facts (entry, reachability, dominators, joins).
        by_id: Each node id's first node.

    """

    view: RawPlanView
    inputs: FreezeInputs
    structure: PlanStructure = field(init=False)
    by_id: dict[str, PlanNode] = field(init=False)

    def __post_init__(self) -> None:
        self.structure = PlanStructure.of(self.view)
        self.by_id = {}
        for node in self.view.nodes:
            self.by_id.setdefault(node.id, node)

    def index_of(self, node_id: str) -> int | None:
        """The graph index of a node id."""
        return self.structure.graph.index.get(node_id)

    @cached_property
    def sites(self) -> dict[str, list[RefSite]]:
        """Every node's reference sites (first node of each id), computed once."""
        return {node_id: reference_sites(node) for node_id, node in self.by_id.items()}

    @cached_property
    def map_bodies(self) -> dict[int, tuple[int, ...]]:
        """Each map or loop node's body by its graph index (empty without them or with a cycle)."""
        structure = self.structure
        kinds = structure.graph.kinds
        if ("map" not in kinds and "loop" not in kinds) or structure.order is None:
            return {}
        return map_bodies(structure.graph, structure.order)

    def outside_body(self, target: int, reader: int) -> bool:
        """Whether ``target`` is in a map's or loop's body that ``reader`` is not in."""
        return any(target in body and reader not in body for body in self.map_bodies.values())

    @cached_property
    def encoded(self) -> bytes | Exception:
        """The canonical encoding of the view (what the digest hashes), or why it failed."""
        try:
            return encode_model(self.view)
        except (OrchestrationError, TypeError, ValueError, OverflowError) as exc:
            return exc
