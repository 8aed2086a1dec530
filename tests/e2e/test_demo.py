"""The README's main job, run as a new user would: `orch demo` end to end."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from .cli import ORCH


def test_demo_runs_the_whole_story(tmp_path: Path) -> None:
    """The demo authors, diffs, freezes, renders, approves, runs once and refuses a second run."""
    result = subprocess.run(
        [ORCH, "demo", "--data", str(tmp_path / "demo")],
        capture_output=True,
        text=True,
        timeout=240,
    )
    out = result.stdout
    assert result.returncode == 0, result.stderr + out
    for marker in (
        "frozen: the plan is now reviewable",
        "Total authority requested (the approval binds exactly this set)",
        "approved digest",
        "run settled: completed",
        "a second run is refused: [run_already_claimed]",
    ):
        assert marker in out, marker
    digest = re.search(r"approved digest ([0-9a-f]{64})", out)
    assert digest and f"digest: {digest.group(1)}" in out
    report = tmp_path / "demo" / "workspace" / "report.txt"
    assert report.read_text().splitlines() == [
        "invoice-001.txt",
        "invoice-002.txt",
        "notes.md",
        "orders.sqlite3",
    ]


def test_demo_runs_with_encrypted_payloads(tmp_path: Path) -> None:
    """`orch demo --encrypt` runs the same story with every Temporal payload encrypted."""
    result = subprocess.run(
        [ORCH, "demo", "--data", str(tmp_path / "demo"), "--encrypt"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr + result.stdout
    assert "payloads are encrypted (AES-GCM" in result.stdout
    assert "run settled: completed" in result.stdout
    assert "outputs:" in result.stdout  # the closed run's log was rebuilt through the codec
