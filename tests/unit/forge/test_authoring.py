"""The authoring tier: a model builds a plan by tool calls; every refusal is a value."""

from __future__ import annotations

import asyncio
import datetime as dt
import re

import pytest

from orchestration.types import CallDefinition

from .helpers import READ, Caller, call_node, make_orch

pytestmark = pytest.mark.asyncio


async def _plan(call: Caller) -> str:
    created = await call("create_plan", label="demo")
    assert created.ok
    plan_id: str = created.data["planId"]
    entry = {"id": "entry", "kind": "entry",
             "definition": {"input": [{"path": "s", "type": "string"}]}}
    assert (await call("add_node", planId=plan_id, node=entry)).ok
    return plan_id


async def test_a_model_builds_fixes_and_submits_a_plan() -> None:
    """Edits answer with the node's issues; submit freezes it and stops at reviewable."""
    orch = await make_orch()
    call = Caller(orch.tools("authoring", actor_id="model-1"))
    plan_id = await _plan(call)
    added = await call(
        "add_node",
        planId=plan_id,
        node={"id": "up", "kind": "call", "definition": {
            "tool": "upper", "args": {"s": {"$ref": {"node": "entry", "path": "s"}}}}},
    )
    assert added.ok and added.data["node"]["definition"]["args"] == {
        "s": {"$ref": {"node": "entry", "select": "first", "path": "s"}}
    }
    codes = {i["code"] for i in added.data["issues"]}
    assert {"unreachable_node", "tainted_call_arg", "missing_authority"} <= codes
    assert (await call("connect_nodes", planId=plan_id, edge={"from": "entry", "to": "up"})).ok

    fixes = {
        "tainted_call_arg": ("declassifies", ["value"]),
        "missing_authority": ("authority", READ),
        "missing_replay_safe": ("replaySafe", True),
        "missing_on_indeterminate": ("onIndeterminate", "retry"),
        "missing_on_missing_value": ("onMissingValue", "fail"),
        "undeclared_declassifies": ("output", [{"path": "value", "type": "string"}]),
    }
    seen: list[list[str]] = []
    while (submitted := await call("submit_plan", planId=plan_id)).code == "freeze_refused":
        assert len(seen) < 3, submitted.text
        seen.append([issue["code"] for issue in submitted.data["issues"]])
        for issue in submitted.data["issues"]:
            path, value = fixes[issue["code"]]
            fixed = await call("set_node_field", planId=plan_id, nodeId=issue["nodeId"],
                               path=path, value=value)
            assert fixed.ok, fixed.text
    assert seen == [
        ["tainted_call_arg", "missing_on_missing_value", "missing_replay_safe",
         "missing_on_indeterminate", "missing_authority"],
        ["undeclared_declassifies"],
    ]
    assert submitted.ok, submitted.text
    assert "It is NOT approved. No tool can approve a plan" in submitted.text
    assert submitted.data["authoritySet"] == READ
    state = await orch.store.read_state(plan_id)
    assert state.state == "reviewable" and submitted.data["digest"] == state.digest
    ops = await orch.store.read_ops(plan_id)
    assert {op.actor_id for op in ops} == {"model-1"}
    assert [op.lamport for op in ops] == sorted({op.lamport for op in ops})


async def test_edits_after_a_freeze_are_refused_and_point_to_clone() -> None:
    """A reviewable plan takes no edit; clone_plan gives an editable copy."""
    orch = await make_orch()
    call = Caller(orch.tools("authoring"))
    plan_id = await _plan(call)
    assert (await call("freeze_plan", planId=plan_id)).ok
    refused = await call("add_node", planId=plan_id, node=call_node("x"))
    assert refused.code == "not_editable" and "clone_plan" in refused.text
    clone = await call("clone_plan", sourcePlanId=plan_id)
    assert clone.ok and (await orch.store.read_state(clone.data["planId"])).state == "editable"
    assert (await call("add_node", planId=clone.data["planId"], node=call_node("x"))).ok


