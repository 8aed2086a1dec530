"""What a gate is, as plan content: its timeout, the fields an input yields, what a response is.

A gate is part of a plan (covered by its digest, checked at freeze, shown to the operator
before approval), so everything a plan's gates mean is decided here, from the plan alone, and
shared by freeze, the run (both hosts), the renderer and the command line:

* **Where a node pauses.** :func:`approval_gate` (a ``call``'s, ``reason``'s or
  ``transform``'s ``gate``), :func:`wait_policy` (the timeout and what it means, for an
  approval, an input request or a reason node's questions).
* **Timeouts** are written ``PT30M`` (ISO-8601 durations: ``P[nW][nD][T[nH][nM][nS]]``) or
  compactly ``90s``, ``15m``, ``2h``, ``1d``: :func:`parse_duration`. They are text in the plan
  (plain data, readable in JSON) and refused at freeze when they do not parse.
* **An input's fields.** A response becomes the node's one output item, whose fields follow
  from its schema (:func:`input_fields`, :func:`input_paths`): ``text`` for text; ``choice``
  (an option id) or ``choices`` (a list); a form's field ids; a file's ``name``, ``size``,
  ``mediaType`` and ``uri`` (or ``files``). So references to an input node are checked at
  freeze like references to a call's declared output.
* **What a response is.** :func:`response_item` checks a response against the schema and
  normalises it to that item (a bare string is accepted for text and a single choice, a bare
  list for a multiple choice). Its messages never repeat the response: a response may hold
  anything a person typed, and it is never logged or echoed back.
* **The arguments' digest** (:func:`args_digest`): sha256 over the canonical encoding of the
  resolved arguments, so an approval binds exactly the values it was shown.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from orchestration.plan.encoding import encode
from orchestration.types import (
    ApprovalGate,
    BooleanField,
    CallDefinition,
    ChoiceInput,
    DeclaredField,
    EnumField,
    FileInput,
    FormField,
    FormInput,
    InputChoice,
    InputDefinition,
    InputSchema,
    NumberField,
    PlanNode,
    ReasonDefinition,
    StringField,
    TextInput,
    TransformDefinition,
)

__all__ = [
    "FILE_FIELDS",
    "ResponseProblem",
    "SchemaProblem",
    "WaitPolicy",
    "approval_gate",
    "args_digest",
    "deadline_after",
    "duration_problem",
    "input_fields",
    "input_paths",
    "parse_duration",
    "response_item",
    "response_value",
    "schema_problems",
    "seconds_until",
    "wait_policy",
]

FILE_FIELDS = ("name", "size", "mediaType", "uri")
"""The fields of a file reference: what the file is called, its bytes, its type, where it is."""

_ISO_DURATION = re.compile(
    r"P(?:(?P<weeks>\d+(?:\.\d+)?)W)?(?:(?P<days>\d+(?:\.\d+)?)D)?"
    r"(?:T(?:(?P<hours>\d+(?:\.\d+)?)H)?(?:(?P<minutes>\d+(?:\.\d+)?)M)?"
    r"(?:(?P<seconds>\d+(?:\.\d+)?)S)?)?",
    re.ASCII,
)
_COMPACT = re.compile(r"(?P<amount>\d+(?:\.\d+)?)(?P<unit>ms|s|m|h|d)", re.ASCII)
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION_FORMS = "an ISO-8601 duration such as PT30M or P1DT2H, or 90s, 15m, 2h, 1d"
_MAX_SECONDS = 366 * 86400
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}", re.ASCII)


def parse_duration(text: str) -> dt.timedelta | None:
    """A gate's timeout as a ``timedelta``, or ``None`` when it does not parse or is not positive.

    Accepts ISO-8601 durations without years or months (``PT30M``, ``P1DT2H``, ``P2W``) and
    the compact forms ``90s``, ``15m``, ``2h``, ``1d`` (and ``500ms``); at most 366 days.
    """
    seconds: float
    compact = _COMPACT.fullmatch(text.strip())
    if compact is not None:
        seconds = float(compact["amount"]) * _UNITS[compact["unit"]]
    else:
        iso = _ISO_DURATION.fullmatch(text.strip())
        if iso is None or not any(iso.groupdict().values()) or text.strip().endswith("T"):
            return None
        parts = {k: float(v) for k, v in iso.groupdict().items() if v is not None}
        seconds = (
            parts.get("weeks", 0.0) * 7 * 86400
            + parts.get("days", 0.0) * 86400
            + parts.get("hours", 0.0) * 3600
            + parts.get("minutes", 0.0) * 60
            + parts.get("seconds", 0.0)
        )
    if not math.isfinite(seconds) or seconds <= 0 or seconds > _MAX_SECONDS:
        return None
    return dt.timedelta(seconds=seconds)


def duration_problem(text: str) -> str | None:
    """Why ``text`` is not a usable timeout (naming the forms that are), or ``None``."""
    if parse_duration(text) is not None:
        return None
    return f'"{text}" is not a timeout; write {_DURATION_FORMS} (more than 0, at most 366 days)'


def _instant(at: str) -> dt.datetime:
    return dt.datetime.fromisoformat(at.replace("Z", "+00:00"))


def _iso(moment: dt.datetime) -> str:
    text = moment.astimezone(dt.UTC).isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")


def deadline_after(at: str, timeout: str) -> str:
    """``at`` plus ``timeout``, as the log writes time (ISO-8601, milliseconds, ``Z``)."""
    delta = parse_duration(timeout)
    if delta is None:
        raise ValueError(duration_problem(timeout))
    return _iso(_instant(at) + delta)


def seconds_until(deadline: str, now: str) -> float:
    """Seconds from ``now`` to ``deadline`` (negative once it passed)."""
    return (_instant(deadline) - _instant(now)).total_seconds()


@dataclass(frozen=True, slots=True)
class WaitPolicy:
    """How long a node's pause may last, and what its end means.

    Attributes:
        timeout: The timeout as written (``None``: the pause lasts until someone decides).
        on_timeout: ``reject`` (settle failed), ``default`` (an input's default response is
            the answer) or ``halt`` (the run halts ``gate_timeout``); ``halt`` when unsaid.

    """

    timeout: str | None
    on_timeout: Literal["reject", "default", "halt"]


def approval_gate(node: PlanNode) -> ApprovalGate | None:
    """The node's approval gate, if it has one (calls, reason nodes and transforms may)."""
    definition = node.definition
    if isinstance(definition, CallDefinition | ReasonDefinition | TransformDefinition):
        return definition.gate
    return None


