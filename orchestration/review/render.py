"""Prose an operator reads before approving a plan, and a diff they read before re-approving.

The rendering is what an approval means: the operator approves the digest printed at the top,
and the digest is lossless, so everything the plan will do must be visible here. Every node is
shown, in execution (topological) order, with everything that decides its effect: the tool and
every staged argument (a reference is shown as what it reads, ``← fetch.body (first)``), the
authority it claims, whether a repeat is safe and what happens when it is interrupted, branch
conditions, select cases, join barriers (their fork and how many arrivals they wait for), and
where each outcome leads; before the steps, the bounds and, for a clone, the warning that
approving repeats what the parent already did. The closing section is the total authority
requested (every call's claims, grouped by capability) with how to approve exactly that set.

Rendering is pure and deterministic (same view, same text), and total: a plan freeze would
refuse still renders, so an author can read what is wrong with it.

Two views of the same layout: ``as_planned`` is what an operator approves; ``as_executed``
(with the run's projection) is what the run did: the run id and outcome (and why it stopped,
with the contract's interruption labels) in the header, each node's status after its title,
each edge the run took marked with its evidence, and each reference followed by the value it
read (``⇒ ...``). No heading is printed without a body under it.

Every pause a node makes (an approval before a call or of a result, an input request, a
model's questions) is stated in its block (:mod:`orchestration.review.gate_text`); as
executed, each request is listed with what became of it, and the header names the command
that answers a request still open.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Literal

from orchestration.plan.encoding import NodeRef, ParamRef
from orchestration.plan.graph import PlanStructure, layout_order
from orchestration.plan.maps import WorstCase, map_bodies, worst_case
from orchestration.review.approval import authority_set, claim_key, describe_claim
from orchestration.review.gate_text import gate_lines, request_lines, waiting_lines
from orchestration.review.render_run import (
    budget_bounds,
    describe_budget,
    executed_lines,
    node_budget,
)
from orchestration.run.resolve import MISSING, resolve_ref
from orchestration.run.routes import BranchId, EdgeSegment, ItemSegment
from orchestration.types import (
    AuthorityClaim,
    AuthorityRevoked,
    BranchDefinition,
    BudgetExhausted,
    CallDefinition,
    CloneProvenance,
    DeclaredField,
    EmitValue,
    EntryDefinition,
    EnumField,
    FieldChange,
    InputDefinition,
    InterruptionCause,
    JoinDefinition,
    LoopDefinition,
    MapDefinition,
    NodeOutput,
    PlanDiff,
    PlanEdge,
    PlanIssue,
    PlanNode,
    RawPlanView,
    ReasonDefinition,
    RunProjection,
    SelectDefinition,
    StringField,
    TemplateProvenance,
    TextPart,
    TransformDefinition,
)

__all__ = [
    "Audience",
    "RenderView",
    "describe_interruption",
    "describe_ref",
    "format_value",
    "node_run_status",
    "render_diff",
    "render_plan",
]

Audience = Literal["operator", "model"]
RenderView = Literal["as_planned", "as_executed"]

_INDENT = "     "
_MUTATING = frozenset({"create", "update", "delete"})
_VERB_RANK = {"list": 0, "read": 1, "create": 2, "update": 3, "delete": 4}
_RESOLVED_CHARS = 200
_REGEX_FLAGS = (
    (re.ASCII, "a"),
    (re.IGNORECASE, "i"),
    (re.MULTILINE, "m"),
    (re.DOTALL, "s"),
    (re.VERBOSE, "x"),
)


def render_plan(
    plan: RawPlanView,
    /,
    audience: Audience = "operator",
    issues: Sequence[PlanIssue] | None = None,
    *,
    view: RenderView = "as_planned",
    run: RunProjection | None = None,
    short_tools: Collection[str] = (),
) -> str:
    """The plan as prose, for an ``operator`` deciding on it or a ``model`` editing it.

    Args:
        plan: The folded plan.
        audience: ``operator`` shows references as what they read and ends with how to
            approve; ``model`` shows references in their wire form (``{"$ref": ...}``), ready
            to copy into an op.
        issues: Freeze issues to list after the steps (``None`` omits the section).
        view: ``as_planned`` (what an approval binds) or ``as_executed`` (what ``run`` did).
        run: The run's projection; required for ``as_executed``.
        short_tools: The tools the worker's toolbox declares ``short``: a replay-safe call of
            one runs as a local activity (the fast path), and its step says so. The path is
            the worker's choice, not the plan's, so it never changes what an approval binds.

    Returns:
        Text lines ending with a newline.

    Raises:
        ValueError: ``as_executed`` without ``run``.

    """
    if view == "as_executed" and run is None:
        raise ValueError("render_plan(view='as_executed') needs the run's projection: run=...")
    executed = run if view == "as_executed" else None
    structure = PlanStructure.of(plan)
    out: list[str] = []
    out += _header(plan, audience, executed)
    out += _lineage(plan)
    out += _bounds(plan)
    counted = _worst_case(plan, structure)
    if counted is not None:
        limit = plan.bounds.max_steps
        verdict = "OVER maxSteps: freeze refuses it" if counted.steps > limit else "within"
        out[-1:-1] = [
            f"Worst case: {counted.steps} steps with every {_regions(structure)} ({verdict} "
            f"maxSteps {limit})."
        ]
    graph = structure.graph
    order = structure.order if structure.order is not None else layout_order(graph)
    steps = {graph.ids[node]: n for n, node in enumerate(order, start=1)}
    if order:
        out.append("Steps, in execution order:")
        out.append("")
    else:
        out += ["Steps: none (the plan has no nodes yet).", ""]
    for number, index in enumerate(order, start=1):
        node = plan.nodes[index]
        out += _node_block(
            structure,
            index,
            node,
            number,
            steps,
            audience,
            executed,
            frozenset(short_tools),
            counted,
        )
        out.append("")
    if issues is not None:
        out += _issues(issues)
    out += _authority(plan)
    out += _footer(plan, audience, issues, executed)
    return "\n".join(out) + "\n"


def node_run_status(run: RunProjection, node_id: str) -> str:
    """A node's status in ``run``: the fold's, or ``not reached`` once the run has ended."""
    status = run.node_status_by_id.get(node_id)
    if status is not None:
        return status
    return "pending" if run.outcome == "running" else "not reached"


_INTERRUPTION_LABELS = {
    "budget_exhausted": "step budget exhausted after {settled} settlement(s)",
    "deviation_abort": "deviation abort: {detail}",
    "node_failed": "node {node_id} failed (unhandled)",
    "predicate_unevaluatable": "predicate unevaluatable at node {node_id}",
    "join_unsatisfiable": "join {node_id} unsatisfiable",
    "output_schema_violation": "output schema violated at node {node_id}",
}
"""The contract's label per interruption kind; the kinds without details read as their name."""


