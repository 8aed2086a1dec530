"""Transform checks: the source is a call returning an artifact, and each step is a real method.

A transform reads a slice of an artifact through the artifact class's own method descriptors,
so the legal vocabulary is whatever :func:`~orchestration.artifacts.methods.effective_tool_methods`
gives for the class the source tool is declared to return. Freeze never guesses a class: a tool
with no declared return is refused by name.
"""

from __future__ import annotations

from orchestration.artifacts.methods import ArtifactMethodDescriptor, effective_tool_methods
from orchestration.review.validation.context import CheckContext
from orchestration.review.validation.issues import blocking, quote_list
from orchestration.review.validation.schemas import args_problem
from orchestration.tools.contracts import ArtifactReturn
from orchestration.types import CallDefinition, EmitValue, PlanIssue, TransformDefinition

__all__ = ["check_transforms"]


def check_transforms(ctx: CheckContext) -> list[PlanIssue]:
    """Every transform node, in node order; a source problem ends that node's checks."""
    issues: list[PlanIssue] = []
    invocable = ctx.inputs.invocable
    for node in ctx.view.nodes:
        d = node.definition
        if not isinstance(d, TransformDefinition):
            continue
        nid = node.id
        if d.emit.as_ == "value" and isinstance(d.emit, EmitValue) and d.output:
            declared = [f.path for f in d.output]
            if d.emit.field not in declared:
                issues.append(
                    blocking(
                        "transform_emit_undeclared",
                        f'Transform "{nid}" emits its value into field "{d.emit.field}", which '
                        f"its output does not declare; declare it, or emit into one of "
                        f"{quote_list(declared)}.",
                        node_id=nid,
                    )
                )
        if not d.steps:
            issues.append(
                blocking(
                    "transform_no_steps",
                    f'Transform "{nid}" has no steps, so it would emit the artifact itself, '
                    "which is not a value; add at least one step naming a method of the "
                    "source's artifact class.",
                    node_id=nid,
                )
            )
        source = ctx.by_id.get(d.source.node)
        if source is None:
            continue
        if not isinstance(source.definition, CallDefinition):
            issues.append(
                blocking(
                    "transform_source_not_call",
                    f'Transform "{nid}" reads its source from node "{source.id}", which is not '
                    "a call node; a transform must read a call node's artifact output: point "
                    "source at the call that produced the artifact.",
                    node_id=nid,
                )
            )
            continue
        tool = source.definition.tool
        returns = invocable.returns(tool) if invocable.has(tool) else None
        if returns is None:
            issues.append(
                blocking(
                    "transform_undeclared_tool",
                    f'Transform "{nid}" reads from tool "{tool}", whose return class is not '
                    "declared; declare what the tool returns so the legal step set is known — "
                    "the battery never guesses a class.",
                    node_id=nid,
                )
            )
            continue
        if not isinstance(returns, ArtifactReturn):
            issues.append(
                blocking(
                    "transform_source_not_artifact",
                    f'Transform "{nid}" reads from tool "{tool}", which returns {returns.kind}, '
                    "not an artifact; a transform needs an artifact class to name its steps: "
                    "read the call's declared fields directly instead.",
                    node_id=nid,
                )
            )
            continue
        methods = {m.name: m for m in effective_tool_methods(returns.artifact_class)}
        for i, step in enumerate(d.steps):
            descriptor = methods.get(step.name)
            if descriptor is None:
                issues.append(
                    blocking(
                        "transform_unknown_step",
                        f'Transform "{nid}" names step "{step.name}" (step {i + 1}), which is '
                        f"not a method of the source artifact class "
                        f"{returns.artifact_class.__name__}; use one of: "
                        f"{', '.join(methods) or '(the class declares no methods)'}.",
                        node_id=nid,
                    )
                )
                continue
            problem = _step_args_problem(descriptor, step.args)
            if problem is not None:
                issues.append(
                    blocking(
                        "transform_step_args",
                        f'Transform "{nid}" step "{step.name}" (step {i + 1}) has args that '
                        f"fail that method's schema: {problem}; fix the args.",
                        node_id=nid,
                    )
                )
    return issues


def _step_args_problem(
    descriptor: ArtifactMethodDescriptor, args: dict[str, object] | None
) -> str | None:
    if descriptor.args_schema is None:
        return None
    return args_problem(descriptor.args_schema, args or {})
