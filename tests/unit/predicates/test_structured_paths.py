"""Structured paths by node id (ruling 32), the guard words and depth cap (ruling 31), and the
evidence every structured verdict carries, match or not."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from orchestration.api import create_orchestration
from orchestration.predicates import StructuredCell, parse_structured_predicate
from orchestration.predicates.evidence import MAX_CHECKS
from orchestration.run.routes import BranchId, EdgeSegment
from orchestration.store.memory import MemoryPlanStore
from orchestration.store.sqlite import SqlitePlanStore
from orchestration.testing import PlanSketch, run_in_process
from orchestration.tools.contracts import BranchVerdict, ExplainingEvaluator, ReadingEvaluator
from orchestration.types import (
    NodeOutput,
    NumberField,
    OutputItem,
    StringField,
)

from ..validation.helpers import TOOLS, author, call, check, fan_in_ops, only
from .helpers import branch, context, select

CELL = StructuredCell()


def judge(node: Any, ctx: Any) -> Any:
    return asyncio.run(CELL.judge(node, ctx))


def test_a_node_id_head_reads_that_nodes_first_item_on_this_route() -> None:
    """`fetch.count` reads fetch's output like a NodeRef with select first."""
    ctx = context(fetch=[{"count": 3, "user": {"name": "ann"}}, {"count": 9}])
    assert CELL.decide(branch({"path": "fetch.count", "op": "eq", "value": 3}, "structured"), ctx)
    deep = branch({"path": "fetch.user.name", "op": "eq", "value": "ann"}, "structured")
    assert CELL.decide(deep, ctx) == BranchVerdict(matched=True)
    # The raw table key still reads the merged record (later items win), as the reference does.
    raw = branch({"path": "fetch:e2:e0.count", "op": "eq", "value": 9}, "structured")
    assert CELL.decide(raw, ctx) == BranchVerdict(matched=True)
    absent = branch({"path": "other.count", "op": "exists"}, "structured")
    assert CELL.decide(absent, ctx) == BranchVerdict(matched=False)


def test_a_node_with_several_keys_reads_the_smallest_through_the_mapping_interface() -> None:
    """Only keys/get of the table are used, and the smallest key of the node is taken."""

    class OnlyMapping:
        def __init__(self, data: dict[str, NodeOutput]) -> None:
            self._data = data

        def __iter__(self) -> Any:
            return iter(self._data)

        def __len__(self) -> int:
            return len(self._data)

        def __getitem__(self, key: str) -> NodeOutput:
            return self._data[key]

        def get(self, key: str, default: Any = None) -> Any:
            return self._data.get(key, default)

    def output(value: int, edge: str) -> NodeOutput:
        route = BranchId(segments=(EdgeSegment(edge=edge),))
        return NodeOutput(items=(OutputItem(json_={"v": value}),), branch_id=route)

    table = OnlyMapping({"n:e9": output(9, "e9"), "n:e1": output(1, "e1")})
    ctx = context()
    ctx = type(ctx)(outputs=table, frame=ctx.frame)  # type: ignore[arg-type]
    node = branch({"path": "n.v", "op": "eq", "value": 1}, "structured")
    assert CELL.decide(node, ctx) == BranchVerdict(matched=True)


@pytest.mark.parametrize("word", ["__proto__", "prototype", "constructor"])
@pytest.mark.parametrize("template", ["{w}.x", "fetch.{w}", "fetch.a.{w}", "entry:.{w}.b"])
def test_guard_words_are_refused_in_every_segment(word: str, template: str) -> None:
    """The reference's prototype guard: these segments are refused wherever they stand."""
    path = template.format(w=word)
    with pytest.raises(ValueError, match=f"has the segment '{word}'"):
        parse_structured_predicate({"path": path, "op": "exists"})
    with pytest.raises(ValueError, match="is refused in every path"):
        asyncio.run(CELL.validate(branch({"all": [{"path": path, "op": "exists"}]}, "structured")))


def _nested(depth: int, form: str) -> Any:
    predicate: Any = {"path": "entry.n", "op": "exists"}
    for _ in range(depth):
        predicate = {"not": predicate} if form == "not" else {form: [predicate]}
    return predicate


