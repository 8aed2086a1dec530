"""The structured predicate cell: grammar, depth limit, value semantics, branch and select."""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import pytest

from orchestration.predicates import (
    MAX_PREDICATE_DEPTH,
    StructuredCell,
    evaluate_predicate,
    parse_structured_predicate,
)
from orchestration.run.routes import BranchId
from orchestration.tools.contracts import BranchVerdict, PredicateContext, PredicateEvaluator
from orchestration.types import (
    BranchDefinition,
    BranchNode,
    FrameRef,
    NodeOutput,
    OutputItem,
    SelectDefinition,
    SelectNode,
)


def outputs(**records: list[dict[str, Any]]) -> dict[str, NodeOutput]:
    """Table keyed ``<name>:`` with each record's items."""
    return {
        f"{name}:": NodeOutput(items=tuple(OutputItem(json_=r) for r in rows), branch_id=BranchId())
        for name, rows in records.items()
    }


def holds(predicate: Any, table: dict[str, NodeOutput]) -> bool:
    return evaluate_predicate(parse_structured_predicate(predicate), table)


def leaf(op: str, value: Any = ..., path: str = "n:.v") -> dict[str, Any]:
    out: dict[str, Any] = {"path": path, "op": op}
    if value is not ...:
        out["value"] = value
    return out


def test_cell_implements_the_evaluator_protocol() -> None:
    """The cell is a deterministic PredicateEvaluator with id "structured"."""
    cell = StructuredCell()
    assert isinstance(cell, PredicateEvaluator)
    assert cell.id == "structured" and cell.deterministic is True
    asyncio.run(cell.load())


@pytest.mark.parametrize(
    ("predicate", "reason"),
    [
        ("x", "predicate must be an object"),
        ({}, "none of the forms"),
        (
            {"path": "a:.b", "op": "eq", "all": []},
            "mixes more than one form: it carries 'path', 'op', 'all'",
        ),
        ({"all": [], "any": []}, "mixes more than one form"),
        ({"path": "a:.b", "op": "near", "value": 1}, "is not one of 'eq' | 'ne'"),
        ({"path": "a:.b", "op": "truthy", "value": 1}, "op 'truthy' takes no 'value'"),
        ({"path": "a:.b", "op": "eq"}, "op 'eq' needs a 'value'"),
        ({"path": 3, "op": "exists"}, "needs a string 'path'"),
        ({"path": "a:.b", "op": "exists", "why": 1}, "unknown keys 'why'"),
        ({"all": {"path": "a:.b", "op": "exists"}}, "'all' takes a list"),
        ({"any": [{"path": "a:.b", "op": "exists"}, {}]}, "'any' member 1 is invalid"),
        ({"not": {"op": "eq"}}, "'not' member is invalid"),
    ],
)
def test_malformed_predicates_are_refused_with_a_reason(predicate: Any, reason: str) -> None:
    """Each malformed shape is refused with a reason that names the problem."""
    with pytest.raises(ValueError) as refused:
        parse_structured_predicate(predicate)
    assert reason in str(refused.value)


def test_value_key_presence_counts_even_when_null() -> None:
    """`"value": None` is a value: eq None parses and compares against null."""
    predicate = parse_structured_predicate({"path": "n:.v", "op": "eq", "value": None})
    assert evaluate_predicate(predicate, outputs(n=[{"v": None}]))
    assert not evaluate_predicate(predicate, outputs(n=[{}]))


def test_depth_limit_refuses_deeper_nesting() -> None:
    """A predicate nested deeper than the limit is refused; one at the limit parses."""
    at_limit: Any = {"path": "n:.v", "op": "exists"}
    for _ in range(MAX_PREDICATE_DEPTH):
        at_limit = {"not": at_limit}
    parse_structured_predicate(at_limit)
    with pytest.raises(ValueError, match="nests 257 levels deep, deeper than the 256 allowed"):
        parse_structured_predicate({"not": at_limit})


@pytest.mark.parametrize(
    ("predicate", "expected"),
    [
        (leaf("eq", 1), True),
        (leaf("eq", 1.0), True),
        (leaf("eq", True), False),
        (leaf("ne", "1"), True),
        (leaf("lt", 2), True),
        (leaf("lte", 1), True),
        (leaf("gt", 0.5), True),
        (leaf("gte", 2), False),
        (leaf("lt", "2"), False),
        (leaf("in", [3, 1]), True),
        (leaf("in", (1,)), False),
        (leaf("truthy"), True),
        (leaf("exists"), True),
        (leaf("exists", path="n:.missing"), False),
        (leaf("exists", path="nobody:.v"), False),
        (leaf("exists", path="n:."), False),
    ],
)
def test_number_semantics(predicate: dict[str, Any], expected: bool) -> None:
    """Numbers compare by value; a bool is never a number; comparisons across types are false."""
    assert holds(predicate, outputs(n=[{"v": 1}])) is expected


def test_strings_lists_and_containers() -> None:
    """Strings order by code unit; contains is substring or membership; containers never eq."""
    table = outputs(n=[{"s": "apple", "l": [1, "x", None], "d": {"a": 1}, "e": ""}])
    assert holds(leaf("lt", "banana", "n:.s"), table)
    assert holds(leaf("contains", "ppl", "n:.s"), table)
    assert holds(leaf("contains", "x", "n:.l"), table)
    assert holds(leaf("contains", None, "n:.l"), table)
    assert not holds(leaf("contains", 1, "n:.d"), table)
    assert not holds(leaf("eq", [1, "x", None], "n:.l"), table)
    assert not holds(leaf("eq", {"a": 1}, "n:.d"), table)
    assert holds(leaf("eq", "x", "n:.l.1"), table)
    assert holds(leaf("truthy", path="n:.l"), table)
    assert holds(leaf("truthy", path="n:.d"), table)
    assert not holds(leaf("truthy", path="n:.e"), table)
    # UTF-16 code-unit order: an astral character sorts before U+FFFF.
    astral = outputs(n=[{"s": "\U0001f600"}])
    assert holds(leaf("lt", "\uffff", "n:.s"), astral)