def describe_interruption(cause: InterruptionCause) -> str:
    """Why a run stopped short, in the contract's words (``node x failed (unhandled)``)."""
    if isinstance(cause, AuthorityRevoked):
        return f"authority revoked: {describe_claim(cause.claim)}"
    if isinstance(cause, BudgetExhausted) and cause.budget is not None:
        return describe_budget(cause)
    template = _INTERRUPTION_LABELS.get(cause.kind)
    if template is None:
        return cause.kind.replace("_", " ")
    return template.format(**cause.model_dump(by_alias=False))


# -- sections --------------------------------------------------------------------------------


def _header(view: RawPlanView, audience: Audience, run: RunProjection | None) -> list[str]:
    if run is None:
        who = (
            "Operator view: read this before approving."
            if audience == "operator"
            else "Model view."
        )
    else:
        who = f"{audience.capitalize()} view, as executed: what the run did."
    lines = [f"Plan {view.plan_id}", f"digest: {view.digest}", f"revision: {view.revision}", who]
    if run is not None:
        lines.append(f"run: {run.run_id} · outcome: {run.outcome}")
        if run.digest != view.digest:
            lines.append(
                f"WARNING: the run started against digest {run.digest}, not this revision's"
            )
        if run.interruption is not None:
            lines.append(f"interrupted: {describe_interruption(run.interruption)}")
        for frame in run.indeterminate:
            lines.append(
                f"waiting for you: call {frame.node_id} has an unknown outcome; answer it with "
                f"`orch run resolve {view.plan_id} {frame.key} retry|skip|abort`"
            )
        lines += waiting_lines(run, view.plan_id)
    return [*lines, ""]


def _lineage(view: RawPlanView) -> list[str]:
    provenance = view.provenance
    if isinstance(provenance, CloneProvenance):
        lines = [
            f"Lineage: cloned from plan {provenance.parent} "
            f"(digest {provenance.parent_digest}, revision {provenance.parent_revision})"
        ]
        completed = list(dict.fromkeys(provenance.completed_at_clone))
        if completed:
            lines.append(
                f"  WARNING: the parent already completed {', '.join(completed)}; "
                "approving this repeats them."
            )
        else:
            lines.append("  The parent had completed no nodes when it was cloned.")
        return [*lines, ""]
    if isinstance(provenance, TemplateProvenance):
        lines = [f"Lineage: instantiated from template {provenance.template}"]
        for key in sorted(provenance.args):
            lines.append(f"  {key}: {format_value(provenance.args[key])}")
        return [*lines, ""]
    return []


