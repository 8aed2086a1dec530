"""default_serialise: the pinned rules for turning a final result into text."""

from __future__ import annotations

import datetime as dt

from orchestration.artifacts import EMPTY_LIST, default_serialise


def test_scalars() -> None:
    """None, strings, booleans and numbers render as a JSON writer would."""
    assert default_serialise(None) == "null"
    assert default_serialise("x") == "x"
    assert default_serialise(True) == "true"
    assert default_serialise(3) == "3"
    assert default_serialise(3.0) == "3"
    assert default_serialise(1.5) == "1.5"


def test_lists_of_strings_join_with_newlines() -> None:
    """A list of strings is newline-joined; an empty list is visibly empty."""
    assert default_serialise(["a", "b"]) == "a\nb"
    assert default_serialise([]) == EMPTY_LIST


def test_structures_become_indented_json() -> None:
    """Anything else is two-space-indented JSON in the tagged wire form."""
    assert default_serialise({"a": [1, "x"]}) == '{\n  "a": [\n    1,\n    "x"\n  ]\n}'
    moment = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    assert '"$datetime"' in default_serialise({"at": moment})


def test_values_outside_the_encodable_subset_still_render() -> None:
    """Serialising never fails: tuples and unknown objects fall back to plain JSON."""
    assert default_serialise((1, 2)) == "[\n  1,\n  2\n]"
    assert default_serialise({"d": dt.date(2026, 1, 2)}) == '{\n  "d": "2026-01-02"\n}'
