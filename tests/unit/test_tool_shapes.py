"""Tools declare input and output shapes; a toolbox derives the input shape it is not given."""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from orchestration.tools.allowlist import ToolAllowlist
from orchestration.tools.contracts import DescribedTools
from orchestration.tools.shapes import ToolShape, describe_schema
from orchestration.tools.toolbox import Toolbox, ToolContext
from orchestration.types import EnumField, NumberField, StringField


class Window(BaseModel):
    start: int
    end: int


def _toolbox() -> Toolbox:
    tools = Toolbox()

    @tools.tool("files.list")
    def list_files(dir: str, context: ToolContext, limit: int = 10) -> dict[str, Any]:
        return {}

    @tools.tool("stamp")
    def stamp(context: ToolContext, **args: Any) -> dict[str, Any]:
        return {}

    @tools.tool("mixed")
    def mixed(
        when: dt.datetime,
        mode: Literal["fast", "slow"],
        window: Window,
        tags: list[str] | None = None,
        *rest: Any,
        **counts: int,
    ) -> dict[str, Any]:
        return {}

    @tools.tool("bare")
    def bare(x, y=3):  # type: ignore[no-untyped-def]
        return {}

    @tools.tool(
        "declared",
        input_schema={"type": "object", "properties": {"q": {"type": "string"}},
                      "required": ["q"], "additionalProperties": False},
        output_schema={"type": "object", "properties": {"hits": {"type": "integer"}}},
    )
    def declared(**args: Any) -> dict[str, Any]:
        return {}

    return tools


def test_the_input_shape_is_derived_from_the_signature() -> None:
    """Keyword parameters are arguments; defaults make them optional; context is left out."""
    shape = _toolbox().shape("files.list")
    assert shape is not None
    assert shape.input_schema == {
        "type": "object",
        "properties": {"dir": {"type": "string"},
                       "limit": {"type": "integer", "default": 10}},
        "required": ["dir"],
        "additionalProperties": False,
    }
    assert shape.signature("files.list") == "files.list(dir: string, limit?: integer)"
    assert shape.output_schema is None


def test_kwargs_open_the_shape_and_args_are_left_out() -> None:
    """**kwargs accepts other arguments (typed by its annotation); *args cannot be staged."""
    tools = _toolbox()
    stamp = tools.shape("stamp")
    assert stamp is not None and stamp.open and stamp.properties == {}
    mixed = tools.shape("mixed")
    assert mixed is not None
    assert list(mixed.properties) == ["when", "mode", "window", "tags"]
    assert mixed.required == ("when", "mode", "window")
    assert mixed.input_schema["additionalProperties"] == {"type": "integer"}
    assert mixed.properties["window"]["title"] == "Window"
    assert mixed.signature("mixed") == (
        'mixed(when: string, mode: "fast" | "slow", window: Window, '
        "tags?: array of string | null, ...)"
    )


def test_unannotated_parameters_take_any_value() -> None:
    """A parameter without an annotation is an argument of any type."""
    shape = _toolbox().shape("bare")
    assert shape is not None
    assert shape.properties == {"x": {}, "y": {"default": 3}}
    assert shape.required == ("x",)


def test_a_declared_shape_is_kept_as_given() -> None:
    """An author's input and output schemas are used as they are."""
    shape = _toolbox().shape("declared")
    assert shape is not None and shape.required == ("q",) and not shape.open
    assert shape.output_schema == {"type": "object", "properties": {"hits": {"type": "integer"}}}


def test_a_context_under_another_name_is_refused_at_registration() -> None:
    """The worker passes the context only as `context`: another name could never be supplied."""
    tools = Toolbox()
    with pytest.raises(ValueError, match="rename the parameter to `context`"):

        @tools.tool("bad")
        def bad(ctx: ToolContext) -> str:
            return ""


def test_only_a_toolbox_describes_its_tools() -> None:
    """A toolbox is DescribedTools; a plain allowlist of names is not (its calls go unchecked)."""
    assert isinstance(_toolbox(), DescribedTools)
    assert not isinstance(ToolAllowlist(["a"]), DescribedTools)


def test_literals_are_judged_by_the_schema_and_live_values_by_the_annotation() -> None:
    """JSON literals against the schema; a datetime or set against the Python annotation."""
    shape = _toolbox().shape("mixed")
    assert shape is not None
    assert shape.literal_problem("mode", "fast") is None
    assert shape.literal_problem("mode", "quick") is not None
    assert shape.literal_problem("window", {"start": 1, "end": 2}) is None
    assert shape.literal_problem("window", {"start": 1}) is not None
    assert shape.literal_problem("when", dt.datetime(2026, 1, 1, tzinfo=dt.UTC)) is None
    assert shape.literal_problem("tags", {"a"}) is not None
    declared = _toolbox().shape("declared")
    assert declared is not None and declared.literal_problem("q", b"bytes") is None


def test_a_field_fits_unless_its_type_never_can() -> None:
    """number into integer fits (it may be whole); string into integer never does."""
    shape = ToolShape(input_schema={
        "type": "object",
        "properties": {"n": {"type": "integer"}, "s": {"type": "string"},
                       "mode": {"enum": ["a", "b"]}, "any": {},
                       "maybe": {"anyOf": [{"type": "integer"}, {"type": "null"}]}},
    })
    assert shape.field_problem("n", NumberField(path="x"), many=False) is None
    assert shape.field_problem("maybe", NumberField(path="x"), many=False) is None
    assert shape.field_problem("any", StringField(path="x"), many=False) is None
    problem = shape.field_problem("n", StringField(path="x"), many=False)
    assert problem == "the field holds a string, and it takes an integer"
    assert shape.field_problem("mode", EnumField(path="x", values=("a",)), many=False) is None
    enum_problem = shape.field_problem("mode", EnumField(path="x", values=("a", "c")), many=False)
    assert enum_problem is not None and '"c"' in enum_problem
    assert shape.field_problem("s", StringField(path="x"), many=True) is not None


def test_describe_schema_reads_unions_enums_and_arrays() -> None:
    """Short type names a model reads in a tool list."""
    assert describe_schema({"type": "string"}) == "string"
    assert describe_schema({"enum": ["a", 1]}) == '"a" | 1'
    assert describe_schema({"type": "array", "items": {"type": "integer"}}) == "array of integer"
    assert describe_schema({}) == "any"