def _bounds(view: RawPlanView) -> list[str]:
    b = view.bounds
    return [
        f"Bounds: at most {b.max_nodes} nodes, {b.max_edges} edges, {b.max_steps} steps "
        f"(node executions), {b.max_concurrent_frames} concurrent frames, "
        f"{b.max_encoded_bytes} encoded bytes.",
        *budget_bounds(b),
        f"This plan: {len(view.nodes)} nodes, {len(view.edges)} edges.",
        "",
    ]


def _authority(view: RawPlanView) -> list[str]:
    """The closing section: every call's claims, grouped by capability.

    Calls that cannot run are included (an operator should see everything the content
    asks for); their claims, which an approval does not bind, are marked.
    """
    bound = {claim_key(c) for c in authority_set(view)}
    grouped: dict[str, dict[tuple[str, int, str], AuthorityClaim]] = {}
    for node in view.nodes:
        if not isinstance(node.definition, CallDefinition):
            continue
        for claim in node.definition.authority:
            order: tuple[str, int, str] = (claim.scope, _VERB_RANK.get(claim.verb, 5), claim.verb)
            grouped.setdefault(claim.capability, {}).setdefault(order, claim)
    lines = ["Total authority requested (the approval binds exactly this set):"]
    if not grouped:
        lines.append("  (no call claims any authority)")
    for capability in sorted(grouped):
        lines.append(f"  {capability}:")
        for order in sorted(grouped[capability]):
            claim = grouped[capability][order]
            note = "" if claim_key(claim) in bound else "  (unreachable call: not bound)"
            lines.append(f"    · {claim.scope} · {claim.verb}{note}")
    return lines


def _issues(issues: Sequence[PlanIssue]) -> list[str]:
    if not issues:
        return ["Issues: none.", ""]
    lines = [f"Issues ({len(issues)}):"]
    for issue in issues:
        where = []
        if issue.node_id is not None:
            where.append(f"node {issue.node_id}")
        if issue.edge_id is not None:
            where.append(f"edge {issue.edge_id}")
        at = f" ({', '.join(where)})" if where else ""
        lines.append(f"  [{issue.severity}] {issue.code}{at}: {issue.message}")
    return [*lines, ""]


def _footer(
    view: RawPlanView,
    audience: Audience,
    issues: Sequence[PlanIssue] | None,
    run: RunProjection | None,
) -> list[str]:
    blocking = sum(1 for i in issues or () if i.severity == "blocking")
    if run is not None:
        return [f"This set was approved with digest {run.digest} and used by run {run.run_id}."]
    if audience == "model":
        return [
            "To change this plan, append ops citing the node and edge ids above verbatim; "
            "then freeze it to have it reviewed."
        ]
    if blocking:
        return [
            f"Not approvable yet: {blocking} blocking issue(s) above must be fixed and the plan "
            "frozen before it can be approved."
        ]
    return [
        f"To approve exactly this content, approve digest {view.digest}:",
        f"  orch plan approve {view.plan_id} --digest {view.digest} --by <your name>",
    ]


# -- nodes -----------------------------------------------------------------------------------


