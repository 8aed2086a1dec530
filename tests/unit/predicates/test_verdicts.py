"""The verdict rules the source-string cells share, held to through each real cell."""

from __future__ import annotations

import pytest

from orchestration.predicates import CelCell, JexlCell, LuaCell
from orchestration.predicates.verdicts import safe_verdict, select_verdict
from orchestration.tools.contracts import BranchVerdict, SelectVerdict

from .helpers import branch, context, select

CTX = context(entry={"n": 1})
# Per cell: a source yielding the number 1, one yielding the string "1", one that fails.
SOURCES = {
    "cel": ("1", "'1'", "elsewhere.n"),
    "jexl": ("1", "'1'", "entry.n + 'a'"),
    "lua": ("return 1", "return '1'", "error('no')"),
}
CELLS = {"cel": CelCell(), "jexl": JexlCell(), "lua": LuaCell()}


@pytest.mark.parametrize("cell_id", sorted(CELLS))
def test_a_select_value_names_a_case_only_as_that_exact_string(cell_id: str) -> None:
    """The number 1 does not select case "1"; the string "1" does."""
    cell = CELLS[cell_id]
    number, string, _ = SOURCES[cell_id]
    cases = ("1", "large")
    assert cell.decide(select(number, cell_id, cases), CTX).verdict == SelectVerdict(None)
    assert cell.decide(select(string, cell_id, cases), CTX).verdict == SelectVerdict("1")


@pytest.mark.parametrize("cell_id", sorted(CELLS))
def test_a_failing_predicate_takes_the_safe_verdict_for_either_kind(cell_id: str) -> None:
    """A branch gets no_match, a select no case (its default edge), and the error as evidence."""
    cell = CELLS[cell_id]
    failing = SOURCES[cell_id][2]
    judged = cell.decide(branch(failing, cell_id), CTX)
    assert judged.verdict == BranchVerdict(matched=False)
    assert "error" in judged.evidence
    judged = cell.decide(select(failing, cell_id), CTX)
    assert judged.verdict == SelectVerdict(case_label=None)
    assert "error" in judged.evidence


def test_the_rules_themselves() -> None:
    """The shared helpers, directly."""
    assert safe_verdict(branch("x", "cel")) == BranchVerdict(matched=False)
    assert safe_verdict(select("x", "cel")) == SelectVerdict(case_label=None)
    node = select("x", "cel", ("small", "large"))
    assert select_verdict(node, "large") == SelectVerdict(case_label="large")
    assert select_verdict(node, "LARGE") == SelectVerdict(case_label=None)
    assert select_verdict(node, None) == SelectVerdict(case_label=None)
