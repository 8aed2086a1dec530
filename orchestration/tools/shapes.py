"""Tool shapes: what a tool takes and returns, as JSON Schema, and what freeze checks with them.

A tool may declare its input shape (a JSON Schema object whose properties are its arguments)
and, optionally, its output shape. A :class:`~orchestration.tools.toolbox.Toolbox` derives the input
shape from the Python signature where the author gave none, so every registered tool has one;
a plain allowlist of names has none, and its calls are not checked.

Freeze reads the shape to refuse, before approval, what would fail the call at run time (and
use up the plan's one run): an argument the tool does not take, a required one that is not
staged, a literal the argument's schema refuses, and a reference to a node field whose declared
type can never fit the argument. The rules:

* A literal that is plain JSON is validated against the argument's schema, the same schema an
  author or model is shown. A staged value that is not JSON (a ``datetime``, a set, bytes) is
  checked against the argument's Python annotation when the shape was derived from one, and is
  not judged otherwise.
* A reference is judged by the declared type of the field it reads (``string``, ``number``,
  ``boolean``, ``enum``): it fits unless no value of that type could ever be accepted (a
  ``number`` field into an ``integer`` argument fits, since its value may be whole; a
  ``string`` field into a ``number`` argument never does). Every value of an ``enum`` field
  must be accepted. A reference whose type is not declared is not judged.

Pure: JSON Schema and pydantic only, no I/O.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jsonschema
from pydantic import TypeAdapter, ValidationError

from orchestration.types import BooleanField, DeclaredField, EnumField, NumberField, StringField

__all__ = ["ToolShape", "describe_schema", "is_plain_json"]

_ANY: frozenset[str] = frozenset()
"""The JSON types a schema accepts, when it accepts every type (``{}``)."""

_ALL_TYPES = frozenset({"null", "boolean", "integer", "number", "string", "array", "object"})


@dataclass(frozen=True)
class ToolShape:
    """A tool's declared input (and optionally output) shape.

    Attributes:
        input_schema: A JSON Schema object: ``properties`` are the arguments, ``required`` the
            ones a call must stage, ``additionalProperties`` whether others are accepted.
        output_schema: What the tool returns, when declared.
        description: What the tool does, for an author choosing it.
        annotations: Each argument's Python annotation, when the shape was derived from a
            signature; used to judge staged values that are not JSON.

    """

    input_schema: Mapping[str, Any]
    output_schema: Mapping[str, Any] | None = None
    description: str = ""
    annotations: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def properties(self) -> Mapping[str, Any]:
        """The arguments' schemas by name."""
        properties = self.input_schema.get("properties")
        return properties if isinstance(properties, Mapping) else {}

    @property
    def required(self) -> tuple[str, ...]:
        """The arguments a call must stage."""
        required = self.input_schema.get("required")
        if not isinstance(required, list):
            return ()
        return tuple(r for r in required if isinstance(r, str))

    @property
    def open(self) -> bool:
        """Whether arguments other than :attr:`properties` are accepted (``**kwargs``)."""
        return self.input_schema.get("additionalProperties", True) is not False

    def signature(self, name: str) -> str:
        """``name(a: string, b?: integer)``: the arguments a model reads in a tool list."""
        parts = []
        required = set(self.required)
        for arg, schema in self.properties.items():
            mark = "" if arg in required else "?"
            parts.append(f"{arg}{mark}: {describe_schema(schema, self._defs)}")
        if self.open:
            parts.append("...")
        return f"{name}({', '.join(parts)})"

    @property
    def _defs(self) -> Mapping[str, Any]:
        defs = self.input_schema.get("$defs")
        return defs if isinstance(defs, Mapping) else {}

    def literal_problem(self, arg: str, value: Any) -> str | None:
        """Why the staged literal ``value`` cannot be argument ``arg``, or ``None``."""
        schema = self.properties.get(arg)
        if schema is None:
            return None
        if is_plain_json(value):
            validator = jsonschema.Draft202012Validator({**schema, "$defs": self._defs})
            error = jsonschema.exceptions.best_match(validator.iter_errors(value))
            return None if error is None else error.message
        annotation = self.annotations.get(arg)
        if annotation is None:
            return None
        try:
            adapter: TypeAdapter[Any] = TypeAdapter(annotation)
        except Exception:  # noqa: BLE001 - an annotation pydantic cannot read is not judged
            return None
        try:
            adapter.validate_python(value, strict=True)
        except ValidationError as exc:
            return str(exc.errors(include_url=False)[0]["msg"])
        except Exception:  # noqa: BLE001 - a validator that cannot run judges nothing
            return None
        return None

    def arguments_problem(self, args: Mapping[str, Any]) -> str | None:
        """Why a whole set of call arguments does not fit this shape, or ``None``.

        An argument the tool does not take (unless it takes any), a required one left out,
        and a value its schema refuses: what an approver's edit is checked against.
        """
        properties = self.properties
        if not self.open:
            unknown = sorted(name for name in args if name not in properties)
            if unknown:
                return f"it takes no argument {', '.join(unknown)}"
        missing = [name for name in self.required if name not in args]
        if missing:
            return f"it requires {', '.join(missing)}"
        for name, value in args.items():
            problem = self.literal_problem(name, value)
            if problem is not None:
                return f"argument {name}: {problem}"
        return None

    def field_problem(self, arg: str, declared: DeclaredField, *, many: bool) -> str | None:
        """Why a reference to a field declared ``declared`` can never be argument ``arg``.

        Args:
            arg: The argument.
            declared: The field the reference reads.
            many: The reference reads the field of every item (a list of values).

        """
        schema = self.properties.get(arg)
        if schema is None:
            return None
        accepted = _json_types(schema, self._defs, set())
        if many:
            if accepted is not _ANY and "array" not in accepted:
                return f"the reference reads a list, and it takes {self.describe(arg)}"
            return None
        if isinstance(declared, EnumField):
            validator = jsonschema.Draft202012Validator({**schema, "$defs": self._defs})
            refused = [v for v in declared.values if not validator.is_valid(v)]
            if refused:
                values = ", ".join(json.dumps(v) for v in refused)
                return f"it does not accept the field's value(s) {values}"
            return None
        produced = _DECLARED_TYPES[type(declared)]
        if accepted is _ANY or accepted & produced:
            return None
        return f"the field holds {describe_field(declared)}, and it takes {self.describe(arg)}"

    def describe(self, arg: str) -> str:
        """What argument ``arg`` takes, in words (``a string``, ``one of "a", "b"``)."""
        return _with_article(describe_schema(self.properties.get(arg, {}), self._defs))


