"""The CEL cell: its value conversions and safe fallbacks (the shared cell properties are in
test_source_cells)."""

from __future__ import annotations

import datetime as dt

from orchestration.predicates import CelCell
from orchestration.tools.contracts import BranchVerdict, SelectVerdict

from .helpers import branch, context, select

CELL = CelCell()
CTX = context(
    entry={"min": 2, "owner": "ops"},
    stats={"count": 3, "names": "a\nb", "at": dt.datetime(2026, 1, 1, tzinfo=dt.UTC)},
    rows=[{"v": 1}, {"v": 2}],
)


def test_branch_verdicts_carry_the_value_as_evidence() -> None:
    """A bool expression over node records decides the branch; its value is the evidence."""
    judgement = CELL.decide(branch("stats.count >= entry.min && entry.owner == 'ops'", "cel"), CTX)
    assert judgement.verdict == BranchVerdict(matched=True)
    assert judgement.evidence == {"cell": "cel", "result": True}
    assert not CELL.decide(branch("stats.count > 10", "cel"), CTX).verdict.matched


def test_values_cross_into_cel_types() -> None:
    """Datetimes compare as timestamps, strings have CEL's methods, later items win."""
    assert CELL.decide(branch("stats.at < timestamp('2030-01-01T00:00:00Z')", "cel"), CTX).verdict
    assert CELL.decide(branch("stats.names.contains('b')", "cel"), CTX).verdict.matched
    assert CELL.decide(branch("rows.v == 2", "cel"), CTX).verdict.matched


def test_select_takes_the_label_the_expression_names() -> None:
    """A string naming a case picks it; anything else falls to the default edge."""
    node = select("stats.count > 2 ? 'large' : 'small'", "cel")
    assert CELL.decide(node, CTX).verdict == SelectVerdict(case_label="large")
    assert CELL.decide(select("'huge'", "cel"), CTX).verdict == SelectVerdict(case_label=None)


def test_errors_give_the_safe_verdict_with_the_error_as_evidence() -> None:
    """A node not on this route, a missing key or a non-bool result: no_match, and why."""
    for source, reason in [
        ("elsewhere.count > 1", "elsewhere"),
        ("stats.missing > 1", "missing"),
        ("stats.count", "not a bool"),
    ]:
        judgement = CELL.decide(branch(source, "cel"), CTX)
        assert judgement.verdict == BranchVerdict(matched=False), source
        assert reason in judgement.evidence["error"], judgement.evidence
