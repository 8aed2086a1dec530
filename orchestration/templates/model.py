"""The template shape: a consumer-written plan with ``ParamRef`` holes in its staged values.

A template holds op *inputs* without identity: node shapes, edges and bounds. It cannot hold
ops, because an op needs an ``opId``, an actor, a Lamport time and a timestamp, which a static
literal cannot carry; instantiation mints them. Its params are :data:`DeclaredField` s, the
same type as an entry node's input, so a model fills a form rather than editing a graph.

A :class:`TemplateNode`'s ``definition`` is a plain mapping rather than a definition model,
because it may hold :class:`~orchestration.plan.encoding.ParamRef` holes where the definition
models accept only real values. It is checked against its kind's model once, at construction
of the facade, with every hole filled by a sample of its param's type.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, field_validator

from orchestration.errors import OrchestrationError
from orchestration.plan.encoding import ValueSchema
from orchestration.types import (
    DeclaredField,
    PlanBounds,
    PlanEdge,
    PlanIssue,
    PlanNodeKind,
    WireModel,
    tuples_as_lists,
)

__all__ = [
    "InstantiateOk",
    "InstantiateRefused",
    "InstantiateResult",
    "InvalidTemplateError",
    "PlanTemplate",
    "TemplateDefinition",
    "TemplateNode",
    "TemplateSummary",
]

TemplateDefinition = Annotated[dict[str, Any], ValueSchema("template", mapping=True)]
"""A node definition by field name (wire or Python spelling); values may hold holes."""


class TemplateNode(WireModel):
    """A plan node whose definition may hold ``ParamRef`` holes in its staged values.

    Holes may sit only where a plan stages data: a call's ``args``, a reason node's
    ``prompt`` (a whole part, or a part's ``text``), a branch or select ``predicate``, and a
    transform step's ``args``. Everything an operator approves as *shape* (tools, authority,
    recovery policy, output fields, cases) is fixed by the template's author.
    """

    id: str
    kind: PlanNodeKind
    phase: str | None = None
    definition: TemplateDefinition = Field(default_factory=dict)

    @field_validator("definition", mode="before")
    @classmethod
    def _dump_model(cls, definition: object) -> object:
        if isinstance(definition, BaseModel):
            return tuples_as_lists(definition.model_dump(by_alias=True, exclude_none=True))
        return definition


class PlanTemplate(WireModel):
    """A consumer-defined plan shape a model can instantiate by naming its ``id``.

    Attributes:
        id: Stable identity: what a model names to instantiate.
        summary: One line, shown when templates are listed.
        params: The holes' declared types; each hole names one by ``path``.
        nodes: The shape, in authoring order.
        edges: The shape's edges (an edge stages no value, so it holds no hole).
        bounds: The plan's bounds; ``None`` means the default bounds.

    """

    id: str = Field(min_length=1)
    summary: str
    params: tuple[DeclaredField, ...] = ()
    nodes: tuple[TemplateNode, ...] = ()
    edges: tuple[PlanEdge, ...] = ()
    bounds: PlanBounds | None = None

    def summarize(self) -> TemplateSummary:
        """What a model sees when it lists templates."""
        return TemplateSummary(id=self.id, summary=self.summary, params=self.params)


class TemplateSummary(WireModel):
    """A registered template as a model sees it: what to name, what it does, what to fill."""

    id: str
    summary: str
    params: tuple[DeclaredField, ...] = ()


class InstantiateOk(WireModel):
    """A new ``editable`` plan exists; ``issues`` are its freeze issues as instantiated."""

    ok: Literal[True] = True
    plan_id: str
    issues: tuple[PlanIssue, ...] = ()


class InstantiateRefused(WireModel):
    """Why nothing was instantiated; ``detail`` names the fix."""

    ok: Literal[False] = False
    reason: Literal["unknown_template", "invalid_args", "duplicate_id"]
    detail: str


InstantiateResult = Annotated[InstantiateOk | InstantiateRefused, Field(discriminator="ok")]


class InvalidTemplateError(OrchestrationError):
    """A registered template fails its construction checks, so the facade refuses to boot.

    Attributes:
        template_id: The template at fault.
        issues: Every blocking issue found, each naming its fix.

    """

    code = "invalid_template"

    def __init__(self, template_id: str, issues: tuple[PlanIssue, ...]) -> None:
        lines = []
        for issue in issues:
            where = issue.node_id or issue.edge_id or template_id
            lines.append(f"({where}) {issue.code} — {issue.message}")
        super().__init__(f'template "{template_id}" is invalid: ' + "; ".join(lines))
        self.template_id = template_id
        self.issues = issues