_DECLARED_TYPES: dict[type, frozenset[str]] = {
    StringField: frozenset({"string"}),
    NumberField: frozenset({"number", "integer"}),
    BooleanField: frozenset({"boolean"}),
    EnumField: frozenset({"string"}),
}


def describe_field(declared: DeclaredField) -> str:
    """A declared field's type in words: ``a string``, ``a number``, ``one of "a", "b"``."""
    if isinstance(declared, EnumField):
        return "one of " + ", ".join(json.dumps(v) for v in declared.values)
    return _with_article(declared.type)


def is_plain_json(value: Any) -> bool:
    """Whether ``value`` is JSON as it is (so a JSON Schema can judge it)."""
    kind = type(value)
    if value is None or kind is str or kind is bool or kind is int:
        return True
    if kind is float:
        return math.isfinite(value)
    if kind is list:
        return all(is_plain_json(v) for v in value)
    if kind is dict:
        return all(type(k) is str and is_plain_json(v) for k, v in value.items())
    return False


def describe_schema(schema: Any, defs: Mapping[str, Any] | None = None) -> str:
    """A short type name for a JSON Schema: ``string``, ``integer | null``, ``"a" | "b"``."""
    return _describe(schema, defs or {}, set())


def _describe(schema: Any, defs: Mapping[str, Any], seen: set[str]) -> str:
    if not isinstance(schema, Mapping):
        return "any"
    ref = schema.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        if name in seen or name not in defs:
            return name
        return _describe(defs[name], defs, seen | {name}) if "type" not in defs[name] else name
    if "const" in schema:
        return json.dumps(schema["const"])
    enum = schema.get("enum")
    if isinstance(enum, list):
        return " | ".join(json.dumps(v) for v in enum)
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list):
            return " | ".join(_describe(o, defs, seen) for o in options)
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(str(k) for k in kind)
    if kind == "array":
        return f"array of {_describe(schema.get('items', {}), defs, seen)}"
    if kind == "object" and isinstance(schema.get("title"), str):
        return str(schema["title"])
    if isinstance(kind, str):
        return kind
    return "any"


def _with_article(text: str) -> str:
    if text == "any":
        return "any value"
    if "|" in text or text.startswith('"'):
        return f"one of {text}"
    return f"an {text}" if text[0] in "aeiou" else f"a {text}"


def _json_types(schema: Any, defs: Mapping[str, Any], seen: set[str]) -> frozenset[str]:
    """The JSON types ``schema`` accepts at all (:data:`_ANY` when it does not restrict them)."""
    if not isinstance(schema, Mapping):
        return _ANY
    ref = schema.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        if name in seen or name not in defs:
            return _ANY
        return _json_types(defs[name], defs, seen | {name})
    if "const" in schema:
        return _types_of([schema["const"]])
    enum = schema.get("enum")
    if isinstance(enum, list):
        return _types_of(enum)
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list):
            found: set[str] = set()
            for option in options:
                types = _json_types(option, defs, seen)
                if types is _ANY:
                    return _ANY
                found |= types
            return frozenset(found)
    kind = schema.get("type")
    names: Sequence[Any] = kind if isinstance(kind, list) else [kind] if kind else []
    accepted = frozenset(n for n in names if n in _ALL_TYPES)
    if not accepted:
        return _ANY
    return accepted | ({"integer"} if "number" in accepted else set())


def _types_of(values: Sequence[Any]) -> frozenset[str]:
    found: set[str] = set()
    for value in values:
        if value is None:
            found.add("null")
        elif isinstance(value, bool):
            found.add("boolean")
        elif isinstance(value, int):
            found |= {"integer", "number"}
        elif isinstance(value, float):
            found.add("number")
        elif isinstance(value, str):
            found.add("string")
        elif isinstance(value, list):
            found.add("array")
        else:
            found.add("object")
    return frozenset(found)
