"""The value subset, the canonical encoding and the tagged JSON form."""

from __future__ import annotations

import datetime as dt
import math
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from orchestration.errors import UndecodableValueError, UnencodableValueError
from orchestration.plan.encoding import (
    NodeRef,
    ParamRef,
    decode,
    encode,
    from_json_value,
    to_json_value,
    validate_value,
)
from orchestration.run.routes import BranchId, EdgeSegment, JoinSegment
from orchestration.types import ArgValue, CallDefinition

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(2**200), max_value=2**200),
    st.floats(allow_nan=False),
    st.text(),
    st.binary(max_size=16),
    st.datetimes(),
    st.datetimes(timezones=st.just(dt.UTC)),
    st.timedeltas(),
    st.sampled_from([re.compile("a.b"), re.compile("x+", re.I), re.compile(b"bytes")]),
)
hashables = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5))
refs = st.builds(
    NodeRef,
    st.text(min_size=1, max_size=6),
    st.sampled_from(["first", "last", "all", 0, 3]),
    st.one_of(st.none(), st.text(max_size=6)),
    st.one_of(
        st.none(),
        st.just(BranchId(segments=(EdgeSegment(edge="e1"), JoinSegment(join="j", of=("a", "b"))))),
    ),
)
values = st.recursive(
    st.one_of(scalars, refs, st.builds(ParamRef, st.text(min_size=1, max_size=5))),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.text(max_size=5), inner, max_size=4),
        st.dictionaries(hashables, inner, max_size=3),
        st.sets(hashables, max_size=4),
        st.frozensets(hashables, max_size=4),
    ),
    max_leaves=20,
)


def _same(a: Any, b: Any) -> bool:
    """Equal values of the same types, recursively (== alone conflates 1, 1.0 and True)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) or (set(a) == set(b) and all(_same(a[k], b[k]) for k in a))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


@given(values)
def test_decode_inverts_encode(value: Any) -> None:
    """Decoding canonical bytes gives back an equal value of the same types."""
    back = decode(encode(value))
    assert back == value
    assert _same(back, value) or isinstance(value, dict)


@given(values)
def test_json_form_round_trips(value: Any) -> None:
    """The tagged JSON form reads back to the same value."""
    assert from_json_value(to_json_value(value), "template") == value


@given(st.dictionaries(st.text(max_size=4), st.integers(), max_size=6))
def test_encoding_ignores_dict_insertion_order(d: dict[str, int]) -> None:
    """Dicts with the same items encode identically whatever their key order."""
    assert encode(d) == encode(dict(reversed(list(d.items()))))


def test_distinct_values_encode_differently() -> None:
    """Values that a JSON canonicaliser would conflate stay distinct."""
    samples: list[Any] = [
        [1, 2],
        [2, 1],
        1,
        1.0,
        True,
        "1",
        b"1",
        2**70,
        2**70 + 1,
        dt.datetime(2020, 1, 1),
        dt.datetime(2020, 1, 2),
        dt.datetime(2020, 1, 1, tzinfo=dt.UTC),
        re.compile("a"),
        re.compile("a", re.I),
        {1: "a"},
        {"1": "a"},
        {1, 2},
        frozenset({1, 2}),
        {"node": "a", "select": "first"},
        NodeRef("a"),
        NodeRef("a", path="x"),
        ParamRef("a"),
        dt.timedelta(seconds=1),
        None,
        [],
        {},
    ]
    encoded = [encode(v) for v in samples]
    assert len(set(encoded)) == len(samples)


def test_set_encoding_is_order_free() -> None:
    """A set's encoding does not depend on iteration order."""
    assert encode({"b", "a", "c"}) == encode({"c", "a", "b"})


@pytest.mark.parametrize(
    ("value", "where", "what"),
    [
        ({"a": [1, lambda: 1]}, "a[1]", "callable"),
        ({"a": float("nan")}, "a", "NaN"),
        ([(1, 2)], "[0]", "tuple"),
        ({"x": object()}, "x", "object"),
        ({"x": bytearray(b"a")}, "x", "bytearray"),
        ({"x": dt.date(2020, 1, 1)}, "x", "date"),
    ],
)
def test_unencodable_values_are_refused_by_name(value: Any, where: str, what: str) -> None:
    """Refusals say what was refused and where."""
    with pytest.raises(UnencodableValueError) as info:
        encode(value)
    assert info.value.path == where
    assert what in info.value.message
    assert info.value.code == "unencodable_value"


def test_nan_inside_bytes_is_not_a_false_refusal() -> None:
    """Bytes that merely look like a packed NaN are accepted."""
    assert decode(encode(b"\xcb\x7f\xf8\x00\x00\x00\x00\x00\x00")) == b"\xcb\x7f\xf8" + bytes(6)


def test_cyclic_value_is_refused() -> None:
    """A value containing itself is refused instead of recursing forever."""
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(UnencodableValueError, match="cycle"):
        validate_value(loop)


def test_refs_only_where_allowed() -> None:
    """A NodeRef is refused in a plain value, a ParamRef outside a template."""
    with pytest.raises(UnencodableValueError):
        validate_value([NodeRef("a")], "none")
    with pytest.raises(UnencodableValueError):
        validate_value([ParamRef("a")], "node")
    validate_value([NodeRef("a"), ParamRef("b")], "template")


def test_lookalike_dict_stays_a_literal() -> None:
    """A dict shaped like a reference is a literal dict, in Python and on the wire."""
    adapter = TypeAdapter(ArgValue)
    lookalike = {"$ref": {"node": "a"}}
    as_json = adapter.dump_json(lookalike)
    assert adapter.validate_json(as_json) == lookalike
    assert isinstance(adapter.validate_json(b'{"$ref": {"node": "a"}}'), NodeRef)
    assert adapter.validate_python(lookalike) == lookalike


def test_unknown_tag_names_the_fix() -> None:
    """An unknown $tag in JSON is refused with the escape to use."""
    with pytest.raises(UndecodableValueError, match=r"\$dict"):
        from_json_value({"$nope": 1})


def test_model_refuses_bad_staged_value() -> None:
    """A call definition with a tuple argument fails validation, naming the argument."""
    with pytest.raises(ValidationError, match="args"):
        CallDefinition(tool="t", args={"x": (1, 2)})


def test_noderef_is_immutable_and_hashable() -> None:
    """NodeRefs are values: immutable, equal by content, hashable."""
    a = NodeRef("n", {"index": 2}, "p")
    assert a == NodeRef("n", 2, "p")
    assert hash(a) == hash(NodeRef("n", 2, "p"))
    with pytest.raises(AttributeError):
        a.node = "m"  # type: ignore[misc]


def test_infinity_in_a_plan_folds_and_digests() -> None:
    """Infinities (whose bytes look like a NaN's prefix) are legal staged values in a plan."""
    from orchestration.plan.ops import fold_ops

    from .plans import diamond_ops, fixed_author

    a = fixed_author(start=100)
    ops = [
        *diamond_ops(),
        a.set_field("report", "args.limit", float("inf")),
        a.set_field("report", "args.blob", b"\xcb\x7f\xf0\x00"),
    ]
    view = fold_ops("p", ops).view
    assert view.node("report").definition.args["limit"] == float("inf")  # type: ignore[union-attr]
    assert len(view.digest) == 64
