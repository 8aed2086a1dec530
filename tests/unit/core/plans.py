"""Small plan builders shared by the core tests."""

from __future__ import annotations

import itertools

from orchestration.plan.authoring import PlanAuthor, claim, ref
from orchestration.types import NumberField, PlanOp, StringField


def fixed_author(actor: str = "alice", start: int = 0) -> PlanAuthor:
    """An author with deterministic op ids and timestamps."""
    counter = itertools.count(1)
    return PlanAuthor(
        actor,
        lamport=start,
        now=lambda: "2026-01-01T00:00:00Z",
        new_id=lambda: f"{actor}-{next(counter)}",
    )


def diamond_ops(author: PlanAuthor | None = None) -> list[PlanOp]:
    """entry -> fetch -> (left, right) -> join -> report."""
    a = author or fixed_author()
    call = dict(
        authority=[claim("http", "example.org", "read")],
        replay_safe=True,
        on_indeterminate="retry",
    )
    return [
        a.entry(input=[StringField(path="city"), NumberField(path="days")]),
        a.call(
            "fetch",
            tool="weather.fetch",
            args={"city": ref("entry", path="city"), "days": ref("entry", path="days")},
            output=[StringField(path="body")],
            **call,
        ),
        a.call(
            "left",
            tool="text.upper",
            args={"s": ref("fetch", path="body")},
            output=[StringField(path="value")],
            **call,
        ),
        a.call(
            "right",
            tool="text.lower",
            args={"s": ref("fetch", path="body")},
            output=[StringField(path="value")],
            **call,
        ),
        a.join("both"),
        a.call(
            "report",
            tool="files.write",
            args={"path": "out.txt"},
            output=[StringField(path="path")],
            **call,
        ),
        a.edge("entry", "fetch", edge_id="e0"),
        a.edge("fetch", "left", edge_id="e1"),
        a.edge("fetch", "right", edge_id="e2"),
        a.edge("left", "both", edge_id="e3"),
        a.edge("right", "both", edge_id="e4"),
        a.edge("both", "report", edge_id="e5"),
    ]
