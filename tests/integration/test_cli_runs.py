"""`orch run ...` as subprocesses against the session's dev server, with a worker in this process.

Exit statuses say how a watched run ended (0 only for completed); operating a closed or an
unknown run is a refusal naming the run; an encrypted run is started, read and drawn through
the codec `ORCH_CODEC_KEYS` configures, and refused by name without it.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from orchestration.api import Orchestration, create_orchestration
from orchestration.plan.authoring import PlanAuthor, claim
from orchestration.review.approval import approval_record
from orchestration.review.diagram import plan_mermaid
from orchestration.review.render import render_plan
from orchestration.store import SqlitePlanStore
from orchestration.types import NumberField, StringField
from workers.codec import AesGcmCodec
from workers.devserver import DevServer
from workers.worker import build_worker, connect

from .harness import approved_chain, make_toolbox, orch_cli, unique_plan_id

pytestmark = pytest.mark.asyncio(loop_scope="session")

SECRET = "plaintext-marker-7f3a"


async def approved(orch: Orchestration, plan_id: str, tool: str, **options: Any) -> None:
    """entry(s, seconds) → first(tool) → second(upper), frozen and approved."""
    await approved_chain(orch, plan_id, tool, names=("first", "second"), timed=True, **options)


async def setup(tmp_path: Path) -> tuple[Orchestration, list[str]]:
    store = tmp_path / "plans.sqlite3"
    orch = await create_orchestration(store=SqlitePlanStore(str(store)), invocable=make_toolbox())
    return orch, ["--store", str(store)]


async def test_watch_exits_by_outcome_and_closed_runs_refuse_operations(
    dev_server: DevServer, client: Client, task_queue: str, tmp_path: Path
) -> None:
    """0 completed, 4 halted, 5 aborted, 6 cancelled; stop/resolve/watch name the run."""
    orch, store = await setup(tmp_path)
    ok, boom, halt, slow = (unique_plan_id(p) for p in ("ok", "boom", "halt", "slow"))
    await approved(orch, ok, "upper")
    await approved(orch, boom, "boom")
    await approved(orch, halt, "upper", max_steps=1)
    await approved(orch, slow, "slow", args={"seconds": 30})
    await orch.store.close()
    temporal = ["--address", dev_server.address, "--task-queue", task_queue, *store]
    run_input = ["--input", '{"s": "hi", "seconds": 0}']
    worker_store = SqlitePlanStore(str(tmp_path / "plans.sqlite3"))
    async with build_worker(
        client, task_queue=task_queue, toolbox=make_toolbox(), store=worker_store
    ):
        code, out, err = await orch_cli("run", "start", ok, *run_input, "--watch", *temporal)
        assert code == 0 and "run settled: completed" in out, err

        code, out, err = await orch_cli("run", "start", boom, *run_input, "--watch", *temporal)
        assert code == 5 and err.startswith("error[run_aborted]: "), (out, err)

        code, out, err = await orch_cli(
            "run", "start", halt, *run_input, "--watch", "--json", *temporal
        )
        assert code == 4 and json.loads(out)["outcome"] == "halted", (out, err)
        assert err.startswith("run ") and "error[run_halted]: " in err  # progress on stderr

        code, out, err = await orch_cli("run", "start", slow, *run_input, *temporal)
        assert code == 0, err
        code, out, err = await orch_cli("run", "stop", slow, "--cancel", *temporal)
        assert code == 0, err
        code, out, err = await orch_cli("run", "watch", slow, *temporal)
        assert code == 6 and "error[run_cancelled]: " in err, (out, err)

        for args in (
            ("run", "stop", ok),
            ("run", "stop", ok, "--cancel"),
            ("run", "resolve", ok, "first:x", "retry"),
        ):
            code, out, err = await orch_cli(*args, "--json", *temporal)
            assert code == 2 and json.loads(out)["error"]["code"] == "run_closed", (args, err)
            assert err.startswith("error[run_closed]: "), err

        await create_unrun(tmp_path, "never")
        for args in (("run", "stop", "no-such-plan"), ("run", "watch", "never")):
            code, out, err = await orch_cli(*args, *temporal)
            assert code == 2 and err.startswith("error[run_not_found]: "), (args, err)

        code, out, err = await orch_cli("run", "show", ok, "--render", *temporal)
        assert code == 0, err
        assert "run: plan/" in out and "outcome: completed" in out
        assert "CALL `second` — tool upper [done]" in out
        assert '⇒ "HI"' in out and "[taken]" in out
        code, out, err = await orch_cli("run", "graph", boom, *temporal)
        assert code == 0, err
        assert "[failed]" in out and "  n0 ==> n1" in out and "class n1 failed" in out
    await worker_store.close()


async def approved_fan(orch: Orchestration, plan_id: str) -> None:
    """entry → fork (by two edges, so all after it runs twice) → left, right → join j → write."""
    counter = itertools.count()
    a = PlanAuthor("tester", new_id=lambda: f"op{next(counter)}")
    read = [claim("text", "*", "read")]
    out = [StringField(path="value"), NumberField(path="n")]
    ops = [a.entry(input=[StringField(path="s"), NumberField(path="seconds")])]
    for node in ("fork", "left", "right", "write"):
        ops.append(
            a.call(node, tool="stamp", args={}, output=out, authority=read, replay_safe=True,
                   on_indeterminate="retry")
        )
    ops += [
        a.join("j"),
        a.edge("entry", "fork", edge_id="to_fork_a"),
        a.edge("entry", "fork", edge_id="to_fork_b"),
        a.edge("fork", "left"),
        a.edge("fork", "right"),
        a.edge("left", "j"),
        a.edge("right", "j"),
        a.edge("j", "write"),
    ]
    await orch.store.create_plan(plan_id)
    assert (await orch.store.append_ops(plan_id, ops)).ok
    assert (await orch.freeze_plan(plan_id)).ok
    view = (await orch.store.fold(plan_id)).view
    record = approval_record(view, "op", "2026-01-01T00:00:00Z")
    assert (await orch.approve_plan(plan_id, record)).ok


ROUTE_KEY = re.compile(r"\be\d+:[\w-]|\bj\d+:[\w-]+\(")
"""What a length-prefixed route key looks like (``e9:to_fork_a``, ``j1:j(``)."""


async def test_progress_and_show_name_frames_and_the_ui_shows_the_plan(
    dev_server: DevServer, client: Client, task_queue: str, tmp_path: Path
) -> None:
    """A plan whose nodes run twice, watched and shown: readable frames, exact keys in JSON.

    Progress numbers each repeated node with the last edge of its route and prints each join
    once, with its arrivals, under a settle count; `run show` gives each frame its duration
    and attempts; the JSON keeps the exact frame keys. The execution's static details in
    Temporal (what the Web UI shows) hold the plan's Mermaid flowchart and its prose.
    """
    orch, store = await setup(tmp_path)
    plan_id = unique_plan_id("fan")
    await approved_fan(orch, plan_id)
    view = (await orch.store.fold(plan_id)).view
    await orch.store.close()
    temporal = ["--address", dev_server.address, "--task-queue", task_queue, *store]
    worker_store = SqlitePlanStore(str(tmp_path / "plans.sqlite3"))
    async with build_worker(
        client, task_queue=task_queue, toolbox=make_toolbox(), store=worker_store
    ):
        code, out, err = await orch_cli(
            "run", "start", plan_id, "--input", '{"s": "hi", "seconds": 0}', "--watch", *temporal
        )
        assert code == 0, err
        watched = out.split("\nrun plan/")[0].splitlines()
        assert watched[0].startswith(f"run plan/{plan_id} started (digest ")
        assert not [line for line in out.splitlines() if ROUTE_KEY.search(line)], out
        joins = [line for line in watched if line.split("] ", 1)[-1].startswith("✓ j")]
        assert len(joins) == 2 and all(line.endswith("ok (2/2 arrived)") for line in joins)
        assert not [line for line in watched if "(always) to j" in line]
        settles = [line for line in watched if line.startswith("[")]
        assert len(settles) == 11 and settles[-1].startswith("[11/11 settled] ✓ write #2 (via ")
        assert "    → to_fork_b (always) to fork #2 (via to_fork_b)" in watched

        code, out, err = await orch_cli("run", "show", plan_id, *temporal)
        assert code == 0, err
        assert not ROUTE_KEY.search(out), out
        rows = {
            m[1]: (m[2], m[3], m[4])
            for line in out.splitlines()[2:-1]
            if (m := re.match(r"  (.+?) +(done) +(\S+)  (.+)$", line))
        }
        # Instances are numbered in the order they came to exist; which barrier closes
        # first is the workers' race, so the joins' numbers may go either way.
        assert {label for label in rows if label[0] == "j"} in (
            {"j #1 (via to_fork_a)", "j #2 (via to_fork_b)"},
            {"j #1 (via to_fork_b)", "j #2 (via to_fork_a)"},
        ), out
        assert {label for label in rows if label[0] != "j"} == {
            "entry", "fork #1 (via to_fork_a)", "fork #2 (via to_fork_b)",
            "left #1 (via fork-left)", "left #2 (via fork-left)", "right #1 (via fork-right)",
            "right #2 (via fork-right)", "write #1 (via j-write)", "write #2 (via j-write)",
        }, out
        assert all(re.fullmatch(r"\d+\.\d\ds", took) for _, took, _ in rows.values())
        assert {tries for label, (_, _, tries) in rows.items() if label[0] != "j"} == {
            "1 attempt"
        }
        assert {tries for label, (_, _, tries) in rows.items() if label[0] == "j"} == {
            "2/2 arrived"
        }

        code, out, err = await orch_cli("run", "show", plan_id, "--json", *temporal)
        assert code == 0, err
        keys = json.loads(out)["frameStatus"]
        assert f"write:{len('to_fork_a')}" not in keys  # keys are exact, not labels
        assert any(key.startswith("write:e9:to_fork_a") for key in keys), keys

        code, out, err = await orch_cli("run", "log", plan_id, *temporal)
        assert code == 0 and "fork #1 (via to_fork_a)" in out and not ROUTE_KEY.search(out)

        # Each frame's steps with their times: entered, its attempt dispatched and ended, settled.
        code, out, err = await orch_cli("run", "show", plan_id, "--lifecycle", *temporal)
        assert code == 0, err
        block = out[out.index("\nlifecycle:\n") :]
        assert "  fork #1 (via to_fork_a)\n" in block and not ROUTE_KEY.search(block)
        steps = [line.split("  ")[-1] for line in block.splitlines() if line.startswith("    ")]
        assert steps.count("attempt 1 dispatched") == 8  # the calls; entry and joins have none
        assert steps.count("settled: ok") == 11
        code, out, err = await orch_cli("run", "show", plan_id, "--lifecycle", "--json", *temporal)
        lifecycles = json.loads(out)["lifecycles"]
        (fork,) = [v for k, v in lifecycles.items() if k.startswith("fork:e9:to_fork_a")]
        assert [s["step"] for s in fork] == ["entered", "dispatched", "attempt_ended", "settled"]
    await worker_store.close()

    described = await client.get_workflow_handle(f"plan/{plan_id}").describe()
    summary = await described.static_summary()
    details = await described.static_details()
    assert summary is not None and summary.startswith(f"plan {plan_id} · 6 nodes · digest ")
    assert details is not None
    assert details.startswith(f"```mermaid\n{plan_mermaid(view).rstrip()}\n```\n")
    assert f"\n```text\n{render_plan(view, 'operator').rstrip()}\n```\n" in details


async def test_run_list_reads_the_stores_runs_newest_first_a_page_at_a_time(
    dev_server: DevServer, client: Client, task_queue: str, tmp_path: Path
) -> None:
    """`run list` from the plan store alone: outcome, start, duration, filters and paging.

    Runs come newest first; a running run says how long it has run so far; `--outcome` and
    `--plan-prefix` filter; `--limit` pages, printing the next page's command, and `--after`
    follows it. `plan list` says how each plan's run ended instead of `executable`.
    """
    orch, store = await setup(tmp_path)
    first, boom, second, slow = (unique_plan_id(p) for p in ("ok", "boom", "ok", "slow"))
    never = unique_plan_id("never")
    for plan_id, tool in ((first, "upper"), (boom, "boom"), (second, "upper"), (never, "upper")):
        await approved(orch, plan_id, tool)
    await approved(orch, slow, "slow", args={"seconds": 30})
    await orch.store.close()
    temporal = ["--address", dev_server.address, "--task-queue", task_queue, *store]
    run_input = ["--input", '{"s": "hi", "seconds": 0}']
    worker_store = SqlitePlanStore(str(tmp_path / "plans.sqlite3"))
    async with build_worker(
        client, task_queue=task_queue, toolbox=make_toolbox(), store=worker_store
    ):
        for plan_id in (first, boom, second):
            await orch_cli("run", "start", plan_id, *run_input, "--watch", *temporal)
        code, out, err = await orch_cli("run", "start", slow, *run_input, *temporal)
        assert code == 0, err

        code, out, err = await orch_cli("run", "list", *store)
        assert code == 0, err
        header, *rows = out.splitlines()
        assert header.split() == ["PLAN", "RUN", "OUTCOME", "STARTED", "(UTC)", "DURATION"]
        cells = [row.split() for row in rows]
        assert [(c[0], c[1], c[2]) for c in cells] == [
            (slow, f"plan/{slow}", "running"),
            (second, f"plan/{second}", "completed"),
            (boom, f"plan/{boom}", "aborted"),
            (first, f"plan/{first}", "completed"),
        ]
        assert all(re.fullmatch(r"\d{4}-\d\d-\d\d", c[3]) for c in cells)
        assert cells[0][6:] == ["so", "far"]
        assert all(re.fullmatch(r"\d+\.\d+s|\d+m\d\ds", c[5]) for c in cells)

        code, out, err = await orch_cli("run", "list", "--outcome", "completed", "--json", *store)
        assert code == 0, err
        listed = json.loads(out)
        assert [r["planId"] for r in listed["runs"]] == [second, first]
        assert listed["next"] is None
        assert all(r["startedAt"] <= r["endedAt"] for r in listed["runs"])
        code, out, err = await orch_cli("run", "list", "--plan-prefix", "ok-", "--json", *store)
        assert [r["planId"] for r in json.loads(out)["runs"]] == [second, first], err

        code, out, err = await orch_cli("run", "list", "--limit", "3", *store)
        assert code == 0, err
        assert out.splitlines()[-1] == f"next page: orch run list --limit 3 --after {boom}"
        code, out, err = await orch_cli("run", "list", "--limit", "3", "--after", boom, *store)
        assert code == 0 and [row.split()[0] for row in out.splitlines()[1:]] == [first], out

        code, out, err = await orch_cli("plan", "list", *store)
        assert code == 0, err
        standing = {line.split()[0]: line.split()[1] for line in out.splitlines()}
        assert standing == {
            first: "completed", boom: "aborted", second: "completed", never: "executable",
            slow: "running",
        }

        code, out, err = await orch_cli("run", "stop", slow, "--cancel", *temporal)
        assert code == 0, err
        code, out, err = await orch_cli("run", "watch", slow, *temporal)
        assert code == 6, err
        code, out, err = await orch_cli("run", "list", "--outcome", "aborted", "--json", *store)
        assert [r["planId"] for r in json.loads(out)["runs"]] == [slow, boom], err
    await worker_store.close()


async def create_unrun(tmp_path: Path, plan_id: str) -> None:
    store = SqlitePlanStore(str(tmp_path / "plans.sqlite3"))
    await store.create_plan(plan_id)
    await store.close()


async def test_an_encrypted_run_is_started_and_read_through_the_cli_codec(
    dev_server: DevServer, tmp_path: Path
) -> None:
    """ORCH_CODEC_KEYS: no plaintext in history (UI details too); show/log read it; else refused."""
    key = os.urandom(32)
    keys = {"ORCH_CODEC_KEYS": f"k1:{base64.b64encode(key).decode()}"}
    codec_client = await connect(dev_server.address, payload_codec=AesGcmCodec({"k1": key}))
    plain_client = await connect(dev_server.address)
    orch, store = await setup(tmp_path)
    plan_id = unique_plan_id("enc")
    await approved(orch, plan_id, "upper")
    await orch.store.close()
    queue = f"tq-{plan_id}"
    temporal = ["--address", dev_server.address, "--task-queue", queue, *store]
    worker_store = SqlitePlanStore(str(tmp_path / "plans.sqlite3"))
    async with build_worker(
        codec_client, task_queue=queue, toolbox=make_toolbox(), store=worker_store
    ):
        code, out, err = await orch_cli(
            "run",
            "start",
            plan_id,
            "--input",
            json.dumps({"s": SECRET, "seconds": 0}),
            "--watch",
            *temporal,
            env=keys,
        )
        assert code == 0, err
    await worker_store.close()
    history = await plain_client.get_workflow_handle(f"plan/{plan_id}").fetch_history()
    raw = history.to_json()
    assert SECRET not in raw and SECRET.upper() not in raw
    assert base64.b64encode(SECRET.encode()).decode()[:12] not in raw
    # The Web UI's summary and details are payloads too: encrypted, readable with the key.
    assert "flowchart" not in raw and base64.b64encode(b"```mermaid").decode()[:12] not in raw
    described = await codec_client.get_workflow_handle(f"plan/{plan_id}").describe()
    details = await described.static_details()
    assert details is not None and details.startswith("```mermaid\nflowchart TD\n")

    code, out, err = await orch_cli("run", "log", plan_id, "--json", *temporal, env=keys)
    assert code == 0, err
    assert SECRET.upper() in out
    code, out, err = await orch_cli("run", "show", plan_id, "--render", *temporal, env=keys)
    assert code == 0 and f'⇒ "{SECRET}"' in out, err

    code, out, err = await orch_cli("run", "show", plan_id, "--json", *temporal)
    assert code == 2 and json.loads(out)["error"]["code"] == "codec_key", err
    assert "ORCH_CODEC_KEYS" in err
    wrong = {"ORCH_CODEC_KEYS": f"k1:{base64.b64encode(os.urandom(32)).decode()}"}
    code, out, err = await orch_cli("run", "log", plan_id, *temporal, env=wrong)
    assert code == 2 and err.startswith("error[codec_decrypt_failed]: "), err
