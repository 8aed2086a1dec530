"""The operator reads a map's body, its bounds, its tolerance and its worst case."""

from __future__ import annotations

from orchestration.plan.ops import fold_ops
from orchestration.review.render import render_plan
from orchestration.types import DEFAULT_PLAN_BOUNDS
from tests.unit.validation.helpers import author
from tests.unit.validation.test_maps import _mapped


def _text(**bounds: int) -> str:
    a = author()
    ops = _mapped(a, max_items=200)
    if bounds:
        ops.append(a.set_bounds(DEFAULT_PLAN_BOUNDS.model_copy(update=bounds)))
    view, _ = fold_ops("p", ops)
    return render_plan(view)


def test_a_map_states_what_runs_per_item() -> None:
    """The map says how many steps run per item of which list, at most how many, how many at
    once, and its worst case; its body's steps say they run per item."""
    text = _text()
    assert (
        "runs the 2 steps below once per item of `fetch.files`, at most 200 items, 2 at a time"
        in text
    )
    assert "body: 4. `one`, 5. `two`" in text
    assert "more than 200 items: the map FAILS before any item runs" in text
    assert "failures: none tolerated" in text
    assert "worst case: 200 items × (1 + 2 body steps) = 600 steps per run of the map" in text
    assert "CALL `one` — tool web.fetch  [once per item of map `m`]" in text
    assert "per item → one (step 4, edge e2)" in text
    assert "then: end of the item" in text


def test_the_plan_worst_case_is_stated_against_max_steps() -> None:
    """The bounds section states the plan's worst case, and says when it is over maxSteps."""
    assert "Worst case: 604 steps with every map at its maxItems (within maxSteps 4096)." in _text()
    assert "Worst case: 604 steps" in _text(max_steps=600)
    assert "OVER maxSteps: freeze refuses it" in _text(max_steps=600)


def test_tolerance_is_stated() -> None:
    """A count or a percentage of tolerated failures reads as such."""
    a = author()
    from orchestration.plan.encoding import NodeRef

    ops = _mapped(a)
    ops[2] = a.map(
        "m",
        NodeRef("fetch", path="files"),
        max_items=10,
        tolerated_failures=2,
        tolerated_failure_percent=12.5,
    )
    view, _ = fold_ops("p", ops)
    text = render_plan(view)
    assert "tolerates up to 2 failed item(s) and up to 12.5% of the items" in text
    assert "all at once (within the run's concurrent frames)" in text


def test_plans_without_maps_state_no_worst_case() -> None:
    """A plan without a map renders as before: no worst-case line."""
    a = author()
    view, _ = fold_ops("p", [a.entry()])
    assert "Worst case" not in render_plan(view)


def test_pictures_draw_a_map_with_its_bounds() -> None:
    """Both pictures label a map with its maxItems and concurrency, and its item edge."""
    from orchestration.review.diagram import plan_dot, plan_mermaid

    view, _ = fold_ops("p", _mapped(author(), max_items=200))
    mermaid, dot = plan_mermaid(view), plan_dot(view)
    assert "map · ≤ 200 items, 2 at a time" in mermaid and "|item|" in mermaid
    assert "map · ≤ 200 items, 2 at a time" in dot and "box3d" in dot


def test_as_executed_a_map_says_how_many_items_ran_and_which_failed() -> None:
    """The as-executed view counts a map's items and names the failed ones."""
    from orchestration.run.fold import fold_run
    from tests.unit.engine.helpers import drive
    from tests.unit.engine.test_maps import _files, _plan

    view = _plan(tolerated_failures=1).view()
    _, events = drive(view, {}, _files("a", "x1", "c"), max_in_flight=1)
    text = render_plan(view, view="as_executed", run=fold_run(events))
    assert "ran: 3 item(s), 1 failed: item 1 at work (ValueError)" in text
