"""Deep values (ruling 31): everything the value layer admits, every layer carries; past the
limit a value is refused by name, never by a recursion error."""

from __future__ import annotations

import json
from typing import Annotated, Any

import ormsgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from orchestration.errors import UnencodableValueError
from orchestration.plan.encoding import (
    _STRICT_OPTS,
    JSON_CHUNK_DEPTH,
    MAX_DEPTH,
    ValueSchema,
    _default,
    _pack_deep,
    decode,
    encode,
    from_json_value,
    to_json_value,
    validate_value,
)


def nested(levels: int, leaf: Any = 1) -> Any:
    """``levels`` containers deep, alternating maps and lists like an ``all`` predicate."""
    value = leaf
    for i in range(levels):
        value = {"all": value} if i % 2 else [value]
    return value


def json_depth(value: Any) -> int:
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return deepest


def test_the_limit_admits_max_depth_and_refuses_one_more_by_name() -> None:
    """MAX_DEPTH levels validate; one more is refused with the limit in the message."""
    validate_value(nested(MAX_DEPTH))
    with pytest.raises(UnencodableValueError, match=f"nested deeper than {MAX_DEPTH} levels"):
        validate_value(nested(MAX_DEPTH + 1))


@pytest.mark.parametrize("levels", [254, 255, 256, 400, MAX_DEPTH - 2])
def test_deep_values_encode_decode_and_digest_stably(levels: int) -> None:
    """Past the native packer's 255 levels the bytes still decode to the same value."""
    value = nested(levels, {"x": [1.5, "é", None]})
    data = encode(value)
    assert decode(data) == value
    assert encode(decode(data)) == data


_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False),
    st.text(max_size=40), st.binary(max_size=8),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=40), inner, max_size=4)
    ),
    max_leaves=30,
)


@given(_values, st.integers(0, 130))
@settings(max_examples=200, deadline=None)
def test_the_split_writer_gives_the_native_packers_bytes(value: Any, start: int) -> None:
    """Writing levels by hand (from any starting depth) is byte-for-byte the native packing."""
    native = ormsgpack.packb(value, default=_default, option=_STRICT_OPTS)
    assert _pack_deep(value, _STRICT_OPTS, start) == native


@pytest.mark.parametrize("levels", [JSON_CHUNK_DEPTH, 300, MAX_DEPTH])
def test_the_json_form_nests_boundedly_and_reads_back(levels: int) -> None:
    """A deep value's JSON form nests at most a chunk deep per document and round-trips."""
    value = nested(levels, {"$odd": 1})
    wire = to_json_value(value)
    assert json_depth(wire) <= JSON_CHUNK_DEPTH + 3
    assert from_json_value(json.loads(json.dumps(wire))) == value


def test_the_nested_json_form_written_before_chunking_still_reads() -> None:
    """A value stored in the plain nested form (as earlier versions wrote it) decodes alike."""
    value = nested(150)
    plain = json.loads(json.dumps(value))
    assert from_json_value(plain) == value


class _Holder(BaseModel):
    value: Annotated[Any, ValueSchema("none")]


@pytest.mark.parametrize("levels", [256, MAX_DEPTH])
def test_pydantic_json_round_trips_a_deep_value(levels: int) -> None:
    """What stores and payloads do: dump to JSON and validate it back (pydantic stops at 200)."""
    holder = _Holder(value=nested(levels))
    assert _Holder.model_validate_json(holder.model_dump_json()) == holder