def _node_block(
    structure: PlanStructure,
    index: int,
    node: PlanNode,
    number: int,
    steps: dict[str, int],
    audience: Audience,
    run: RunProjection | None,
    short_tools: frozenset[str],
    worst: WorstCase | None = None,
) -> list[str]:
    d = node.definition
    outputs = run.outputs if run is not None else None
    title = f"{number}. {node.kind.upper()} `{node.id}`"
    if isinstance(d, CallDefinition):
        title += f" — tool {d.tool}"
    if node.phase:
        title += f"  [phase: {node.phase}]"
    if structure.entry is not None and not structure.live[index] and node.kind != "entry":
        title += "  (UNREACHABLE: never runs)"
    for map_index, body in _map_bodies(structure).items():
        if index in body:
            owner = structure.graph.ids[map_index]
            if structure.graph.kinds[map_index] == "loop":
                title += f"  [once per round of loop `{owner}`]"
            else:
                title += f"  [once per item of map `{owner}`]"
            break
    if run is not None:
        title += f" [{node_run_status(run, node.id)}]"
    lines = [title]
    if isinstance(d, EntryDefinition):
        lines += _fields("inputs", d.input)
    elif isinstance(d, CallDefinition):
        lines += _call(d, audience, outputs, short_tools)
    elif isinstance(d, ReasonDefinition):
        if not d.prompt:
            lines.append(f"{_INDENT}prompt: (empty)")
        else:
            lines.append(f"{_INDENT}prompt:")
        for part in d.prompt:
            if isinstance(part, TextPart):
                lines.append(f"{_INDENT}  text: {json.dumps(part.text, ensure_ascii=False)}")
            else:
                lines.append(f"{_INDENT}  reads: {_describe(part, audience, outputs)}")
        lines.append(f"{_INDENT}answers with: {d.output_schema}")
        lines.append(f"{_INDENT}max attempts: {d.max_attempts}")
    elif isinstance(d, TransformDefinition):
        lines.append(f"{_INDENT}source: {_describe(d.source, audience, outputs)}")
        lines.append(f"{_INDENT}steps:" if d.steps else f"{_INDENT}steps: (none)")
        for i, step in enumerate(d.steps, start=1):
            args = "" if not step.args else " " + _describe_mapping(step.args, audience)
            lines.append(f"{_INDENT}  {i}. {step.name}{args}")
        if isinstance(d.emit, EmitValue):
            lines.append(f"{_INDENT}emits: one item, the result in field {d.emit.field}")
        else:
            lines.append(f"{_INDENT}emits: one item per element of the result")
        lines += _fields("output", d.output)
    elif isinstance(d, BranchDefinition):
        lines.append(
            f"{_INDENT}condition ({d.evaluator} cell): {format_value(d.predicate)}"
        )
    elif isinstance(d, SelectDefinition):
        lines.append(
            f"{_INDENT}condition ({d.evaluator} cell): {format_value(d.predicate)}"
        )
        lines.append(f"{_INDENT}cases: {', '.join(d.cases) if d.cases else '(none)'}")
    elif isinstance(d, InputDefinition):
        lines.append(f"{_INDENT}prompt:" if d.prompt else f"{_INDENT}prompt: (empty)")
        for part in d.prompt:
            if isinstance(part, TextPart):
                lines.append(f"{_INDENT}  text: {json.dumps(part.text, ensure_ascii=False)}")
            else:
                lines.append(f"{_INDENT}  reads: {_describe(part, audience, outputs)}")
    elif node.kind == "join":
        lines += _join(structure, index, d)
    elif isinstance(d, MapDefinition):
        lines += _map(structure, index, d, steps, audience, outputs, worst)
    elif isinstance(d, LoopDefinition):
        lines += _loop(structure, index, d, steps, audience, outputs, worst)
    lines += node_budget(node)
    lines += gate_lines(node, _INDENT)
    if run is not None:
        lines += executed_lines(run, node)
        lines += request_lines(run, node.id, _INDENT + "  ")
    lines += _next(structure, index, steps, run)
    return lines


def _call(
    d: CallDefinition,
    audience: Audience,
    outputs: Mapping[str, NodeOutput] | None,
    short_tools: frozenset[str],
) -> list[str]:
    lines: list[str] = []
    if d.args:
        lines.append(f"{_INDENT}args:")
        for key in sorted(d.args):
            lines.append(f"{_INDENT}  {key}: {_describe(d.args[key], audience, outputs)}")
    else:
        lines.append(f"{_INDENT}args: (none)")
    lines += _fields("output", d.output)
    if d.authority:
        lines.append(f"{_INDENT}authority:")
        lines += [f"{_INDENT}  · {describe_claim(c)}" for c in d.authority]
    else:
        lines.append(f"{_INDENT}authority: (none claimed)")
    verbs = {c.verb for c in d.authority}
    if not verbs:
        lines.append(
            f"{_INDENT}NO AUTHORITY CLAIMED — whether this changes anything is UNKNOWN. "
            "Treat as potentially mutating."
        )
    elif verbs & _MUTATING:
        lines.append(f"{_INDENT}THIS MODIFIES DATA.")
    else:
        lines.append(f"{_INDENT}Read-only: makes no changes (every declared verb is list or read).")
    safe = {
        True: "yes — a repeat with the same arguments is harmless",
        False: "NO — a repeat may duplicate its effect",
        None: "NOT SET",
    }[d.replay_safe]
    lines.append(f"{_INDENT}replay-safe: {safe}")
    if d.replay_safe and d.tool in short_tools:
        lines.append(
            f"{_INDENT}runs as: a local activity in the worker (the tool is declared short; "
            "same attempts and outcomes, no task-queue round trip)"
        )
    interrupted = {
        "retry": "retried",
        "halt": "this step will stop and wait for you (retry, skip or abort it)",
        "skip": "SKIPPED — later steps proceed though its effect is UNKNOWN",
        None: "NOT SET",
    }[d.on_indeterminate]
    lines.append(f"{_INDENT}if interrupted mid-call (outcome unknown): {interrupted}")
    missing = {
        "fail": "the call fails",
        "omit": "that argument is left out",
        None: "NOT SET",
    }[d.on_missing_value]
    lines.append(f"{_INDENT}if a reference resolves to nothing: {missing}")
    if d.declassifies:
        lines.append(f"{_INDENT}declares sanitised (declassifies): {', '.join(d.declassifies)}")
    return lines


