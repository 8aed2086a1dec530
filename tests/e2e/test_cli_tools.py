"""`orch tools list`: each allowed tool with its signature, what it returns and its schemas."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .cli import orch

TOOLBOX = "workers.example_tools:TOOLBOX"


@pytest.fixture(autouse=True)
def importable_fixtures(monkeypatch: pytest.MonkeyPatch) -> None:
    """The subprocess imports the allowlists from this checkout."""
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[2]))
    monkeypatch.delenv("ORCH_TOOLS", raising=False)


def test_tools_list_prints_each_signature(tmp_path: Path) -> None:
    """Text: one signature line per tool with its return, the description below it."""
    listed = orch("tools", "list", "--tools", TOOLBOX, store=tmp_path / "s.db")
    lines = listed.stdout.splitlines()
    assert lines[0] == "files.list(dir: string) -> text"
    assert lines[1].startswith("    List the file names in a folder")
    assert "files.stats(dir: string) -> artifact:json" in lines
    assert "files.write(path: string, text: string) -> text" in lines


def test_tools_list_json_carries_the_schemas(tmp_path: Path) -> None:
    """--json: the input schema of each tool; a name allowlist lists no shapes."""
    listed = orch("tools", "list", "--json", store=tmp_path / "s.db",
                  env={"ORCH_TOOLS": TOOLBOX})
    tools = {t["name"]: t for t in json.loads(listed.stdout)["tools"]}
    assert tools["sqlite.query"]["inputSchema"] == {
        "type": "object",
        "properties": {"db": {"type": "string"}, "sql": {"type": "string"}},
        "required": ["db", "sql"],
        "additionalProperties": False,
    }
    names = orch("tools", "list", "--json", "--tools", "tests.e2e.review_fixtures:tool_names",
                 store=tmp_path / "s.db")
    (bare, *_) = json.loads(names.stdout)["tools"]
    assert "inputSchema" not in bare and "signature" not in bare
    missing = orch("tools", "list", store=tmp_path / "s.db", check=False)
    assert missing.returncode == 2 and missing.stderr.startswith("error[tools_required]: ")
