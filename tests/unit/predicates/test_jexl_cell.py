"""The jexl cell's own rules: the transform allowlist, the reference's validate checks, reads
checked at freeze, evidence of what was read, size caps, and where it runs (the shared cell
properties are in test_source_cells)."""

from __future__ import annotations

import asyncio

import pytest
from temporalio.testing import ActivityEnvironment

from activities.frames import FrameActivities
from orchestration.predicates import JexlCell, PredicateLimitExceeded
from orchestration.run.messages import EvaluateRequest
from orchestration.run.work import FrameWork
from orchestration.tools.contracts import BranchVerdict, ReadingEvaluator
from orchestration.types import NumberField, StringField
from workers.worker import default_cells

from ..validation.helpers import author, call, check, only
from .helpers import branch, context

CELL = JexlCell({"upper": str.upper, "count": len})
CTX = context(entry={"name": "ops"}, fetch={"count": 12, "rows": [{"v": 1}, {"v": 7}]})


def refused(source: str, reason: str, cell: JexlCell = CELL) -> None:
    with pytest.raises(ValueError, match=reason):
        asyncio.run(cell.validate(branch(source, "jexl")))


def test_validate_follows_the_reference_checks_in_order() -> None:
    """`===`, a `ctx.` prefix, unregistered transforms and any function call are refused."""
    refused("fetch.count === 12", "Replace '===' with '=='")
    refused("ctx.fetch.count > 1", "prefixes an identifier with 'ctx.'")
    refused("entry.name|lower == 'ops'", "transform 'lower', which is not in .*: count, upper")
    refused("entry.name|upper == 'OPS'", r"\(the allowlist is empty\)", JexlCell())
    refused("now() > 1", r"calls function 'now\(\)'")
    asyncio.run(CELL.validate(branch("entry.name|upper == 'OPS'", "jexl")))


def test_transforms_are_the_only_callables() -> None:
    """Registered transforms run; the extended package's built-ins are never loaded."""
    assert CELL.decide(branch("fetch.rows|count == 2", "jexl"), CTX).verdict.matched
    missing = CELL.decide(branch("now() > 1", "jexl"), CTX)
    assert missing.verdict == BranchVerdict(matched=False)
    assert "now" in missing.evidence["error"]
    with pytest.raises(ValueError, match="must be an identifier naming a callable"):
        JexlCell({"not valid": str.upper})


def test_reads_and_their_values_are_evidence() -> None:
    """The evidence names each node field the source read and the value it had."""
    judged = CELL.decide(
        branch("fetch.count > 10 && outputs['entry:'].name == 'ops' && fetch.rows[.v > 5]",
               "jexl"),
        CTX,
    )
    assert judged.verdict.matched
    assert judged.evidence["reads"] == {
        "fetch.count": 12,
        "outputs['entry:'].name": "ops",
        "fetch.rows": [{"v": 1}, {"v": 7}],
    }


def test_predicate_reads_name_nodes_fields_and_raw_keys() -> None:
    """Identifier chains and outputs['<key>'] are listed; relative filter fields are not."""
    assert isinstance(CELL, ReadingEvaluator)
    reads = CELL.predicate_reads(
        branch("fetch.count > 1 && outputs['fetch:e2:e1'].total && fetch.rows[.v > 1].v",
               "jexl")
    )
    assert [(r.node, r.path, r.table_key) for r in reads] == [
        ("fetch", "count", None),
        ("fetch", "total", "fetch:e2:e1"),
        ("fetch", "rows", None),
    ]


def _plan(predicate: str) -> list[object]:
    a = author()
    return [
        a.entry(input=[StringField(path="city")]),
        call(a, "fetch", output=[NumberField(path="total")]),
        a.branch("gate", evaluator="jexl", predicate=predicate),
        call(a, "notify"),
        a.edge("entry", "fetch", edge_id="e1"),
        a.edge("fetch", "gate", edge_id="e2"),
        a.edge("gate", "notify", "match", edge_id="e3"),
    ]


def test_freeze_checks_every_read_like_a_node_ref() -> None:
    """A field the node does not declare, or a node that does not run first, is refused."""
    assert check(_plan("fetch.total >= 10 && entry.city == 'x'"), cells=[CELL]) == []
    issue = only(check(_plan("fetch.count >= 10"), cells=[CELL]), "undeclared_field")
    assert 'reads "fetch.count"' in issue.message and '("total")' in issue.message
    late = only(check(_plan("notify.value == 1"), cells=[CELL]), "reference_not_upstream")
    assert '"notify"' in late.message


@pytest.mark.parametrize(
    "source", ["'ab' * 10000000", "fetch.rows * 2000000", "2 ^ 100000000", "'x'|upper * 2000000"]
)
def test_values_an_operator_builds_are_capped(source: str) -> None:
    """A string, list or integer too large to build is refused before it is built."""
    with pytest.raises(PredicateLimitExceeded) as raised:
        CELL.decide(branch(source, "jexl"), CTX)
    assert raised.value.limit == "work"


def test_the_same_predicate_stops_at_the_same_step_every_time() -> None:
    """The work count is deterministic: a limit that fits passes, one step less does not."""
    source = "fetch.rows[.v > 0].v + fetch.count"
    for limit in range(1, 200):
        try:
            JexlCell(work_limit=limit).decide(branch(source, "jexl"), CTX)
        except PredicateLimitExceeded:
            continue
        break
    for _ in range(3):
        JexlCell(work_limit=limit).decide(branch(source, "jexl"), CTX)
        with pytest.raises(PredicateLimitExceeded):
            JexlCell(work_limit=limit - 1).decide(branch(source, "jexl"), CTX)


def test_it_runs_in_the_evaluate_activity_and_workers_have_it_by_default() -> None:
    """The worker's default cells include jexl, and plan.evaluate returns its evidence."""
    assert "jexl" in [cell.id for cell in default_cells()]
    request = EvaluateRequest(node=branch("fetch.count > 10", "jexl"), frame=CTX.frame,
                              outputs=dict(CTX.outputs))
    response = asyncio.run(
        ActivityEnvironment().run(FrameActivities(FrameWork(cells=[CELL])).evaluate, request)
    )
    assert response.matched and response.evidence == {
        "cell": "jexl", "result": True, "reads": {"fetch.count": 12}
    }
