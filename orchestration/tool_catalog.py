"""The tool catalogue: every allowed tool with what it takes and returns, as authors read it.

One listing feeds ``orch tools list`` and the forge's ``list_tools``, so a person at a shell and
a model authoring plans see the same names, signatures and schemas. A tool of an allowlist
without shapes is listed without a signature or ``inputSchema``: its calls' arguments are not
checked at freeze.
"""

from __future__ import annotations

from typing import Any

from orchestration.contracts import ArtifactReturn, DescribedTools, InvocableTools
from orchestration.types import WireModel

__all__ = ["ToolEntry", "catalog_lines", "tool_catalog"]


class ToolEntry(WireModel):
    """One allowed tool.

    Attributes:
        name: What a call node names in ``tool``.
        description: What it does (empty when the allowlist does not say).
        returns: ``text``, ``bytes``, ``media``, ``artifact:<class>``, or ``undeclared``.
        signature: ``name(arg: type, optional?: type)``, or ``None`` without a shape.
        input_schema: The JSON Schema of its arguments, or ``None`` without a shape.
        output_schema: The JSON Schema of what it returns, when declared.

    """

    name: str
    description: str = ""
    returns: str
    signature: str | None = None
    input_schema: dict[str, Any] | None = None
    output_schema: dict[str, Any] | None = None


def tool_catalog(invocable: InvocableTools) -> list[ToolEntry]:
    """Every tool ``invocable`` allows, sorted by name, with its shape when it has one."""
    entries = []
    for name in sorted(invocable.names()):
        shape = invocable.shape(name) if isinstance(invocable, DescribedTools) else None
        entries.append(
            ToolEntry(
                name=name,
                description=shape.description if shape is not None else "",
                returns=_returns(invocable, name),
                signature=shape.signature(name) if shape is not None else None,
                input_schema=dict(shape.input_schema) if shape is not None else None,
                output_schema=(
                    dict(shape.output_schema)
                    if shape is not None and shape.output_schema is not None
                    else None
                ),
            )
        )
    return entries


def catalog_lines(entries: list[ToolEntry]) -> list[str]:
    """The catalogue as text: a signature line per tool, its returns and description below."""
    if not entries:
        return ["No tools are allowed."]
    lines = []
    for entry in entries:
        head = entry.signature or f"{entry.name}(...)  [no declared shape: arguments unchecked]"
        lines.append(f"{head} -> {entry.returns}")
        if entry.description:
            lines.append(f"    {entry.description}")
    return lines


def _returns(invocable: InvocableTools, name: str) -> str:
    returned = invocable.returns(name)
    if returned is None:
        return "undeclared"
    if isinstance(returned, ArtifactReturn):
        cls = returned.artifact_class
        label = getattr(cls, "artifact_class", None)
        return f"artifact:{label if isinstance(label, str) else cls.__name__}"
    return returned.kind
