"""Construction checks: a registered template is proven instantiable once, at boot.

A model that instantiates a template usually cannot edit graphs (the ``front`` tier withholds
them), so a template that could never be frozen would strand it. The checks, in order:

1. **Params**: unique paths; an enum param has at least one value.
2. **Identity**: unique node ids and edge ids (a repeated id would silently replace the earlier
   one when the plan is folded).
3. **Holes**: every hole names a declared param (``unknown_param``) and sits where a plan
   stages data (``misplaced_param``; see :data:`~orchestration.templates.holes.HOLE_PLACES`).
4. **The probe**: every hole is filled with a sample of its param's type, each node is built
   (``invalid_definition`` when it does not fit its kind), and the resulting plan goes through
   the full freeze validation with the facade's allowlist and cells. Every blocking finding is
   a template issue: the tools it names, its authority, wiring, references and taint must hold
   whatever the arguments, since arguments only ever reach staged values.
5. **The taint rule** (:mod:`orchestration.templates.taint`).

What depends on the argument values themselves (a predicate a cell refuses for one value but
not another, the encoded size) is checked again for the real arguments: instantiation returns
the new plan's freeze issues.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from pydantic import ValidationError

from orchestration.plan.authoring import PlanAuthor
from orchestration.plan.ops import fold_ops
from orchestration.review.validation import FreezeInputs, blocking, validate
from orchestration.templates.holes import (
    HOLE_PLACES,
    build_node,
    fill_definition,
    hole_allowed,
    hole_sites,
    sample_args,
)
from orchestration.templates.model import PlanTemplate
from orchestration.templates.taint import check_hole_declassification
from orchestration.types import DEFAULT_PLAN_BOUNDS, EnumField, PlanIssue, PlanNode, PlanOp

__all__ = ["template_nodes", "template_ops", "validate_template"]


async def validate_template(template: PlanTemplate, inputs: FreezeInputs) -> list[PlanIssue]:
    """Every blocking issue of ``template`` (see the module docstring); empty when it is sound.

    Args:
        template: The template.
        inputs: The facade's allowlist and cells, which every instantiation is frozen against.

    """
    issues = _param_issues(template) + _identity_issues(template) + _hole_issues(template)
    if issues:
        return issues
    nodes, issues = template_nodes(template, sample_args(template.params))
    if issues:
        return issues
    counter = itertools.count(1)
    author = PlanAuthor(
        "template-check",
        now=lambda: "1970-01-01T00:00:00Z",
        new_id=lambda: f"probe-{next(counter)}",
    )
    fold = fold_ops(f"template-{template.id}", template_ops(template, nodes, author))
    found = await validate(fold.view, inputs, fold_issues=fold.issues)
    issues.extend(issue for issue in found if issue.severity == "blocking")
    issues.extend(check_hole_declassification(template))
    return issues


def template_nodes(
    template: PlanTemplate, args: dict[str, object]
) -> tuple[list[PlanNode], list[PlanIssue]]:
    """The template's nodes with ``args`` filled in, and an issue per node that does not build."""
    nodes: list[PlanNode] = []
    issues: list[PlanIssue] = []
    for tnode in template.nodes:
        try:
            filled = fill_definition(tnode.kind, tnode.definition, args)
            nodes.append(build_node(tnode.id, tnode.kind, tnode.phase, filled))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"] if p not in (tnode.kind, "definition"))
            issues.append(
                blocking(
                    "invalid_definition",
                    f'Template "{template.id}": the {tnode.kind} definition of node '
                    f'"{tnode.id}" does not fit its kind at {where or "definition"}: '
                    f"{first['msg']}. Write the field the way a {tnode.kind} node takes it.",
                    node_id=tnode.id,
                )
            )
    return nodes, issues


def template_ops(
    template: PlanTemplate, nodes: Sequence[PlanNode], author: PlanAuthor
) -> list[PlanOp]:
    """The ops a template becomes: its nodes, then its edges, then always its bounds."""
    ops: list[PlanOp] = [author.add_node(node) for node in nodes]
    ops += [author.edge(e.from_, e.to, e.handle, edge_id=e.id) for e in template.edges]
    ops.append(author.set_bounds(template.bounds or DEFAULT_PLAN_BOUNDS))
    return ops


def _param_issues(template: PlanTemplate) -> list[PlanIssue]:
    issues: list[PlanIssue] = []
    seen: set[str] = set()
    for param in template.params:
        if param.path in seen:
            issues.append(
                blocking(
                    "duplicate_param",
                    f'Template "{template.id}" declares param "{param.path}" twice; '
                    "keep one declaration.",
                )
            )
        seen.add(param.path)
        if not param.path:
            issues.append(
                blocking(
                    "invalid_param",
                    f'Template "{template.id}" declares a param with an empty path; name it.',
                )
            )
        if isinstance(param, EnumField) and not param.values:
            issues.append(
                blocking(
                    "invalid_param",
                    f'Template "{template.id}" declares enum param "{param.path}" with no '
                    "values, so no argument could satisfy it; list its values.",
                )
            )
    return issues


def _identity_issues(template: PlanTemplate) -> list[PlanIssue]:
    issues: list[PlanIssue] = []
    for what, ids in (
        ("node", [n.id for n in template.nodes]),
        ("edge", [e.id for e in template.edges]),
    ):
        seen: set[str] = set()
        for item in ids:
            if item in seen:
                issues.append(
                    blocking(
                        f"duplicate_{what}_id",
                        f'Template "{template.id}" has two {what}s with id "{item}"; the later '
                        f"would replace the earlier when the plan is folded. Rename one.",
                        node_id=item if what == "node" else None,
                        edge_id=item if what == "edge" else None,
                    )
                )
            seen.add(item)
    return issues


def _hole_issues(template: PlanTemplate) -> list[PlanIssue]:
    declared = [p.path for p in template.params]
    names = ", ".join(f'"{p}"' for p in declared) or "(none)"
    issues: list[PlanIssue] = []
    for tnode in template.nodes:
        for location, ref in hole_sites(tnode.definition):
            if ref.path not in declared:
                issues.append(
                    blocking(
                        "unknown_param",
                        f'Template "{template.id}" places a template hole "{ref.path}" in '
                        f'{tnode.kind} node "{tnode.id}" (at {location}), but no declared param '
                        f"has that path; name a declared param ({names}) or add one.",
                        node_id=tnode.id,
                    )
                )
            if not hole_allowed(tnode.kind, location):
                issues.append(
                    blocking(
                        "misplaced_param",
                        f'Template "{template.id}" places template hole "{ref.path}" at '
                        f'{location} of {tnode.kind} node "{tnode.id}"; a {tnode.kind} node '
                        f"takes holes {HOLE_PLACES[tnode.kind]}. Write that field as a literal.",
                        node_id=tnode.id,
                    )
                )
    return issues
