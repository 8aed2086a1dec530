"""Token, cost and wall-time budgets: the rule, and how a run keeps to it across its life."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestration.plan.ops import plan_digest
from orchestration.run.budgets import Budgets, Spend, seconds_between
from orchestration.run.engine.machine import RunEngine, Succeeded
from orchestration.run.host import InProcessRuns
from orchestration.run.log import LOG_ADAPTER, LogAttempt
from orchestration.run.messages import workflow_id_for
from orchestration.run.work import FrameWork
from orchestration.store.sqlite import SqlitePlanStore
from orchestration.testing import PlanSketch, ScriptedReasoner, approve_into
from orchestration.tools.pricing import ModelPrice, PriceTable
from orchestration.types import (
    DEFAULT_PLAN_BOUNDS,
    NodeBudget,
    PlanBounds,
    ReasonNode,
    StringField,
    Usage,
)
from tests.support.hosts import InProcessHost
from tests.support.scenarios import SCENARIOS, SCORE, SETTINGS, make_tools, two_thoughts

AT = "2026-01-01T00:00:00.000Z"
LATER = "2026-01-01T00:00:05.000Z"


def usage(tokens: int, cost: float | None = None, model: str = "m") -> Usage:
    return Usage(input_tokens=tokens, output_tokens=0, cost_usd=cost, model=model)


def spent(*usages: Usage) -> Spend:
    spend = Spend()
    for each in usages:
        spend.add(each)
    return spend


def budgets(
    max_tokens: int | None = None,
    max_cost: float | None = None,
    **nodes: NodeBudget,
) -> Budgets:
    return Budgets(max_tokens, max_cost, nodes)


def test_a_plan_without_budgets_pays_for_no_check() -> None:
    """No bound and no node budget: ``Budgets.of`` is None, so the engine checks nothing."""
    view = PlanSketch("p").entry().call("a").chain("entry", "a").view()
    assert Budgets.of(view.bounds, view.nodes) is None


def test_a_spent_budget_refuses_every_further_attempt() -> None:
    """spent >= limit refuses; below it, an attempt without a declared ceiling may start."""
    rule = budgets(max_tokens=100)
    assert rule.refusal("a", spent(usage(99)), None, None, AT, 3) is None
    refused = rule.refusal("a", spent(usage(60), usage(40)), None, None, AT, 3)
    assert refused is not None
    assert (refused.budget, refused.limit, refused.spent, refused.settled) == (
        "maxTokens",
        100,
        100,
        3,
    )
    assert refused.node_id == "a"


def test_an_attempt_that_could_pass_the_budget_is_not_started() -> None:
    """The node's own ceiling is the most its attempt may spend: spent + ceiling > limit refuses."""
    rule = budgets(max_tokens=100, b=NodeBudget(max_tokens=50))
    assert rule.refusal("b", spent(usage(50)), None, None, AT, 1) is None
    refused = rule.refusal("b", spent(usage(51)), None, None, AT, 1)
    assert refused is not None and refused.budget == "maxTokens"
    assert "up to 50 more tokens" in (refused.detail or "")
    # What the frame already spent is taken off its ceiling.
    assert rule.refusal("b", spent(usage(51)), spent(usage(10)), AT, AT, 1) is None


def test_a_nodes_own_token_budget_bounds_its_frame() -> None:
    """A frame that spent its node's maxTokens starts no further attempt."""
    rule = budgets(b=NodeBudget(max_tokens=30))
    refused = rule.refusal("b", spent(usage(30)), spent(usage(30)), AT, AT, 2)
    assert refused is not None and (refused.budget, refused.node_id) == ("node.maxTokens", "b")


def test_a_cost_budget_counts_priced_cost_and_refuses_unpriced_tokens() -> None:
    """Cost sums what was priced; a model without a price makes the cost budget unkeepable."""
    rule = budgets(max_cost=0.5)
    assert rule.refusal("a", spent(usage(10, 0.49)), None, None, AT, 1) is None
    refused = rule.refusal("a", spent(usage(10, 0.3), usage(10, 0.3)), None, None, AT, 1)
    assert refused is not None and refused.budget == "maxCostUsd" and refused.spent == 0.6
    unpriced = rule.refusal("a", spent(usage(10, None, "mystery")), None, None, AT, 1)
    assert unpriced is not None and "mystery" in (unpriced.detail or "")


