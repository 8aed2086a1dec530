"""An example toolbox that does real local work: files and SQLite.

``files.stats`` shows the artifact path: its result (every file's size and line count, as
JSON) is spooled through ``context.spool`` and the run keeps only the handle; a ``transform``
node reads the slice it needs with the JSON artifact's methods.

Each tool checks the scope of what it touches against the calling node's approved claims
(``context.allows``), so approval is enforced where the side effect happens, and writes are
idempotent per frame (a retried write of the same frame does not write twice).

Run a worker with it: ``python -m workers --toolbox workers.example_tools:TOOLBOX``.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from pathlib import Path
from typing import Any

from orchestration.artifacts import SpooledJsonArtifact
from orchestration.tools.contracts import ArtifactReturn
from orchestration.tools.toolbox import Toolbox, ToolContext

__all__ = ["TOOLBOX", "ScopeError"]

TOOLBOX = Toolbox()


class ScopeError(PermissionError):
    """The call reached outside what its node was approved for."""

    non_retryable = True


def _require(context: ToolContext, capability: str, verb: Any, scope: str) -> None:
    if not context.allows(capability, verb, scope):
        raise ScopeError(
            f"node {context.node_id!r} is not approved to {verb} {capability}:{scope}; "
            "claim that scope in the plan and re-approve it"
        )


@TOOLBOX.tool("files.list", requires=[("files", "list")])
def list_files(dir: str, context: ToolContext) -> dict[str, Any]:
    """List the file names in a folder (sorted); ``count`` and newline-joined ``names``."""
    _require(context, "files", "list", dir)
    folder = Path(dir)
    names = sorted(p.name for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []
    return {"count": len(names), "names": "\n".join(names)}


@TOOLBOX.tool(
    "files.stats",
    returns=ArtifactReturn(SpooledJsonArtifact),
    requires=[("files", "list")],
)
def file_stats(dir: str, context: ToolContext) -> dict[str, Any]:
    """Describe every file in a folder as a JSON artifact; ``count`` is the number of files.

    The artifact is ``{dir, files: [{name, suffix, size, lines}]}``, names sorted.
    """
    _require(context, "files", "list", dir)
    folder = Path(dir)
    files = []
    for path in sorted(folder.iterdir()) if folder.is_dir() else []:
        if not path.is_file():
            continue
        data = path.read_bytes()
        files.append(
            {
                "name": path.name,
                "suffix": path.suffix,
                "size": len(data),
                "lines": data.count(b"\n") if b"\0" not in data else 0,
            }
        )
    document = json.dumps({"dir": str(folder), "files": files}, indent=2).encode()
    return {"artifact": context.spool.put(document, SpooledJsonArtifact), "count": len(files)}


@TOOLBOX.tool("files.write", requires=[("files", "create")])
def write_file(path: str, text: str, context: ToolContext) -> dict[str, Any]:
    """Write ``text`` to ``path`` atomically; a retry of the same frame rewrites the same bytes."""
    _require(context, "files", "create", path)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    token = hashlib.sha256(context.idempotency_key.encode()).hexdigest()[:16]
    temporary = target.with_name(f".{target.name}.{token}")
    temporary.write_text(text)
    os.replace(temporary, target)
    return {"path": str(target)}


@TOOLBOX.tool("sqlite.query", requires=[("sqlite", "read")])
def query(db: str, sql: str, context: ToolContext) -> dict[str, Any]:
    """Run one read-only SELECT and return its first row as fields."""
    _require(context, "sqlite", "read", Path(db).stem)
    if not sql.lstrip().lower().startswith("select"):
        raise ScopeError("sqlite.query runs SELECT statements only; use another tool to write")
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        conn.row_factory = sqlite3.Row
        row = conn.execute(sql).fetchone()
    return {} if row is None else dict(row)


@TOOLBOX.tool("text.upper", short=True)
def upper(s: str) -> str:
    """Upper-case a string (short: its replay-safe calls run as local activities)."""
    return s.upper()
