"""Wire types: every contract type survives its JSON wire form and uses the contract's names."""

from __future__ import annotations

import asyncio
import datetime as dt
import json

from pydantic import TypeAdapter

from orchestration.plan.encoding import NodeRef
from orchestration.plan.ops import fold_ops
from orchestration.testing import FakeToolbox, PlanSketch, run_in_process
from orchestration.types import (
    PlanOp,
    RawPlanView,
    RunEvent,
    RunProjection,
    StringField,
)

from .plans import diamond_ops

EVENTS = TypeAdapter(list[RunEvent])
OPS = TypeAdapter(list[PlanOp])


def _diamond_run() -> list[RunEvent]:
    view = (
        PlanSketch("wire")
        .entry(StringField(path="s"))
        .call("fork", output=[StringField(path="value")])
        .call("left", args={"s": NodeRef("fork", path="value")}, output=[StringField(path="value")])
        .call("right", output=[StringField(path="value")])
        .join("j")
        .edge("entry", "fork")
        .edge("fork", "left")
        .edge("fork", "right")
        .edge("left", "j")
        .edge("right", "j")
        .view()
    )
    rich = {
        "value": "x",
        "when": dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
        "tags": {"a", "b"},
        "blob": b"\x00\x01",
        "big": 2**80,
    }
    events, _ = asyncio.run(run_in_process(view, {"s": "in"}, FakeToolbox(nodes={"left": rich})))
    return events


def test_run_events_round_trip_through_json() -> None:
    """A real run's log (joins, tables, rich values) reads back equal from its JSON."""
    events = _diamond_run()
    assert {e.kind for e in events} >= {
        "run_started",
        "edge_taken",
        "frontier_snapshot",
        "run_settled",
    }
    assert EVENTS.validate_json(EVENTS.dump_json(events)) == events


def test_ops_and_views_round_trip_through_json() -> None:
    """Ops and folded views read back equal, with NodeRefs still NodeRefs."""
    ops = diamond_ops()
    assert OPS.validate_json(OPS.dump_json(ops)) == ops
    view = fold_ops("p", ops).view
    back = RawPlanView.model_validate_json(view.model_dump_json())
    assert back == view and back.digest == view.digest
    fetch = back.node("fetch")
    assert isinstance(fetch.definition.args["city"], NodeRef)  # type: ignore[union-attr]


def test_wire_names_are_the_contracts() -> None:
    """The JSON form uses camelCase contract names, not Python attribute names."""
    events = _diamond_run()
    doc = json.loads(EVENTS.dump_json(events))
    first_edge = next(e for e in doc if e["kind"] == "edge_taken")
    assert {"edgeId", "from", "to", "outputs", "artifacts"} <= set(first_edge)
    assert "branchId" in first_edge["to"] and "viaEdgeId" in first_edge["to"]
    projection = RunProjection.model_validate_json(
        json.dumps({"runId": "r", "digest": "d", "outcome": "running"})
    )
    assert projection.frame_status == {} and projection.node_status_by_id == {}