def wait_policy(node: PlanNode, gate: str) -> WaitPolicy:
    """The timeout policy of the node's pause ``gate``.

    ``gate`` is ``arguments``, ``result``, ``input`` or ``questions``.
    """
    definition = node.definition
    if gate == "input" and isinstance(definition, InputDefinition):
        return WaitPolicy(definition.timeout, definition.on_timeout or "halt")
    if gate == "questions" and isinstance(definition, ReasonDefinition):
        asks = definition.asks
        if asks is not None:
            return WaitPolicy(asks.timeout, asks.on_timeout or "halt")
    approval = approval_gate(node)
    if approval is not None and gate in ("arguments", "result"):
        return WaitPolicy(approval.timeout, approval.on_timeout or "halt")
    return WaitPolicy(None, "halt")


def args_digest(args: Mapping[str, Any]) -> str:
    """The lowercase hex sha256 of the canonical encoding of resolved call arguments."""
    return hashlib.sha256(encode(dict(args), "none")).hexdigest()


# -- the fields an input yields ---------------------------------------------------------------


def _choice_values(options: Sequence[InputChoice] | None) -> tuple[str, ...]:
    return tuple(option.id for option in options or ())


def _form_field(field: FormField) -> list[DeclaredField]:
    kind = field.type
    if kind in ("text", "textarea", "date"):
        return [StringField(path=field.id)]
    if kind == "number":
        return [NumberField(path=field.id)]
    if kind == "boolean":
        return [BooleanField(path=field.id)]
    if kind == "choice":
        values = _choice_values(field.options)
        return [EnumField(path=field.id, values=values)] if values else []
    return _file_fields(f"{field.id}.")


