"""``SpooledJsonArtifact``: a JSON document, queried with JSONPath (RFC 9535).

The seven JSON methods, by their reference names (step name → method → result):

* ``artifact_json_type`` → ``json_type()``: ``object``, ``array``, ``string``, ``number``,
  ``boolean`` or ``null``;
* ``artifact_json_keys`` → ``json_keys()``: an object's keys, in document order;
* ``artifact_json_length`` → ``json_length()``: the length of an array, object or string;
* ``artifact_json_get`` → ``json_get(path)``: the FIRST value the JSONPath selects (``None``
  when it selects nothing);
* ``artifact_json_filter`` → ``json_filter(path)``: EVERY value the JSONPath selects, as a list
  (``$.files[?@.size > 1000]``);
* ``artifact_json_slice`` → ``json_slice(start=None, end=None)``: an array's elements
  ``[start, end)``;
* ``artifact_json_pluck`` → ``json_pluck(path)``: for each element of an array, the first value
  the JSONPath selects in it (``None`` where nothing is selected), so positions line up.

Paths are parsed by ``python-jsonpath`` (a maintained RFC 9535 implementation with filters).
The document is parsed once per instance; ``NaN`` and ``Infinity`` are refused because no
output item could hold them.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Self

from orchestration.artifacts.base import SpooledArtifact
from orchestration.artifacts.methods import ArtifactMethodDescriptor
from orchestration.errors import ArtifactMethodError

__all__ = ["JSON_METHODS", "SpooledJsonArtifact", "json_type_of"]

_PATH = {"type": "string", "minLength": 1, "description": "A JSONPath (RFC 9535), e.g. $.a[0]"}
_NO_ARGS: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}


def _path_args() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"path": _PATH},
        "required": ["path"],
        "additionalProperties": False,
    }


JSON_METHODS: tuple[ArtifactMethodDescriptor, ...] = (
    ArtifactMethodDescriptor(
        name="artifact_json_type",
        method="json_type",
        description="Return the JSON type of the document: object, array, string, number, "
        "boolean or null.",
        args_schema=_NO_ARGS,
    ),
    ArtifactMethodDescriptor(
        name="artifact_json_keys",
        method="json_keys",
        description="Return the keys of a JSON object, in document order.",
        args_schema=_NO_ARGS,
    ),
    ArtifactMethodDescriptor(
        name="artifact_json_length",
        method="json_length",
        description="Return the length of a JSON array, object or string.",
        args_schema=_NO_ARGS,
    ),
    ArtifactMethodDescriptor(
        name="artifact_json_get",
        method="json_get",
        description="Return the first value a JSONPath selects (null when none).",
        args_schema=_path_args(),
    ),
    ArtifactMethodDescriptor(
        name="artifact_json_filter",
        method="json_filter",
        description="Return every value a JSONPath selects, as a list; use filters such as "
        "$.items[?@.size > 10].",
        args_schema=_path_args(),
    ),
    ArtifactMethodDescriptor(
        name="artifact_json_slice",
        method="json_slice",
        description="Return the elements [start, end) of a JSON array.",
        args_schema={
            "type": "object",
            "properties": {
                "start": {"type": "integer", "minimum": 0},
                "end": {"type": "integer", "minimum": 0},
            },
            "additionalProperties": False,
        },
    ),
    ArtifactMethodDescriptor(
        name="artifact_json_pluck",
        method="json_pluck",
        description="For each element of a JSON array, return the first value a JSONPath "
        "selects in it (null where none).",
        args_schema=_path_args(),
    ),
)
"""The seven JSON descriptors (see the module docstring)."""


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value an output can hold")


def json_type_of(value: Any) -> str:
    """The JSON type name of a decoded value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    return "object"


class SpooledJsonArtifact(SpooledArtifact):
    """A JSON document (see the module docstring for its methods)."""

    artifact_class: ClassVar[str] = "json"
    tool_methods: ClassVar[tuple[ArtifactMethodDescriptor, ...]] = JSON_METHODS

    _document: Any
    _parsed = False

    @classmethod
    def from_value(cls, value: Any) -> Self:
        """An in-memory artifact over the JSON encoding of ``value``."""
        artifact = cls.from_bytes(json.dumps(value, ensure_ascii=False).encode("utf-8"))
        artifact._adopt(value)
        return artifact

    def _adopt(self, value: Any) -> None:
        self._document = value
        self._parsed = True

    def document(self) -> Any:
        """The parsed document (parsed once).

        Raises:
            ArtifactMethodError: the bytes are not a JSON document.

        """
        if not self._parsed:
            try:
                self._document = json.loads(self.text(), parse_constant=_refuse_constant)
            except (ValueError, RecursionError) as exc:
                raise ArtifactMethodError(f"the artifact is not valid JSON: {exc}") from exc
            self._parsed = True
        return self._document

    def _select(self, path: str, value: Any) -> list[Any]:
        import jsonpath
        from jsonpath.exceptions import JSONPathError

        try:
            return list(jsonpath.findall(path, value))
        except JSONPathError as exc:
            reason = str(exc).splitlines()[0]
            raise ArtifactMethodError(f"JSONPath {path!r} does not apply: {reason}") from exc

    def _expect(self, kinds: tuple[str, ...], method: str) -> Any:
        document = self.document()
        kind = json_type_of(document)
        if kind not in kinds:
            raise ArtifactMethodError(
                f"{method} needs a JSON {' or '.join(kinds)}, but the document is a {kind}"
            )
        return document

    def json_type(self) -> str:
        """The document's JSON type."""
        return json_type_of(self.document())

    def json_keys(self) -> list[str]:
        """An object's keys, in document order."""
        return [str(k) for k in self._expect(("object",), "json_keys")]

    def json_length(self) -> int:
        """The length of an array, object or string."""
        return len(self._expect(("array", "object", "string"), "json_length"))

    def json_get(self, path: str) -> Any:
        """The first value ``path`` selects, or ``None``."""
        found = self._select(path, self.document())
        return found[0] if found else None

    def json_filter(self, path: str) -> list[Any]:
        """Every value ``path`` selects."""
        return self._select(path, self.document())

    def json_slice(self, start: int | None = None, end: int | None = None) -> list[Any]:
        """An array's elements ``[start, end)``."""
        return list(self._expect(("array",), "json_slice")[start:end])

    def json_pluck(self, path: str) -> list[Any]:
        """For each array element, the first value ``path`` selects in it (or ``None``)."""
        out: list[Any] = []
        for element in self._expect(("array",), "json_pluck"):
            found = self._select(path, element)
            out.append(found[0] if found else None)
        return out
