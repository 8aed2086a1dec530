"""Applying transform steps: vocabulary, args by name, raw chaining, emit and serialisation."""

from __future__ import annotations

from typing import Any

import pytest

from orchestration.artifacts import (
    ArtifactMethodDescriptor,
    SpooledArtifact,
    SpooledJsonArtifact,
    SpooledMarkdownArtifact,
    run_transform,
)
from orchestration.errors import TransformError
from orchestration.types import EmitRows, EmitValue, NumberField, StringField, TransformStep

FILES = {"files": [{"name": "a.txt", "size": 5}, {"name": "b.md", "size": 50}]}


def step(name: str, **args: Any) -> TransformStep:
    return TransformStep(name=name, args=args or None)


def test_each_step_gets_the_previous_raw_result() -> None:
    """get then pluck then head: structure survives between steps, text only at the end."""
    art = SpooledJsonArtifact.from_value(FILES)
    items = run_transform(
        art,
        [
            step("artifact_json_get", path="$.files"),
            step("artifact_json_pluck", path="$.name"),
            step("artifact_head", n=1),
        ],
        EmitValue(field="first"),
    )
    assert items == [{"first": "a.txt"}]


def test_rows_emit_one_item_per_element() -> None:
    """Mappings become items as they are; scalars are wrapped as {value: ...}."""
    art = SpooledJsonArtifact.from_value(FILES)
    rows = run_transform(art, [step("artifact_json_filter", path="$.files[*]")], EmitRows())
    assert rows == FILES["files"]
    names = run_transform(art, [step("artifact_json_filter", path="$.files[*].name")], EmitRows())
    assert names == [{"value": "a.txt"}, {"value": "b.md"}]


def test_args_are_passed_by_name_whatever_their_order() -> None:
    """{end, start} and {start, end} mean the same slice; camelCase reaches snake_case."""
    art = SpooledJsonArtifact.from_value([0, 1, 2, 3])
    a = run_transform(
        art, [TransformStep(name="artifact_json_slice", args={"end": 3, "start": 1})], EmitRows()
    )
    b = run_transform(
        art, [TransformStep(name="artifact_json_slice", args={"start": 1, "end": 3})], EmitRows()
    )
    assert a == b == [{"value": 1}, {"value": 2}]
    md = SpooledMarkdownArtifact.from_text("# A\n\nx\n\n# B\n")
    text = run_transform(md, [step("artifact_md_text", startLine=5)], EmitValue(field="t"))
    assert text == [{"t": "B"}]


def test_value_into_a_string_field_uses_the_default_serialiser() -> None:
    """A list result emitted into a string field is newline-joined."""
    art = SpooledJsonArtifact.from_value(FILES)
    items = run_transform(
        art,
        [step("artifact_json_filter", path="$.files[*].name")],
        EmitValue(field="names"),
        [StringField(path="names")],
    )
    assert items == [{"names": "a.txt\nb.md"}]


def test_value_into_a_number_field_stays_raw() -> None:
    """A number field receives the raw result, so the output check can judge its type."""
    art = SpooledJsonArtifact.from_value(FILES)
    items = run_transform(
        art,
        [step("artifact_json_get", path="$.files[1].size")],
        EmitValue(field="n"),
        [NumberField(path="n")],
    )
    assert items == [{"n": 50}]


def test_the_last_descriptors_serialise_wins() -> None:
    """A descriptor's own serialise formats the final result instead of the default."""

    class Shouty(SpooledArtifact):
        artifact_class = "shouty"
        tool_methods = (
            ArtifactMethodDescriptor(
                name="artifact_words",
                method="words",
                description="words",
                args_schema={"type": "object"},
                serialise=lambda r: " / ".join(r).upper(),
            ),
        )

        def words(self) -> list[str]:
            return self.text().split()

    items = run_transform(Shouty.from_text("a b"), [step("artifact_words")], EmitValue(field="w"))
    assert items == [{"w": "A / B"}]


def test_unknown_step_bad_args_failure_and_bad_rows_are_named() -> None:
    """Each way a transform can go wrong raises TransformError with its own code."""
    art = SpooledJsonArtifact.from_value(FILES)
    cases = [
        ([step("artifact_md_headings")], EmitRows(), "transform_unknown_step"),
        ([step("artifact_head", n=0)], EmitRows(), "transform_step_args"),
        ([step("artifact_json_get", path="$[?")], EmitRows(), "transform_step_failed"),
        ([step("artifact_json_type")], EmitRows(), "transform_emit"),
    ]
    for steps, emit, code in cases:
        with pytest.raises(TransformError) as raised:
            run_transform(art, steps, emit)
        assert raised.value.code == code, code
