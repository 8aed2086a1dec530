"""Gates in the operator's prose: every pause the plan will make, and what became of each.

A gate is plan content an operator approves, so the operator view states every pause before
approval: where the run will stop and wait (before a call, with the arguments it will send; after
a step, with its result held; for a person's input; for a model's questions), who may decide it
(autonomous mode only where the plan allows it), what an approver may change, and what a timeout
means. The view as executed lists each request with its decision (who, when, with what
feedback, automatically or not, what was edited) or its timeout, and names the command that
answers a request still open. Pure, like :mod:`orchestration.review.render`, which calls it.
"""

from __future__ import annotations

import json

from orchestration.plan.gates import approval_gate, input_fields, input_paths
from orchestration.types import (
    ApprovalGate,
    AskPolicy,
    ChoiceInput,
    FileInput,
    FormInput,
    GateRequest,
    InputDefinition,
    InputSchema,
    PlanNode,
    ReasonDefinition,
    RunProjection,
    TextInput,
)

__all__ = ["describe_schema", "gate_lines", "request_lines", "waiting_lines"]

_APPROVAL_TIMEOUT = {
    "reject": "it is rejected: the step fails, and its error edges apply",
    "halt": "the run halts (gate_timeout)",
}
_INPUT_TIMEOUT = {
    "reject": "the request is rejected: the step fails, and its error edges apply",
    "halt": "the run halts (gate_timeout)",
}


def _timeout_line(indent: str, timeout: str | None, policy: str, default: object = None) -> str:
    if timeout is None:
        return f"{indent}  no timeout: it waits until someone decides."
    if policy == "default":
        shown = json.dumps(default, ensure_ascii=False, default=str)
        what = f"its default response {shown} is used (recorded as a timeout, not an answer)"
    else:
        what = _APPROVAL_TIMEOUT.get(policy, policy)
    return f"{indent}  if nobody decides within {timeout}: {what}."


def _approval(gate: ApprovalGate, indent: str) -> list[str]:
    if gate.on == "arguments":
        lines = [
            f"{indent}PAUSES BEFORE IT RUNS: the run will pause here for your approval of the "
            "arguments it will send (shown resolved, with their digest; the approval binds it, "
            "so what was approved is what runs)."
        ]
        if gate.editable:
            lines.append(
                f"{indent}  the approver may change: {', '.join(gate.editable)} (within the "
                "tool's input shape; the decision records both versions)."
            )
        else:
            lines.append(f"{indent}  the approver may not change the arguments.")
    else:
        lines = [
            f"{indent}PAUSES AFTER IT RUNS: its result is held until you approve it; a "
            "rejection (with feedback) fails the step, and its error edges apply."
        ]
    if gate.summary:
        lines.append(f"{indent}  asks: {gate.summary}")
    if gate.autonomous:
        lines.append(f"{indent}  autonomous mode may approve it by itself (recorded as automatic).")
    else:
        lines.append(f"{indent}  autonomous mode still waits here for a person.")
    policy = gate.on_timeout or "halt"
    if gate.timeout is not None:
        lines.append(
            f"{indent}  if nobody decides within {gate.timeout}: {_APPROVAL_TIMEOUT[policy]}."
        )
    else:
        lines.append(f"{indent}  no timeout: it waits until someone decides.")
    return lines


def describe_schema(schema: InputSchema) -> str:
    """What a person is asked for, in words."""
    if isinstance(schema, TextInput):
        return "text" + (" (several lines)" if schema.multiline else " (one line)")
    if isinstance(schema, ChoiceInput):
        options = ", ".join(f"{o.id} ({o.label})" for o in schema.options) or "(none)"
        many = "any of" if schema.multiple else "one of"
        return f"a choice of {many}: {options}"
    if isinstance(schema, FormInput):
        fields = ", ".join(f"{f.id}: {f.type}{'' if f.required else '?'}" for f in schema.fields)
        return f"a form: {fields or '(no fields)'}"
    assert isinstance(schema, FileInput)
    what = "files" if schema.multiple else "a file"
    accept = f" ({', '.join(schema.accept)})" if schema.accept else ""
    size = f", at most {schema.max_size} bytes" if schema.max_size is not None else ""
    return f"{what}{accept}{size}, given by reference (name, size, mediaType, uri)"


