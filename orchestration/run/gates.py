"""What a decision at a gate means: one set of rules for both hosts (ruling 33).

Both hosts take decisions the same way: the ``PlanRun`` workflow in its ``decide`` and
``answer`` update validators and handlers, the in-process host in
:meth:`~orchestration.run.host.LocalRun.decide`; and both run loops apply them, time requests
out and approve in autonomous mode through this module (:class:`~orchestration.run.driver.RunDriver`
calls it). So a decision is refused, skipped or applied for the same reason wherever the plan
runs:

* **Refused** (:class:`~orchestration.errors.GateRefusedError`, before it reaches the run: on
  Temporal a validator's refusal never enters history): a frame that has no such request
  (``gate_not_open``); a second decision on one request, or one while another is on its way
  (``gate_already_decided``); a response that does not fit the schema (``invalid_response``,
  the message names what would fit and never repeats the response); an approval bound to
  arguments that are not the ones waiting (``stale_arguments``); an edit the gate does not
  allow or the tool does not take (``edit_not_allowed``, ``invalid_arguments``); an approval
  of an input request (``answer_required``) or an answer to an approval
  (``not_an_input_gate``).
* **Skipped** (seed 001: a decision that no longer applies is a skip, not an error): its
  request timed out, was superseded by a later one or abandoned, or the run ended, is ending,
  or continues in a new execution. The answer says why.
* **Applied**: the engine records ``gate_decided`` and the frame goes on (see
  :class:`~orchestration.run.engine.machine.RunEngine`'s ``approve``, ``reject``, ``answer``).

Before a call, the approver may change the arguments the gate names ``editable``: the change
is merged over the proposed arguments, must keep them encodable, and must fit the tool's input
shape where the host can check it (``check_args``); the decision records both versions and the
call runs with the approved ones, whose digest it checks before the tool runs.

Autonomous mode (:func:`autonomous_approves`) approves an approval request only where the plan
allows it (``autonomous: true`` on the gate) and records the decision as automatic; an input
request or a model's questions are never answered automatically. A timeout is recorded as a
timeout: its policy (reject, default, halt) is the engine's :meth:`time_out`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

from orchestration.errors import GateRefusedError, UnencodableValueError
from orchestration.plan.encoding import validate_value
from orchestration.plan.gates import ResponseProblem, response_item, response_value
from orchestration.run.engine.gating import Waiting
from orchestration.run.engine.machine import RunEngine
from orchestration.run.messages import (
    GateAck,
    GateAnswer,
    GateApproval,
    PendingGateDecision,
    WaitingGate,
)
from orchestration.types import CallNode, Question

__all__ = [
    "ArgsCheck",
    "apply_decision",
    "autonomous_approves",
    "check_decision",
    "edited_args",
    "questions_answers",
    "waiting_gates",
]

ArgsCheck = Callable[[str, Mapping[str, Any]], str | None]
"""``(tool, args) -> problem``: why a tool's input shape refuses edited arguments, or ``None``."""

_WAITS_FOR_INPUT = ("input", "questions")
_WAITS_FOR_APPROVAL = ("arguments", "result")


def waiting_gates(engine: RunEngine) -> list[WaitingGate]:
    """The open requests of a run, oldest first (what the ``waiting`` query returns)."""
    out: list[WaitingGate] = []
    for waiting in engine.open_gates():
        gate = waiting.gate
        out.append(
            WaitingGate(
                frame_key=waiting.key,
                node_id=waiting.frame.node_id,
                node_kind=waiting.frame.kind,
                request=waiting.request.as_request(),
                autonomous=bool(gate is not None and gate.autonomous),
            )
        )
    return out


def autonomous_approves(waiting: Waiting, autonomous: bool) -> bool:
    """Whether autonomous mode approves this request by itself.

    Only an approval (before a call, or of a result) whose gate the plan opens to it
    (``autonomous: true``); never an input request or a model's questions.
    """
    gate = waiting.gate
    return (
        autonomous
        and gate is not None
        and bool(gate.autonomous)
        and waiting.request.gate in _WAITS_FOR_APPROVAL
    )


def _skip(key: str, request: int, reason: str) -> GateAck:
    return GateAck(applied=False, frame_key=key, request=request, outcome="skipped", reason=reason)


