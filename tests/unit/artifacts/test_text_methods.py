"""The base seven text methods, handles, and the effective method set of each class."""

from __future__ import annotations

import pytest

from orchestration.artifacts import (
    ArtifactMethodDescriptor,
    ArtifactRegistry,
    SpooledArtifact,
    SpooledJsonArtifact,
    SpooledMarkdownArtifact,
    effective_tool_methods,
)
from orchestration.errors import ArtifactMethodError

TEXT = "alpha\nbeta\ngamma\n"


def test_head_and_tail_take_lines_without_terminators() -> None:
    """head/tail return the first/last n lines joined by newlines (the reference's example)."""
    art = SpooledArtifact.from_text(TEXT)
    assert art.head(2) == "alpha\nbeta"
    assert art.tail(2) == "beta\ngamma"
    assert art.head() == "alpha\nbeta\ngamma"
    assert art.tail(0) == ""


def test_line_count_ignores_a_final_newline_and_crlf() -> None:
    """A final newline does not start a line; CRLF endings are stripped."""
    assert SpooledArtifact.from_text(TEXT).line_count() == 3
    assert SpooledArtifact.from_text("a\r\nb").lines() == ["a", "b"]
    assert SpooledArtifact.from_text("").line_count() == 0


def test_grep_matches_lines_with_flags() -> None:
    """grep returns matching lines; the i flag ignores case; a bad pattern is a named error."""
    art = SpooledArtifact.from_text("Error one\nok\nerror two\n")
    assert art.grep("^error") == ["error two"]
    assert art.grep("^error", "i") == ["Error one", "error two"]
    with pytest.raises(ArtifactMethodError, match="does not compile"):
        art.grep("(")
    with pytest.raises(ArtifactMethodError, match="not one of"):
        art.grep("x", "q")


def test_cat_byte_length_and_token_estimate() -> None:
    """cat slices bytes; byte_length counts bytes, not characters; tokens are chars / 4."""
    art = SpooledArtifact.from_text("héllo world")
    assert art.byte_length() == 12
    assert art.cat(0, 6) == "héllo"
    assert art.cat() == "héllo world"
    assert art.estimate_tokens("cl100k_base") == 3
    with pytest.raises(ArtifactMethodError):
        art.estimate_tokens("gpt2")  # type: ignore[arg-type]


def test_effective_methods_match_the_reference_counts() -> None:
    """The base class has 7 methods, JSON 14, Markdown 15: own descriptors plus the base seven."""
    assert len(effective_tool_methods(SpooledArtifact)) == 7
    assert len(effective_tool_methods(SpooledJsonArtifact)) == 14
    assert len(effective_tool_methods(SpooledMarkdownArtifact)) == 15
    names = [d.name for d in effective_tool_methods(SpooledJsonArtifact)]
    assert names[0] == "artifact_json_type" and names[-1] == "artifact_estimate_tokens"


def test_every_descriptor_names_a_real_method() -> None:
    """Each descriptor's method exists on its class and its args schema is an object schema."""
    for cls in (SpooledArtifact, SpooledJsonArtifact, SpooledMarkdownArtifact):
        for descriptor in effective_tool_methods(cls):
            assert callable(getattr(cls, descriptor.method))
            assert descriptor.args_schema is not None
            assert descriptor.args_schema["type"] == "object"


def test_a_subclass_descriptor_shadows_by_name() -> None:
    """The nearest class's descriptor wins for a name its ancestor also declares."""

    class Loud(SpooledArtifact):
        artifact_class = "loud"
        tool_methods = (
            ArtifactMethodDescriptor(name="artifact_head", method="head", description="LOUD"),
        )

    methods = {d.name: d for d in effective_tool_methods(Loud)}
    assert len(methods) == 7 and methods["artifact_head"].description == "LOUD"


def test_a_malformed_tool_methods_is_skipped_never_raised() -> None:
    """A string, a None descriptor, a nameless entry or a property: skipped, the rest kept."""

    class Odd(SpooledArtifact):
        artifact_class = "odd"
        tool_methods = (  # type: ignore[assignment]
            None,
            "artifact_head",
            {"name": "artifact_dict"},
            ArtifactMethodDescriptor(name=7, method="x", description=""),  # type: ignore[arg-type]
            ArtifactMethodDescriptor(name="artifact_odd", method="head", description="odd"),
        )

    class Stringy(Odd):
        tool_methods = "artifact_tail"  # type: ignore[assignment]

    class Computed(Stringy):
        @property
        def tool_methods(self) -> tuple[ArtifactMethodDescriptor, ...]:  # type: ignore[override]
            raise RuntimeError("a property is never read")

    class Nothing(SpooledArtifact):
        tool_methods = None  # type: ignore[assignment]

    for cls in (Odd, Stringy, Computed):
        names = [d.name for d in effective_tool_methods(cls)]
        assert names[0] == "artifact_odd" and len(names) == 8
    assert len(effective_tool_methods(Nothing)) == 7
    assert effective_tool_methods(None) == ()  # type: ignore[arg-type]
    assert effective_tool_methods("SpooledArtifact") == ()  # type: ignore[arg-type]


def test_memory_handles_round_trip_through_the_registry() -> None:
    """An in-memory artifact persists as a handle carrying its bytes and reopens as its class."""
    art = SpooledJsonArtifact.from_value({"a": [1, 2]})
    handle = art.encode()
    assert handle.tag == "memory" and handle.artifact_class == "json"
    reopened = ArtifactRegistry().open(handle)
    assert isinstance(reopened, SpooledJsonArtifact)
    assert reopened.json_get("$.a[1]") == 2


def test_summary_reads_the_size_without_the_bytes() -> None:
    """A bare artifact's call item is its class name and byte length."""
    assert SpooledArtifact.from_text("abc").summary() == {"artifactClass": "text", "byteLength": 3}
