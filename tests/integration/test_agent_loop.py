"""Acceptance: a scripted model authors a plan over MCP; an operator approves; it runs.

The model is a deterministic script standing in for an LLM: it drafts a plan with a fan-out
from the entry, a transform over a JSON artifact a call produced, a diamond closed by a join,
and a branch, leaving out what models typically
leave out; it submits, reads the issues that come back, fixes each by its code, and submits
again. Then an operator approves with ``orch plan approve`` and runs it with ``orch run start
--watch`` against the session's dev server, with a worker in this process.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
from mcp import Client
from temporalio.client import Client as TemporalClient

from orchestration.api import create_orchestration
from orchestration.artifacts import FileSpoolStore
from orchestration.forge.mcp import build_mcp_server
from orchestration.store import SqlitePlanStore
from orchestration.tools.toolbox import Toolbox
from workers.devserver import DevServer
from workers.worker import build_worker

from . import artifact_tools
from .harness import make_toolbox, replay


def agent_toolbox() -> Toolbox:
    """The harness's text tools plus a tool that returns a JSON artifact."""
    tools = make_toolbox()
    tools.add(artifact_tools.TOOLBOX.get("json.report"))
    return tools


pytestmark = pytest.mark.asyncio(loop_scope="session")

ORCH = str(Path(sys.executable).parent / "orch")
ROOT = Path(__file__).resolve().parents[2]
READ = [{"capability": "text", "scope": "*", "verb": "read"}]
STRING = [{"path": "value", "type": "string"}]


def _call(node_id: str, tool: str, args: dict[str, Any], **fields: Any) -> dict[str, Any]:
    definition = {
        "tool": tool,
        "args": args,
        "output": STRING,
        "replaySafe": True,
        "onIndeterminate": "retry",
        **fields,
    }
    return {"id": node_id, "kind": "call", "definition": definition}


class ScriptedModel:
    """Decides every tool call from the plan it wants and the results it reads back."""

    DRAFT = [
        {
            "id": "entry",
            "kind": "entry",
            "definition": {"input": [{"path": "s", "type": "string"}]},
        },
        _call("left", "upper", {"s": {"$ref": {"node": "entry", "path": "s"}}}, authority=READ),
        _call("right", "stamp", {}, authority=READ, onMissingValue="fail"),
        {
            "id": "report",
            "kind": "call",
            "definition": {
                "tool": "json.report",
                "args": {},
                "output": [{"path": "count", "type": "number"}],
                "replaySafe": True,
                "onIndeterminate": "retry",
                "authority": READ,
                "onMissingValue": "fail",
            },
        },
        {
            "id": "names",
            "kind": "transform",
            "definition": {
                "source": {"$ref": {"node": "report"}},
                "steps": [{"name": "artifact_json_filter", "args": {"path": "$.files[*].name"}}],
                "emit": {"as": "value", "field": "names"},
                "output": [{"path": "names", "type": "string"}],
            },
        },
        {"id": "both", "kind": "join"},
        {
            "id": "decide",
            "kind": "branch",
            "definition": {
                "evaluator": "structured",
                "predicate": {"path": "entry:.s", "op": "eq", "value": "hello"},
            },
        },
        _call(
            "shout",
            "upper",
            {"s": {"$ref": {"node": "left", "path": "value"}}},
            onMissingValue="fail",
        ),
        _call("quiet", "stamp", {}, authority=READ, onMissingValue="fail"),
    ]
    EDGES = [
        ("entry", "left", "always"),
        ("entry", "right", "always"),
        ("entry", "report", "always"),
        ("left", "both", "always"),
        ("right", "both", "always"),
        ("report", "names", "always"),
        ("names", "both", "always"),
        ("both", "decide", "always"),
        ("decide", "shout", "match"),
        ("decide", "quiet", "no_match"),
    ]
    FIXES = {
        "tainted_call_arg": ("declassifies", ["value"]),
        "missing_on_missing_value": ("onMissingValue", "fail"),
        "missing_authority": ("authority", READ),
    }

    def __init__(self, client: Client) -> None:
        self.client = client
        self.transcript: list[tuple[str, bool]] = []

    async def call(self, name: str, **args: Any) -> types.CallToolResult:
        result = await self.client.call_tool(name, args)
        self.transcript.append((name, not result.is_error))
        return result

    async def author(self) -> tuple[str, list[list[str]], dict[str, Any]]:
        """Build, submit, fix by issue code until accepted; the plan id, rounds, final data."""
        created = await self.call("create_plan", label="shout when greeted")
        plan_id: str = created.structured_content["data"]["planId"]  # type: ignore[index]
        for node in self.DRAFT:
            await self.call("add_node", planId=plan_id, node=node)
        for source, target, handle in self.EDGES:
            await self.call(
                "connect_nodes",
                planId=plan_id,
                edge={"from": source, "to": target, "handle": handle},
            )
        rounds: list[list[str]] = []
        while True:
            submitted = await self.call("submit_plan", planId=plan_id)
            body: dict[str, Any] = submitted.structured_content  # type: ignore[assignment]
            if not submitted.is_error:
                return plan_id, rounds, body["data"]
            assert body["code"] == "freeze_refused" and len(rounds) < 3
            rounds.append([issue["code"] for issue in body["data"]["issues"]])
            for issue in body["data"]["issues"]:
                path, value = self.FIXES[issue["code"]]
                await self.call(
                    "set_node_field", planId=plan_id, nodeId=issue["nodeId"], path=path, value=value
                )