async def test_refusals_carry_a_code_and_name_the_fix() -> None:
    """Unknown plan, node, edge; bad arguments; wrong kind; a handle the source cannot fire."""
    orch = await make_orch()
    call = Caller(orch.tools("authoring"))
    plan_id = await _plan(call)
    assert (await call("add_node", planId=plan_id, node=call_node("up"))).ok

    missing = await call("plan_status", planId="plan-nope")
    assert missing.code == "plan_not_found" and "exactly as a tool returned it" in missing.text
    unknown = await call("set_node_phase", planId=plan_id, nodeId="down", phase="x")
    assert unknown.code == "unknown_node" and unknown.data["validNodeIds"] == ["entry", "up"]
    schema = await call("set_bounds", planId=plan_id, bounds={"maxNodes": 0})
    assert schema.code == "invalid_arguments" and "bounds" in schema.text
    shape = await call("add_node", planId=plan_id,
                       node={"id": "r", "kind": "reason", "definition": {"prompt": []}})
    assert shape.code == "invalid_definition" and "outputSchema" in shape.text
    kind = await call("set_node_config", planId=plan_id, nodeId="up",
                      definition={"kind": "join", "definition": {}})
    assert kind.code == "kind_mismatch" and "call" in kind.text
    handle = await call("connect_nodes", planId=plan_id,
                        edge={"from": "up", "to": "entry", "handle": "match"})
    assert handle.code == "invalid_handle"
    edge = await call("disconnect_edge", planId=plan_id, edgeId="e9")
    assert edge.code == "unknown_edge"
    hole = await call("set_node_field", planId=plan_id, nodeId="up", path="args.s",
                      value={"$param": {"path": "s"}})
    assert hole.code == "undecodable_value" and "only belongs in a template" in hole.text
    selection = await call("plan_read", planId=plan_id)
    assert selection.code == "bad_selection"
    for result in (missing, unknown, schema, shape, kind, handle, edge, hole, selection):
        assert not result.ok
    assert (await orch.store.read_state(plan_id)).revision == 2


async def test_a_field_of_the_wrong_type_is_refused_without_an_op() -> None:
    """set_node_field that the fold could not apply is refused; the log is unchanged."""
    orch = await make_orch()
    call = Caller(orch.tools("authoring"))
    plan_id = await _plan(call)
    assert (await call("add_node", planId=plan_id, node=call_node("up"))).ok
    refused = await call("set_node_field", planId=plan_id, nodeId="up",
                         path="onIndeterminate", value="sometimes")
    assert refused.code == "invalid_node_field" and "onIndeterminate" in refused.text
    assert (await orch.store.read_state(plan_id)).revision == 2


async def test_edges_default_their_id_and_a_clashing_id_is_refused() -> None:
    """connect_nodes names the id it used; another edge under that id is refused."""
    orch = await make_orch()
    call = Caller(orch.tools("authoring"))
    plan_id = await _plan(call)
    for node_id in ("a", "b"):
        assert (await call("add_node", planId=plan_id, node=call_node(node_id))).ok
    first = await call("connect_nodes", planId=plan_id, edge={"from": "entry", "to": "a"})
    assert "as edge entry-a" in first.text
    again = await call("connect_nodes", planId=plan_id,
                       edge={"id": "entry-a", "from": "entry", "to": "b"})
    assert again.code == "duplicate_edge_id"
    sliced = await call("plan_read", planId=plan_id, node="a")
    assert sliced.data["edges"] == [{"id": "entry-a", "from": "entry", "to": "a",
                                     "handle": "always"}]
    assert (await call("disconnect_edge", planId=plan_id, edgeId="entry-a")).ok
    assert (await call("remove_node", planId=plan_id, nodeId="b")).ok
    view = (await orch.store.fold(plan_id)).view
    assert [n.id for n in view.nodes] == ["entry", "a"] and view.edges == ()


