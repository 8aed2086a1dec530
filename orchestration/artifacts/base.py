"""``SpooledArtifact``: bytes behind a reader, and the seven text methods every artifact has.

An artifact is what a tool returns when its result is too big, or too structured, to be a
value: the bytes stay in a spool store, the run carries a handle (``encode()``), and a
``transform`` reads exactly the slice the next node needs through the class's own methods.

Each class lists only its OWN method descriptors in ``tool_methods``; the vocabulary of a class
is :func:`~orchestration.artifacts.methods.effective_tool_methods` of it (its own descriptors,
then its ancestors'). The base seven, by their reference names
(step name → method → result):

* ``artifact_head`` → ``head(n=10)``: the first ``n`` lines, newline-joined;
* ``artifact_tail`` → ``tail(n=10)``: the last ``n`` lines, newline-joined;
* ``artifact_grep`` → ``grep(pattern, flags=None)``: the lines a regular expression matches
  (flags from ``imsu``), as a list;
* ``artifact_cat`` → ``cat(start=None, end=None)``: the text of bytes ``[start, end)`` (UTF-8,
  undecodable bytes replaced);
* ``artifact_byte_length`` → ``byte_length()``: the size in bytes;
* ``artifact_line_count`` → ``line_count()``: the number of lines (a final newline does not
  start another);
* ``artifact_estimate_tokens`` → ``estimate_tokens(encoding)``: one token per four characters,
  rounded up.

A transform chains steps by passing each step's raw result to the next: the next step runs on
:meth:`SpooledArtifact.derive` of that result, a transient instance of the same class whose
document is the result (for text methods, a string result is the text and anything else is
its :func:`~orchestration.artifacts.serialise.default_serialise` form).
"""

from __future__ import annotations

import math
import re
from typing import Any, ClassVar, Literal, Self

from orchestration.artifacts.methods import ArtifactMethodDescriptor
from orchestration.artifacts.readers import InMemoryReader, SpoolReader
from orchestration.artifacts.serialise import default_serialise
from orchestration.errors import ArtifactMethodError
from orchestration.types import ArtifactHandle

__all__ = ["BASE_METHODS", "TOKEN_ENCODINGS", "SpooledArtifact", "TokenEncoding"]

TokenEncoding = Literal["cl100k_base", "o200k_base", "p50k_base", "r50k_base"]
TOKEN_ENCODINGS: tuple[str, ...] = ("cl100k_base", "o200k_base", "p50k_base", "r50k_base")

_CHARS_PER_TOKEN = 4
_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "u": re.UNICODE}


