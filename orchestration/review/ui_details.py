"""What a plan's run shows in the Temporal Web UI: its fixed summary and details.

Temporal keeps a one-line *summary* and a markdown *details* text with each workflow
execution, set when it starts and never changed, and the Web UI shows them on the execution's
page. For ``PlanRun`` the summary names the plan and its size, and the details carry the plan
itself: its Mermaid flowchart (which the UI draws) and the operator's prose view, the same text
``orch plan render`` prints, so whoever opens the run sees what was approved without the CLI.

The details travel as one payload in the start request (through the payload codec, so an
encrypted deployment encrypts them too) and the server bounds its size, so the text is kept
under :data:`DETAILS_BUDGET` bytes: a flowchart that would not fit is left out whole (a cut
flowchart draws nothing), and the prose is cut at a line, saying so and where to read the rest.
"""

from __future__ import annotations

import re

from orchestration.review.diagram import plan_mermaid
from orchestration.review.render import render_plan
from orchestration.types import RawPlanView

__all__ = ["DETAILS_BUDGET", "run_details", "run_summary"]

DETAILS_BUDGET = 16_000
"""The most UTF-8 bytes the details take: under 20 KB once encoded and encrypted."""

_MIN_LINE = 12
"""The fewest bytes a node's or an edge's line of a Mermaid flowchart takes (``  n0 --> n1``)."""


def run_summary(view: RawPlanView, *, resumed: bool = False) -> str:
    """``plan <id> · <n> nodes · digest <12 hex>`` (``· resumed`` for a resume)."""
    nodes = len(view.nodes)
    text = (
        f"plan {view.plan_id} · {nodes} node{'' if nodes == 1 else 's'} · digest {view.digest[:12]}"
    )
    return text + (" · resumed" if resumed else "")


def run_details(view: RawPlanView, budget: int = DETAILS_BUDGET) -> str:
    """The plan's flowchart in a ``mermaid`` fence, then its operator view, within ``budget``.

    Args:
        view: The approved plan the run runs.
        budget: The most UTF-8 bytes the text may take.

    """
    items = len(view.nodes) + len(view.edges)
    # Every node and edge takes a line of at least _MIN_LINE bytes, so a chart past that
    # bound is not drawn only to be left out (a 20,000-node chart takes most of a second).
    chart = (
        ""
        if items * _MIN_LINE > budget // 2
        else f"```mermaid\n{plan_mermaid(view).rstrip()}\n```\n"
    )
    if not chart or _size(chart) > budget // 2:
        chart = (
            f"The flowchart of its {len(view.nodes)} nodes is too large to show here: draw it "
            f"with `orch plan graph {view.plan_id} --format svg`.\n"
        )
    prose = render_plan(view, "operator").rstrip()
    fence = _fence(prose)
    head = f"{chart}\n{fence}text\n"
    tail = f"\n{fence}\n"
    room = budget - _size(head) - _size(tail)
    if _size(prose) > room:
        cut = f"\n… (cut here; the whole view: `orch plan render {view.plan_id}`)"
        prose = _lines_within(prose, room - _size(cut)) + cut
    return head + prose + tail


def _fence(text: str) -> str:
    """A code fence longer than any run of backticks in ``text``, so nothing in it closes it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def _lines_within(text: str, budget: int) -> str:
    """The longest run of ``text``'s first whole lines that fits in ``budget`` bytes."""
    kept: list[str] = []
    used = 0
    for line in text.splitlines():
        cost = _size(line) + 1
        if used + cost > budget:
            break
        kept.append(line)
        used += cost
    return "\n".join(kept)
