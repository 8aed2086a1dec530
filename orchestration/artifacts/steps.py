"""Applying a transform: its steps over an artifact, then its emit into output items.

The rules, stated once (seed 000 ``TransformNodeDefinition``, rulings 6 and 22):

* A step names a descriptor's LLM-facing ``name``; the method that runs is the descriptor's
  ``method``, looked up in :func:`~orchestration.artifacts.methods.effective_tool_methods` of
  the SOURCE artifact's class. Args are checked against the descriptor's ``argsSchema`` and
  passed **by name** (``startLine`` reaches the parameter ``start_line``), so their order in
  the plan never matters.
* Each step's **raw** result feeds the next: the next step runs on
  :meth:`~orchestration.artifacts.base.SpooledArtifact.derive` of it. Nothing is serialised
  between steps, so structure survives for a final ``rows`` emit.
* ``emit: {as: "value", field}`` makes one item ``{field: result}``. When that field is declared
  ``string`` (or not declared) and the result is not a string, the LAST step's descriptor's
  ``serialise`` converts it, else :func:`~orchestration.artifacts.serialise.default_serialise`;
  a field declared as a number, boolean or enum receives the raw result, so the declared-output
  check can refuse a wrong type instead of a string silently passing.
* ``emit: {as: "rows"}`` needs a list; each element that is a mapping is one item, anything
  else becomes ``{value: element}``.

Everything here is deterministic; the only I/O is whatever the artifact's reader does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic.alias_generators import to_snake

from orchestration.artifacts.base import SpooledArtifact
from orchestration.artifacts.methods import ArtifactMethodDescriptor, effective_tool_methods
from orchestration.artifacts.serialise import default_serialise
from orchestration.errors import ArtifactError, TransformError
from orchestration.types import DeclaredField, EmitRows, EmitValue, StringField, TransformStep

__all__ = ["apply_steps", "emit_items", "run_transform"]


def _args_problem(descriptor: ArtifactMethodDescriptor, args: Mapping[str, Any]) -> str | None:
    if descriptor.args_schema is None:
        return None
    from orchestration.review.validation.schemas import args_problem

    return args_problem(descriptor.args_schema, args)


def apply_steps(
    artifact: SpooledArtifact, steps: Sequence[TransformStep]
) -> tuple[Any, ArtifactMethodDescriptor]:
    """Run ``steps`` in order; return the last raw result and the descriptor that made it.

    Raises:
        TransformError: a step is not a method of the artifact's class
            (``transform_unknown_step``), its args fail the method's schema
            (``transform_step_args``), or the method fails (``transform_step_failed``).

    """
    if not steps:
        raise TransformError("transform_unknown_step", "a transform needs at least one step")
    methods = {d.name: d for d in effective_tool_methods(type(artifact))}
    current = artifact
    result: Any = None
    descriptor: ArtifactMethodDescriptor | None = None
    for number, step in enumerate(steps, start=1):
        descriptor = methods.get(step.name)
        if descriptor is None:
            raise TransformError(
                "transform_unknown_step",
                f'step {number} "{step.name}" is not a method of artifact class '
                f"{type(artifact).__name__} ({artifact.artifact_class}); its methods are: "
                f"{', '.join(methods)}",
            )
        args = dict(step.args or {})
        problem = _args_problem(descriptor, args)
        if problem is not None:
            raise TransformError(
                "transform_step_args", f'step {number} "{step.name}" has bad args: {problem}'
            )
        method = getattr(current, descriptor.method, None)
        if not callable(method):
            raise TransformError(
                "transform_unknown_step",
                f'step {number} "{step.name}": artifact class {type(artifact).__name__} has no '
                f'method "{descriptor.method}"',
            )
        try:
            result = method(**{to_snake(k): v for k, v in args.items()})
        except ArtifactError as exc:
            raise TransformError(
                "transform_step_failed", f'step {number} "{step.name}" failed: {exc.message}'
            ) from exc
        except (TypeError, ValueError) as exc:
            raise TransformError(
                "transform_step_failed", f'step {number} "{step.name}" failed: {exc}'
            ) from exc
        if number < len(steps):
            current = current.derive(result)
    assert descriptor is not None
    return result, descriptor


def emit_items(
    result: Any,
    emit: EmitValue | EmitRows,
    output: Sequence[DeclaredField],
    descriptor: ArtifactMethodDescriptor,
) -> list[dict[str, Any]]:
    """The output items of a final result (see the module docstring).

    Raises:
        TransformError: ``transform_emit`` when ``rows`` gets something other than a list.

    """
    if isinstance(emit, EmitValue):
        declared = next((f for f in output if f.path == emit.field), None)
        wants_text = declared is None or isinstance(declared, StringField)
        if wants_text and not isinstance(result, str):
            serialise = descriptor.serialise or default_serialise
            result = serialise(result)
        return [{emit.field: result}]
    if not isinstance(result, list | tuple):
        raise TransformError(
            "transform_emit",
            f"emit 'rows' needs a list, but the last step ({descriptor.name}) returned a "
            f"{type(result).__name__}; end with a step that returns a list, or emit 'value'",
        )
    return [
        dict(element) if isinstance(element, Mapping) else {"value": element} for element in result
    ]


def run_transform(
    artifact: SpooledArtifact,
    steps: Sequence[TransformStep],
    emit: EmitValue | EmitRows,
    output: Sequence[DeclaredField] = (),
) -> list[dict[str, Any]]:
    """Apply the steps, then emit: the transform's output items as field mappings."""
    result, descriptor = apply_steps(artifact, steps)
    return emit_items(result, emit, output, descriptor)
