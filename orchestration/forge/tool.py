"""What a forged tool is, and the one wrapper that turns every failure into a value.

A model cannot act on a traceback, so a forged tool never raises: its arguments are checked
against its JSON Schema first (``invalid_arguments``, naming the field and the rule), and
whatever its handler raises becomes a refusal with a stable ``code`` and a message naming the
fix. A library error keeps its own code (``plan_not_found``, ``unknown_node``, ...); anything
unexpected is ``internal_error``, still a value, so the agent loop (or the MCP session) around
the tool survives it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import jsonschema
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from orchestration.errors import OrchestrationError, PlanNotFoundError
from orchestration.plan.encoding import to_json_value
from orchestration.review.outline import UnknownSliceError

__all__ = ["ForgeTool", "Handler", "Tier", "ToolResult", "refusal"]

Tier = Literal["front", "authoring"]
"""``front`` withholds graph mechanics; ``authoring`` exposes them."""


class ToolResult(BaseModel):
    """What a tool call returns: prose for the model, and the same facts as JSON.

    Attributes:
        ok: Whether the tool did what was asked. A refusal is ``ok=False`` with a ``code``.
        text: Model-addressed prose; a refusal's text names the fix.
        code: A stable refusal code (``None`` when ``ok``).
        data: The structured facts (plan id, digest, issues, ...) as plain JSON.

    """

    model_config = ConfigDict(frozen=True)

    ok: bool
    text: str
    code: str | None = None
    data: dict[str, Any] = Field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The result as one JSON object: ``{ok, code?, text, data}``."""
        out: dict[str, Any] = {"ok": self.ok, "text": self.text, "data": self.data}
        if self.code is not None:
            out["code"] = self.code
        return out


def refusal(code: str, text: str, **data: Any) -> ToolResult:
    """A refusal a model can act on: ``code`` to branch on, ``text`` naming the fix."""
    return ToolResult(ok=False, code=code, text=text, data=data)


Handler = Callable[[dict[str, Any]], Awaitable[ToolResult]]
"""A tool's body: schema-checked arguments in, a result out."""


@dataclass(frozen=True)
class ForgeTool:
    """A tool a model calls: a name, a description addressed to it, a schema, a handler.

    Attributes:
        name: What the model calls it by.
        description: What it does and when to use it, for the model.
        parameters: The JSON Schema (an object schema) of its arguments, as advertised.
        handler: The async body; call the tool itself (``await tool(args)``) rather than the
            handler, so arguments are checked and failures become values.
        mutating: Whether it changes a plan (hosts may gate or log these).
        validation_schema: The schema arguments are checked against, when it differs from
            the advertised one: a tool may advertise per-kind shapes for the model to read and
            check them with the wire models, whose messages are more precise.

    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    handler: Handler
    mutating: bool = False
    validation_schema: Mapping[str, Any] | None = field(default=None, repr=False)

    async def __call__(self, arguments: Mapping[str, Any] | None = None) -> ToolResult:
        """Check ``arguments``, run the handler, and return its result or a refusal.

        ``arguments`` are JSON in the tagged wire form, as a model sends them; a Python host
        may also pass live values inside them (a ``datetime``, a compiled pattern, a set, a
        ``NodeRef``), which are turned into their wire form first, exactly as if the host had
        written the tags. A value outside the encodable subset is refused by name.
        """
        try:
            args = _as_wire(dict(arguments or {}))
        except OrchestrationError as exc:
            return refusal(
                exc.code,
                f"{self.name} was handed a value with no wire form ({exc.message}); pass JSON, "
                "or a value of the encodable subset.",
            )
        problem = _schema_problem(self.validation_schema or self.parameters, args)
        if problem is not None:
            return refusal(
                "invalid_arguments",
                f"{self.name} was called with invalid arguments: {problem}. Call it again with "
                "arguments that match its schema.",
            )
        try:
            return await self.handler(args)
        except PlanNotFoundError as exc:
            return refusal(
                exc.code,
                f"{exc.message}. Use a plan id exactly as a tool returned it (create_plan, "
                "instantiate_plan, author_plan or clone_plan).",
            )
        except UnknownSliceError as exc:
            return refusal(exc.code, exc.message)
        except OrchestrationError as exc:
            return refusal(exc.code, exc.message)
        except ValidationError as exc:
            return refusal("invalid_arguments", f"{self.name}: {_first_error(exc)}.")
        except Exception as exc:  # noqa: BLE001 - a model must get a value, never a traceback
            return refusal(
                "internal_error",
                f"{self.name} failed unexpectedly ({type(exc).__name__}: {exc}). Nothing more "
                "was changed than the result of any earlier call shows; retry once, and report "
                "the error if it repeats.",
            )


def _as_wire(value: Any) -> Any:
    """``value`` as pure JSON: JSON parts as they are, live values as their wire-form tags.

    A dict with string keys and a list (or tuple) are walked, so a ``{"$ref": ...}`` the
    caller wrote stays as written; everything else that is not a JSON scalar goes through
    :func:`~orchestration.plan.encoding.to_json_value`, which raises ``UnencodableValueError`` for
    a value outside the subset.
    """
    if value is None or type(value) in (str, bool, int, float):
        return value
    if type(value) is list or type(value) is tuple:
        return [_as_wire(item) for item in value]
    if type(value) is dict and all(type(key) is str for key in value):
        return {key: _as_wire(item) for key, item in value.items()}
    return to_json_value(value)


def _schema_problem(schema: Mapping[str, Any], args: dict[str, Any]) -> str | None:
    validator = jsonschema.Draft202012Validator(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(args))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return f"{where or 'arguments'}: {error.message}"


def _first_error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    return f"{where or 'value'}: {first['msg']}"