def _has_regions(structure: PlanStructure) -> bool:
    kinds = structure.graph.kinds
    return "map" in kinds or "loop" in kinds


def _regions(structure: PlanStructure) -> str:
    """What the worst case assumes: every map at its maxItems, every loop at maxIterations."""
    kinds = structure.graph.kinds
    parts = []
    if "map" in kinds:
        parts.append("map at its maxItems")
    if "loop" in kinds:
        parts.append("loop at its maxIterations")
    return " and every ".join(parts)


def _worst_case(plan: RawPlanView, structure: PlanStructure) -> WorstCase | None:
    """The plan's worst case when it has a map or a loop (single entry, acyclic), else ``None``."""
    graph = structure.graph
    if not _has_regions(structure) or structure.entry is None or structure.order is None:
        return None
    max_items: dict[int, int] = {}
    for node in plan.nodes:
        if node.id not in graph.index:
            continue
        if isinstance(node.definition, MapDefinition):
            max_items[graph.index[node.id]] = node.definition.max_items
        elif isinstance(node.definition, LoopDefinition):
            max_items[graph.index[node.id]] = node.definition.max_iterations
    return worst_case(graph, structure.order, structure.entry, max_items)


def _map_bodies(structure: PlanStructure) -> dict[int, tuple[int, ...]]:
    """Each map's or loop's body, smallest first (a node in nested regions names its innermost)."""
    if not _has_regions(structure) or structure.order is None:
        return {}
    bodies = map_bodies(structure.graph, structure.order)
    return dict(sorted(bodies.items(), key=lambda kv: len(kv[1])))


def _map(
    structure: PlanStructure,
    index: int,
    definition: MapDefinition,
    steps: dict[str, int],
    audience: Audience,
    outputs: Mapping[str, NodeOutput] | None,
    worst: WorstCase | None,
) -> list[str]:
    """A map: what it runs per item, over what, how many at most and at once, and its tolerance."""
    graph = structure.graph
    body = _map_bodies(structure).get(index, ())
    over = definition.over
    source = over.node if over.path is None else f"{over.node}.{over.path}"
    count = len(body)
    noun = "step" if count == 1 else "steps"
    at_once = (
        f"{definition.concurrency} at a time"
        if definition.concurrency is not None
        else "all at once (within the run's concurrent frames)"
    )
    listed = ", ".join(f"{steps.get(graph.ids[n], '?')}. `{graph.ids[n]}`" for n in body)
    lines = [
        f"{_INDENT}runs the {count} {noun} below once per item of `{source}`, at most "
        f"{definition.max_items} items, {at_once}",
        f"{_INDENT}body: {listed or '(none: add an item edge)'}",
        f"{_INDENT}reads: {_describe(over, audience, outputs)} (must be a list)",
        f"{_INDENT}each item: the body reads this map as {{index, item}}",
        f"{_INDENT}more than {definition.max_items} items: the map FAILS before any item runs "
        "(MapTooManyItemsError; its error edges apply)",
        f"{_INDENT}failures: {_tolerance(definition)}",
        f"{_INDENT}emits: one item per list item, in order: index, ok, and the body's last "
        "output (result) or the failure (error: node, name, message)",
    ]
    for region in worst.regions if worst is not None else ():
        if region.node == index:
            lines.append(
                f"{_INDENT}worst case: {definition.max_items} items × (1 + {region.body_steps} "
                f"body steps) = {region.steps} steps per run of the map"
            )
    if outputs is not None:
        lines += _map_ran(graph.ids[index], outputs)
    return lines


