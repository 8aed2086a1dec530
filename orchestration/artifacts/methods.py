"""Artifact method descriptors and ``effective_tool_methods``: the vocabulary of transforms.

A transform step names a descriptor's LLM-facing ``name`` (``artifact_json_get``); the runtime
then calls the descriptor's ``method`` on the instance. Each artifact class lists only its OWN
descriptors in ``tool_methods`` (a subclass does not repeat its ancestors'), so the legal step
set of a class is computed by walking its MRO leaf-first, reading only each class's own
``tool_methods`` (so an inherited attribute is not counted twice) and keeping the nearest
descriptor for each name. This function is the only place that union is computed; freeze, the
transform runtime and the tests all call it, so they cannot disagree.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ArtifactMethodDescriptor", "effective_tool_methods"]


@dataclass(frozen=True)
class ArtifactMethodDescriptor:
    """One method an artifact class offers to a transform (and to a model as a tool).

    Attributes:
        name: Absolute, LLM-facing tool name (``artifact_json_get``); what a step cites.
        method: The instance method invoked (``json_get``); never what a step names.
        description: Model-facing description.
        args_schema: JSON Schema of the step's ``args`` object; freeze validates against it.
        serialise: Formats a FINAL result as a string for an ``emit: value`` string field;
            never used between steps (that would flatten structure a later step needs).

    """

    name: str
    method: str
    description: str
    args_schema: Mapping[str, Any] | None = None
    serialise: Callable[[Any], str] | None = field(default=None, compare=False)


def effective_tool_methods(artifact_class: object) -> tuple[ArtifactMethodDescriptor, ...]:
    """Every descriptor reachable on ``artifact_class``, leaf-first, nearest class wins by name.

    Total: it never raises. What it cannot read is skipped, as the contract's
    ``effectiveToolMethods`` does: something that is not a class gives no descriptors, a
    ``tool_methods`` that is not a list or tuple (a string, ``None``, a property) is ignored,
    and so is any entry that is not an :class:`ArtifactMethodDescriptor` with a string name.
    Freeze calls this on classes a consumer declared, so a malformed declaration must end up
    as "this step is not a method of the class", never as a crash.
    """
    if not isinstance(artifact_class, type):
        return ()
    seen: dict[str, ArtifactMethodDescriptor] = {}
    for klass in artifact_class.__mro__:
        own = vars(klass).get("tool_methods")
        if not isinstance(own, list | tuple):
            continue
        for descriptor in own:
            if isinstance(descriptor, ArtifactMethodDescriptor) and isinstance(
                descriptor.name, str
            ):
                seen.setdefault(descriptor.name, descriptor)
    return tuple(seen.values())
