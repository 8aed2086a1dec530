"""`orch template list | instantiate` and `orch mcp`, run as subprocesses on a SQLite file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from .cli import ORCH, orch, orch_json

ROOT = Path(__file__).resolve().parents[2]
TOOLS = "tests.unit.templates.fixtures:TOOLS"
TEMPLATES = "tests.unit.templates.fixtures:TEMPLATES"
ARGS = '{"topic": "cats", "depth": 2, "tone": "formal", "urgent": true}'


@pytest.fixture(autouse=True)
def importable_fixtures(monkeypatch: pytest.MonkeyPatch) -> None:
    """The subprocess imports the allowlist and templates from this checkout."""
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    for name in ("ORCH_TOOLS", "ORCH_CELLS", "ORCH_TEMPLATES", "ORCH_STORE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "plans.sqlite3"


def _flags(store: Path) -> list[str]:
    return ["--tools", TOOLS, "--templates", TEMPLATES, "--store", str(store)]


def test_list_shows_each_template_and_what_to_fill(store: Path) -> None:
    """Text for people, JSON for scripts."""
    text = orch("template", "list", *_flags(store), store=store).stdout
    assert text.splitlines()[:3] == [
        "research  Search a topic, summarise the hits, notify when urgent",
        "  topic: a string of at most 40 bytes",
        "  depth: a finite number",
    ]
    listed = orch_json("template", "list", *_flags(store), store=store)
    assert [t["id"] for t in listed] == ["research"]
    assert listed[0]["params"][2] == {"path": "tone", "type": "enum", "values": ["plain", "formal"]}


def test_instantiate_then_the_render_shows_the_lineage(store: Path) -> None:
    """Args from --args and --arg; the plan is editable, freezes, and renders its template."""
    made = orch_json(
        "template", "instantiate", "research", "--args", ARGS, "--arg", "topic=owls",
        "--plan-id", "p1", "--actor", "ops-bot", *_flags(store), store=store,
    )
    assert made == {"ok": True, "planId": "p1", "issues": []}
    rendered = orch("plan", "render", "p1", store=store).stdout
    assert 'Lineage: instantiated from template research\n  depth: 2\n  tone: "formal"\n' \
        '  topic: "owls"\n  urgent: true\n' in rendered
    ops = orch_json("plan", "ops", "p1", store=store)
    assert {op["actorId"] for op in ops} == {"ops-bot"}
    frozen = orch("plan", "freeze", "p1", "--tools", TOOLS, store=store)
    assert "p1 is reviewable" in frozen.stdout


def test_refusals_print_the_code_and_the_fix(store: Path, tmp_path: Path) -> None:
    """Bad args, an unknown template, a missing allowlist, a bad template: code, fix, exit 2."""
    bad = orch("template", "instantiate", "research", "--arg", "topic=owls", *_flags(store),
               store=store, check=False)
    assert bad.returncode == 2
    assert bad.stderr.startswith('error[invalid_args]: Param "depth" is required and was not '
                                 "supplied; expected a finite number.")
    unknown = orch("template", "instantiate", "nope", "--args", ARGS, *_flags(store),
                   store=store, check=False)
    assert unknown.returncode == 2 and unknown.stderr == (
        'error[unknown_template]: No template registered with id "nope". Registered templates: '
        '"research".\n'
    )
    no_tools = orch("template", "list", "--templates", TEMPLATES, "--store", str(store),
                    store=store, check=False)
    assert no_tools.returncode == 2 and no_tools.stderr.startswith("error[tools_required]: ")
    broken = tmp_path / "broken_templates.py"
    broken.write_text(
        "from tests.unit.templates.fixtures import research\n"
        "TEMPLATES = [research(notify_tool='rm.rf')]\n"
    )
    refused = orch("template", "list", "--tools", TOOLS,
                   "--templates", "broken_templates:TEMPLATES",
                   "--store", str(store), store=store, check=False,
                   env={"PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"})
    assert refused.returncode == 2
    assert refused.stderr.startswith(
        'error[invalid_template]: template "research" is invalid: (notify) unknown_tool — '
    )
    not_json = orch("template", "instantiate", "research", "--args", "{nope", *_flags(store),
                    store=store, check=False)
    assert not_json.returncode == 2 and not_json.stderr.startswith("error[bad_args]: ")


@pytest.mark.asyncio
async def test_mcp_serves_a_tier_over_stdio(store: Path) -> None:
    """An MCP client launches `orch mcp`, lists the front tier and instantiates a template."""
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=ORCH,
        args=["mcp", "--tier", "front", "--actor", "desk", *_flags(store)],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    async with Client(params, mode="legacy") as client:
        listed = await client.list_tools()
        made = await client.call_tool(
            "instantiate_plan", {"template": "research", "args": json.loads(ARGS)}
        )
    assert [t.name for t in listed.tools] == [
        "list_templates", "instantiate_plan", "author_plan", "plan_outline", "plan_read",
        "submit_plan",
    ]
    assert not made.is_error
    plan_id = made.structured_content["data"]["planId"]  # type: ignore[index]
    plans = orch_json("plan", "list", store=store)["plans"]
    assert [p["planId"] for p in plans] == [plan_id]
    assert plans[0]["provenance"] == {"kind": "template", "template": "research",
                                      "args": json.loads(ARGS)}


def test_mcp_refuses_to_start_without_an_allowlist(store: Path) -> None:
    """A refusal to start goes to stderr with its code; stdout stays clean for the protocol."""
    result = orch("mcp", "--store", str(store), store=store, check=False)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("error[tools_required]: ")
