"""Provenance: what a model could have steered, transitively, fail-closed, on every record."""

from __future__ import annotations

import pytest

from orchestration.plan.encoding import NodeRef
from orchestration.run.engine.builders import edge_segment
from orchestration.run.engine.machine import Decided, RunEngine, Succeeded
from orchestration.run.log import LOG_ADAPTER
from orchestration.run.provenance import arg_origins, verdict_check
from orchestration.run.routes import Route, edge_token
from orchestration.run.tables import FrameTable
from orchestration.testing import FakeToolbox, PlanSketch, run_in_process
from orchestration.tools.contracts import BranchVerdict
from orchestration.types import ArtifactHandle, NumberField, OutputItem, StringField

AT = "2026-01-01T00:00:00.000Z"


def table(*rows: tuple[int, str, bool | None]) -> FrameTable[object]:
    """A table of frames ``(number, node, model)``; frame 0 is the entry's (the run input)."""
    out: FrameTable[object] = FrameTable()
    root = Route.root("entry", 0)
    root.model = False
    out = out.set(0, "entry", root, (OutputItem(json_={"n": 1}),))
    for number, node, model in rows:
        route = root.child(edge_segment(f"e{number}"), edge_token(f"e{number}"), node, number)
        route.model = model
        out = out.set(number, node, route, (OutputItem(json_={"v": number}),))
    return out


def test_each_argument_says_where_it_came_from() -> None:
    """Literal, run input, a node's output; a model's output is ``model``, unknown is too."""
    frames = table((1, "fetch", False), (2, "think", True), (3, "old", None))
    origins = arg_origins(
        {
            "path": "/tmp/x",
            "n": NodeRef("entry", path="n"),
            "v": NodeRef("fetch", path="v"),
            "w": [NodeRef("think", path="v"), "suffix"],
            "u": NodeRef("old", path="v"),
            "gone": NodeRef("nowhere"),
        },
        frames,
    )
    assert [(o.source, o.obtained_by) for o in origins["path"]] == [("literal", "runtime")]
    assert [(o.source, o.path) for o in origins["n"]] == [("run_input", "n")]
    assert [(o.source, o.node_id, o.obtained_by) for o in origins["v"]] == [
        ("node_output", "fetch", "runtime")
    ]
    assert [(o.source, o.obtained_by) for o in origins["w"]] == [
        ("literal", "runtime"),
        ("node_output", "model"),
    ]
    # An output whose provenance was never recorded counts as a model's (fail-closed).
    assert [o.obtained_by for o in origins["u"]] == ["model"]
    # A reference that read nothing produced nothing: only the literal place remains.
    assert [o.source for o in origins["gone"]] == ["literal"]


def test_a_verdict_is_verified_asserted_or_unlabelled() -> None:
    """The label follows what the cell says it compared, and nothing at all gives no label."""
    frames = table((1, "fetch", False), (2, "think", True))
    runtime = {"checks": [{"path": "fetch.v", "op": "gt", "value": 0, "actual": 1, "holds": True}]}
    check = verdict_check(runtime, frames)
    assert check.provenance == "verified" and check.reads == "exact"
    (value,) = check.values
    assert (value.name, value.value, value.obtained_by) == ("fetch.v", 1, "runtime")
    assert value.origins[0].node_id == "fetch" and value.origins[0].path == "v"
    steered = {
        "checks": [
            {"path": "entry:.n", "op": "eq", "value": 1, "actual": 1, "holds": True},
            {"path": "think.v", "op": "eq", "value": 2, "actual": 2, "holds": True},
        ]
    }
    check = verdict_check(steered, frames)
    assert check.provenance == "asserted"
    assert [v.origins[0].source for v in check.values] == ["run_input", "node_output"]
    reads = verdict_check({"cell": "jexl", "reads": {"fetch.v": 1}}, frames)
    assert reads.provenance == "verified" and reads.values[0].name == "fetch.v"
    assert verdict_check({"cell": "structured", "checks": []}, frames).provenance is None