async def _orch(*args: str) -> tuple[int, str, str]:
    """Run the real ``orch`` console script without blocking this loop (the worker runs here)."""
    proc = await asyncio.create_subprocess_exec(
        ORCH, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_a_model_authors_an_operator_approves_and_the_plan_runs(
    dev_server: DevServer, client: TemporalClient, task_queue: str, tmp_path: Path
) -> None:
    """Draft, freeze issues, fixes, submit; `orch plan approve`; `orch run start --watch`."""
    store_path = tmp_path / "plans.sqlite3"
    orch = await create_orchestration(
        store=SqlitePlanStore(str(store_path)), invocable=agent_toolbox()
    )
    try:
        async with Client(
            build_mcp_server(orch.tools("authoring", actor_id="model")), mode="legacy"
        ) as mcp_client:
            model = ScriptedModel(mcp_client)
            plan_id, rounds, submitted = await model.author()
    finally:
        await orch.store.close()

    assert rounds == [
        ["tainted_call_arg", "tainted_call_arg", "missing_on_missing_value", "missing_authority"]
    ]
    assert all(ok for name, ok in model.transcript if name != "submit_plan")
    assert submitted["state"] == "reviewable"
    store = ["--store", str(store_path)]

    code, out, err = await _orch("plan", "render", plan_id, *store, "--json")
    assert code == 0, err
    digest = json.loads(out)["digest"]
    assert digest == submitted["digest"]
    code, out, err = await _orch(
        "plan", "approve", plan_id, "--digest", digest, "--by", "operator", *store
    )
    assert code == 0, err
    assert f"{plan_id} is executable: approved digest {digest} by operator" in out

    temporal = ["--address", dev_server.address, "--task-queue", task_queue]
    # The worker claims the run in the store the operator's CLI approves and starts it from.
    plans = SqlitePlanStore(str(store_path))
    worker = build_worker(
        client,
        task_queue=task_queue,
        toolbox=agent_toolbox(),
        store=plans,
        spool=FileSpoolStore(tmp_path / "spool"),
    )
    async with worker:
        code, out, err = await _orch(
            "run", "start", plan_id, "--input", '{"s": "hello"}', "--watch", *temporal, *store
        )
        assert code == 0, err
        assert "run settled: completed" in out
        settled = re.findall(r"^ *\[\d+/\d+ settled\] ✓ (\S+)", out, flags=re.M)
        for node in ("left", "right", "report", "names", "both", "decide", "shout"):
            assert node in settled, out
        assert "quiet" not in settled and re.search(r"^ +quiet +not reached$", out, flags=re.M)
        code, shown, err = await _orch("run", "show", plan_id, "--json", *temporal, *store)
        assert code == 0, err
    projection = json.loads(shown)
    assert projection["outcome"] == "completed"
    assert projection["nodeStatusById"] == {
        "entry": "done",
        "left": "done",
        "right": "done",
        "report": "done",
        "names": "done",
        "both": "done",
        "decide": "done",
        "shout": "done",
    }
    names = next(v for k, v in projection["outputs"].items() if k.startswith("names:"))
    assert names["items"] == [{"json": {"names": "a.txt\nb.txt\nc.md"}}]
    shout = next(v for k, v in projection["outputs"].items() if k.startswith("shout:"))
    assert shout["items"] == [{"json": {"value": "HELLO"}}]
    replayed = await replay(client, plan_id, plans)
    await plans.close()
    assert replayed[-1].kind == "run_settled" and replayed[-1].outcome == "completed"  # type: ignore[union-attr]
