"""Run the real ``orch`` console script as a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ORCH = str(Path(sys.executable).parent / "orch")


def orch(
    *args: str,
    store: Path,
    check: bool = True,
    stdin: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run ``orch ARGS --store STORE`` and return the finished process."""
    full = [ORCH, *args]
    if "--store" not in args and args and args[0] == "plan":
        full += ["--store", str(store)]
    result = subprocess.run(
        full,
        capture_output=True,
        text=True,
        input=stdin,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )
    if check and result.returncode != 0:
        raise AssertionError(f"orch {' '.join(args)} exited {result.returncode}:\n{result.stderr}")
    return result


def orch_json(*args: str, store: Path) -> Any:
    """Run a read command with ``--json`` and parse its one JSON document."""
    return json.loads(orch(*args, "--json", store=store).stdout)