def test_wall_time_runs_from_the_first_attempt_and_cuts_the_timeout() -> None:
    """maxSeconds counts from the frame's first start (a retry's pause included)."""
    rule = budgets(c=NodeBudget(max_seconds=10))
    assert seconds_between(AT, LATER) == 5
    assert rule.refusal("c", Spend(), None, AT, LATER, 1) is None
    refused = rule.refusal("c", Spend(), None, AT, LATER, 1, delay=5.0)
    assert refused is not None and (refused.budget, refused.limit) == ("node.maxSeconds", 10)
    assert refused.spent is None  # the log's own times tell it, the same on every host
    assert rule.allowance("c", Spend(), None, AT, LATER, delay=1.0).seconds == 4.0
    assert rule.allowance("c", Spend(), None, None, AT).seconds == 10.0


def test_the_allowance_is_the_tightest_token_budget() -> None:
    """An attempt may spend what is left of the run's tokens or of its node's, the smaller."""
    rule = budgets(max_tokens=100, max_cost=1.0, b=NodeBudget(max_tokens=30))
    left = rule.allowance("b", spent(usage(80, 0.25)), spent(usage(5)), AT, AT)
    assert (left.tokens, left.tokens_budget, left.cost_usd) == (20, "maxTokens", 0.75)
    left = rule.allowance("b", spent(usage(10, 0.0)), spent(usage(5)), AT, AT)
    assert (left.tokens, left.tokens_budget) == (25, "node.maxTokens")


def test_budgets_are_digested_and_absent_ones_change_no_digest() -> None:
    """Absent budgets leave the wire form and the digest as they were; present ones change it."""
    view = PlanSketch("p").entry().reason("r", "x").chain("entry", "r").view()
    assert "maxTokens" not in view.bounds.model_dump_json()
    assert view.digest == plan_digest(view)
    bounded = view.model_copy(
        update={"bounds": PlanBounds(**{**view.bounds.model_dump(), "max_tokens": 500})}
    )
    node = view.nodes[1]
    assert isinstance(node, ReasonNode)
    definition = node.definition.model_copy(update={"budget": NodeBudget(max_tokens=9)})
    own = node.model_copy(update={"definition": definition})
    budgeted = view.model_copy(update={"nodes": (view.nodes[0], own)})
    digests = {plan_digest(view), plan_digest(bounded), plan_digest(budgeted)}
    assert len(digests) == 3
    assert json.loads(DEFAULT_PLAN_BOUNDS.model_dump_json()) == {
        "maxNodes": 256,
        "maxEdges": 512,
        "maxSteps": 4096,
        "maxConcurrentFrames": 32,
        "maxEncodedBytes": 1048576,
    }
    assert '"budget":{"maxTokens":9}' in own.model_dump_json()


def test_spent_totals_survive_a_checkpoint() -> None:
    """Continue-as-new carries what the run spent, so its budgets hold in the next execution."""
    view = two_thoughts()("p")
    engine = RunEngine.start(view, "plan/p", {"s": "x"}, AT)
    (first,) = engine.ready(AT)
    engine.attempt_ended(first.key, "ok", AT, AT, usage=usage(40, 0.04))
    engine.settle(first.key, Succeeded.one({"score": 1}), AT)
    checkpoint = engine.checkpoint(AT)
    carried = type(checkpoint).model_validate_json(checkpoint.model_dump_json())
    assert carried.spent is not None and carried.spent.input_tokens == 40
    continued = RunEngine.continued(view, carried, at=AT)
    assert (continued.spend.tokens, continued.spend.cost_usd) == (40, 0.04)


def test_a_resumed_engine_counts_what_the_log_spent() -> None:
    """A resume rebuilds the run's spend, and each in-flight frame's, from the attempts logged."""
    view = two_thoughts(budget=100)("p")
    engine = RunEngine.start(view, "plan/p", {"s": "x"}, AT)
    log = engine.drain()
    (first,) = engine.ready(AT)
    engine.attempt_ended(first.key, "ok", AT, AT, usage=usage(40))
    engine.settle(first.key, Succeeded.one({"score": 1}), AT)
    (second,) = engine.ready(AT)
    engine.attempt_ended(second.key, "failed", AT, AT, usage=usage(25))
    log += engine.drain()
    assert any(isinstance(e, LogAttempt) for e in log)
    restored = RunEngine.resume(view, LOG_ADAPTER.validate_json(LOG_ADAPTER.dump_json(log)))
    assert restored.spend.tokens == 65
    (again,) = restored.ready(AT)  # the unsettled reason frame is entered again
    assert again.key == second.key
    left = restored.allowance(again.key, AT)
    assert left is not None and left.tokens == 75  # node.maxTokens 100 less the frame's 25