def _file_fields(prefix: str = "") -> list[DeclaredField]:
    return [
        StringField(path=f"{prefix}name"),
        NumberField(path=f"{prefix}size"),
        StringField(path=f"{prefix}mediaType"),
        StringField(path=f"{prefix}uri"),
    ]


def input_fields(schema: InputSchema) -> tuple[DeclaredField, ...]:
    """The typed scalar fields a response to ``schema`` yields.

    Lists (a multiple choice's ``choices``, several ``files``) are in :func:`input_paths` only:
    a declared field is a scalar.
    """
    if isinstance(schema, TextInput):
        return (StringField(path="text"),)
    if isinstance(schema, ChoiceInput):
        values = _choice_values(schema.options)
        if schema.multiple or not values:
            return ()
        return (EnumField(path="choice", values=values),)
    if isinstance(schema, FormInput):
        return tuple(f for field in schema.fields for f in _form_field(field))
    if schema.multiple:
        return ()
    return tuple(_file_fields())


def input_paths(schema: InputSchema) -> tuple[str, ...]:
    """Every field path a response to ``schema`` may hold: references are checked against these."""
    if isinstance(schema, ChoiceInput) and schema.multiple:
        return ("choices",)
    if isinstance(schema, FileInput) and schema.multiple:
        return ("files",)
    if isinstance(schema, FormInput):
        paths: list[str] = []
        for field in schema.fields:
            if field.type == "file":
                paths.extend(f"{field.id}.{name}" for name in FILE_FIELDS)
            else:
                paths.append(field.id)
        return tuple(paths)
    if isinstance(schema, ChoiceInput):
        return ("choice",)
    return tuple(f.path for f in input_fields(schema))


# -- schema problems ---------------------------------------------------------------------------


SchemaProblem = tuple[str, str]
"""``(code, message)``: ``duplicate_choice_id`` when option ids repeat, else
``invalid_input_schema``; the message names the fix."""


def _option_problems(options: Sequence[InputChoice] | None, where: str) -> list[SchemaProblem]:
    invalid = "invalid_input_schema"
    if not options:
        return [(invalid, f"{where} has no options; list at least one {{id, label}}")]
    problems: list[SchemaProblem] = []
    ids = [option.id for option in options]
    for option in options:
        if not option.id.strip():
            problems.append((invalid, f"{where} has an option with an empty id; give it an id"))
        if not option.label.strip():
            problems.append(
                (
                    invalid,
                    f'{where} option "{option.id}" has an empty label; give it the text a '
                    "person reads",
                )
            )
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        listed = ", ".join(f'"{i}"' for i in repeated)
        problems.append(
            (
                "duplicate_choice_id",
                f"{where} repeats option id {listed}; give every option its "
                "own id (the response names an option by its id)",
            )
        )
    return problems


def _accept_problems(accept: Sequence[str] | None, where: str) -> list[SchemaProblem]:
    problems: list[SchemaProblem] = []
    for pattern in accept or ():
        if not (pattern.startswith(".") and len(pattern) > 1) and "/" not in pattern:
            problems.append(
                (
                    "invalid_input_schema",
                    f'{where} accepts "{pattern}", which is neither an '
                    'extension (".pdf") nor a media type ("application/pdf", "image/*"); write one '
                    "of those",
                )
            )
    return problems


