"""`orch plan graph`: the plan as Mermaid, DOT or an SVG laid out by Graphviz."""

from __future__ import annotations

import json
from pathlib import Path

from .cli import orch, orch_json
from .test_cli_plan import OPS


def _plan(tmp_path: Path, store: Path) -> None:
    ops = tmp_path / "ops.json"
    ops.write_text(json.dumps(OPS))
    orch("plan", "new", "p1", store=store)
    orch("plan", "apply", "p1", str(ops), store=store)


def test_graph_in_each_format(tmp_path: Path) -> None:
    """Mermaid and DOT name every node; SVG is a drawing with the node ids in it."""
    store = tmp_path / "plans.sqlite3"
    _plan(tmp_path, store)
    mermaid = orch("plan", "graph", "p1", store=store).stdout
    assert mermaid.splitlines()[:3] == [
        "flowchart TD", '  n0(["entry<br/>entry"])', '  n1["shout<br/>call · text.upper"]']
    dot = orch("plan", "graph", "p1", "--format", "dot", store=store).stdout
    assert dot.startswith("digraph plan {") and "n0 -> n1;" in dot
    svg = tmp_path / "p1.svg"
    wrote = orch_json("plan", "graph", "p1", "--format", "svg", "-o", str(svg), store=store)
    assert wrote == {"planId": "p1", "format": "svg", "output": str(svg)}
    drawing = svg.read_text()
    assert "<svg" in drawing and ">shout</text>" in drawing and ">entry</text>" in drawing
