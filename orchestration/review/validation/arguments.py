"""Call arguments against the tool's declared shape: refused at freeze, not at run time.

A call whose arguments do not fit its tool fails with a ``TypeError`` when it runs, and by then
the plan's one run is spent. Where the allowlist knows a tool's shape
(:class:`~orchestration.tools.contracts.DescribedTools`, such as a
:class:`~orchestration.tools.toolbox.Toolbox`), freeze checks every call to it, and each
finding names the node and the fix:

* ``unknown_argument``: an argument the tool does not take (unless it takes ``**kwargs``),
  with the nearest argument name it does take ("did you mean ...?"). When that name is a
  required argument the call does not stage, the one issue says so and no separate
  ``missing_argument`` is raised: the fix is one rename;
* ``missing_argument``: a required argument that is not staged;
* ``argument_type``: a literal the argument's schema refuses;
* ``argument_reference_type``: a reference to a declared field whose type can never fit the
  argument (see :mod:`orchestration.tools.shapes` for what fits).

Tools without a shape (a plain name allowlist) are not checked.
"""

from __future__ import annotations

import difflib
import json
from typing import Any

from orchestration.plan.encoding import NodeRef, ParamRef
from orchestration.plan.gates import input_fields
from orchestration.plan.references import JOIN_FIELDS, decode_output_schema
from orchestration.review.validation.context import CheckContext
from orchestration.review.validation.issues import blocking
from orchestration.tools.contracts import DescribedTools
from orchestration.tools.shapes import ToolShape, is_plain_json
from orchestration.types import (
    BooleanField,
    CallDefinition,
    DeclaredField,
    EntryDefinition,
    EnumField,
    InputDefinition,
    NumberField,
    PlanIssue,
    PlanNode,
    ReasonDefinition,
    StringField,
    TransformDefinition,
)

__all__ = ["check_arguments"]


def check_arguments(ctx: CheckContext) -> list[PlanIssue]:
    """Every call to a tool with a shape, in node order (nothing when the allowlist has none)."""
    invocable = ctx.inputs.invocable
    if not isinstance(invocable, DescribedTools):
        return []
    issues: list[PlanIssue] = []
    for node in ctx.view.nodes:
        d = node.definition
        if not isinstance(d, CallDefinition) or not invocable.has(d.tool):
            continue
        shape = invocable.shape(d.tool)
        if shape is not None:
            issues += _call_issues(ctx, node.id, d, shape)
    return issues


def _call_issues(
    ctx: CheckContext, node_id: str, d: CallDefinition, shape: ToolShape
) -> list[PlanIssue]:
    issues: list[PlanIssue] = []
    properties = shape.properties
    signature = shape.signature(d.tool)
    missing = [name for name in shape.required if name not in d.args]
    unknown = [] if shape.open else [name for name in d.args if name not in properties]
    for name in unknown:
        close = difflib.get_close_matches(name, list(properties), n=1, cutoff=0.6)
        if close and close[0] in missing:
            missing.remove(close[0])
            fix = f'did you mean "{close[0]}"? It is required and not set.'
        elif close:
            fix = f'did you mean "{close[0]}"?'
        else:
            fix = "remove it, or pass one the tool takes."
        issues.append(
            blocking(
                "unknown_argument",
                f'Call node "{node_id}" passes argument "{name}", which tool "{d.tool}" does '
                f"not take; {fix} The tool takes: {signature}.",
                node_id=node_id,
            )
        )
    for name in missing:
        issues.append(
            blocking(
                "missing_argument",
                f'Call node "{node_id}" does not pass argument "{name}", which tool "{d.tool}" '
                f"requires ({shape.describe(name)}); add it to args. The tool takes: "
                f"{signature}.",
                node_id=node_id,
            )
        )
    for name, value in d.args.items():
        if name not in properties:
            continue
        if isinstance(value, NodeRef):
            problem = _reference_problem(ctx, shape, name, value)
            if problem is not None:
                issues.append(
                    blocking(
                        "argument_reference_type",
                        f'Call node "{node_id}" passes {_ref_text(value)} as argument "{name}" '
                        f'of tool "{d.tool}", but {problem}; reference a field of the type the '
                        "argument takes, or declare the field as it is.",
                        node_id=node_id,
                    )
                )
            continue
        if _holds_reference(value):
            continue
        problem = shape.literal_problem(name, value)
        if problem is not None:
            issues.append(
                blocking(
                    "argument_type",
                    f'Call node "{node_id}" passes {_show(value)} as argument "{name}" of tool '
                    f'"{d.tool}", which takes {shape.describe(name)} ({problem}); stage a value '
                    "of that type.",
                    node_id=node_id,
                )
            )
    return issues


def _reference_problem(
    ctx: CheckContext, shape: ToolShape, arg: str, ref: NodeRef
) -> str | None:
    target = ctx.by_id.get(ref.node)
    if target is None or ref.path is None or ref.select == "all":
        return None
    declared = _declared(target, ref.path)
    if declared is None:
        return None
    return shape.field_problem(arg, declared, many=False)


def _declared(node: PlanNode, path: str) -> DeclaredField | None:
    """The type of field ``path`` of ``node``, where the plan declares one."""
    d = node.definition
    if isinstance(d, EntryDefinition | CallDefinition | TransformDefinition):
        fields = d.input if isinstance(d, EntryDefinition) else d.output
        return next((f for f in fields if f.path == path), None)
    if node.kind == "join":
        return StringField(path=path) if path in JOIN_FIELDS else None
    if isinstance(d, InputDefinition):
        return next((f for f in input_fields(d.schema_) if f.path == path), None)
    if isinstance(d, ReasonDefinition):
        properties = (decode_output_schema(d.output_schema) or {}).get("properties")
        prop = properties.get(path) if isinstance(properties, dict) else None
        return _schema_field(path, prop) if isinstance(prop, dict) else None
    return None


def _schema_field(path: str, prop: dict[str, Any]) -> DeclaredField | None:
    """A reason schema's top-level property as the declared field it amounts to."""
    enum = prop.get("enum")
    if isinstance(enum, list) and enum and all(isinstance(v, str) for v in enum):
        return EnumField(path=path, values=tuple(enum))
    kind = prop.get("type")
    if kind == "string":
        return StringField(path=path)
    if kind in ("number", "integer"):
        return NumberField(path=path)
    if kind == "boolean":
        return BooleanField(path=path)
    return None


def _holds_reference(value: Any) -> bool:
    if isinstance(value, NodeRef | ParamRef):
        return True
    if isinstance(value, list | set | frozenset):
        return any(_holds_reference(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_reference(k) or _holds_reference(v) for k, v in value.items())
    return False


def _ref_text(ref: NodeRef) -> str:
    return f'field "{ref.path}" of node "{ref.node}"'


def _show(value: Any) -> str:
    if is_plain_json(value):
        text = json.dumps(value, ensure_ascii=False)
        return text if len(text) <= 40 else text[:39] + "…"
    return f"a {type(value).__name__}"