def schema_problems(schema: InputSchema) -> list[SchemaProblem]:
    """Why ``schema`` cannot be asked, as ``(code, message)`` pairs naming the fix."""
    if isinstance(schema, ChoiceInput):
        return _option_problems(schema.options, "the choice")
    if isinstance(schema, FileInput):
        problems = _accept_problems(schema.accept, "the file input")
        if schema.max_size is not None and schema.max_size < 1:
            problems.append(
                (
                    "invalid_input_schema",
                    "the file input's maxSize must be at least 1 byte; raise it or drop it",
                )
            )
        return problems
    if isinstance(schema, FormInput):
        return _form_problems(schema)
    return []


def _form_problems(schema: FormInput) -> list[SchemaProblem]:
    invalid = "invalid_input_schema"
    if not schema.fields:
        return [(invalid, "the form has no fields; list at least one {id, label, type}")]
    problems: list[SchemaProblem] = []
    ids = [field.id for field in schema.fields]
    for field in schema.fields:
        where = f'form field "{field.id}"'
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", field.id):
            problems.append(
                (
                    invalid,
                    f"{where} needs an id of letters, digits and underscores (not "
                    "starting with a digit, at most 64), since it becomes a field of the node's "
                    "output; rename it",
                )
            )
        if not field.label.strip():
            problems.append(
                (invalid, f"{where} has an empty label; give it the text a person reads")
            )
        if field.type == "choice":
            problems.extend(_option_problems(field.options, where))
        elif field.options:
            problems.append(
                (invalid, f"{where} has options but is of type {field.type}; drop them")
            )
        if field.type == "file":
            problems.extend(_accept_problems(field.accept, where))
        elif field.accept:
            problems.append((invalid, f"{where} has accept but is of type {field.type}; drop it"))
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        listed = ", ".join(f'"{i}"' for i in repeated)
        problems.append(
            (invalid, f"the form repeats field id {listed}; give every field its own id")
        )
    return problems


# -- responses ---------------------------------------------------------------------------------


class ResponseProblem(ValueError):
    """A response that does not fit its schema; the message names what fits, never the value."""


def _kind_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def _single_key(value: Any, key: str) -> Any:
    if isinstance(value, Mapping):
        if set(value) != {key}:
            raise ResponseProblem(f'the response must be an object with the one key "{key}"')
        return value[key]
    return value


def _choice(value: Any, options: Sequence[InputChoice] | None, where: str) -> str:
    ids = _choice_values(options)
    if not isinstance(value, str) or value not in ids:
        raise ResponseProblem(f"{where} must be one of the option ids {', '.join(ids)}")
    return value


def _file(value: Any, accept: Sequence[str] | None, max_size: int | None, where: str) -> Any:
    if not isinstance(value, Mapping):
        raise ResponseProblem(f"{where} must be an object {{name, size, mediaType, uri}}")
    if any(key not in FILE_FIELDS for key in value):
        raise ResponseProblem(
            f"{where} has keys a file does not; a file is {{name, size, mediaType, uri}}"
        )
    name, size, uri = value.get("name"), value.get("size"), value.get("uri")
    media = value.get("mediaType", "application/octet-stream")
    if not isinstance(name, str) or not name.strip():
        raise ResponseProblem(f"{where} needs a name (a non-empty string)")
    if not isinstance(uri, str) or not uri.strip():
        raise ResponseProblem(f"{where} needs a uri (where the file is)")
    if not isinstance(media, str) or "/" not in media:
        raise ResponseProblem(f"{where} needs a mediaType such as application/pdf")
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise ResponseProblem(f"{where} needs a size (a whole number of bytes)")
    if max_size is not None and size > max_size:
        raise ResponseProblem(f"{where} is larger than the {max_size} bytes allowed")
    if accept and not _accepted(name, media, accept):
        raise ResponseProblem(f"{where} is not of an accepted type ({', '.join(accept)})")
    return {"name": name, "size": size, "mediaType": media, "uri": uri}


def _accepted(name: str, media: str, accept: Sequence[str]) -> bool:
    lower, media = name.lower(), media.lower()
    for pattern in accept:
        pattern = pattern.lower()
        if pattern.startswith(".") and lower.endswith(pattern):
            return True
        if pattern.endswith("/*") and media.startswith(pattern[:-1]):
            return True
        if pattern == media:
            return True
    return False


