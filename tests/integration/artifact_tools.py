"""Tools that return artifacts, for the reason/transform integration tests and their drills.

``json.report`` and ``md.notes`` spool through ``context.spool`` (the worker's spool store);
``vault.report`` writes to a store of its own whose tag no worker registers, which is how a
missing resolver is produced for real; ``ledger.wait`` records each attempt in an external
ledger and works for ``seconds`` on the first attempt only, so a drill can kill its worker
mid-call and see the retry.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from typing import Any

from orchestration.artifacts import FileSpoolStore, SpooledJsonArtifact, SpooledMarkdownArtifact
from orchestration.tools.contracts import ArtifactReturn
from orchestration.tools.toolbox import Toolbox, ToolContext

from . import drill_tools

TOOLBOX = Toolbox()

FILES = [
    {"name": "a.txt", "size": 4},
    {"name": "b.txt", "size": 40},
    {"name": "c.md", "size": 400},
]

NOTES = """---
owner: ops
---
# Release

Status: red (two blockers)

## Blockers

- the [migration](https://example.org/m) is slow
- the cache is cold
"""


@TOOLBOX.tool("json.report", returns=ArtifactReturn(SpooledJsonArtifact))
def json_report(context: ToolContext, label: str = "report") -> dict[str, Any]:
    """A JSON report of three files, spooled; ``count`` is how many, ``at`` when."""
    data = json.dumps({"label": label, "files": FILES}).encode()
    return {
        "artifact": context.spool.put(data, SpooledJsonArtifact),
        "count": len(FILES),
        "at": dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    }


@TOOLBOX.tool("md.notes", returns=ArtifactReturn(SpooledMarkdownArtifact))
def md_notes(context: ToolContext) -> SpooledMarkdownArtifact:
    """Release notes with front matter, as a Markdown artifact."""
    return context.spool.put(NOTES.encode(), SpooledMarkdownArtifact)


@TOOLBOX.tool("vault.report", returns=ArtifactReturn(SpooledJsonArtifact))
def vault_report(folder: str) -> dict[str, Any]:
    """A JSON report written to a 'vault' store whose resolver no worker registers."""
    art = FileSpoolStore(folder, tag="vault").put(b'{"secret": 1}', SpooledJsonArtifact)
    return {"artifact": art, "count": 1}


@TOOLBOX.tool("ledger.wait")
async def ledger_wait(ledger: str, seconds: float, context: ToolContext) -> dict[str, Any]:
    """Record 'started', wait ``seconds`` on the first attempt only, record 'done'."""
    first = not any(
        k == context.idempotency_key and e == "started" for k, e in drill_tools.rows(ledger)
    )
    drill_tools.record(ledger, context.idempotency_key, "started")
    if first:
        for _ in range(int(seconds * 10)):
            await asyncio.sleep(0.1)
            context.heartbeat()
    drill_tools.record(ledger, context.idempotency_key, "done")
    return {"value": context.node_id}


@TOOLBOX.tool("stamp")
def stamp(context: ToolContext, **args: Any) -> dict[str, Any]:
    """The calling node's id."""
    return {"value": context.node_id}
