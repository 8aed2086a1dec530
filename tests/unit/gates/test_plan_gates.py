"""What a gate is, as plan content: timeouts, an input's fields, what a response is."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from orchestration.plan.gates import (
    ResponseProblem,
    args_digest,
    deadline_after,
    input_fields,
    input_paths,
    parse_duration,
    response_item,
    schema_problems,
)
from orchestration.plan.ops import plan_digest
from orchestration.testing import PlanSketch
from orchestration.types import (
    ApprovalGate,
    ChoiceInput,
    FileInput,
    FormField,
    FormInput,
    InputChoice,
    StringField,
    TextInput,
)

COLOURS = ChoiceInput(options=(InputChoice(id="red", label="Red"), InputChoice(id="blue",
                                                                            label="Blue")))
FORM = FormInput(
    fields=(
        FormField(id="name", label="Name", type="text", required=True),
        FormField(id="age", label="Age", type="number"),
        FormField(id="ok", label="OK?", type="boolean"),
        FormField(id="when", label="When", type="date"),
        FormField(id="size", label="Size", type="choice",
                  options=(InputChoice(id="s", label="S"), InputChoice(id="l", label="L"))),
        FormField(id="doc", label="Doc", type="file", accept=(".pdf",)),
    )
)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("PT30M", 1800), ("P1DT2H", 93600), ("P2W", 1209600), ("90s", 90), ("15m", 900),
     ("2h", 7200), ("1d", 86400), ("500ms", 0.5), ("PT0.5S", 0.5)],
)
def test_timeouts_parse(text: str, seconds: float) -> None:
    """ISO-8601 durations and the compact forms parse to the same seconds."""
    assert parse_duration(text) == dt.timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["", "P", "PT", "30", "30 minutes", "0s", "-5m", "P1Y", "400d"])
def test_timeouts_that_do_not_parse(text: str) -> None:
    """Empty, unit-less, zero, negative, calendar years and more than 366 days are refused."""
    assert parse_duration(text) is None


def test_deadline_is_written_like_the_log() -> None:
    """A deadline is the opening time plus the timeout, ISO-8601 to the millisecond with Z."""
    assert deadline_after("2026-01-01T23:59:30Z", "90s") == "2026-01-02T00:01:00.000Z"


def test_args_digest_is_canonical_and_lossless() -> None:
    """Key order does not change the digest; any value does."""
    assert args_digest({"a": 1, "b": "x"}) == args_digest({"b": "x", "a": 1})
    assert args_digest({"a": 1}) != args_digest({"a": 1.0})
    assert args_digest({"a": [1, 2]}) != args_digest({"a": [2, 1]})


def test_an_absent_gate_leaves_the_digest_unchanged() -> None:
    """A plan without gates digests exactly as before gates existed; adding one changes it."""
    bare = PlanSketch("p").entry(StringField(path="s")).call("a").edge("entry", "a").view()
    gated = (
        PlanSketch("p").entry(StringField(path="s")).call("a", gate=ApprovalGate(on="arguments"))
        .edge("entry", "a").view()
    )
    assert bare.digest == plan_digest(bare)
    assert gated.digest != bare.digest
    assert "gate" not in bare.nodes[1].definition.model_dump(exclude_none=True)


def test_fields_derived_from_each_schema() -> None:
    """Text gives ``text``, a choice ``choice`` (an enum), a form its fields, a file its facts."""
    assert [f.path for f in input_fields(TextInput())] == ["text"]
    choice = input_fields(COLOURS)
    assert [(f.path, f.type) for f in choice] == [("choice", "enum")]
    assert input_paths(COLOURS.model_copy(update={"multiple": True})) == ("choices",)
    assert input_paths(FORM) == ("name", "age", "ok", "when", "size", "doc.name", "doc.size",
                                 "doc.mediaType", "doc.uri")
    assert [f.type for f in input_fields(FORM)][:5] == ["string", "number", "boolean", "string",
                                                        "enum"]
    assert input_paths(FileInput()) == ("name", "size", "mediaType", "uri")
    assert input_paths(FileInput(multiple=True)) == ("files",)


def test_schema_problems_name_their_fix() -> None:
    """No options, repeated option ids, repeated or unusable form ids are each reported."""
    assert [c for c, _ in schema_problems(ChoiceInput())] == ["invalid_input_schema"]
    twice = ChoiceInput(options=(InputChoice(id="a", label="A"), InputChoice(id="a", label="B")))
    (code, message), = schema_problems(twice)
    assert code == "duplicate_choice_id" and "own id" in message
    form = FormInput(fields=(FormField(id="x", label="X", type="text"),
                             FormField(id="x", label="Y", type="text"),
                             FormField(id="2bad", label="Z", type="number")))
    messages = [m for _, m in schema_problems(form)]
    assert any("repeats field id" in m for m in messages)
    assert any("rename it" in m for m in messages)
    assert schema_problems(FORM) == [] and schema_problems(COLOURS) == []


@pytest.mark.parametrize(
    ("schema", "response", "item"),
    [
        (TextInput(), "hello", {"text": "hello"}),
        (TextInput(), {"text": "hello"}, {"text": "hello"}),
        (COLOURS, "red", {"choice": "red"}),
        (COLOURS.model_copy(update={"multiple": True}), ["red", "blue"],
         {"choices": ["red", "blue"]}),
        (FORM, {"name": "Ada", "age": 36, "when": "2026-02-28", "size": "l"},
         {"name": "Ada", "age": 36, "when": "2026-02-28", "size": "l"}),
        (FileInput(accept=("image/*",), max_size=10),
         {"name": "a.png", "size": 3, "mediaType": "image/png", "uri": "s3://b/a.png"},
         {"name": "a.png", "size": 3, "mediaType": "image/png", "uri": "s3://b/a.png"}),
    ],
)
def test_responses_that_fit(schema: Any, response: Any, item: dict[str, Any]) -> None:
    """A fitting response becomes the item its schema's fields describe."""
    assert response_item(schema, response) == item


SECRET = "s3cr3t-response"


@pytest.mark.parametrize(
    ("schema", "response", "says"),
    [
        (TextInput(), 42, "takes a string"),
        (TextInput(), f"{SECRET}\nline", "one line"),
        (COLOURS, SECRET, "red, blue"),
        (COLOURS.model_copy(update={"multiple": True}), ["red", "red"], "once"),
        (FORM, {"age": 3}, '"name" is required'),
        (FORM, {"name": "x", SECRET: 1}, "does not have"),
        (FORM, {"name": "x", "when": "2026-02-30"}, "real date"),
        (FORM, {"name": "x", "ok": "yes"}, "true or false"),
        (FileInput(max_size=2), {"name": "a", "size": 3, "uri": "u"}, "larger"),
        (FileInput(accept=(".pdf",)), {"name": "a.png", "size": 3, "uri": "u"}, "accepted"),
    ],
)
def test_responses_that_do_not_fit(schema: Any, response: Any, says: str) -> None:
    """A response that does not fit is refused with what would fit, never echoing itself."""
    with pytest.raises(ResponseProblem) as caught:
        response_item(schema, response)
    message = str(caught.value)
    assert says in message
    assert SECRET not in message