def test_a_cell_that_does_not_say_what_it_read_is_judged_by_its_route() -> None:
    """CEL, Lua, a custom cell: any output on the route may have been read (fail-closed)."""
    clean = verdict_check({"cell": "cel", "result": True}, table((1, "fetch", False)))
    assert (clean.provenance, clean.reads, clean.values) == ("verified", "route", ())
    dirty = verdict_check(None, table((1, "fetch", False), (2, "think", True)))
    assert (dirty.provenance, dirty.reads) == ("asserted", "route")
    assert [v.name for v in dirty.values] == ["think"]


@pytest.mark.asyncio
async def test_a_model_value_stays_a_model_value_however_far_it_is_carried() -> None:
    """reason → call → call → branch: asserted; the same branch on the run input: verified."""
    s = PlanSketch("p").entry(NumberField(path="n"))
    s.reason("think", "pick")
    s.call("calc", args={"v": NodeRef("think", path="x")}, output=[NumberField(path="value")])
    s.call("copy", args={"v": NodeRef("calc", path="value")}, output=[NumberField(path="value")])
    s.branch("on_model", {"path": "copy.value", "op": "exists"})
    s.branch("on_input", {"path": "entry.n", "op": "gt", "value": 0})
    s.chain("entry", "think", "calc", "copy", "on_model")
    s.edge("entry", "on_input")
    tools = FakeToolbox(nodes={"think": {"x": 7}})
    _, projection = await run_in_process(s.view(), {"n": 3}, tools)
    assert projection.outcome == "completed", projection.interruption
    labels = {
        key.split(":")[0]: verdict.check.provenance
        for key, verdict in projection.verdicts.items()
        if verdict.check is not None
    }
    assert labels == {"on_model": "asserted", "on_input": "verified"}
    (copy_key,) = [k for k in projection.arg_origins if k.startswith("copy:")]
    assert projection.arg_origins[copy_key]["v"][0].obtained_by == "model"


def test_a_transform_of_a_model_steered_artifact_is_model_steered_and_resume_agrees() -> None:
    """The transform's output carries its source's mark; a resume recomputes the same marks."""
    s = PlanSketch("p").entry(StringField(path="s"))
    s.reason("think", "pick")
    s.call("fetch", args={"q": NodeRef("think", path="q")}, output=[StringField(path="value")])
    s.transform("slice", NodeRef("fetch"), "text", output=[StringField(path="value")])
    s.branch("check", {"path": "slice.value", "op": "exists"})
    view = s.chain("entry", "think", "fetch", "slice", "check").view()
    engine = RunEngine.start(view, "plan/p", {"s": "x"}, AT)
    log = engine.drain()
    answers = {
        "think": Succeeded.one({"q": "x"}),
        "fetch": Succeeded.one({"value": "v"}, ArtifactHandle(tag="memory", locator="a")),
        "slice": Succeeded.one({"value": "v"}),
    }
    resumed_marks: dict[str, bool | None] = {}
    while not engine.done:
        for dispatch in engine.ready(AT):
            if dispatch.node.id == "check":
                restored = RunEngine.resume(view, LOG_ADAPTER.validate_python(log + engine.drain()))
                for frame in restored.live_frames():
                    for _, entry in frame.outputs.entries():
                        resumed_marks[entry.node] = entry.route.model
                engine.settle(dispatch.key, Decided(BranchVerdict(matched=True)), AT)
            else:
                engine.settle(dispatch.key, answers[dispatch.node.id], AT)
            log += engine.drain()
    (verdict,) = [e.verdict for e in log if getattr(e, "verdict", None) is not None]
    assert verdict.check is not None and verdict.check.provenance == "asserted"
    assert resumed_marks == {"entry": False, "think": True, "fetch": True, "slice": True}
