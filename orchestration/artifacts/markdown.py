"""``SpooledMarkdownArtifact``: a Markdown document with optional front matter.

Parsed with ``markdown-it-py`` (CommonMark, plus tables) and ``python-frontmatter`` (YAML front
matter between ``---`` fences, loaded with PyYAML's safe loader). Line numbers are 1-based and
count from the top of the artifact, front matter included, so a line number read from one
method addresses the same line in another and in the file. ``startLine``/``endLine`` keep what
starts inside that inclusive range.

The eight Markdown methods, by their reference names (step name → method → result):

* ``artifact_md_frontmatter`` → ``md_frontmatter()``: the front matter as a mapping (``{}``
  when there is none; dates become ISO strings);
* ``artifact_md_headings`` → ``md_headings(depth=None)``: ``[{depth, text, line}]``, headings
  of level ``depth`` or shallower;
* ``artifact_md_code_blocks`` → ``md_code_blocks(lang=None)``: ``[{lang, code, line}]``;
* ``artifact_md_sections`` → ``md_sections(depth=None)``: ``[{heading, depth, line, body}]``,
  one per heading of level ``depth`` or shallower, whose body runs to the next heading of the
  same or a shallower level;
* ``artifact_md_links`` → ``md_links(startLine, endLine)``: ``[{text, href, title, line}]``;
* ``artifact_md_images`` → ``md_images(startLine, endLine)``: ``[{alt, src, title, line}]``;
* ``artifact_md_text`` → ``md_text(startLine, endLine)``: the plain text of each block, one
  per line;
* ``artifact_md_ast`` → ``md_ast(startLine, endLine)``: the block tokens as
  ``[{type, tag, line, endLine, level, content, info}]``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from orchestration.artifacts.base import SpooledArtifact
from orchestration.artifacts.methods import ArtifactMethodDescriptor
from orchestration.errors import ArtifactMethodError

if TYPE_CHECKING:
    from markdown_it.token import Token

__all__ = ["MARKDOWN_METHODS", "SpooledMarkdownArtifact"]

_NO_ARGS: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}
_DEPTH = {"type": "integer", "minimum": 1, "maximum": 6}
_LINE = {"type": "integer", "minimum": 1}
_RANGE: dict[str, Any] = {
    "type": "object",
    "properties": {"startLine": _LINE, "endLine": _LINE},
    "additionalProperties": False,
}


def _depth_args() -> dict[str, Any]:
    return {"type": "object", "properties": {"depth": _DEPTH}, "additionalProperties": False}


MARKDOWN_METHODS: tuple[ArtifactMethodDescriptor, ...] = (
    ArtifactMethodDescriptor(
        name="artifact_md_frontmatter",
        method="md_frontmatter",
        description="Return the document's YAML front matter as an object ({} when none).",
        args_schema=_NO_ARGS,
    ),
    ArtifactMethodDescriptor(
        name="artifact_md_headings",
        method="md_headings",
        description="Return the headings (depth, text, line), down to an optional depth.",
        args_schema=_depth_args(),
    ),
    ArtifactMethodDescriptor(
        name="artifact_md_code_blocks",
        method="md_code_blocks",
        description="Return the code blocks (lang, code, line), optionally of one language.",
        args_schema={
            "type": "object",
            "properties": {"lang": {"type": "string"}},
            "additionalProperties": False,
        },
    ),
    ArtifactMethodDescriptor(
        name="artifact_md_sections",
        method="md_sections",
        description="Return the sections (heading, depth, line, body), down to an optional "
        "heading depth.",
        args_schema=_depth_args(),
    ),
    ArtifactMethodDescriptor(
        name="artifact_md_links",
        method="md_links",
        description="Return the links (text, href, title, line), optionally within a line range.",
        args_schema=_RANGE,
    ),
    ArtifactMethodDescriptor(
        name="artifact_md_images",
        method="md_images",
        description="Return the images (alt, src, title, line), optionally within a line range.",
        args_schema=_RANGE,
    ),
    ArtifactMethodDescriptor(
        name="artifact_md_text",
        method="md_text",
        description="Return the plain text of the blocks, optionally within a line range.",
        args_schema=_RANGE,
    ),
    ArtifactMethodDescriptor(
        name="artifact_md_ast",
        method="md_ast",
        description="Return the block structure as a token list, optionally within a line range.",
        args_schema=_RANGE,
    ),
)
"""The eight Markdown descriptors (see the module docstring)."""


@dataclass(frozen=True)
class _Parsed:
    front: dict[str, Any]
    offset: int
    """Lines before the body (the front matter block)."""
    body: list[str]
    tokens: list[Token]


def _plain(value: Any) -> Any:
    """YAML values as encodable ones: dates become ISO strings, keys become strings."""
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_plain(v) for v in value]
    return value


def _inline_text(token: Token) -> str:
    parts: list[str] = []
    for child in token.children or ():
        if child.type in ("text", "code_inline", "html_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append("\n")
        elif child.type == "image":
            parts.append(child.content)
    return "".join(parts)


def _within(line: int, start: int | None, end: int | None) -> bool:
    return (start is None or line >= start) and (end is None or line <= end)


class SpooledMarkdownArtifact(SpooledArtifact):
    """A Markdown document (see the module docstring for its methods)."""

    artifact_class: ClassVar[str] = "markdown"
    tool_methods: ClassVar[tuple[ArtifactMethodDescriptor, ...]] = MARKDOWN_METHODS

    _parsed: _Parsed | None = None

    def _parse(self) -> _Parsed:
        if self._parsed is not None:
            return self._parsed
        import frontmatter
        import yaml
        from frontmatter.default_handlers import YAMLHandler
        from markdown_it import MarkdownIt

        text = self.text()
        front: Any = {}
        body = text
        handler = frontmatter.detect_format(text, [YAMLHandler()])
        if handler is not None:
            try:
                raw, body = handler.split(text)
                front = handler.load(raw) or {}
            except (ValueError, yaml.YAMLError) as exc:
                raise ArtifactMethodError(f"the front matter is not valid YAML: {exc}") from exc
        if not isinstance(front, dict):
            raise ArtifactMethodError(
                f"the front matter is a YAML {type(front).__name__}, not a mapping"
            )
        offset = text[: len(text) - len(body)].count("\n")
        tokens = MarkdownIt("commonmark").enable("table").parse(body)
        self._parsed = _Parsed(_plain(front), offset, body.split("\n"), tokens)
        return self._parsed

    def _line(self, token: Token) -> int:
        parsed = self._parse()
        return (token.map[0] if token.map else 0) + parsed.offset + 1

    def md_frontmatter(self) -> dict[str, Any]:
        """The front matter (``{}`` when there is none)."""
        return dict(self._parse().front)

    def _headings(self) -> list[tuple[int, str, int, int]]:
        """(level, text, 1-based line, body index of the heading) per heading."""
        tokens = self._parse().tokens
        out: list[tuple[int, str, int, int]] = []
        for i, token in enumerate(tokens):
            if token.type == "heading_open" and i + 1 < len(tokens):
                level = int(token.tag[1:])
                index = token.map[0] if token.map else 0
                out.append((level, _inline_text(tokens[i + 1]), self._line(token), index))
        return out

    def md_headings(self, depth: int | None = None) -> list[dict[str, Any]]:
        """Headings of level ``depth`` or shallower (all by default)."""
        limit = depth or 6
        return [
            {"depth": level, "text": text, "line": line}
            for level, text, line, _ in self._headings()
            if level <= limit
        ]

    def md_code_blocks(self, lang: str | None = None) -> list[dict[str, Any]]:
        """Fenced and indented code blocks, optionally only those tagged ``lang``."""
        out: list[dict[str, Any]] = []
        for token in self._parse().tokens:
            if token.type not in ("fence", "code_block"):
                continue
            info = token.info.strip().split(" ")[0] if token.type == "fence" else ""
            if lang is not None and info != lang:
                continue
            out.append({"lang": info, "code": token.content, "line": self._line(token)})
        return out

    def md_sections(self, depth: int | None = None) -> list[dict[str, Any]]:
        """One section per heading of level ``depth`` or shallower."""
        limit = depth or 6
        parsed = self._parse()
        headings = self._headings()
        out: list[dict[str, Any]] = []
        for position, (level, text, line, index) in enumerate(headings):
            if level > limit:
                continue
            stop = len(parsed.body)
            for later_level, _, _, later_index in headings[position + 1 :]:
                if later_level <= level:
                    stop = later_index
                    break
            body = "\n".join(parsed.body[index + 1 : stop]).strip("\n")
            out.append({"heading": text, "depth": level, "line": line, "body": body})
        return out

    def _inline_tokens(self, start: int | None, end: int | None) -> list[tuple[Token, int]]:
        return [
            (token, self._line(token))
            for token in self._parse().tokens
            if token.type == "inline" and _within(self._line(token), start, end)
        ]

    def md_links(
        self, start_line: int | None = None, end_line: int | None = None
    ) -> list[dict[str, Any]]:
        """Links in blocks starting inside the range."""
        out: list[dict[str, Any]] = []
        for token, line in self._inline_tokens(start_line, end_line):
            current: dict[str, Any] | None = None
            for child in token.children or ():
                if child.type == "link_open":
                    current = {
                        "text": "",
                        "href": str(child.attrGet("href") or ""),
                        "title": str(child.attrGet("title") or ""),
                        "line": line,
                    }
                elif child.type == "link_close" and current is not None:
                    out.append(current)
                    current = None
                elif current is not None and child.type in ("text", "code_inline"):
                    current["text"] += child.content
        return out

    def md_images(
        self, start_line: int | None = None, end_line: int | None = None
    ) -> list[dict[str, Any]]:
        """Images in blocks starting inside the range."""
        return [
            {
                "alt": child.content,
                "src": str(child.attrGet("src") or ""),
                "title": str(child.attrGet("title") or ""),
                "line": line,
            }
            for token, line in self._inline_tokens(start_line, end_line)
            for child in token.children or ()
            if child.type == "image"
        ]

    def md_text(self, start_line: int | None = None, end_line: int | None = None) -> str:
        """The plain text of each block starting inside the range, one block per line."""
        lines: list[str] = []
        for token in self._parse().tokens:
            line = self._line(token)
            if not _within(line, start_line, end_line):
                continue
            if token.type == "inline":
                lines.append(_inline_text(token))
            elif token.type in ("fence", "code_block"):
                lines.append(token.content.rstrip("\n"))
        return "\n".join(lines)

    def md_ast(
        self, start_line: int | None = None, end_line: int | None = None
    ) -> list[dict[str, Any]]:
        """The block tokens starting inside the range, in document order."""
        out: list[dict[str, Any]] = []
        offset = self._parse().offset
        for token in self._parse().tokens:
            if not token.map:
                continue  # closing tokens: their opening token already stands for the block
            line = self._line(token)
            if not _within(line, start_line, end_line):
                continue
            out.append(
                {
                    "type": token.type,
                    "tag": token.tag,
                    "line": line,
                    "endLine": token.map[1] + offset,
                    "level": token.level,
                    "content": token.content,
                    "info": token.info,
                }
            )
        return out
