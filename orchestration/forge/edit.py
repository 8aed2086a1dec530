"""The graph edits of the ``authoring`` tier: nodes, edges, fields, phases, bounds, plans.

Each tool checks what it can see before minting an op (the node exists, the edge's endpoints
exist and its handle fits the source's kind, a definition fits the node's kind) so a model is
told at once, with the valid alternatives named, instead of at freeze. Anything that depends on
the whole plan (wiring, references, taint, authority) is left to validation, whose issues each
edit's answer already reports for the node it touched.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import TypeAdapter, ValidationError

from orchestration.forge.prose import NODE_VOCABULARY, PREDICATES
from orchestration.forge.schemas import (
    DEFINITION_MODELS,
    EDGE,
    KINDS,
    NODE_ID,
    PLAN_ID,
    bounds_schema,
    config_schema,
    node_schema,
    obj,
)
from orchestration.forge.session import ForgeSession
from orchestration.forge.tool import ForgeTool, ToolResult, refusal
from orchestration.plan.authoring import new_plan_id
from orchestration.plan.encoding import from_json_value
from orchestration.review.validation.topology import handle_allowed
from orchestration.store.base import CreateRefused
from orchestration.tools.toolbox import tool_catalog
from orchestration.types import PlanBounds, PlanEdge, PlanNode, RawPlanView

__all__ = ["edit_tools"]

_NODE = TypeAdapter[PlanNode](PlanNode)
_EDGE_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_PLAN_ID_PATTERN = "^plan-[A-Za-z0-9_-]+$"
_FIXED_HANDLES = "always, match, no_match, default, error, case_<label>"


def _unknown_node(view: RawPlanView, node_id: str) -> ToolResult:
    valid = ", ".join(n.id for n in view.nodes) or "(none yet; add_node first)"
    return refusal(
        "unknown_node",
        f'Plan {view.plan_id} has no node "{node_id}"; valid node ids: {valid}.',
        validNodeIds=[n.id for n in view.nodes],
    )


def _invalid_definition(kind: str, exc: ValidationError) -> ToolResult:
    parts = []
    for error in exc.errors()[:5]:
        loc = [str(p) for p in error["loc"]]
        if loc and loc[0] == kind:
            loc = loc[1:]
        parts.append(f"{'.'.join(loc) or 'definition'}: {error['msg']}")
    return refusal(
        "invalid_definition",
        f"The {kind} node does not fit its shape ({'; '.join(parts)}); nothing was changed. "
        f"Write it as the {kind} alternative of this tool's schema shows.",
    )


def _calls_guide(session: ForgeSession) -> str:
    entries = tool_catalog(session.orch.inputs.invocable)
    tools = "; ".join(e.signature or e.name for e in entries) or "(none)"
    return (
        "\nCALL NODES need: tool (one of the allowlisted tools, with the args each takes, ? "
        f"marking an optional one: {tools}; list_tools describes them), args (exactly those "
        "names), output (declared fields), authority (claims {capability, scope, verb: "
        "list|read|create|update|delete}; an empty list is allowed, but the operator is then "
        "told the call may change anything), replaySafe, onIndeterminate (retry|halt|skip; "
        "retry needs replaySafe true) and onMissingValue (fail|omit). Data from the entry's "
        "input is tainted: a call may take it in its args only if it lists in declassifies the "
        "output fields its tool sanitises (those fields are then clean for later calls)."
    )


def edit_tools(session: ForgeSession) -> list[ForgeTool]:
    """The ``authoring`` tier's mutating graph tools."""
    guide = NODE_VOCABULARY + _calls_guide(session) + PREDICATES

    async def create_plan(args: dict[str, Any]) -> ToolResult:
        plan_id = args.get("planId") or new_plan_id()
        created = await session.store.create_plan(plan_id, label=args.get("label"))
        if isinstance(created, CreateRefused):
            return refusal(
                "duplicate_id",
                f'Could not create plan "{plan_id}": that id is taken. Omit planId to get a '
                "fresh one.",
            )
        return ToolResult(
            ok=True,
            text=f"Created plan {plan_id} (editable, rev 0). Add its entry node next "
            "(add_node with kind entry).",
            data={"planId": plan_id, "revision": 0, "digest": created.digest},
        )

    async def add_node(args: dict[str, Any]) -> ToolResult:
        plan_id = args["planId"]
        payload = dict(args["node"])
        payload.setdefault("definition", {})
        await session.view(plan_id)
        try:
            node = _NODE.validate_json(json.dumps(payload))
        except ValidationError as exc:
            return _invalid_definition(payload["kind"], exc)
        refused = await session.edit(plan_id, lambda a: [a.add_node(node)])
        if refused is not None:
            return refused
        return await session.after_edit(plan_id, f"Added {node.kind} node {node.id}.", node.id)

    async def set_node_config(args: dict[str, Any]) -> ToolResult:
        plan_id, node_id = args["planId"], args["nodeId"]
        kind, definition = args["definition"]["kind"], args["definition"]["definition"]
        view = await session.view(plan_id)
        node = view.node(node_id)
        if node is None:
            return _unknown_node(view, node_id)
        if kind != node.kind:
            return refusal(
                "kind_mismatch",
                f'Node "{node_id}" is a {node.kind} node; set_node_config replaces a definition '
                f"and keeps the kind, so pass kind {node.kind!r}. To change a node's kind, "
                "add_node again with the same id (it replaces the node).",
            )
        try:
            model = DEFINITION_MODELS[node.kind].model_validate_json(json.dumps(definition))
        except ValidationError as exc:
            return _invalid_definition(node.kind, exc)
        # The op stores the definition as named values; the wire round trip turns the model's
        # tuples into lists and keeps references as NodeRef objects.
        wire = from_json_value(model.model_dump(mode="json", exclude_none=True), "node")
        refused = await session.edit(plan_id, lambda a: [a.set_definition(node_id, wire)])
        if refused is not None:
            return refused
        return await session.after_edit(plan_id, f"Replaced the definition of {node_id}.", node_id)

    async def set_node_field(args: dict[str, Any]) -> ToolResult:
        plan_id, node_id, path = args["planId"], args["nodeId"], args["path"]
        view = await session.view(plan_id)
        if view.node(node_id) is None:
            return _unknown_node(view, node_id)
        value = from_json_value(args["value"], "node", path)
        refused = await session.edit(plan_id, lambda a: [a.set_field(node_id, path, value)])
        if refused is not None:
            return refused
        return await session.after_edit(plan_id, f"Set {node_id}.{path}.", node_id)

    async def set_node_phase(args: dict[str, Any]) -> ToolResult:
        plan_id, node_id, phase = args["planId"], args["nodeId"], args["phase"]
        view = await session.view(plan_id)
        if view.node(node_id) is None:
            return _unknown_node(view, node_id)
        refused = await session.edit(plan_id, lambda a: [a.set_phase(node_id, phase or None)])
        if refused is not None:
            return refused
        label = f"phase {phase!r}" if phase else "no phase"
        return await session.after_edit(plan_id, f"Node {node_id} now has {label}.", node_id)

    async def connect_nodes(args: dict[str, Any]) -> ToolResult:
        plan_id = args["planId"]
        spec = args["edge"]
        source, target = spec["from"], spec["to"]
        handle = spec.get("handle", "always")
        view = await session.view(plan_id)
        for node_id in (source, target):
            if view.node(node_id) is None:
                return _unknown_node(view, node_id)
        source_node = view.node(source)
        assert source_node is not None
        if not handle_allowed(source_node.kind, handle):
            return refusal(
                "invalid_handle",
                f'A {source_node.kind} node cannot fire a "{handle}" edge; see EDGE HANDLES in '
                f"this tool's description for the handles a {source_node.kind} node takes.",
            )
        edge_id = (
            spec.get("id")
            or _EDGE_ID_UNSAFE.sub(
                "_", f"{source}-{target}" + ("" if handle == "always" else f"-{handle}")
            )[:64]
        )
        edge = PlanEdge.model_validate(
            {"id": edge_id, "from": source, "to": target, "handle": handle}
        )
        existing = next((e for e in view.edges if e.id == edge_id), None)
        if existing is not None and existing != edge:
            return refusal(
                "duplicate_edge_id",
                f'Edge id "{edge_id}" is already {existing.from_} → {existing.to} '
                f"({existing.handle}); give this edge another id, or disconnect_edge that one "
                "first.",
            )
        refused = await session.edit(
            plan_id, lambda a: [a.edge(source, target, handle, edge_id=edge_id)]
        )
        if refused is not None:
            return refused
        return await session.after_edit(
            plan_id,
            f"Connected {source} → {target} ({handle}) as edge {edge_id}.",
            source,
            edge_id,
        )

    async def remove_node(args: dict[str, Any]) -> ToolResult:
        plan_id, node_id = args["planId"], args["nodeId"]
        view = await session.view(plan_id)
        if view.node(node_id) is None:
            return _unknown_node(view, node_id)
        incident = [e.id for e in view.edges if node_id in (e.from_, e.to)]
        refused = await session.edit(plan_id, lambda a: [a.remove_node(node_id, incident)])
        if refused is not None:
            return refused
        removed = f" and its edges {', '.join(incident)}" if incident else ""
        return await session.after_edit(plan_id, f"Removed node {node_id}{removed}.", None)

    async def disconnect_edge(args: dict[str, Any]) -> ToolResult:
        plan_id, edge_id = args["planId"], args["edgeId"]
        view = await session.view(plan_id)
        edge = next((e for e in view.edges if e.id == edge_id), None)
        if edge is None:
            valid = ", ".join(e.id for e in view.edges) or "(none)"
            return refusal(
                "unknown_edge", f'Plan {plan_id} has no edge "{edge_id}"; valid edge ids: {valid}.'
            )
        refused = await session.edit(plan_id, lambda a: [a.remove_edge(edge_id)])
        if refused is not None:
            return refused
        return await session.after_edit(
            plan_id, f"Removed edge {edge_id} ({edge.from_} → {edge.to}).", edge.from_
        )

    async def set_bounds(args: dict[str, Any]) -> ToolResult:
        plan_id = args["planId"]
        bounds = PlanBounds.model_validate(args["bounds"])
        await session.view(plan_id)
        refused = await session.edit(plan_id, lambda a: [a.set_bounds(bounds)])
        if refused is not None:
            return refused
        return await session.after_edit(plan_id, "Replaced the plan's bounds.", None)

    async def clone_plan(args: dict[str, Any]) -> ToolResult:
        source = args["sourcePlanId"]
        new_id = args.get("newPlanId") or new_plan_id()
        result = await session.store.clone_plan(source, new_id, at_revision=args.get("atRevision"))
        if isinstance(result, CreateRefused):
            fixes = {
                "source_missing": f'no plan "{source}" exists; name the plan to copy verbatim',
                "duplicate_id": f'a plan "{new_id}" exists; omit newPlanId to get a fresh id',
                "revision_missing": f"{source} never reached that revision; omit atRevision",
            }
            return refusal(
                result.reason, f"Could not clone {source} → {new_id}: {fixes[result.reason]}."
            )
        view = await session.view(new_id)
        warning = ""
        provenance = view.provenance
        completed = getattr(provenance, "completed_at_clone", ())
        if completed:
            warning = (
                f" WARNING: the source's run already completed {', '.join(completed)}; "
                "approving the clone performs them again."
            )
        return ToolResult(
            ok=True,
            text=f"Cloned {source} into {new_id} (editable, rev {result.revision}). It has no "
            f"approval and no run; edit it, then freeze it for review.{warning}",
            data={
                "planId": new_id,
                "revision": result.revision,
                "digest": result.digest,
                "completedAtClone": list(completed),
            },
        )

    plan_and_node = {"planId": PLAN_ID, "nodeId": NODE_ID}
    return [
        ForgeTool(
            "create_plan",
            "Create a new, empty, editable plan and return its id. Then build it: add_node "
            "(start with the entry node), connect_nodes, set_node_config.",
            obj(
                {
                    "planId": {
                        "type": "string",
                        "pattern": _PLAN_ID_PATTERN,
                        "description": "Optional id (default plan-<hex>).",
                    },
                    "label": {"type": "string", "description": "A short label for listings."},
                }
            ),
            create_plan,
            mutating=True,
        ),
        ForgeTool(
            "add_node",
            "Add a node to an editable plan (or replace the node with the same id). The "
            "definition's shape depends on the kind; this schema lists each." + guide,
            obj({"planId": PLAN_ID, "node": node_schema()}, ("planId", "node")),
            add_node,
            mutating=True,
            validation_schema=obj(
                {
                    "planId": PLAN_ID,
                    "node": obj(
                        {
                            "id": NODE_ID,
                            "phase": {"type": ["string", "null"]},
                            "kind": {"enum": list(KINDS)},
                            "definition": {"type": "object"},
                        },
                        ("id", "kind"),
                    ),
                },
                ("planId", "node"),
            ),
        ),
        ForgeTool(
            "set_node_config",
            "Replace a node's whole definition. The node keeps its kind: pass that kind with "
            "the new definition." + guide,
            obj(
                {**plan_and_node, "definition": config_schema()}, ("planId", "nodeId", "definition")
            ),
            set_node_config,
            mutating=True,
            validation_schema=obj(
                {
                    **plan_and_node,
                    "definition": obj(
                        {"kind": {"enum": list(KINDS)}, "definition": {"type": "object"}},
                        ("kind", "definition"),
                    ),
                },
                ("planId", "nodeId", "definition"),
            ),
        ),
        ForgeTool(
            "set_node_field",
            "Set one field of a node's definition by dot path (args.city, replaySafe, "
            "authority, predicate.value). value is JSON; write a reference as "
            '{"$ref": {"node": ..., "path": ...}}. A value of the wrong type for the field is '
            "refused and nothing changes.",
            obj(
                {
                    **plan_and_node,
                    "path": {"type": "string", "minLength": 1},
                    "value": {"description": "The new value (any JSON, $ref allowed)."},
                },
                ("planId", "nodeId", "path", "value"),
            ),
            set_node_field,
            mutating=True,
        ),
        ForgeTool(
            "set_node_phase",
            'Set a node\'s phase label (null or "" clears it). Phases group nodes for reading '
            "(plan_outline, plan_read); edges alone order execution.",
            obj(
                {**plan_and_node, "phase": {"type": ["string", "null"]}},
                ("planId", "nodeId", "phase"),
            ),
            set_node_phase,
            mutating=True,
        ),
        ForgeTool(
            "connect_nodes",
            "Add a directed edge between two existing nodes. handle decides when it fires ("
            f"{_FIXED_HANDLES}); it must suit the source's kind." + NODE_VOCABULARY,
            obj({"planId": PLAN_ID, "edge": EDGE}, ("planId", "edge")),
            connect_nodes,
            mutating=True,
        ),
        ForgeTool(
            "remove_node",
            "Remove a node and every edge touching it. References other nodes make to it are "
            "left in place and reported as issues, so you can repoint them.",
            obj(plan_and_node, ("planId", "nodeId")),
            remove_node,
            mutating=True,
        ),
        ForgeTool(
            "disconnect_edge",
            "Remove one edge by its id (plan_read lists the edges touching a node or phase; "
            "connect_nodes names the id it used).",
            obj({"planId": PLAN_ID, "edgeId": {"type": "string"}}, ("planId", "edgeId")),
            disconnect_edge,
            mutating=True,
        ),
        ForgeTool(
            "set_bounds",
            "Replace the plan's resource envelope; all five members are required. The operator "
            "approves the bounds with the plan, and they are enforced: maxNodes, maxEdges and "
            "maxEncodedBytes at freeze, maxSteps and maxConcurrentFrames while it runs.",
            obj({"planId": PLAN_ID, "bounds": bounds_schema()}, ("planId", "bounds")),
            set_bounds,
            mutating=True,
        ),
        ForgeTool(
            "clone_plan",
            "Copy a plan (optionally only its first atRevision edits) into a new editable plan. "
            "This is the only way to change a frozen or approved plan: edit the clone and have "
            "it reviewed again.",
            obj(
                {
                    "sourcePlanId": PLAN_ID,
                    "newPlanId": {"type": "string", "pattern": _PLAN_ID_PATTERN},
                    "atRevision": {"type": "integer", "minimum": 0},
                },
                ("sourcePlanId",),
            ),
            clone_plan,
            mutating=True,
        ),
    ]
