"""The operator reads a loop's body, its bound, its predicate, how it ends and its worst case."""

from __future__ import annotations

from orchestration.plan.encoding import NodeRef
from orchestration.plan.ops import fold_ops
from orchestration.review.render import render_plan
from orchestration.types import DEFAULT_PLAN_BOUNDS
from tests.unit.validation.helpers import author
from tests.unit.validation.test_loops import _looped


def _text(max_steps: int | None = None, **loop: object) -> str:
    a = author()
    ops = _looped(a, max_iterations=5, **loop)
    if max_steps is not None:
        ops.append(a.set_bounds(DEFAULT_PLAN_BOUNDS.model_copy(update={"max_steps": max_steps})))
    view, _ = fold_ops("p", ops)
    return render_plan(view)


def test_a_loop_states_what_it_repeats_and_until_what() -> None:
    """The loop says how many steps it repeats, at most how many times, until which predicate;
    its body's steps say they run per round; the worst case is stated."""
    text = _text()
    assert (
        'repeats the 2 steps below at most 5 times until {"op": "eq", "path": "two.body", '
        '"value": "done"} (structured cell' in text
    )
    assert "body: 4. `one`, 5. `two`" in text
    assert "the loop still succeeds, its output saying how it ended" in text
    assert "worst case: 5 rounds × (2 + 2 body steps) = 20 steps per run of the loop" in text
    assert "CALL `one` — tool web.fetch  [once per round of loop `lp`]" in text
    assert "per round → one (step 4, edge e2)" in text
    assert "then: end of the round" in text


def test_the_plan_worst_case_names_loops() -> None:
    """The bounds section states the worst case with every loop at its maxIterations."""
    assert (
        "Worst case: 24 steps with every loop at its maxIterations (within maxSteps" in _text()
    )
    assert "OVER maxSteps: freeze refuses it" in _text(max_steps=23)


def test_a_watch_and_a_required_until_are_stated() -> None:
    """A watched output reads as the stuck rule; failUnlessMet as a failure."""
    text = _text(watch=NodeRef("two", path="body"), fail_unless_met=True)
    assert "stuck: ends early when ← two.body (first) is the same two rounds in a row" in text
    assert "the loop FAILS (LoopUnmetError; its error edges apply)" in text


def test_pictures_and_outline_name_a_loop_with_its_bound() -> None:
    """Both pictures label a loop with its maxIterations and its body edge; so does the
    outline."""
    from orchestration.review.diagram import plan_dot, plan_mermaid
    from orchestration.review.outline import plan_outline

    view, _ = fold_ops("p", _looped(author(), max_iterations=7))
    mermaid, dot = plan_mermaid(view), plan_dot(view)
    assert "loop · ≤ 7 rounds" in mermaid and "|body|" in mermaid
    assert "loop · ≤ 7 rounds" in dot
    outline = plan_outline(view, "editable")
    assert outline.unphased is not None
    assert outline.unphased.summary.endswith(", loop lp (≤ 7 rounds)")


def test_as_executed_a_loop_says_how_many_rounds_ran_and_how_it_ended() -> None:
    """The as-executed view counts a loop's rounds and says how it ended."""
    from orchestration.run.fold import fold_run
    from tests.unit.engine.helpers import drive
    from tests.unit.engine.test_loops import _plan, _rounds

    view = _plan(99, max_iterations=3).view()
    _, events = drive(view, {}, _rounds(), max_in_flight=1)
    text = render_plan(view, view="as_executed", run=fold_run(events))
    assert "ran: 3 round(s), ended max_iterations" in text
