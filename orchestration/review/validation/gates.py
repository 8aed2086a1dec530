"""Gate checks: every pause a plan declares can be asked, timed and answered as written.

A gate is plan content an operator approves, so what it would do at run time is settled here,
before approval: an approval before a call can only be on a ``call``, and it may let the
approver change only arguments the call stages or its tool takes; a timeout must parse; an
input request must have a prompt and a schema a person can answer (options, unique ids, form
fields that can become output fields), and a default response must fit that schema; a reason
node's questions need at least one round. Each issue names its fix.
"""

from __future__ import annotations

from orchestration.plan.gates import ResponseProblem, duration_problem, response_item
from orchestration.plan.gates import schema_problems as input_schema_problems
from orchestration.review.validation.context import CheckContext
from orchestration.review.validation.issues import advisory, blocking, quote_list
from orchestration.tools.contracts import DescribedTools
from orchestration.types import (
    ApprovalGate,
    CallDefinition,
    InputDefinition,
    PlanIssue,
    PlanNode,
    ReasonDefinition,
    TransformDefinition,
)

__all__ = ["check_gates"]


def check_gates(ctx: CheckContext) -> list[PlanIssue]:
    """Every approval gate, input request and reason node's questions, in node order."""
    issues: list[PlanIssue] = []
    for node in ctx.view.nodes:
        d = node.definition
        if isinstance(d, CallDefinition | ReasonDefinition | TransformDefinition):
            if d.gate is not None:
                issues += _approval_issues(ctx, node, d.gate)
            if isinstance(d, ReasonDefinition) and d.asks is not None:
                issues += _asks_issues(node.id, d)
        elif isinstance(d, InputDefinition):
            issues += _input_issues(node.id, d)
    return issues


def _timeout_issues(
    node_id: str, what: str, timeout: str | None, on_timeout: str | None
) -> list[PlanIssue]:
    issues: list[PlanIssue] = []
    if timeout is not None:
        problem = duration_problem(timeout)
        if problem is not None:
            issues.append(
                blocking(
                    "invalid_gate_timeout",
                    f'Node "{node_id}" sets {what} timeout {problem}.',
                    node_id=node_id,
                )
            )
    elif on_timeout is not None:
        issues.append(
            advisory(
                "on_timeout_without_timeout",
                f'Node "{node_id}" says what {what} timeout means (onTimeout: {on_timeout}) but '
                "sets no timeout, so it waits until someone decides; set timeout (e.g. PT30M), "
                "or drop onTimeout.",
                node_id=node_id,
            )
        )
    return issues


def _approval_issues(ctx: CheckContext, node: PlanNode, gate: ApprovalGate) -> list[PlanIssue]:
    node_id = node.id
    d = node.definition
    issues: list[PlanIssue] = []
    if gate.on == "arguments" and not isinstance(d, CallDefinition):
        issues.append(
            blocking(
                "gate_not_applicable",
                f'Node "{node_id}" is a {node.kind} node with an approval gate on arguments; only '
                'a call sends arguments: set the gate to "on": "result" to approve its output '
                "instead.",
                node_id=node_id,
            )
        )
    if gate.editable is not None:
        if gate.on != "arguments" or not isinstance(d, CallDefinition):
            issues.append(
                blocking(
                    "gate_not_applicable",
                    f'Node "{node_id}" lists editable arguments on a gate that is not before a '
                    'call; editable arguments need "on": "arguments" on a call node: set it, '
                    "or drop editable.",
                    node_id=node_id,
                )
            )
        else:
            issues += _editable_issues(ctx, node_id, d, gate.editable)
    issues += _timeout_issues(node_id, "its approval gate's", gate.timeout, gate.on_timeout)
    return issues


def _editable_issues(
    ctx: CheckContext, node_id: str, d: CallDefinition, editable: tuple[str, ...]
) -> list[PlanIssue]:
    issues: list[PlanIssue] = []
    invocable = ctx.inputs.invocable
    shape = invocable.shape(d.tool) if isinstance(invocable, DescribedTools) else None
    takes = set(d.args) | set(shape.properties if shape is not None else ())
    open_shape = shape is not None and shape.open
    repeated = sorted({name for name in editable if editable.count(name) > 1})
    if repeated:
        issues.append(
            blocking(
                "duplicate_editable_argument",
                f'Call node "{node_id}" lists editable argument {quote_list(repeated)} more '
                "than once; list each argument once.",
                node_id=node_id,
            )
        )
    for name in dict.fromkeys(editable):
        if name not in takes and not open_shape:
            issues.append(
                blocking(
                    "unknown_editable_argument",
                    f'Call node "{node_id}" lets the approver edit argument "{name}", which it '
                    f'does not stage and tool "{d.tool}" does not take; name one of '
                    f"{quote_list(sorted(takes))}, or drop it from editable.",
                    node_id=node_id,
                )
            )
    return issues


def _input_issues(node_id: str, d: InputDefinition) -> list[PlanIssue]:
    issues: list[PlanIssue] = []
    if not d.prompt:
        issues.append(
            blocking(
                "missing_input_prompt",
                f'Input node "{node_id}" has no prompt; give the person the question it asks '
                '(a list of parts such as [{"text": "Which region?"}]).',
                node_id=node_id,
            )
        )
    problems = input_schema_problems(d.schema_)
    for code, problem in problems:
        issues.append(
            blocking(
                code,
                f'Input node "{node_id}" asks with an unusable schema: {problem}.',
                node_id=node_id,
            )
        )
    issues += _timeout_issues(node_id, "its input request's", d.timeout, d.on_timeout)
    if d.on_timeout == "default" and d.default is None:
        issues.append(
            blocking(
                "missing_gate_default",
                f'Input node "{node_id}" answers itself with its default at the timeout '
                '(onTimeout: "default") but has no default; set default to a response that '
                'fits its schema, or choose onTimeout "reject" or "halt".',
                node_id=node_id,
            )
        )
    elif d.default is not None and d.on_timeout != "default":
        issues.append(
            advisory(
                "unused_gate_default",
                f'Input node "{node_id}" has a default response, which is used only with '
                'onTimeout "default"; set that, or drop default.',
                node_id=node_id,
            )
        )
    if d.default is not None and not problems:
        try:
            response_item(d.schema_, d.default)
        except ResponseProblem as exc:
            issues.append(
                blocking(
                    "gate_default_invalid",
                    f'Input node "{node_id}" has a default response that does not fit its '
                    f"schema: {exc}; change the default so it does.",
                    node_id=node_id,
                )
            )
    return issues


def _asks_issues(node_id: str, d: ReasonDefinition) -> list[PlanIssue]:
    asks = d.asks
    assert asks is not None
    issues: list[PlanIssue] = []
    if asks.max_rounds < 1:
        issues.append(
            blocking(
                "invalid_asks",
                f'Reason node "{node_id}" lets the model ask questions in {asks.max_rounds} '
                "rounds; maxRounds bounds the questions before it must answer and must be at "
                "least 1: set it to 1 or more, or drop asks.",
                node_id=node_id,
            )
        )
    issues += _timeout_issues(node_id, "its questions'", asks.timeout, asks.on_timeout)
    return issues
