"""The README's Python examples run as written, in a fresh folder, as a reader would paste them."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _python_blocks() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_the_authoring_example_freezes_approves_and_runs(tmp_path: Path) -> None:
    """Authoring in Python: the plan freezes without issues, renders, approves and runs once."""
    (block,) = [b for b in _python_blocks() if 'PlanAuthor("planner")' in b]
    (tmp_path / ".data").mkdir()
    script = tmp_path / "example.py"
    script.write_text(block)
    result = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "()", result.stdout  # no issues
    assert "Total authority requested" in result.stdout
    assert "completed" in lines[-1] and "HELLO" in lines[-1], lines[-1]


def test_the_agent_example_instantiates_and_submits(tmp_path: Path) -> None:
    """For agents: a template instantiated through the forged tools and submitted for review."""
    (block,) = [b for b in _python_blocks() if "call_tool(tools" in b]
    (tmp_path / ".data").mkdir()
    script = tmp_path / "agent.py"
    script.write_text(block)
    result = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr
    assert "is submitted: frozen for review" in result.stdout, result.stdout
    assert "It is NOT approved" in result.stdout