def check_decision(
    engine: RunEngine,
    decision: PendingGateDecision,
    *,
    pending: Collection[str] = (),
    check_args: ArgsCheck | None = None,
) -> GateAck | None:
    """Whether ``decision`` applies to the run as it stands: ``None`` if it does.

    Args:
        engine: The run.
        decision: The decision.
        pending: Frames with a decision accepted and not yet applied (a second is refused).
        check_args: Checks edited arguments against the tool's input shape, where the host
            can (the worker's toolbox); ``None`` checks only what the plan says.

    Returns:
        ``None`` when it applies; a skipped :class:`GateAck` when it no longer applies.

    Raises:
        GateRefusedError: it is refused (see the module docstring).

    """
    key = decision.frame_key
    status = engine.gate_status(key)
    if status.request == 0 or (decision.request is not None and decision.request > status.request):
        open_keys = ", ".join(engine.waiting) or "none"
        raise GateRefusedError(
            "gate_not_open",
            f"frame {key!r} has no such request at a gate; frames waiting: {open_keys} (see "
            "the run's waiting gates)",
        )
    waiting = status.waiting
    if waiting is None:
        same = decision.request is None or decision.request == status.request
        if same and status.outcome in ("approved", "rejected", "answered"):
            raise GateRefusedError(
                "gate_already_decided",
                f"request {status.request} of frame {key!r} was already {status.outcome}; a "
                "request is decided once",
            )
        if engine.done or engine.stopping is not None:
            return _skip(key, status.request, "the run has ended or is ending")
        what = "timed out" if status.outcome == "timed_out" else "is no longer open"
        return _skip(key, status.request, f"request {status.request} of frame {key!r} {what}")
    request = waiting.request
    if decision.request is not None and decision.request < request.request:
        return _skip(
            key,
            decision.request,
            f"request {decision.request} of frame {key!r} was superseded by request "
            f"{request.request}",
        )
    if key in pending:
        raise GateRefusedError(
            "gate_already_decided",
            f"a decision on request {request.request} of frame {key!r} is already on its way; a "
            "request is decided once",
        )
    if isinstance(decision, GateApproval):
        _check_approval(waiting, decision, check_args)
    else:
        _check_answer(waiting, decision)
    return None


def _check_approval(waiting: Waiting, decision: GateApproval, check_args: ArgsCheck | None) -> None:
    request = waiting.request
    key = waiting.key
    if decision.decision == "approved" and request.gate in _WAITS_FOR_INPUT:
        raise GateRefusedError(
            "answer_required",
            f"frame {key!r} waits for an answer ({request.gate}), not an approval; answer it, "
            "or reject it to decline",
        )
    if decision.decision == "rejected":
        if decision.args is not None:
            raise GateRefusedError(
                "edit_not_allowed", "a rejection changes no arguments; send it without args"
            )
        return
    if decision.digest is not None and decision.digest != request.digest:
        raise GateRefusedError(
            "stale_arguments",
            f"frame {key!r} waits with arguments of digest {request.digest or 'none'}, not "
            f"{decision.digest}; read the waiting request again and approve what it shows",
        )
    if decision.args is not None:
        edited_args(waiting, decision.args, check_args)


def edited_args(
    waiting: Waiting,
    change: Mapping[str, Any],
    check_args: ArgsCheck | None = None,
) -> dict[str, Any]:
    """The arguments a call runs with after the approver's ``change``.

    The change is merged over the proposed arguments.

    Raises:
        GateRefusedError: ``edit_not_allowed`` (not before a call, or an argument the gate does
            not name editable) or ``invalid_arguments`` (unencodable, or refused by the tool's
            input shape).

    """
    request = waiting.request
    key = waiting.key
    editable = set(request.editable or ())
    if request.gate != "arguments":
        raise GateRefusedError(
            "edit_not_allowed",
            f"frame {key!r} waits for approval of its result; only arguments before a call "
            "can be edited",
        )
    proposed = dict(request.args or {})
    changed = [name for name, value in change.items() if proposed.get(name, _ABSENT) != value]
    refused = sorted(name for name in changed if name not in editable)
    if refused:
        allowed = ", ".join(sorted(editable)) or "none"
        raise GateRefusedError(
            "edit_not_allowed",
            f"the plan does not let the approver change {', '.join(refused)} of frame {key!r} "
            f"(editable: {allowed}); approve the arguments as proposed, or reject them",
        )
    merged = {**proposed, **dict(change)}
    try:
        validate_value(merged, "none", "args")
    except UnencodableValueError as exc:
        raise GateRefusedError("invalid_arguments", exc.message) from None
    node = waiting.frame.node
    if check_args is not None and isinstance(node, CallNode):
        problem = check_args(node.definition.tool, merged)
        if problem is not None:
            raise GateRefusedError(
                "invalid_arguments",
                f"tool {node.definition.tool!r} does not take the edited arguments: {problem}",
            )
    return merged


