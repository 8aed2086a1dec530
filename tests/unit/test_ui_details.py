"""What a run shows in the Temporal Web UI: the plan's flowchart and prose, within a budget."""

from __future__ import annotations

from orchestration.review.diagram import plan_mermaid
from orchestration.review.render import render_plan
from orchestration.review.ui_details import DETAILS_BUDGET, run_details, run_summary
from orchestration.testing import PlanSketch
from orchestration.types import RawPlanView, StringField


def chain(length: int, *, text: str = "x", name: str = "step") -> RawPlanView:
    s = PlanSketch("p-ui").entry(StringField(path="s"))
    names = [f"{name}_{i}" for i in range(length)]
    for name in names:
        s.call(name, "text.upper", args={"s": text}, output=[StringField(path="value")])
    return s.chain("entry", *names).view()


def size(text: str) -> int:
    return len(text.encode("utf-8"))


def test_the_summary_names_the_plan_its_size_and_digest() -> None:
    """One line: plan id, node count, the digest's first 12 hex; a resume says so."""
    view = chain(2)
    assert run_summary(view) == f"plan p-ui · 3 nodes · digest {view.digest[:12]}"
    assert run_summary(view, resumed=True).endswith(" · resumed")


def test_the_details_hold_the_flowchart_then_the_operator_view() -> None:
    """A small plan: its whole Mermaid flowchart in a mermaid fence, then its whole prose."""
    view = chain(3)
    details = run_details(view)
    assert details.startswith("```mermaid\nflowchart TD\n")
    assert f"```mermaid\n{plan_mermaid(view).rstrip()}\n```\n" in details
    assert render_plan(view, "operator").rstrip() in details
    assert details.endswith("\n```\n") and view.digest in details


def test_a_huge_plan_keeps_within_the_budget_and_says_where_the_rest_is() -> None:
    """A flowchart past half the budget is left out whole; the prose is cut at a line."""
    view = chain(1500)
    details = run_details(view)
    assert size(details) <= DETAILS_BUDGET
    assert "```mermaid" not in details
    assert "orch plan graph p-ui --format svg" in details
    assert "… (cut here; the whole view: `orch plan render p-ui`)" in details
    prose = render_plan(view, "operator")
    kept = details.split("```text\n", 1)[1].split("\n… (cut here", 1)[0]
    assert prose.startswith(kept + "\n")
    assert size(run_details(view, budget=4000)) <= 4000


def test_backticks_in_the_plan_cannot_close_the_fence() -> None:
    """Prose holding a run of backticks is fenced by a longer run."""
    details = run_details(chain(1, text="````"))
    assert "\n`````text\n" in details and details.endswith("\n`````\n")


def test_a_flowchart_of_few_but_long_lines_is_measured_and_left_out_whole() -> None:
    """A chart too big for half the budget is never cut: it is replaced by where to draw it."""
    view = chain(100, name="a_step_with_a_very_long_identifier_that_fills_its_line")
    assert len(plan_mermaid(view).encode()) > DETAILS_BUDGET // 2
    details = run_details(view)
    assert "```mermaid" not in details and "orch plan graph p-ui --format svg" in details
    assert size(details) <= DETAILS_BUDGET