def _loop(
    structure: PlanStructure,
    index: int,
    definition: LoopDefinition,
    steps: dict[str, int],
    audience: Audience,
    outputs: Mapping[str, NodeOutput] | None,
    worst: WorstCase | None,
) -> list[str]:
    """A loop: what it repeats, at most how often, until what, and how it ends."""
    graph = structure.graph
    body = _map_bodies(structure).get(index, ())
    count = len(body)
    noun = "step" if count == 1 else "steps"
    until = definition.until
    times = "time" if definition.max_iterations == 1 else "times"
    listed = ", ".join(f"{steps.get(graph.ids[n], '?')}. `{graph.ids[n]}`" for n in body)
    unmet = (
        "the loop FAILS (LoopUnmetError; its error edges apply)"
        if definition.fail_unless_met
        else "the loop still succeeds, its output saying how it ended"
    )
    lines = [
        f"{_INDENT}repeats the {count} {noun} below at most {definition.max_iterations} "
        f"{times} until {format_value(until.predicate)} ({until.evaluator} cell, checked on "
        "each round's outputs)",
        f"{_INDENT}body: {listed or '(none: add a body edge)'}",
        f"{_INDENT}each round: the body reads this loop as {{index, previous}} (the round "
        "before's result)",
    ]
    if definition.watch is not None:
        lines.append(
            f"{_INDENT}stuck: ends early when {_describe(definition.watch, audience)} is the "
            "same two rounds in a row"
        )
    lines += [
        f"{_INDENT}not met after {definition.max_iterations} round(s) or stuck: {unmet}",
        f"{_INDENT}a round that fails: the loop FAILS (LoopRoundFailedError; its error edges "
        "apply)",
        f"{_INDENT}emits: ended (until, max_iterations or stuck), rounds, the last round's "
        "result, and every round's (results, by round)",
    ]
    for region in worst.regions if worst is not None else ():
        if region.node == index:
            lines.append(
                f"{_INDENT}worst case: {definition.max_iterations} rounds × (2 + "
                f"{region.body_steps} body steps) = {region.steps} steps per run of the loop"
            )
    if outputs is not None:
        lines += _loop_ran(graph.ids[index], outputs)
    return lines


def _loop_ran(loop_id: str, outputs: Mapping[str, NodeOutput]) -> list[str]:
    """As executed: per run of the loop, how many rounds ran and how it ended."""
    lines: list[str] = []
    prefix = f"{loop_id}:"
    for key in sorted(k for k in outputs if k.startswith(prefix) and not k.endswith("]")):
        for item in outputs[key].items:
            row = item.json_
            if isinstance(row, dict) and "ended" in row:
                lines.append(f"{_INDENT}ran: {row.get('rounds')} round(s), ended {row['ended']}")
    return lines


def _map_ran(map_id: str, outputs: Mapping[str, NodeOutput]) -> list[str]:
    """As executed: per run of the map, how many items ran and which failed."""
    lines: list[str] = []
    prefix = f"{map_id}:"
    for key in sorted(k for k in outputs if k.startswith(prefix) and not k.endswith("]")):
        rows = [item.json_ for item in outputs[key].items]
        failed = [row for row in rows if isinstance(row, dict) and row.get("ok") is False]
        line = f"{_INDENT}ran: {len(rows)} item(s), {len(failed)} failed"
        named = [
            f"item {row.get('index')} at {error.get('node')} ({error.get('name')})"
            for row in failed[:5]
            if isinstance(error := row.get("error"), dict)
        ]
        if named:
            line += ": " + "; ".join(named) + ("; …" if len(failed) > 5 else "")
        lines.append(line)
    return lines


def _tolerance(definition: MapDefinition) -> str:
    count, percent = definition.tolerated_failures, definition.tolerated_failure_percent
    if count is None and percent is None:
        return "none tolerated: one failed item fails the map (MapToleranceExceededError)"
    parts = []
    if count is not None:
        parts.append(f"{count} failed item(s)")
    if percent is not None:
        parts.append(f"{percent:g}% of the items")
    return (
        f"tolerates up to {' and up to '.join(parts)}; past that no new item starts and the map "
        "fails (MapToleranceExceededError)"
    )


def _join(structure: PlanStructure, index: int, definition: object) -> list[str]:
    graph = structure.graph
    incoming = [
        f"{graph.edge_ids[e]} from {graph.ids[graph.src[e]]}" for e in graph.in_edges[index]
    ]
    shape = structure.joins.get(index)
    if shape is None or not shape.is_diamond:
        return [
            f"{_INDENT}barrier: NOT a valid diamond (see the issues); incoming: "
            f"{', '.join(incoming) or '(none)'}"
        ]
    fork = graph.ids[shape.fork]
    needed = definition.needed if isinstance(definition, JoinDefinition) else None
    if needed is None or needed >= shape.routes:
        barrier = (
            f"{_INDENT}barrier: waits for {shape.routes} arrivals from the fork at `{fork}`, "
            "then continues once"
        )
    else:
        first = "the first arrival" if needed == 1 else f"the first {needed} arrivals"
        barrier = (
            f"{_INDENT}barrier: continues after {first} of {shape.routes} from the fork at "
            f"`{fork}`; the steps still running or waiting on the other routes are CANCELLED "
            "(a call already under way may have had its effect)"
        )
    return [
        barrier,
        f"{_INDENT}arrivals: {', '.join(incoming)}",
        f"{_INDENT}emits: one item per arrival, fields via, from, branch",
    ]


