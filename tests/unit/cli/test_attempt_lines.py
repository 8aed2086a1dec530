"""What ``orch run show`` prints beneath a frame, and each frame's lifecycle."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestration.cli.lifecycle import describe_lifecycles
from orchestration.cli.progress import describe_run
from orchestration.review.render import render_plan
from orchestration.run.expand import expand_log
from orchestration.run.fold import fold_run
from orchestration.run.history import frame_lifecycles
from tests.support.hosts import InProcessHost
from tests.support.scenarios import SCENARIOS

pytestmark = pytest.mark.asyncio


async def shown(folder: Path, name: str) -> tuple[str, list[object]]:
    log, _ = await InProcessHost(folder).run(SCENARIOS[name], name.replace("_", "-"))
    events = expand_log(log)
    return describe_run(fold_run(events), events), events


async def test_a_retried_call_lists_its_attempts_with_their_reasons(tmp_path: Path) -> None:
    """Three attempts beneath the row: two failures with ruling 29's error, then ok; each retry
    says why it was made."""
    text, _ = await shown(tmp_path, "transient_retried")
    lines = text.splitlines()
    row = next(i for i, line in enumerate(lines) if line.startswith("  work "))
    attempts = [line.split() for line in lines[row + 1 : row + 4]]
    assert [a[:2] for a in attempts] == [["#1", "failed"], ["#2", "failed"], ["#3", "ok"]]
    assert "ConnectionError: the service hung up" in lines[row + 1]
    assert lines[row + 1].endswith("hung up")  # the first attempt is no retry
    assert all(line.endswith("(retry: transient_error)") for line in lines[row + 2 : row + 4])
    assert not lines[row + 4].startswith("      ")  # a clean single attempt gets no lines


async def test_a_reason_node_shows_its_rejected_turns_and_what_it_spent(tmp_path: Path) -> None:
    """Each rejected model turn with its violation; the tokens of the attempt and of the run."""
    text, _ = await shown(tmp_path, "reason_invalid_twice")
    assert "        turn 1 invalid: $.score: 'high' is not of type 'integer'" in text
    assert "        turn 2 invalid: $.score: 'low' is not of type 'integer'" in text
    usage = next(line for line in text.splitlines() if line.startswith("usage: "))
    assert "tokens unpriced" in usage and "over 1 attempt" in usage


async def test_a_verdict_a_model_could_steer_says_so_and_why(tmp_path: Path) -> None:
    """The model-steered argument and the asserted verdict, with the value compared."""
    text, _ = await shown(tmp_path, "asserted_branch")
    assert "      argument n from a model: think.score (from a model)" in text
    assert "      verdict match: asserted: a model could have steered it" in text
    assert "        measure.n = 12 ← measure.n (from a model)" in text
    text, _ = await shown(tmp_path, "verified_branch")
    assert "verdict match: verified: no compared value traces back to a model" in text


async def test_the_as_executed_view_marks_what_a_model_could_steer(tmp_path: Path) -> None:
    """The operator's view as executed: MODEL-STEERED ARGUMENT, ASSERTED verdict, what it spent."""
    scenario = SCENARIOS["asserted_branch"]
    log, projection = await InProcessHost(tmp_path).run(scenario, "asserted")
    text = render_plan(scenario.build("asserted"), view="as_executed", run=projection)
    assert "     MODEL-STEERED ARGUMENT: n ← think.score (a model)" in text
    assert "     verdict match: ASSERTED: a model could have steered this verdict" in text
    assert "     spent: 52 input + 4 output tokens, 56 tokens unpriced" in text


async def test_budgets_are_in_the_view_an_operator_approves(tmp_path: Path) -> None:
    """The run's token bound and a node's own budget are stated before approval; the halt after."""
    scenario = SCENARIOS["token_budget"]
    view = scenario.build("budgeted")
    planned = render_plan(view)
    assert "Budgets: at most 200 model tokens (input and output)." in planned
    assert "     budget: at most 500 model tokens per execution" in planned
    _, projection = await InProcessHost(tmp_path).run(scenario, "budgeted")
    executed = render_plan(view, view="as_executed", run=projection)
    assert "interrupted: the run's token budget (maxTokens) stopped the run" in executed
    assert "node second's next attempt was not started" in executed


async def test_each_frame_s_lifecycle_reads_in_order_with_its_waits(tmp_path: Path) -> None:
    """entered, dispatched, ended, waiting for an operator, resumed, entered again, ..., settled."""
    _, events = await shown(tmp_path, "lost_unsafe_halt_retry")
    (work,) = [steps for key, steps in frame_lifecycles(events).items() if key.startswith("work")]
    assert [(s.step, s.attempt) for s in work] == [
        ("entered", None),
        ("dispatched", 1),
        ("attempt_ended", 1),
        ("waiting", None),
        ("resumed", None),
        ("entered", 2),
        ("dispatched", 2),
        ("attempt_ended", 2),
        ("settled", None),
    ]
    assert work[2].detail == "lost: StartToCloseTimeout"
    assert work[3].detail == "an operator's decision (process_death)"
    assert all(a.at <= b.at for a, b in zip(work, work[1:], strict=False))
    text = describe_lifecycles(events)
    assert "entered again (attempt 2)" in text and "waiting: an operator's decision" in text


async def test_a_map_lists_each_item_and_its_body_by_the_item(tmp_path: Path) -> None:
    """The map runs once; each item's frame and its body's frames are named by the item."""
    text, _ = await shown(tmp_path, "map_tolerance_met")
    assert "  m                        done" in text
    for index in range(3):
        assert f"  m item {index} " in text
        assert f"  inspect [m item {index}] " in text
    assert "  inspect [m item 2]       failed" in text


async def test_a_loop_lists_each_round_and_its_check(tmp_path: Path) -> None:
    """The loop runs once; each round, its body and its check are named by the round."""
    text, _ = await shown(tmp_path, "loop_converges")
    for index in range(2):
        assert f"  lp round {index} " in text
        assert f"  step [lp item {index}] " in text
        assert f"  lp check {index} " in text
