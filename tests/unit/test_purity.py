"""The pure core stays pure: no I/O, clock, randomness or Temporal activity code on import."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PURE = [
    "orchestration.run.engine.machine",
    "orchestration.run.engine.builders",
    "orchestration.run.engine.compiled",
    "orchestration.run.engine.state",
    "orchestration.run.engine.results",
    "orchestration.run.fold",
    "orchestration.run.resolve",
    "orchestration.run.inputs",
    "orchestration.run.tables",
    "orchestration.predicates.structured",
    # the CEL cell is evaluated inside workflow code
    "orchestration.predicates.cel",
    "orchestration.predicates.snapshot",
    "orchestration.run.routes",
    "orchestration.plan.encoding",
    "orchestration.types",
    "orchestration.plan.ops",
]

FORBIDDEN = [
    "sqlite3",
    "socket",
    "ssl",
    "random",
    "secrets",
    "uuid",
    "time",
    "asyncio",
    "threading",
    "subprocess",
    "http",
    "urllib",
    "lupa",
    "temporalio",
]

PROBE = """
import json, sys
import immutables, ormsgpack, pydantic, pydantic_core

class _Warm(pydantic.BaseModel):  # loads pydantic's own lazy machinery first
    x: int = 0

_Warm(x=1)
before = set(sys.modules)
for name in {modules!r}:
    __import__(name)
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def test_importing_the_pure_core_loads_no_impure_module() -> None:
    """Importing the engine, fold, cell and wire modules adds no I/O, clock or random module."""
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(modules=PURE)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    added = json.loads(result.stdout)
    offenders = [
        name
        for name in added
        if any(name == bad or name.startswith(bad + ".") for bad in FORBIDDEN)
    ]
    assert offenders == []


def _module_path(name: str) -> Path:
    path = ROOT / Path(*name.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


CLOCK_CALLS = {"now", "utcnow", "today", "time", "monotonic", "perf_counter", "getenv"}


def test_pure_modules_neither_import_nor_call_the_impure_by_name() -> None:
    """No pure module imports a forbidden module, reads the clock or the environment."""
    problems: list[str] = []
    for name in PURE:
        tree = ast.parse(_module_path(name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                targets = [node.module or ""]
            else:
                targets = []
            for target in targets:
                if any(target == bad or target.startswith(bad + ".") for bad in FORBIDDEN):
                    problems.append(f"{name} imports {target}")
            if isinstance(node, ast.Attribute) and node.attr in CLOCK_CALLS:
                problems.append(f"{name} uses .{node.attr} (line {node.lineno})")
            if isinstance(node, ast.Attribute) and node.attr == "environ":
                problems.append(f"{name} reads os.environ (line {node.lineno})")
    assert problems == []