def _form_value(field: FormField, value: Any) -> Any:
    where = f'form field "{field.id}"'
    kind = field.type
    if kind in ("text", "textarea"):
        if not isinstance(value, str):
            raise ResponseProblem(f"{where} must be a string, not {_kind_of(value)}")
        return value
    if kind == "number":
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or (isinstance(value, float) and not math.isfinite(value))
        ):
            raise ResponseProblem(f"{where} must be a number, not {_kind_of(value)}")
        return value
    if kind == "boolean":
        if not isinstance(value, bool):
            raise ResponseProblem(f"{where} must be true or false, not {_kind_of(value)}")
        return value
    if kind == "date":
        if not isinstance(value, str) or _DATE.fullmatch(value) is None:
            raise ResponseProblem(f"{where} must be a date written YYYY-MM-DD")
        try:
            dt.date.fromisoformat(value)
        except ValueError:
            raise ResponseProblem(f"{where} must be a real date written YYYY-MM-DD") from None
        return value
    if kind == "choice":
        return _choice(value, field.options, where)
    return _file(value, field.accept, None, where)


def response_value(schema: InputSchema, value: Any) -> Any:
    """A response's value in its plainest form.

    The text, the option id (or ids), the form's field map, the file reference (or references).

    Raises:
        ResponseProblem: the response does not fit ``schema``.

    """
    if isinstance(schema, TextInput):
        text = _single_key(value, "text")
        if not isinstance(text, str):
            raise ResponseProblem(f"a text input takes a string, not {_kind_of(text)}")
        if not schema.multiline and ("\n" in text or "\r" in text):
            raise ResponseProblem("this text input takes one line; remove the line breaks")
        return text
    if isinstance(schema, ChoiceInput):
        if schema.multiple:
            chosen = _single_key(value, "choices")
            if not isinstance(chosen, list | tuple):
                raise ResponseProblem(
                    f"a multiple choice takes a list of option ids, not {_kind_of(chosen)}"
                )
            ids = [_choice(c, schema.options, "each choice") for c in chosen]
            if len(set(ids)) < len(ids):
                raise ResponseProblem("each option may be chosen once; remove the repeats")
            return ids
        return _choice(_single_key(value, "choice"), schema.options, "the choice")
    if isinstance(schema, FormInput):
        return _form(schema, value)
    if schema.multiple:
        files = _single_key(value, "files")
        if not isinstance(files, list | tuple) or not files:
            raise ResponseProblem("this file input takes a non-empty list of files")
        return [
            _file(f, schema.accept, schema.max_size, f"file {i + 1}") for i, f in enumerate(files)
        ]
    return _file(value, schema.accept, schema.max_size, "the file")


def _form(schema: FormInput, value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ResponseProblem(f"a form takes an object of its field ids, not {_kind_of(value)}")
    by_id = {field.id: field for field in schema.fields}
    unknown = sum(1 for k in value if k not in by_id)
    if unknown:
        raise ResponseProblem(
            f"the response names {unknown} field(s) the form does not have; its fields are "
            f"{', '.join(by_id)}"
        )
    out: dict[str, Any] = {}
    for field in schema.fields:
        if field.id not in value:
            if field.required:
                raise ResponseProblem(f'form field "{field.id}" is required')
            continue
        out[field.id] = _form_value(field, value[field.id])
    return out


def response_item(schema: InputSchema, value: Any) -> dict[str, Any]:
    """The output item a response to ``schema`` becomes (see the module docstring).

    Raises:
        ResponseProblem: the response does not fit; the message says what would.

    """
    plain = response_value(schema, value)
    if isinstance(schema, TextInput):
        return {"text": plain}
    if isinstance(schema, ChoiceInput):
        return {"choices": plain} if schema.multiple else {"choice": plain}
    if isinstance(schema, FileInput):
        return {"files": plain} if schema.multiple else dict(plain)
    return dict(plain)
