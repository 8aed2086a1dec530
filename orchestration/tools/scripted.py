"""``ScriptedReasoner``: a test double of :class:`~orchestration.tools.reasoning.Reasoner`.

It never calls a model. Each node's answers are scripted per attempt, so a test (or the demo)
can make a reason node succeed at once, succeed on a retry, or exhaust its attempts, and the
answer depends only on the turn it is given: a retried activity or a worker that died and came
back gets the same answer for the same attempt. Re-exported by :mod:`orchestration.testing`.
"""

from __future__ import annotations

import inspect
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from orchestration.tools.reasoning import ASK_TOOL, ReasonReply, ReasonTurn, TokenUsage

__all__ = ["Ask", "NoToolCall", "Refusal", "ScriptedReasoner", "example_for_schema"]


@dataclass(frozen=True)
class Refusal:
    """Script value: the model refuses, with this text."""

    text: str = "I can't help with that."


@dataclass(frozen=True)
class NoToolCall:
    """Script value: the model answers in prose and never calls the tool."""

    text: str = "Here is my answer in prose."


@dataclass(frozen=True)
class Ask:
    """Script value: the model asks these questions (``ask_questions``) instead of answering.

    Each question is ``{"id", "prompt", "kind": "text"|"choice", "options"?, "multiple"?}``;
    only a node that may still ask is offered the tool (otherwise the turn is rejected).
    """

    questions: tuple[Mapping[str, Any], ...]

    @classmethod
    def text(cls, question_id: str, prompt: str) -> Ask:
        """One free-text question."""
        return cls(({"id": question_id, "prompt": prompt, "kind": "text"},))


Answer = Any
"""A mapping (the tool's arguments), a string (raw argument text, decoded as JSON: a way to
script malformed arguments), :class:`Refusal`, :class:`NoToolCall`, :class:`Ask`, a
:class:`~orchestration.tools.reasoning.ReasonReply`, an exception (raised), ``None`` (an example
built from the schema), or a callable taking the :class:`ReasonTurn` and returning any of
these (sync or async)."""


def example_for_schema(schema: Any) -> Any:
    """A small value that satisfies a simple JSON Schema (first enum value, required keys...).

    Good enough for the schemas plans use for reason nodes; a schema it cannot satisfy yields a
    value that fails validation, which a test then sees as a rejected attempt.
    """
    if not isinstance(schema, Mapping):
        return None
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for combinator in ("anyOf", "oneOf", "allOf"):
        if schema.get(combinator):
            return example_for_schema(schema[combinator][0])
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), kind[0] if kind else None)
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        return {name: example_for_schema(sub) for name, sub in properties.items()}
    if kind == "array":
        count = int(schema.get("minItems", 0))
        return [example_for_schema(schema.get("items", {})) for _ in range(count)]
    if kind == "string":
        return "x" * int(schema.get("minLength", 0))
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        value = low + 1 if "exclusiveMinimum" in schema and "minimum" not in schema else low
        return int(value) if kind == "integer" else value
    if kind == "boolean":
        return False
    return None


def _estimate(text: str) -> int:
    return math.ceil(len(text) / 4)


class ScriptedReasoner:
    """Answers reasoning turns from scripts, keyed by node id (a test double, not a model).

    Args:
        scripts: Per node id, one :data:`Answer` (used for every attempt) or a list of them
            (one per turn: attempts count on across rounds of questions, so ``[Ask(...),
            Ask(...), {...}]`` asks twice, then answers; the last repeats).
        default: The answer for unscripted nodes (``None``: an example built from the schema).
        name: How the reasoner names itself in results and logs.

    Every turn it is given is kept in :attr:`turns`. Token usage is reported as a
    deterministic estimate (a token per four characters of what was sent and answered), so
    accounting can be tested.
    """

    def __init__(
        self,
        scripts: Mapping[str, Answer | Sequence[Answer]] | None = None,
        *,
        default: Answer = None,
        name: str = "scripted",
    ) -> None:
        self.scripts = dict(scripts or {})
        self.default = default
        self._name = name
        self.turns: list[ReasonTurn] = []

    @property
    def name(self) -> str:
        """``scripted`` unless named otherwise."""
        return self._name

    def _script(self, turn: ReasonTurn) -> Answer:
        script = self.scripts.get(turn.node_id, self.default)
        if isinstance(script, list | tuple):
            if not script:
                return None
            index = len(turn.rounds) + turn.attempt
            return script[min(index, len(script)) - 1]
        return script

    async def turn(self, turn: ReasonTurn) -> ReasonReply:
        """Answer one turn from the script of ``turn.node_id``."""
        self.turns.append(turn)
        answer = self._script(turn)
        while callable(answer) and not isinstance(answer, type):
            answer = answer(turn)
            if inspect.isawaitable(answer):
                answer = await answer
        return self._reply(turn, answer)

    def _reply(self, turn: ReasonTurn, answer: Answer) -> ReasonReply:
        if isinstance(answer, BaseException):
            raise answer
        if isinstance(answer, ReasonReply):
            return answer
        sent = turn.system + turn.prompt + "".join(h.feedback for h in turn.history)
        call_id = f"call_{turn.node_id}_{turn.attempt}"
        if isinstance(answer, Refusal):
            usage = TokenUsage(_estimate(sent), _estimate(answer.text))
            return ReasonReply(refusal=answer.text, usage=usage, model=self._name)
        if isinstance(answer, NoToolCall):
            usage = TokenUsage(_estimate(sent), _estimate(answer.text))
            return ReasonReply(text=answer.text, usage=usage, model=self._name)
        if isinstance(answer, Ask):
            arguments = {"questions": [dict(q) for q in answer.questions]}
            raw = json.dumps(arguments, sort_keys=True)
            return ReasonReply(
                tool_called=True,
                tool_name=ASK_TOOL,
                arguments=arguments,
                call_id=f"ask_{turn.node_id}_{len(turn.rounds) + 1}",
                raw_arguments=raw,
                usage=TokenUsage(_estimate(sent), _estimate(raw)),
                model=self._name,
            )
        if answer is None:
            answer = example_for_schema(turn.tool.input_schema)
        raw = answer if isinstance(answer, str) else json.dumps(answer, sort_keys=True)
        usage = TokenUsage(_estimate(sent), _estimate(raw))
        if isinstance(answer, str):
            try:
                decoded = json.loads(answer)
            except ValueError as exc:
                return ReasonReply(
                    tool_called=True,
                    malformed=str(exc),
                    call_id=call_id,
                    raw_arguments=answer,
                    usage=usage,
                    model=self._name,
                )
            answer = decoded
        return ReasonReply(
            tool_called=True,
            arguments=answer,
            call_id=call_id,
            raw_arguments=raw,
            usage=usage,
            model=self._name,
        )