async def test_config_bounds_and_raw_views() -> None:
    """set_node_config replaces a definition; set_bounds; raw views are JSON in wire form."""
    orch = await make_orch()
    call = Caller(orch.tools("authoring"))
    plan_id = await _plan(call)
    assert (await call("add_node", planId=plan_id, node=call_node("up"))).ok
    new = call_node("up", tool="stamp", args={"s": {"$ref": {"node": "entry", "path": "s"}}})
    configured = await call("set_node_config", planId=plan_id, nodeId="up",
                            definition={"kind": "call", "definition": new["definition"]})
    assert configured.ok
    node = (await orch.store.fold(plan_id)).view.node("up")
    assert node is not None and isinstance(node.definition, CallDefinition)
    assert node.definition.tool == "stamp"
    bounds = {"maxNodes": 10, "maxEdges": 10, "maxSteps": 50, "maxConcurrentFrames": 2,
              "maxEncodedBytes": 100000}
    assert (await call("set_bounds", planId=plan_id, bounds=bounds)).ok
    raw = await call("raw_plan", planId=plan_id)
    assert raw.data["bounds"] == bounds
    assert raw.data["nodes"][1]["definition"]["args"]["s"] == {
        "$ref": {"node": "entry", "select": "first", "path": "s"}
    }
    ops = await call("raw_ops", planId=plan_id, sinceLamport=2)
    assert [op["op"] for op in ops.data["ops"]] == ["set_node_definition", "set_bounds"]
    diff = await call("raw_diff", planId=plan_id, a=2)
    assert diff.data["nodesChanged"][0]["nodeId"] == "up"
    status = await call("plan_status", planId=plan_id)
    assert status.text.startswith(f"Plan {plan_id}: state=editable, rev=4, digest=")
    rendered = await call("get_plan", planId=plan_id, audience="operator")
    assert "Operator view" in rendered.text


async def test_concurrent_edits_all_land() -> None:
    """Edits racing on one plan retry past each other: every one is in the log."""
    orch = await make_orch()
    call = Caller(orch.tools("authoring"))
    plan_id = await _plan(call)
    results = await asyncio.gather(
        *(call("add_node", planId=plan_id, node=call_node(f"n{i}")) for i in range(8))
    )
    assert all(r.ok for r in results)
    view = (await orch.store.fold(plan_id)).view
    assert sorted(n.id for n in view.nodes) == sorted(["entry", *(f"n{i}" for i in range(8))])


async def test_outline_reads_phases_with_verbatim_ids() -> None:
    """plan_outline lists phases, node ids and tools; issue counts fall in their phase."""
    orch = await make_orch()
    call = Caller(orch.tools("authoring"))
    plan_id = await _plan(call)
    node = call_node("up")
    node["phase"] = "work"
    assert (await call("add_node", planId=plan_id, node=node)).ok
    outline = await call("plan_outline", planId=plan_id)
    assert "  · work [up] tools: upper — work: 1 node(s)" in outline.text
    assert outline.data["phases"][0]["issueCount"] == 2  # unreachable_node, unreachable_call
    assert outline.data["unphased"]["nodeIds"] == ["entry"]


async def test_live_values_in_tool_arguments_are_staged_as_themselves() -> None:
    """A Python host may hand a tool a datetime, a pattern, a set: each is staged as that value."""
    orch = await make_orch()
    call = Caller(orch.tools("authoring"))
    plan_id = await _plan(call)
    when = dt.datetime(2026, 3, 1, 9, 30, tzinfo=dt.UTC)
    pattern = re.compile("^a+$", re.IGNORECASE)
    node = call_node("up", args={"s": "x", "when": when, "match": pattern, "ids": (1, 2)})
    added = await call("add_node", planId=plan_id, node=node)
    assert added.ok, added.text
    config = call_node("up", args={"s": "x", "when": when, "tags": {"b", "a"}})["definition"]
    configured = await call("set_node_config", planId=plan_id, nodeId="up",
                            definition={"kind": "call", "definition": config})
    assert configured.ok, configured.text
    set_ = await call("set_node_field", planId=plan_id, nodeId="up", path="args.match",
                      value=pattern)
    assert set_.ok, set_.text
    view = (await orch.store.fold(plan_id)).view
    up = view.node("up")
    assert up is not None and isinstance(up.definition, CallDefinition)
    assert up.definition.args == {"s": "x", "when": when, "tags": {"a", "b"}, "match": pattern}
    refused = await call("set_node_field", planId=plan_id, nodeId="up", path="args.bad",
                         value=object())
    assert not refused.ok and refused.code == "unencodable_value", refused.text