@pytest.mark.parametrize("form", ["not", "all", "any"])
def test_the_cap_is_256_and_a_deeper_predicate_is_refused_naming_its_depth(form: str) -> None:
    """256 levels parse and evaluate; 300 are refused with an error that says 300."""
    at_cap = _nested(256, form)
    parse_structured_predicate(at_cap)
    ctx = context(entry={"n": 1})
    CELL.decide(branch(at_cap, "structured"), ctx)
    with pytest.raises(ValueError, match="nests 300 levels deep, deeper than the 256 allowed"):
        parse_structured_predicate(_nested(300, form))



@pytest.mark.parametrize("form", ["not", "all", "any"])
def test_a_predicate_256_deep_is_built_stored_and_frozen(form: str, tmp_path: Path) -> None:
    """The node builds, the SQLite store keeps it (read back by a new store), freeze passes."""

    async def scenario() -> None:
        a = author()
        ops = [
            a.entry(input=[NumberField(path="n")]),
            a.branch("gate", evaluator="structured", predicate=_nested(256, form)),
            a.edge("entry", "gate", edge_id="e1"),
        ]
        store = SqlitePlanStore(tmp_path / "plans.sqlite3")
        await store.create_plan("deep")
        await store.append_ops("deep", ops)
        await store.close()
        reopened = SqlitePlanStore(tmp_path / "plans.sqlite3")
        orch = await create_orchestration(store=reopened, invocable=TOOLS)
        result = await orch.freeze_plan("deep")
        assert result.ok, result.issues
        await reopened.close()

    asyncio.run(scenario())


def test_judge_gives_evidence_for_a_no_match_and_a_match() -> None:
    """Every verdict carries what was compared and the values seen."""
    assert isinstance(CELL, ExplainingEvaluator)
    ctx = context(fetch={"count": 3})
    miss = judge(branch({"path": "fetch.count", "op": "gte", "value": 10}, "structured"), ctx)
    assert miss.verdict == BranchVerdict(matched=False)
    assert miss.evidence == {
        "cell": "structured",
        "result": False,
        "checks": [{"path": "fetch.count", "op": "gte", "value": 10, "actual": 3, "holds": False}],
    }
    missing = judge(branch({"path": "fetch.total", "op": "truthy"}, "structured"), ctx)
    assert missing.evidence["checks"] == [
        {"path": "fetch.total", "op": "truthy", "missing": True, "holds": False}
    ]
    hit = judge(
        select({"small": {"path": "fetch.count", "op": "lt", "value": 5}, "large": {"all": []}},
               "structured"),
        ctx,
    )
    assert hit.verdict.case_label == "small"
    assert hit.evidence["result"] == "small"
    assert hit.evidence["checks"][0]["case"] == "small"
    broken = judge(branch({"op": "?"}, "structured"), ctx)
    assert broken.verdict == BranchVerdict(matched=False) and "error" in broken.evidence


def test_evidence_is_bounded() -> None:
    """Huge values are cut and at most MAX_CHECKS leaves are listed; the rest are counted."""
    ctx = context(fetch={"text": "x" * 10_000, "rows": list(range(1000))})
    leaves = [{"path": "fetch.text", "op": "contains", "value": "y"}] * (MAX_CHECKS + 5)
    judged = judge(branch({"any": leaves}, "structured"), ctx)
    assert len(judged.evidence["checks"]) == MAX_CHECKS and judged.evidence["omitted"] == 5
    assert len(judged.evidence["checks"][0]["actual"]) < 300
    rows = judge(branch({"path": "fetch.rows", "op": "truthy"}, "structured"), ctx)
    assert len(rows.evidence["checks"][0]["actual"]) == 17


def test_predicate_reads_list_every_leaf_with_where_it_sits() -> None:
    """The reads freeze checks: node, field, location, and the raw key when one is used."""
    assert isinstance(CELL, ReadingEvaluator)
    node = select(
        {
            "small": {"all": [{"path": "fetch.count", "op": "lt", "value": 5},
                              {"not": {"path": "entry:.x.y", "op": "exists"}}]},
            "large": {"path": "", "op": "truthy"},
        },
        "structured",
    )
    reads = CELL.predicate_reads(node)
    assert [(r.node, r.path, r.location, r.table_key) for r in reads] == [
        ("fetch", "count", 'case "small".all[0]', None),
        ("entry", "x.y", 'case "small".all[1].not', "entry:"),
    ]