@pytest.mark.asyncio
async def test_a_run_halted_by_its_token_budget_halts_again_when_resumed(tmp_path: Path) -> None:
    """Ruling 28: the spent budget is in the log, so a resume halts at once and asks nothing."""
    scenario = SCENARIOS["token_budget"]
    log, projection = await InProcessHost(tmp_path).run(scenario, "budgeted")
    assert projection.outcome == "halted"
    store = SqlitePlanStore(tmp_path / "budgeted.sqlite3")
    try:
        reasoner = ScriptedReasoner()
        runs = InProcessRuns(store, FrameWork(make_tools(), reasoner=reasoner), settings=SETTINGS)
        again = await runs.execute("budgeted", resume_run_id=workflow_id_for("budgeted"))
    finally:
        await store.close()
    assert again.outcome == "halted" and again.interruption == projection.interruption
    assert reasoner.turns == []
    assert again.attempts == projection.attempts


@pytest.mark.asyncio
async def test_a_cost_budget_without_prices_halts_before_the_next_attempt(tmp_path: Path) -> None:
    """A deployment with no price table cannot keep a cost budget: the run halts, it never
    guesses a cost of zero."""
    sketch = PlanSketch("unpriced", max_steps=100).entry(StringField(path="s"))
    sketch.reason("one", "a", output_schema=SCORE).reason("two", "b", output_schema=SCORE)
    sketch.chain("entry", "one", "two")
    view = sketch.view()
    view = view.model_copy(
        update={"bounds": PlanBounds(**{**view.bounds.model_dump(), "max_cost_usd": 5.0})}
    )
    view = view.model_copy(update={"digest": plan_digest(view.model_copy(update={"digest": ""}))})
    store = SqlitePlanStore(tmp_path / "unpriced.sqlite3")
    try:
        await approve_into(store, view)
        runs = InProcessRuns(store, FrameWork(reasoner=ScriptedReasoner()), settings=SETTINGS)
        projection = await runs.execute("unpriced", {"s": "x"})
    finally:
        await store.close()
    cause = projection.interruption
    assert projection.outcome == "halted" and cause is not None
    assert cause.kind == "budget_exhausted" and cause.budget == "maxCostUsd"  # type: ignore[union-attr]
    assert "no price" in (cause.detail or "")  # type: ignore[union-attr]
    assert projection.usage.unpriced_tokens == projection.usage.tokens > 0
    assert projection.node_status_by_id.get("two", "pending") == "pending"


def test_price_tables_read_their_json_form() -> None:
    """The example ships in the form the worker reads; bad documents are refused by name."""
    example = Path(__file__).resolve().parents[3] / "workers" / "prices.example.json"
    table = PriceTable.from_mapping(json.loads(example.read_text()))
    assert table.price("gpt-4o-mini-2024-07-18") == table.price("gpt-4o-mini")
    assert table.price("", "openai:gpt-4o-mini") is not None
    assert table.cost("unlisted", 10, 10) is None
    assert ModelPrice(2.0, 8.0).cost(1_000_000, 500_000) == 6.0
    for bad in (
        {"models": []},
        {"currency": "EUR", "models": {}},
        {"models": {"m": {"inputPerMillion": -1, "outputPerMillion": 1}}},
        {"models": {"m": {"inputPerMillion": True, "outputPerMillion": 1}}},
    ):
        with pytest.raises(ValueError):
            PriceTable.from_mapping(bad)


@pytest.mark.asyncio
async def test_freeze_refuses_a_node_budget_the_run_could_never_let_it_spend() -> None:
    """A node ceiling above the run's maxTokens could never start: blocking. Tokens on a call
    bound nothing: advisory."""
    from orchestration.review.validation import FreezeInputs, validate
    from orchestration.tools.toolbox import Toolbox

    sketch = PlanSketch("p").entry(StringField(path="s"))
    sketch.reason("think", "x", output_schema=SCORE).call("act", "tool.act")
    view = sketch.chain("entry", "think", "act").view()
    think, act = view.nodes[1], view.nodes[2]
    nodes = (
        view.nodes[0],
        think.model_copy(
            update={
                "definition": think.definition.model_copy(
                    update={"budget": NodeBudget(max_tokens=300)}
                )
            }
        ),
        act.model_copy(
            update={
                "definition": act.definition.model_copy(
                    update={"budget": NodeBudget(max_tokens=5, max_seconds=2)}
                )
            }
        ),
    )
    bounds = PlanBounds(**{**view.bounds.model_dump(), "max_tokens": 200})
    view = view.model_copy(update={"nodes": nodes, "bounds": bounds})
    issues = await validate(view, FreezeInputs(invocable=Toolbox()))
    codes = {(i.code, i.node_id, i.severity) for i in issues}
    assert ("node_budget_exceeds_run", "think", "blocking") in codes
    assert ("budget_spends_no_tokens", "act", "advisory") in codes
    raised = view.model_copy(update={"bounds": view.bounds.model_copy(update={"max_tokens": 300})})
    issues = await validate(raised, FreezeInputs(invocable=Toolbox()))
    assert "node_budget_exceeds_run" not in {i.code for i in issues}