def test_truthiness_and_existence_follow_the_reference() -> None:
    """Falsy: missing, null, false, 0, ''; [] and {} are truthy; null exists."""
    table = outputs(n=[{"zero": 0, "none": None, "empty_list": [], "false": False}])
    assert not holds(leaf("truthy", path="n:.zero"), table)
    assert not holds(leaf("truthy", path="n:.none"), table)
    assert not holds(leaf("truthy", path="n:.false"), table)
    assert not holds(leaf("truthy", path="n:.nothing"), table)
    assert holds(leaf("truthy", path="n:.empty_list"), table)
    assert holds(leaf("exists", path="n:.none"), table)


def test_datetimes_compare_by_value() -> None:
    """Datetimes compare by time value; naive against aware is incomparable, not an error."""
    aware = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    table = outputs(n=[{"t": aware}])
    assert holds(leaf("eq", dt.datetime(2026, 1, 1, tzinfo=dt.UTC), "n:.t"), table)
    assert holds(leaf("lt", dt.datetime(2027, 1, 1, tzinfo=dt.UTC), "n:.t"), table)
    assert not holds(leaf("lt", dt.datetime(2027, 1, 1), "n:.t"), table)


def test_items_merge_in_order_and_combinators_compose() -> None:
    """A record is its items merged (later wins); all/any/not combine as expected."""
    table = outputs(n=[{"v": 1, "w": "a"}, {"v": 2}])
    assert holds(leaf("eq", 2), table)
    assert holds({"all": [leaf("eq", 2), leaf("eq", "a", "n:.w")]}, table)
    assert not holds({"any": [leaf("eq", 1), {"not": leaf("exists")}]}, table)
    assert holds({"all": []}, table)
    assert not holds({"any": []}, table)


def frame() -> FrameRef:
    return FrameRef(node_id="b", kind="branch", branch_id=BranchId())


def test_branch_and_select_verdicts() -> None:
    """A branch matches when its predicate holds; a select takes the first holding case."""
    cell = StructuredCell()
    table = outputs(entry=[{"color": "blue", "n": 5}])
    ctx = PredicateContext(outputs=table, frame=frame())
    branch = BranchNode(
        id="b",
        definition=BranchDefinition(
            evaluator="structured", predicate={"path": "entry:.n", "op": "gt", "value": 3}
        ),
    )
    assert asyncio.run(cell.evaluate(branch, ctx)) == BranchVerdict(matched=True)
    select = SelectNode(
        id="s",
        definition=SelectDefinition(
            evaluator="structured",
            cases=("red", "big", "blue"),
            predicate={
                "red": {"path": "entry:.color", "op": "eq", "value": "red"},
                "big": {"path": "entry:.n", "op": "gt", "value": 3},
                "blue": {"path": "entry:.color", "op": "eq", "value": "blue"},
            },
        ),
    )
    assert cell.decide(select, ctx).case_label == "big"  # type: ignore[union-attr]
    unparseable = BranchNode(
        id="b", definition=BranchDefinition(evaluator="structured", predicate={"op": "?"})
    )
    assert cell.decide(unparseable, ctx) == BranchVerdict(matched=False)


def test_validate_names_the_fix() -> None:
    """validate raises ValueError naming the node and what to change."""
    cell = StructuredCell()
    bad_branch = BranchNode(
        id="b", definition=BranchDefinition(evaluator="structured", predicate={"op": "eq"})
    )
    with pytest.raises(ValueError, match='branch "b": predicate leaf needs a string'):
        asyncio.run(cell.validate(bad_branch))
    missing_case = SelectNode(
        id="s",
        definition=SelectDefinition(
            evaluator="structured",
            cases=("a", "b"),
            predicate={"a": {"path": "x:.y", "op": "exists"}},
        ),
    )
    with pytest.raises(ValueError, match='no entry for case "b"'):
        asyncio.run(cell.validate(missing_case))
    not_a_map = SelectNode(
        id="s",
        definition=SelectDefinition(evaluator="structured", cases=("a",), predicate=[1]),
    )
    with pytest.raises(ValueError, match="must map each case label"):
        asyncio.run(cell.validate(not_a_map))
    extra = SelectNode(
        id="s",
        definition=SelectDefinition(
            evaluator="structured",
            cases=("a",),
            predicate={"a": {"path": "x:.y", "op": "exists"}, "z": {"all": []}},
        ),
    )
    with pytest.raises(ValueError, match='entries for "z"'):
        asyncio.run(cell.validate(extra))
    good = SelectNode(
        id="s",
        definition=SelectDefinition(
            evaluator="structured", cases=("a",), predicate={"a": {"all": []}}
        ),
    )
    asyncio.run(cell.validate(good))


def test_predicates_package_surface_is_pinned() -> None:
    """The predicates package re-exports exactly its public names."""
    import orchestration.predicates as predicates

    assert sorted(predicates.__all__) == [
        "CEL_INSTALL",
        "CelCell",
        "CellEvaluationError",
        "JEXL_INSTALL",
        "JexlCell",
        "LEGAL_OPS",
        "LUA_INSTALL",
        "LuaCell",
        "LuaMemoryExceeded",
        "MAX_PREDICATE_DEPTH",
        "PredicateLimitExceeded",
        "StructuredCell",
        "StructuredPredicate",
        "evaluate_predicate",
        "merged_record",
        "node_records",
        "parse_structured_predicate",
    ]