_ABSENT = object()


def _check_answer(waiting: Waiting, decision: GateAnswer) -> None:
    request = waiting.request
    key = waiting.key
    if request.gate in _WAITS_FOR_APPROVAL:
        raise GateRefusedError(
            "not_an_input_gate",
            f"frame {key!r} waits for an approval ({request.gate}), not an answer; approve or "
            "reject it",
        )
    if request.gate == "input":
        assert request.schema_ is not None
        try:
            response_item(request.schema_, decision.response)
        except ResponseProblem as exc:
            raise GateRefusedError("invalid_response", f"frame {key!r}: {exc}") from None
        return
    questions_answers(request.questions or (), decision.response, key)


def questions_answers(questions: tuple[Question, ...], response: Any, key: str) -> dict[str, Any]:
    """A model's questions answered: ``response`` is ``{question id: answer}``, each checked.

    Raises:
        GateRefusedError: ``invalid_response``, naming the question, never the answer.

    """
    if not isinstance(response, Mapping):
        raise GateRefusedError(
            "invalid_response",
            f"frame {key!r} asked questions: answer with an object of question id to answer "
            f"({', '.join(q.id for q in questions)})",
        )
    ids = [q.id for q in questions]
    unknown = sum(1 for name in response if name not in ids)
    if unknown:
        raise GateRefusedError(
            "invalid_response",
            f"frame {key!r}: the answers name {unknown} question(s) it did not ask; its "
            f"questions are {', '.join(ids)}",
        )
    answers: dict[str, Any] = {}
    for question in questions:
        if question.id not in response:
            raise GateRefusedError(
                "invalid_response", f'frame {key!r}: question "{question.id}" has no answer'
            )
        try:
            answers[question.id] = response_value(question.schema_, response[question.id])
        except ResponseProblem as exc:
            raise GateRefusedError(
                "invalid_response", f'frame {key!r}, question "{question.id}": {exc}'
            ) from None
    return answers


def apply_decision(
    engine: RunEngine,
    decision: PendingGateDecision,
    at: str,
    *,
    check_args: ArgsCheck | None = None,
) -> GateAck:
    """Apply a decision accepted earlier; skip it (never raise) if it no longer applies."""
    key = decision.frame_key
    try:
        skipped = check_decision(engine, decision, check_args=check_args)
    except GateRefusedError as exc:
        status = engine.gate_status(key)
        return _skip(key, status.request, exc.message)
    if skipped is not None:
        return skipped
    waiting = engine.gate_status(key).waiting
    assert waiting is not None
    request = waiting.request
    number = request.request
    if isinstance(decision, GateApproval):
        if decision.decision == "rejected":
            engine.reject(key, decision.decided_by, at, feedback=decision.feedback)
            return GateAck(applied=True, frame_key=key, request=number, outcome="rejected")
        args = None
        if decision.args is not None:
            args = edited_args(waiting, decision.args, check_args)
        engine.approve(key, decision.decided_by, at, feedback=decision.feedback, args=args)
        return GateAck(applied=True, frame_key=key, request=number, outcome="approved")
    if request.gate == "input":
        assert request.schema_ is not None
        item = response_item(request.schema_, decision.response)
        engine.answer(key, decision.provided_by, at, item=item)
    else:
        answers = questions_answers(request.questions or (), decision.response, key)
        engine.answer(key, decision.provided_by, at, answers=answers)
    return GateAck(applied=True, frame_key=key, request=number, outcome="answered")