async def test_list_tools_shows_each_tools_shape_and_freeze_checks_it() -> None:
    """An authoring model reads each tool's signature, and a misspelt argument is refused."""
    from workers.example_tools import TOOLBOX

    orch = await make_orch(invocable=TOOLBOX, templates=())
    tools = orch.tools("authoring")
    call = Caller(tools)
    listed = await call("list_tools")
    assert listed.ok and "  · files.list(dir: string) -> text" in listed.text
    by_name = {t["name"]: t for t in listed.data["tools"]}
    assert by_name["files.write"]["inputSchema"]["required"] == ["path", "text"]
    assert "files.list(dir: string)" in tools["add_node"].description

    plan_id = await _plan(call)
    node = call_node("scan", tool="files.list", args={"dirr": "/tmp"},
                     authority=[{"capability": "files", "scope": "/tmp", "verb": "list"}])
    assert (await call("add_node", planId=plan_id, node=node)).ok
    assert (await call("connect_nodes", planId=plan_id, edge={"from": "entry", "to": "scan"})).ok
    refused = await call("submit_plan", planId=plan_id)
    assert refused.code == "freeze_refused"
    (issue,) = refused.data["issues"]
    assert issue["code"] == "unknown_argument" and issue["nodeId"] == "scan"
    assert 'did you mean "dir"?' in issue["message"]


async def test_a_model_builds_a_map_by_tool_calls() -> None:
    """A map node and its item edge go in through the forge tools, and the plan freezes."""
    orch = await make_orch()
    call = Caller(orch.tools("authoring", actor_id="model-1"))
    plan_id = await _plan(call)
    for node in (
        call_node("list", "search"),
        {"id": "each", "kind": "map", "definition": {
            "over": {"$ref": {"node": "list", "path": "value"}}, "maxItems": 20,
            "concurrency": 4, "toleratedFailurePercent": 10}},
        call_node("one", "stamp", args={"row": {"$ref": {"node": "each", "path": "item"}}}),
        call_node("done", "notify", args={"rows": {"$ref": {"node": "each", "select": "all"}}}),
    ):
        added = await call("add_node", planId=plan_id, node=node)
        assert added.ok, added.text
    for edge in (
        {"from": "entry", "to": "list"},
        {"from": "list", "to": "each"},
        {"from": "each", "to": "one", "handle": "item"},
        {"from": "each", "to": "done"},
    ):
        connected = await call("connect_nodes", planId=plan_id, edge=edge)
        assert connected.ok, connected.text
    submitted = await call("submit_plan", planId=plan_id)
    assert submitted.ok, submitted.text


async def test_a_model_builds_a_loop_by_tool_calls() -> None:
    """A loop node and its body edge go in through the forge tools, and the plan freezes."""
    orch = await make_orch()
    call = Caller(orch.tools("authoring", actor_id="model-1"))
    plan_id = await _plan(call)
    for node in (
        {"id": "again", "kind": "loop", "definition": {
            "maxIterations": 4,
            "until": {"evaluator": "structured",
                      "predicate": {"path": "draft.value", "op": "eq", "value": "ok"}},
            "watch": {"$ref": {"node": "draft", "path": "value"}}}},
        call_node("draft", "stamp", args={"round": {"$ref": {"node": "again", "path": "index"}}}),
        call_node("done", "notify", args={"last": {"$ref": {"node": "again", "path": "result"}}}),
    ):
        added = await call("add_node", planId=plan_id, node=node)
        assert added.ok, added.text
    for edge in (
        {"from": "entry", "to": "again"},
        {"from": "again", "to": "draft", "handle": "body"},
        {"from": "again", "to": "done"},
    ):
        connected = await call("connect_nodes", planId=plan_id, edge=edge)
        assert connected.ok, connected.text
    submitted = await call("submit_plan", planId=plan_id)
    assert submitted.ok, submitted.text