# ------------------------------------------------------------------------------------------
# Freeze: every path is checked like a NodeRef
# ------------------------------------------------------------------------------------------


def _plan(path: str, *, declares: str = "total", extra: list[Any] | None = None) -> list[Any]:
    a = author()
    return [
        a.entry(input=[StringField(path="city")]),
        call(a, "fetch", output=[NumberField(path=declares)]),
        a.branch("gate", evaluator="structured",
                 predicate={"path": path, "op": "gte", "value": 10}),
        call(a, "notify"),
        a.edge("entry", "fetch", edge_id="e1"),
        a.edge("fetch", "gate", edge_id="e2"),
        a.edge("gate", "notify", "match", edge_id="e3"),
        *(extra or []),
    ]


def test_the_wrong_field_is_refused_with_one_issue_naming_the_node_and_the_fix() -> None:
    """`fetch.count` when fetch declares `total`: one undeclared_field naming both."""
    issue = only(check(_plan("fetch.count"), cells=[StructuredCell()]), "undeclared_field")
    assert issue.node_id == "gate"
    assert '"fetch.count"' in issue.message and 'node "fetch"' in issue.message
    assert 'declared fields ("total")' in issue.message
    assert 'declare "count" in the output of "fetch"' in issue.message


def test_declared_field_and_entry_input_freeze() -> None:
    """A declared field, a raw key of the node's only route, and an entry input all pass."""
    assert check(_plan("fetch.count", declares="count"), cells=[StructuredCell()]) == []
    assert check(_plan("fetch:e2:e1.count", declares="count"), cells=[StructuredCell()]) == []
    assert check(_plan("entry.city"), cells=[StructuredCell()]) == []


@pytest.mark.parametrize(
    ("path", "code", "words"),
    [
        ("nobody.count", "missing_reference", 'there is no node "nobody"'),
        ("count", "missing_reference", '"<nodeId>.<field>"'),
        ("notify.x", "reference_not_upstream", "does not run before it on every route"),
        ("gate.x", "reference_not_upstream", "does not run before it on every route"),
        ("fetch:e9.total", "invalid_branch_id", 'runs only as "fetch:e2:e1"'),
        ("entry.town", "undeclared_field", 'declare "town" in the input of "entry"'),
    ],
)
def test_every_unreadable_path_is_refused(path: str, code: str, words: str) -> None:
    """Unknown nodes, nodes not upstream on every route, wrong route keys, undeclared fields."""
    issue = only(check(_plan(path), cells=[StructuredCell()]), code)
    assert words in issue.message, issue.message


def test_a_node_on_only_one_route_is_refused() -> None:
    """A node that runs on some routes to the branch only (one side of a fan-in) is refused."""
    ops = fan_in_ops("structured", {"path": "left.n", "op": "exists"})
    issues = check(ops, cells=[StructuredCell()])
    assert "reference_not_upstream" in [i.code for i in issues]


def test_the_silent_skip_plan_works_once_the_field_is_declared() -> None:
    """The plan of issue 15.3, with `count` declared: it freezes and its branch fires."""

    async def scenario() -> None:
        orch = await create_orchestration(store=MemoryPlanStore(), invocable=TOOLS)
        for plan_id, declares in (("bad", "total"), ("good", "count")):
            await orch.store.create_plan(plan_id)
            await orch.store.append_ops(plan_id, _plan("fetch.count", declares=declares))
        refused = await orch.freeze_plan("bad")
        assert not refused.ok and [i.code for i in refused.issues] == ["undeclared_field"]
        assert (await orch.freeze_plan("good")).ok

    asyncio.run(scenario())
    view = (
        PlanSketch()
        .entry()
        .call("fetch", output=[NumberField(path="count")])
        .branch("gate", {"path": "fetch.count", "op": "gte", "value": 10})
        .call("notify")
        .chain("entry", "fetch", "gate")
        .edge("gate", "notify", "match")
        .view()
    )
    from orchestration.testing import FakeToolbox

    _, projection = asyncio.run(
        run_in_process(view, {}, FakeToolbox(nodes={"fetch": {"count": 12}}))
    )
    assert projection.outcome == "completed"
    assert [e.handle for e in projection.edges_taken if e.handle == "match"] == ["match"]
