"""branch_key: the canonical, injective rendering of a route."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from orchestration.run.routes import BranchId, EdgeSegment, JoinSegment, branch_key, frame_key

tricky = st.text(alphabet="e j:()0123456789ab>", min_size=0, max_size=6)
segments = st.one_of(
    st.builds(EdgeSegment, edge=tricky),
    st.builds(JoinSegment, join=tricky, of=st.lists(tricky, max_size=3).map(tuple)),
)
routes = st.lists(segments, max_size=5).map(lambda s: BranchId(segments=tuple(s)))


def test_examples_from_the_contract() -> None:
    """The contract's worked examples render exactly."""
    assert branch_key(BranchId()) == ""
    assert branch_key(BranchId(segments=(EdgeSegment(edge="e0"),))) == "e2:e0"
    joined = BranchId(segments=(EdgeSegment(edge="e0"), JoinSegment(join="j", of=("e3", "e4"))))
    assert branch_key(joined) == "e2:e0j1:j(e2:e3e2:e4)"
    assert frame_key("entry", BranchId()) == "entry:"


def test_lengths_count_utf16_units() -> None:
    """Astral characters count as two units, as the contract's reference counts them."""
    assert branch_key(BranchId(segments=(EdgeSegment(edge="a\U0001f600"),))) == "e3:a\U0001f600"


@given(routes, routes)
def test_branch_key_is_injective(a: BranchId, b: BranchId) -> None:
    """Different routes never share a key, even with ids full of delimiters and digits."""
    if a != b:
        assert branch_key(a) != branch_key(b)
    else:
        assert branch_key(a) == branch_key(b)


def test_delimiter_forgery_does_not_collide() -> None:
    """An edge id shaped like two segments or a join does not forge them."""
    two = BranchId(segments=(EdgeSegment(edge="a"), EdgeSegment(edge="b")))
    forged = BranchId(segments=(EdgeSegment(edge="ae1:b"),))
    join = BranchId(segments=(JoinSegment(join="x", of=("y",)),))
    forged_join = BranchId(segments=(EdgeSegment(edge="j1:x(e1:y)"),))
    assert branch_key(two) != branch_key(forged)
    assert branch_key(join) != branch_key(forged_join)
