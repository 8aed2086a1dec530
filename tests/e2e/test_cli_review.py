"""`orch plan freeze | render | outline | slice | approve`, run as subprocesses on a SQLite file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import TypeAdapter

from orchestration.types import PlanOp
from tests.unit.validation.helpers import author, call, every_kind_ops

from .cli import orch, orch_json

TOOLS = "tests.e2e.review_fixtures:TOOLS"
CELLS = "tests.e2e.review_fixtures:CELLS"


@pytest.fixture(autouse=True)
def importable_fixtures(monkeypatch: pytest.MonkeyPatch) -> None:
    """The subprocess imports the allowlist and cells from this checkout."""
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[2]))
    monkeypatch.delenv("ORCH_TOOLS", raising=False)
    monkeypatch.delenv("ORCH_CELLS", raising=False)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "plans.sqlite3"


def _plan(tmp_path: Path, store: Path, ops: list[PlanOp], plan_id: str = "p1") -> None:
    path = tmp_path / f"{plan_id}.json"
    path.write_bytes(TypeAdapter(list[PlanOp]).dump_json(ops))
    orch("plan", "new", plan_id, store=store)
    orch("plan", "apply", plan_id, str(path), store=store)


def test_freeze_render_and_approve_by_the_typed_digest(tmp_path: Path, store: Path) -> None:
    """An operator freezes, reads the prose and its digest, and approves by typing it."""
    _plan(tmp_path, store, every_kind_ops())
    frozen = orch("plan", "freeze", "p1", "--tools", TOOLS, "--cells", CELLS, store=store)
    assert "p1 is reviewable" in frozen.stdout
    rendered = orch("plan", "render", "p1", "--tools", TOOLS, "--cells", CELLS, store=store)
    digest = next(line.split(": ")[1] for line in rendered.stdout.splitlines()
                  if line.startswith("digest: "))
    assert "9. TRANSFORM `extract`" in rendered.stdout and "Issues: none." in rendered.stdout

    wrong = orch("plan", "approve", "p1", "--digest", "0" * 64, "--by", "alice", store=store,
                 check=False)
    assert wrong.returncode == 2
    assert wrong.stderr.startswith("error[digest_mismatch]: (unknown_digest) ")
    assert digest in wrong.stderr
    assert orch_json("plan", "list", store=store)["plans"][0]["state"] == "reviewable"

    approved = orch_json("plan", "approve", "p1", "--digest", digest.upper(), "--by", "alice",
                         "--at", "2026-01-01T00:00:00Z", store=store)
    record = approved.pop("approval")
    assert approved == {"ok": True, "planId": "p1", "digest": digest, "revision": 30}
    assert record["digest"] == digest and record["decidedBy"] == "alice"
    assert record["decidedAt"] == "2026-01-01T00:00:00Z" and record["planId"] == "p1"
    again = orch("plan", "approve", "p1", "--digest", digest, "--by", "bob", store=store,
                 check=False)
    assert again.returncode == 2
    assert again.stderr.startswith("error[state_mismatch]: (not_reviewable) ")
    as_json = orch("plan", "approve", "p1", "--digest", digest, "--by", "bob", "--json",
                   store=store, check=False)
    assert as_json.returncode == 2
    document = json.loads(as_json.stdout)
    assert document["ok"] is False and document["error"]["code"] == "state_mismatch"
    refusal = document["refusal"]
    assert {k: refusal[k] for k in ("ok", "reason", "cause", "actual")} == {
        "ok": False,
        "reason": "state_mismatch",
        "cause": "not_reviewable",
        "actual": {"state": "executable", "digest": digest},
    }


def test_freeze_with_blocking_issues_refuses_and_prints_them(tmp_path: Path, store: Path) -> None:
    """A plan with blocking issues stays editable; each issue and the refusal are printed."""
    a = author()
    _plan(tmp_path, store, [a.entry(), call(a, "x", authority=[]), a.edge("entry", "x")])
    result = orch("plan", "freeze", "p1", "--tools", TOOLS, "--strict-authority", store=store,
                  check=False)
    assert result.returncode == 2
    assert "[blocking] missing_authority (node x)" in result.stdout
    assert result.stderr.startswith("error[freeze_refused]: 1 blocking issue(s)")
    # --tools may also name a factory returning plain tool names; the env sets strictness too.
    as_json = orch("plan", "freeze", "p1", "--tools", "tests.e2e.review_fixtures:tool_names",
                   "--json", store=store, check=False, env={"ORCH_STRICT_AUTHORITY": "1"})
    body = json.loads(as_json.stdout)
    assert body["ok"] is False and [i["code"] for i in body["issues"]] == ["missing_authority"]
    assert body["error"]["code"] == "freeze_refused"  # one document: the error and its issues
    needs_tools = orch("plan", "freeze", "p1", store=store, check=False)
    assert needs_tools.stderr.startswith("error[tools_required]: ")


def test_a_call_claiming_no_authority_freezes_with_an_advisory(
    tmp_path: Path, store: Path
) -> None:
    """By default missing_authority is advisory: the plan freezes and the render marks the call."""
    a = author()
    _plan(tmp_path, store, [a.entry(), call(a, "x", authority=[]), a.edge("entry", "x")])
    loose = orch("plan", "freeze", "p1", "--tools", TOOLS, "--no-strict-authority",
                 store=store, env={"ORCH_STRICT_AUTHORITY": "1"})
    assert "p1 is reviewable" in loose.stdout
    assert "[advisory] missing_authority (node x)" in loose.stdout
    rendered = orch("plan", "render", "p1", "--tools", TOOLS, store=store)
    assert "authority: (none claimed)" in rendered.stdout
    assert "NO AUTHORITY CLAIMED — whether this changes anything is UNKNOWN." in rendered.stdout
    bad_env = orch("plan", "freeze", "p1", "--tools", TOOLS, store=store, check=False,
                   env={"ORCH_STRICT_AUTHORITY": "maybe"})
    assert bad_env.returncode == 2 and bad_env.stderr.startswith("error[bad_env]: ")


def test_outline_and_slice_read_as_json(tmp_path: Path, store: Path) -> None:
    """The outline lists phases with verbatim ids; a slice carries its boundary."""
    _plan(tmp_path, store, every_kind_ops())
    outline = orch_json("plan", "outline", "p1", "--tools", TOOLS, "--cells", CELLS, store=store)
    assert [p["phase"] for p in outline["phases"]] == ["intake", "gather", "decide", "report"]
    assert outline["state"] == "editable"
    sliced = orch_json("plan", "slice", "p1", "--phase", "decide", store=store)
    assert [n["id"] for n in sliced["nodes"]] == ["summarize", "gate"]
    assert sliced["boundary"] == {"incoming": ["both"], "outgoing": ["read_doc", "skip_note"]}
    missing = orch("plan", "slice", "p1", "--node", "nope", store=store, check=False)
    assert missing.returncode == 2 and missing.stderr.startswith("error[unknown_node]: ")
