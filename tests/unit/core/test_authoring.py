"""PlanAuthor mints op identity so plans read like code."""

from __future__ import annotations

import pytest

from orchestration.plan.authoring import PlanAuthor, ref
from orchestration.plan.ops import fold_ops
from orchestration.types import CallNode

from .plans import diamond_ops, fixed_author


def test_each_op_gets_a_fresh_identity_and_a_rising_clock() -> None:
    """Op ids are unique, Lamport values rise by one, the actor is stamped."""
    ops = diamond_ops()
    assert len({op.op_id for op in ops}) == len(ops)
    assert [op.lamport for op in ops] == list(range(1, len(ops) + 1))
    assert {op.actor_id for op in ops} == {"alice"}


def test_observe_makes_later_edits_win() -> None:
    """An author that observed a log orders its edits after everything it saw."""
    theirs = diamond_ops(fixed_author("zed", start=500))
    mine = PlanAuthor("alice").observe(theirs)
    edit = mine.set_field("fetch", "args.city", "Lima")
    assert edit.lamport == max(op.lamport for op in theirs) + 1
    fetch = fold_ops("p", [*theirs, edit]).view.node("fetch")
    assert isinstance(fetch, CallNode) and fetch.definition.args["city"] == "Lima"


def test_default_identity_is_random_and_timestamped() -> None:
    """Without injection, op ids are random hex and at is an ISO-8601 UTC time."""
    author = PlanAuthor("bob")
    a, b = author.join("j1"), author.join("j2")
    assert a.op_id != b.op_id and len(a.op_id) == 32
    assert a.at.endswith("Z") and "T" in a.at


def test_edge_ids_are_derived_safely() -> None:
    """Derived edge ids stay inside the freeze charset."""
    author = fixed_author()
    edge = author.edge("fetch", "report", "case_big one").edge
    assert edge.id == "fetch-report-case_big_one"
    assert author.edge("a", "b").edge.id == "a-b"


def test_refs_and_empty_actor() -> None:
    """ref() builds NodeRefs; an author must have an actor id."""
    assert ref("x", path="y", select="last").select == "last"
    with pytest.raises(ValueError, match="actor_id"):
        PlanAuthor("")


def test_set_definition_takes_a_definition_model() -> None:
    """A whole definition model (tuple fields and all) can replace a node's definition."""
    from orchestration.types import CallDefinition, StringField

    from .plans import diamond_ops

    author = fixed_author(start=100)
    new = CallDefinition(tool="weather.v2", output=(StringField(path="body"),), replay_safe=True,
                         on_indeterminate="skip", on_missing_value="fail")
    view = fold_ops("p", [*diamond_ops(), author.set_definition("fetch", new)]).view
    fetch = view.node("fetch")
    assert isinstance(fetch, CallNode) and fetch.definition == new
