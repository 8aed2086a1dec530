"""The JSON artifact's seven methods, by JSONPath."""

from __future__ import annotations

import pytest

from orchestration.artifacts import SpooledJsonArtifact
from orchestration.errors import ArtifactMethodError

DOC = {
    "dir": "/w",
    "files": [
        {"name": "a.txt", "size": 10, "tags": ["x"]},
        {"name": "b.md", "size": 2000},
        {"name": "c.txt", "size": 30},
    ],
}


def art() -> SpooledJsonArtifact:
    return SpooledJsonArtifact.from_bytes(
        b'{"dir": "/w", "files": [{"name": "a.txt", "size": 10, "tags": ["x"]}, '
        b'{"name": "b.md", "size": 2000}, {"name": "c.txt", "size": 30}]}'
    )


def test_type_keys_and_length() -> None:
    """json_type names the JSON type; keys keep document order; length counts members."""
    assert art().json_type() == "object"
    assert art().json_keys() == ["dir", "files"]
    assert art().json_length() == 2
    assert SpooledJsonArtifact.from_value([1, 2, 3]).json_length() == 3
    assert SpooledJsonArtifact.from_value(None).json_type() == "null"


def test_get_returns_the_first_match_or_none() -> None:
    """json_get selects one value; a path matching nothing gives None."""
    assert art().json_get("$.files[1].name") == "b.md"
    assert art().json_get("$.files[*].name") == "a.txt"
    assert art().json_get("$.missing") is None


def test_filter_returns_every_match() -> None:
    """json_filter applies RFC 9535 filters and returns all matches."""
    assert art().json_filter("$.files[?@.size > 20].name") == ["b.md", "c.txt"]
    assert art().json_filter("$.nothing[*]") == []


def test_slice_and_pluck_work_on_arrays() -> None:
    """json_slice and json_pluck need an array document; pluck keeps positions with None."""
    files = SpooledJsonArtifact.from_value(DOC["files"])
    assert [f["name"] for f in files.json_slice(1, 3)] == ["b.md", "c.txt"]
    assert files.json_pluck("$.tags[0]") == ["x", None, None]
    with pytest.raises(ArtifactMethodError, match="needs a JSON array"):
        art().json_slice()


def test_bad_documents_and_paths_are_named_errors() -> None:
    """Invalid JSON, NaN and a path that does not parse each raise ArtifactMethodError."""
    with pytest.raises(ArtifactMethodError, match="not valid JSON"):
        SpooledJsonArtifact.from_bytes(b"{oops").json_type()
    with pytest.raises(ArtifactMethodError, match="not valid JSON"):
        SpooledJsonArtifact.from_bytes(b'{"a": NaN}').json_type()
    with pytest.raises(ArtifactMethodError, match="does not apply"):
        art().json_get("$[?")


def test_derive_keeps_the_parsed_value() -> None:
    """A derived instance's document is the previous step's raw result."""
    sub = art().derive(art().json_get("$.files"))
    assert isinstance(sub, SpooledJsonArtifact)
    assert sub.json_length() == 3
