"""Instantiation: arguments checked against the params, holes filled, a new editable plan.

The plan is created with :class:`~orchestration.types.TemplateProvenance` (the template id and
the arguments, which the operator's rendering shows), then receives one ``add_node`` per
template node in order, one ``add_edge`` per edge, and always one ``set_bounds``, all minted by
the given author against the (empty) log it observed and appended at expected revision 0. A
template instantiation is an ordinary editable plan from then on: provenance is audit, not
taint.

Arguments are refused whole, with every problem named at once, before anything is written: a
missing or mistyped param, an argument no param declares (an operator would read it in the
lineage although no node uses it), or a value outside the encodable subset.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from orchestration.errors import OrchestrationError, UnencodableValueError
from orchestration.plan.authoring import PlanAuthor
from orchestration.plan.encoding import validate_value
from orchestration.store.base import AppendRefused, CreateRefused, PlanStore
from orchestration.templates.checks import template_nodes, template_ops
from orchestration.templates.model import InstantiateOk, InstantiateRefused, PlanTemplate
from orchestration.types import (
    BooleanField,
    DeclaredField,
    EnumField,
    NumberField,
    StringField,
    TemplateProvenance,
)

__all__ = ["args_problems", "describe_param", "instantiate_template"]


def describe_param(param: DeclaredField) -> str:
    """What a param accepts, in words: ``a string of at most 80 bytes``, ``one of "a", "b"``."""
    if isinstance(param, StringField):
        if param.max_bytes is not None:
            return f"a string of at most {param.max_bytes} bytes"
        return "a string"
    if isinstance(param, NumberField):
        return "a finite number"
    if isinstance(param, BooleanField):
        return "a boolean"
    if isinstance(param, EnumField):
        return "one of " + ", ".join(f'"{v}"' for v in param.values)
    return "a value"  # pragma: no cover - DeclaredField is closed


def _describe_value(value: Any) -> str:
    if value is None:
        return "null"
    if type(value) is str:
        text = value if len(value) <= 40 else value[:40] + "…"
        return f'"{text}"'
    return type(value).__name__


def _fits(param: DeclaredField, value: Any) -> bool:
    if isinstance(param, StringField):
        return type(value) is str and (
            param.max_bytes is None or len(value.encode("utf-8")) <= param.max_bytes
        )
    if isinstance(param, NumberField):
        return type(value) in (int, float) and math.isfinite(value)
    if isinstance(param, BooleanField):
        return type(value) is bool
    if isinstance(param, EnumField):
        return type(value) is str and value in param.values
    return False  # pragma: no cover - DeclaredField is closed


def args_problems(template: PlanTemplate, args: Mapping[str, Any]) -> list[str]:
    """Every way ``args`` fails the template's params, one sentence each naming the fix."""
    problems: list[str] = []
    declared = {param.path for param in template.params}
    for param in template.params:
        if param.path not in args:
            problems.append(
                f'Param "{param.path}" is required and was not supplied; expected '
                f"{describe_param(param)}."
            )
        elif not _fits(param, args[param.path]):
            problems.append(
                f'Param "{param.path}" has the wrong type: expected {describe_param(param)}, '
                f"got {_describe_value(args[param.path])}."
            )
    for key in args:
        if key not in declared:
            names = ", ".join(f'"{p.path}"' for p in template.params) or "(none)"
            problems.append(f'Arg "{key}" is not a param of this template; its params are {names}.')
    if not problems:
        try:
            validate_value(dict(args))
        except UnencodableValueError as exc:
            problems.append(f"The args are not encodable: {exc.message}")
    return problems


async def instantiate_template(
    store: PlanStore,
    template: PlanTemplate,
    args: Mapping[str, Any],
    *,
    author: PlanAuthor,
    plan_id: str,
    label: str | None = None,
) -> InstantiateOk | InstantiateRefused:
    """Create ``plan_id`` from ``template`` with ``args`` in its holes.

    Args:
        store: Where the plan is created.
        template: A template that passed its construction checks.
        args: One argument per param.
        author: Mints the ops' identity (its clock is moved past the new plan's log first).
        plan_id: The new plan's id.
        label: The plan's listing label (default: the template's summary).

    Returns:
        ``InstantiateOk`` with no issues (the facade adds the plan's freeze issues), or
        ``invalid_args`` / ``duplicate_id`` with a detail naming the fix; nothing is written
        on a refusal.

    Raises:
        OrchestrationError: the fresh plan refused the template's ops, which a checked
            template cannot cause.

    """
    problems = args_problems(template, args)
    if problems:
        return InstantiateRefused(reason="invalid_args", detail=" ".join(problems))
    values = dict(args)
    nodes, issues = template_nodes(template, values)
    if issues:
        return InstantiateRefused(
            reason="invalid_args", detail=" ".join(issue.message for issue in issues)
        )
    created = await store.create_plan(
        plan_id,
        label=label if label is not None else template.summary[:80],
        provenance=TemplateProvenance(template=template.id, args=values),
    )
    if isinstance(created, CreateRefused):
        return InstantiateRefused(
            reason="duplicate_id",
            detail=f'A plan with id "{plan_id}" already exists; instantiate without a plan id, '
            "or pick another one.",
        )
    author.observe(await store.read_ops(plan_id))
    appended = await store.append_ops(
        plan_id, template_ops(template, nodes, author), expected_revision=0
    )
    if isinstance(appended, AppendRefused):
        raise OrchestrationError(
            f"the new plan {plan_id} refused the ops of template {template.id!r} "
            f"({appended.reason}); this is a bug in the store or the template checks"
        )
    return InstantiateOk(plan_id=plan_id)