def _object(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        schema["required"] = list(required)
    return schema


_LINES = {"type": "integer", "minimum": 1, "default": 10}
_OFFSET = {"type": "integer", "minimum": 0}

BASE_METHODS: tuple[ArtifactMethodDescriptor, ...] = (
    ArtifactMethodDescriptor(
        name="artifact_head",
        method="head",
        description="Return the first n lines of the artifact (default 10).",
        args_schema=_object({"n": _LINES}),
    ),
    ArtifactMethodDescriptor(
        name="artifact_tail",
        method="tail",
        description="Return the last n lines of the artifact (default 10).",
        args_schema=_object({"n": _LINES}),
    ),
    ArtifactMethodDescriptor(
        name="artifact_grep",
        method="grep",
        description="Return the lines matching a regular expression; flags from 'imsu'.",
        args_schema=_object(
            {
                "pattern": {"type": "string", "minLength": 1},
                "flags": {"type": "string", "pattern": "^[imsu]*$"},
            },
            ("pattern",),
        ),
    ),
    ArtifactMethodDescriptor(
        name="artifact_cat",
        method="cat",
        description="Return the text of bytes [start, end) of the artifact (all by default).",
        args_schema=_object({"start": _OFFSET, "end": _OFFSET}),
    ),
    ArtifactMethodDescriptor(
        name="artifact_byte_length",
        method="byte_length",
        description="Return the artifact's size in bytes.",
        args_schema=_object({}),
    ),
    ArtifactMethodDescriptor(
        name="artifact_line_count",
        method="line_count",
        description="Return the number of lines in the artifact.",
        args_schema=_object({}),
    ),
    ArtifactMethodDescriptor(
        name="artifact_estimate_tokens",
        method="estimate_tokens",
        description="Estimate how many tokens the artifact's text costs a model.",
        args_schema=_object(
            {"encoding": {"type": "string", "enum": list(TOKEN_ENCODINGS)}}, ("encoding",)
        ),
    ),
)
"""The base seven descriptors (see the module docstring)."""


class SpooledArtifact:
    """Text bytes behind a :class:`~orchestration.artifacts.readers.SpoolReader`.

    Attributes:
        artifact_class: The stable name a handle records, so a reader can rebuild this class
            (``"text"`` here; every subclass sets its own).
        tool_methods: This class's OWN descriptors (see the module docstring).

    """

    artifact_class: ClassVar[str] = "text"
    tool_methods: ClassVar[tuple[ArtifactMethodDescriptor, ...]] = BASE_METHODS

    def __init__(self, reader: SpoolReader) -> None:
        self._reader = reader
        self._data: bytes | None = None
        self._text: str | None = None
        self._lines: list[str] | None = None

    # -- construction and persistence ---------------------------------------------------------

    @classmethod
    def from_bytes(cls, data: bytes) -> Self:
        """An artifact over bytes held in memory (its handle carries them inline)."""
        return cls(InMemoryReader(data))

    @classmethod
    def from_text(cls, text: str) -> Self:
        """An artifact over UTF-8 text held in memory."""
        return cls.from_bytes(text.encode("utf-8"))

    def encode(self) -> ArtifactHandle:
        """The handle that persists this artifact: its reader's pointer and its class name."""
        return ArtifactHandle(
            tag=self._reader.tag,
            locator=self._reader.locator,
            artifact_class=self.artifact_class,
        )

    def derive(self, value: Any) -> Self:
        """A transient instance of this class whose document is ``value`` (a step's result)."""
        derived = type(self).from_bytes(self._bytes_of(value))
        derived._adopt(value)
        return derived

    def _bytes_of(self, value: Any) -> bytes:
        """The bytes a derived instance reads for ``value``."""
        return default_serialise(value).encode("utf-8")

    def _adopt(self, value: Any) -> None:
        """Keep an already-parsed form of ``value``, when the class has one."""

    @property
    def reader(self) -> SpoolReader:
        """Where the bytes are."""
        return self._reader

    def summary(self) -> dict[str, Any]:
        """Fields a call returning this artifact records when the tool gives no others.

        ``byteLength`` comes from the reader's ``size()`` when it has one (no read needed).
        """
        size = getattr(self._reader, "size", None)
        length = size() if callable(size) else self.byte_length()
        return {"artifactClass": self.artifact_class, "byteLength": int(length)}

    # -- reading ----------------------------------------------------------------------------

    def data(self) -> bytes:
        """All bytes (read once)."""
        if self._data is None:
            self._data = self._reader.read()
        return self._data

    def text(self) -> str:
        """The bytes as UTF-8 text, undecodable bytes replaced (decoded once)."""
        if self._text is None:
            self._text = self.data().decode("utf-8", errors="replace")
        return self._text

    def lines(self) -> list[str]:
        """The text's lines without their terminators (LF or CRLF)."""
        if self._lines is None:
            text = self.text()
            lines = text.split("\n")
            if text.endswith("\n"):
                lines.pop()
            if text == "":
                lines = []
            self._lines = [line[:-1] if line.endswith("\r") else line for line in lines]
        return self._lines

    # -- the base seven -----------------------------------------------------------------------

    def head(self, n: int = 10) -> str:
        """The first ``n`` lines, newline-joined."""
        return "\n".join(self.lines()[: max(0, n)])

    def tail(self, n: int = 10) -> str:
        """The last ``n`` lines, newline-joined."""
        lines = self.lines()
        return "\n".join(lines[max(0, len(lines) - n) :]) if n > 0 else ""

    def grep(self, pattern: str, flags: str | None = None) -> list[str]:
        """The lines in which ``pattern`` (a Python regular expression) finds a match.

        Raises:
            ArtifactMethodError: the pattern does not compile, or a flag is not one of ``imsu``.

        """
        compiled_flags = 0
        for flag in flags or "":
            if flag not in _FLAGS:
                raise ArtifactMethodError(f"grep flag {flag!r} is not one of i, m, s, u")
            compiled_flags |= _FLAGS[flag]
        try:
            expression = re.compile(pattern, compiled_flags)
        except re.error as exc:
            raise ArtifactMethodError(f"grep pattern {pattern!r} does not compile: {exc}") from exc
        return [line for line in self.lines() if expression.search(line)]

    def cat(self, start: int | None = None, end: int | None = None) -> str:
        """The text of bytes ``[start, end)`` (the whole artifact by default)."""
        return self.data()[start:end].decode("utf-8", errors="replace")

    def byte_length(self) -> int:
        """The size in bytes."""
        return len(self.data())

    def line_count(self) -> int:
        """The number of lines; a final newline does not start another."""
        return len(self.lines())

    def estimate_tokens(self, encoding: TokenEncoding) -> int:
        """An estimate of the token count: one token per four characters, rounded up.

        ``encoding`` is accepted for the reference vocabulary's sake and checked, but the
        estimate is the same for every encoding: it is a budget guide, not a tokenizer.
        """
        if encoding not in TOKEN_ENCODINGS:
            raise ArtifactMethodError(
                f"token encoding {encoding!r} is not one of {', '.join(TOKEN_ENCODINGS)}"
            )
        return math.ceil(len(self.text()) / _CHARS_PER_TOKEN)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(tag={self._reader.tag!r})"