def _next(
    structure: PlanStructure, index: int, steps: dict[str, int], run: RunProjection | None
) -> list[str]:
    graph = structure.graph
    edges = graph.out_edges[index]
    if not edges:
        for map_index, body in _map_bodies(structure).items():
            if index in body:
                owner = graph.ids[map_index]
                if graph.kinds[map_index] == "loop":
                    return [
                        f"{_INDENT}then: end of the round (its output is the round's result in "
                        f"`{owner}`; the until check follows)"
                    ]
                return [
                    f"{_INDENT}then: end of the item (its output is the item's result in "
                    f"`{owner}`)"
                ]
        return [f"{_INDENT}then: end (no outgoing edges)"]
    lines = [f"{_INDENT}then:"]
    for e in edges:
        target = graph.ids[graph.dst[e]]
        line = (
            f"{_INDENT}  {_handle_label(graph.handles[e])} → {target} "
            f"(step {steps.get(target, '?')}, edge {graph.edge_ids[e]})"
        )
        if run is not None:
            line += _taken(run, graph.edge_ids[e])
        lines.append(line)
    return lines


def _taken(run: RunProjection, edge_id: str) -> str:
    """`` [taken · evidence: ...]`` for an edge the run took (``2×`` when more than once)."""
    records = [r for r in run.edges_taken if r.edge_id == edge_id]
    if not records:
        return ""
    times = f" {len(records)}×" if len(records) > 1 else ""
    evidence = list(dict.fromkeys(format_value(r.evidence) for r in records if r.evidence))
    said = f" · evidence: {'; '.join(evidence)}" if evidence else ""
    return f"  [taken{times}{said}]"


def _handle_label(handle: str) -> str:
    if handle.startswith("case_"):
        return f"on case {handle[len('case_'):]}"
    return {
        "always": "on success",
        "error": "on error",
        "match": "on match",
        "no_match": "on no match",
        "default": "by default",
        "item": "per item",
        "body": "per round",
    }.get(handle, handle)


def _fields(label: str, fields: Sequence[DeclaredField]) -> list[str]:
    if not fields:
        return [f"{_INDENT}{label}: (none declared)"]
    return [f"{_INDENT}{label}: " + ", ".join(_field(f) for f in fields)]


def _field(f: DeclaredField) -> str:
    if isinstance(f, StringField):
        cap = f" (≤ {f.max_bytes} bytes)" if f.max_bytes is not None else ""
        return f"{f.path}: string{cap}"
    if isinstance(f, EnumField):
        return f"{f.path}: one of {{{', '.join(f.values)}}}"
    return f"{f.path}: {f.type}"


# -- values ----------------------------------------------------------------------------------


def describe_ref(ref: NodeRef, audience: Audience = "operator") -> str:
    """A reference as the reader sees it: ``← fetch.body (first)``, or its wire form."""
    if audience == "model":
        return json.dumps({"$ref": ref.to_wire()}, ensure_ascii=False, separators=(", ", ": "))
    target = ref.node if ref.path is None else f"{ref.node}.{ref.path}"
    select = ref.select if isinstance(ref.select, str) else f"item {ref.select}"
    route = "" if ref.branch_id is None else f" on route {_route(ref.branch_id)}"
    return f"← {target} ({select}){route}"


def _route(branch: BranchId) -> str:
    if not branch.segments:
        return "entry"
    parts = []
    for seg in branch.segments:
        if isinstance(seg, EdgeSegment):
            parts.append(seg.edge)
        elif isinstance(seg, ItemSegment):
            parts.append(f"{seg.map} item {seg.index}")  # a loop's round reads as its index
        else:
            parts.append(f"join {seg.join}({', '.join(seg.of)})")
    return " → ".join(parts)


def _describe(
    value: Any, audience: Audience, outputs: Mapping[str, NodeOutput] | None = None
) -> str:
    if type(value) is NodeRef:
        return describe_ref(value, audience) + _resolved(value, outputs)
    if type(value) is list:
        return "[" + ", ".join(_describe(v, audience, outputs) for v in value) + "]"
    if type(value) is dict and all(type(k) is str for k in value):
        return _describe_mapping(value, audience, outputs)
    return format_value(value)