def _input(d: InputDefinition, indent: str) -> list[str]:
    paths = input_paths(d.schema_)
    typed = {f.path: f.type for f in input_fields(d.schema_)}
    fields = ", ".join(f"{p}: {typed.get(p, 'list' if '.' not in p else 'string')}" for p in paths)
    lines = [
        f"{indent}PAUSES FOR A PERSON'S INPUT: the run will wait here for an answer to the "
        "prompt above; nothing answers it automatically.",
        f"{indent}  asks for: {describe_schema(d.schema_)}",
        f"{indent}  the response is its output: {fields or '(no fields)'}",
    ]
    lines.append(_timeout_line(indent, d.timeout, d.on_timeout or "halt", d.default))
    return lines


def _asks(asks: AskPolicy, indent: str) -> list[str]:
    rounds = f"{asks.max_rounds} round" + ("" if asks.max_rounds == 1 else "s")
    lines = [
        f"{indent}MAY PAUSE FOR A PERSON'S ANSWERS: the model may ask questions before it "
        f"answers (up to {rounds}); the run waits for the answers, which go back to the same "
        "conversation; nothing answers them automatically.",
    ]
    lines.append(_timeout_line(indent, asks.timeout, asks.on_timeout or "halt"))
    return lines


def gate_lines(node: PlanNode, indent: str) -> list[str]:
    """Every pause ``node`` makes, for the operator view (empty for a node that never pauses)."""
    lines: list[str] = []
    d = node.definition
    if isinstance(d, InputDefinition):
        lines += _input(d, indent)
    if isinstance(d, ReasonDefinition) and d.asks is not None:
        lines += _asks(d.asks, indent)
    gate = approval_gate(node)
    if gate is not None:
        lines += _approval(gate, indent)
    return lines


def _shown(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def request_lines(run: RunProjection, node_id: str, indent: str) -> list[str]:
    """Each request the node's frames made in ``run``, and what became of it."""
    lines: list[str] = []
    for key, gates in run.gates.items():
        if gates.node_id != node_id:
            continue
        for request in gates.history:
            lines.append(f"{indent}{_request(key, request)}")
    return lines


def _request(key: str, request: GateRequest) -> str:
    head = f"request {request.request} ({request.gate}) at {key}, opened {request.requested_at}"
    if request.outcome is None:
        due = f", times out {request.deadline}" if request.deadline else ""
        return f"{head}: WAITING{due}"
    if request.outcome == "timed_out":
        return f"{head}: timed out {request.decided_at} ({request.on_timeout})"
    if request.outcome == "abandoned":
        return f"{head}: abandoned (the run ended while it waited)"
    parts = [f"{head}: {request.outcome} by {request.decided_by} at {request.decided_at}"]
    if request.automatic:
        parts.append("automatically (autonomous mode)")
    if request.edited_args is not None:
        parts.append(f"edited to {_shown(request.edited_args)}")
    if request.feedback:
        parts.append(f"feedback: {_shown(request.feedback)}")
    return ", ".join(parts)


def waiting_lines(run: RunProjection, plan_id: str) -> list[str]:
    """A line per open request, naming the command that answers it."""
    lines: list[str] = []
    for key, gates in run.gates.items():
        current = gates.current
        if current is None or run.outcome != "running":
            continue
        if current.gate in ("input", "questions"):
            how = f"`orch run answer {plan_id} {key} --json '<response>'`"
            what = "an answer"
        else:
            how = f"`orch run decide {plan_id} {key} approve|reject`"
            what = "your approval"
        lines.append(f"waiting for you: {gates.node_id} waits for {what} ({current.gate}); {how}")
    return lines