def _resolved(ref: NodeRef, outputs: Mapping[str, NodeOutput] | None) -> str:
    """`` ⇒ <value>`` when the run's outputs (run-wide) resolve the reference, else nothing."""
    if outputs is None:
        return ""
    value = resolve_ref(ref, outputs)
    if value is MISSING:
        return ""
    text = format_value(value)
    if len(text) > _RESOLVED_CHARS:
        text = text[:_RESOLVED_CHARS] + "…"
    return f" ⇒ {text}"


def _describe_mapping(
    value: dict[str, Any], audience: Audience, outputs: Mapping[str, NodeOutput] | None = None
) -> str:
    inner = ", ".join(
        f"{json.dumps(k, ensure_ascii=False)}: {_describe(value[k], audience, outputs)}"
        for k in sorted(value)
    )
    return "{" + inner + "}"


def format_value(value: Any) -> str:
    """A staged value as text: JSON for JSON values, a labelled form for the others."""
    kind = type(value)
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return str(value)
    if kind is float:
        return repr(value)
    if kind is str:
        return json.dumps(value, ensure_ascii=False)
    if kind is bytes:
        return f"bytes({len(value)}: {value.hex()})" if len(value) <= 32 else f"bytes({len(value)})"
    if kind is dt.datetime:
        return f"datetime({value.isoformat()})"
    if kind is dt.timedelta:
        return f"timedelta({value.total_seconds():g}s)"
    if kind is re.Pattern:
        flags = "".join(letter for flag, letter in _REGEX_FLAGS if value.flags & flag)
        return f"regex({format_value(value.pattern)}{', ' + flags if flags else ''})"
    if kind is list:
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    if kind is set or kind is frozenset:
        members = sorted(format_value(v) for v in value)
        return f"{kind.__name__}{{{', '.join(members)}}}"
    if kind is dict:
        if all(type(k) is str for k in value):
            return _describe_mapping(value, "operator")
        pairs = sorted(f"{format_value(k)}: {format_value(v)}" for k, v in value.items())
        return "map{" + ", ".join(pairs) + "}"
    if kind is NodeRef:
        return describe_ref(value)
    if kind is ParamRef:
        return f"param({value.path})"
    return repr(value)


# -- diffs -----------------------------------------------------------------------------------


def render_diff(diff: PlanDiff, audience: Audience = "operator") -> str:
    """What changed between two revisions, for re-review: every node, field and edge."""
    lines = [
        f"Changes from revision {diff.from_.revision} (digest {diff.from_.digest})",
        f"          to revision {diff.to.revision} (digest {diff.to.digest}):",
        "",
    ]
    empty = not (
        diff.nodes_added
        or diff.nodes_removed
        or diff.nodes_changed
        or diff.edges_added
        or diff.edges_removed
    )
    if empty:
        lines.append("No changes to nodes or edges.")
        return "\n".join(lines) + "\n"
    if diff.nodes_added:
        lines.append(f"Nodes added ({len(diff.nodes_added)}):")
        lines += [f"  + {_node_title(n)}" for n in diff.nodes_added]
    if diff.nodes_removed:
        lines.append(f"Nodes removed ({len(diff.nodes_removed)}):")
        lines += [f"  - {_node_title(n)}" for n in diff.nodes_removed]
    if diff.nodes_changed:
        lines.append(f"Nodes changed ({len(diff.nodes_changed)}):")
        for change in diff.nodes_changed:
            lines.append(f"  ~ `{change.node_id}`")
            lines += [f"      {_field_change(f, audience)}" for f in change.fields]
    if diff.edges_added:
        lines.append(f"Edges added ({len(diff.edges_added)}):")
        lines += [f"  + {_edge(e)}" for e in diff.edges_added]
    if diff.edges_removed:
        lines.append(f"Edges removed ({len(diff.edges_removed)}):")
        lines += [f"  - {_edge(e)}" for e in diff.edges_removed]
    return "\n".join(lines) + "\n"


def _node_title(node: PlanNode) -> str:
    d = node.definition
    tool = f" — tool {d.tool}" if isinstance(d, CallDefinition) else ""
    return f"{node.kind.upper()} `{node.id}`{tool}"


def _field_change(change: FieldChange, audience: Audience) -> str:
    before = _describe(change.before, audience)
    after = _describe(change.after, audience)
    return f"{change.path}: {before} ⇒ {after}"


def _edge(edge: PlanEdge) -> str:
    return f"{edge.id}: {edge.from_} → {edge.to} ({edge.handle})"
