"""The `orch plan` commands, run as subprocesses against a real SQLite store file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .cli import orch, orch_json

OPS = [
    {
        "op": "add_node",
        "node": {
            "id": "entry",
            "kind": "entry",
            "definition": {"input": [{"path": "city", "type": "string"}]},
        },
    },
    {
        "op": "add_node",
        "node": {
            "id": "shout",
            "kind": "call",
            "definition": {
                "tool": "text.upper",
                "args": {"s": {"$ref": {"node": "entry", "path": "city"}}},
                "output": [{"path": "value", "type": "string"}],
                "onMissingValue": "fail",
                "authority": [{"capability": "text", "scope": "*", "verb": "read"}],
                "replaySafe": True,
                "onIndeterminate": "retry",
            },
        },
    },
    {"op": "add_edge", "edge": {"id": "e0", "from": "entry", "to": "shout", "handle": "always"}},
]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "plans.sqlite3"


@pytest.fixture
def ops_file(tmp_path: Path) -> Path:
    path = tmp_path / "ops.json"
    path.write_text(json.dumps(OPS))
    return path


def test_new_apply_show_round_trip(store: Path, ops_file: Path) -> None:
    """A plan made from an op file without identity folds to the authored nodes and refs."""
    assert orch_json("plan", "new", "p1", "--label", "demo", store=store)["revision"] == 0
    applied = orch_json("plan", "apply", "p1", str(ops_file), store=store)
    assert applied["revision"] == 3
    shown = orch_json("plan", "show", "p1", store=store)
    assert [n["id"] for n in shown["view"]["nodes"]] == ["entry", "shout"]
    assert shown["view"]["nodes"][1]["definition"]["args"]["s"] == {
        "$ref": {"node": "entry", "select": "first", "path": "city"}
    }
    assert shown["view"]["digest"] == applied["digest"]
    ops = orch_json("plan", "ops", "p1", store=store)
    assert [op["lamport"] for op in ops] == [1, 2, 3]
    assert {op["actorId"] for op in ops} == {"cli"}
    listing = orch_json("plan", "list", store=store)
    assert listing["next"] is None
    assert [(p["planId"], p["state"], p["label"]) for p in listing["plans"]] == [
        ("p1", "editable", "demo")
    ]


def test_stale_expected_revision_is_refused_with_the_fix(store: Path, ops_file: Path) -> None:
    """A stale --expected-revision exits non-zero naming the code and what to do."""
    orch("plan", "new", "p1", store=store)
    orch("plan", "apply", "p1", str(ops_file), store=store)
    result = orch(
        "plan", "apply", "p1", str(ops_file), "--expected-revision", "0", store=store, check=False
    )
    assert result.returncode == 2
    assert "error[revision_moved]" in result.stderr and "re-apply" in result.stderr
    assert orch_json("plan", "show", "p1", store=store)["view"]["revision"] == 3


def test_bad_op_file_is_refused_and_nothing_is_written(store: Path, tmp_path: Path) -> None:
    """An invalid op file is refused with its location, and the store is unchanged."""
    orch("plan", "new", "p1", store=store)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([OPS[0], {"op": "add_edge", "edge": {"id": "x"}}]))
    result = orch("plan", "apply", "p1", str(bad), store=store, check=False)
    assert result.returncode == 2 and "error[invalid_op]" in result.stderr
    assert "1.add_edge.edge" in result.stderr
    assert orch_json("plan", "show", "p1", store=store)["view"]["revision"] == 0
    not_json = tmp_path / "nope.json"
    not_json.write_text("{")
    assert (
        "error[bad_ops_file]"
        in orch("plan", "apply", "p1", str(not_json), store=store, check=False).stderr
    )


def test_clone_and_history(store: Path, ops_file: Path) -> None:
    """show --revision folds a prefix; clone copies the log into a new editable plan."""
    orch("plan", "new", "p1", store=store)
    orch("plan", "apply", "p1", str(ops_file), store=store)
    first = orch_json("plan", "show", "p1", "--revision", "1", store=store)["view"]
    assert [n["id"] for n in first["nodes"]] == ["entry"] and first["revision"] == 1
    cloned = orch_json("plan", "clone", "p1", "p2", store=store)
    assert cloned["planId"] == "p2"
    shown = orch_json("plan", "show", "p2", store=store)["view"]
    assert shown["provenance"]["kind"] == "clone" and shown["provenance"]["parent"] == "p1"
    missing = orch("plan", "clone", "nope", store=store, check=False)
    assert "error[source_missing]" in missing.stderr


def test_schema_check_passes_on_a_clean_checkout(store: Path) -> None:
    """`orch schema --check` confirms the checked-in schema matches the models."""
    assert "matches" in orch("schema", "--check", store=store).stdout
    printed = json.loads(orch("schema", store=store).stdout)
    assert "PlanOp" in printed["$defs"]


def test_plan_list_pages_by_the_last_plan_id(store: Path) -> None:
    """`--limit` cuts the listing and prints the next page's command; `--after` follows it.

    Under --json the cursor is `next` (null on the last page); a cursor naming no plan and a
    page size out of range are refusals naming the fix.
    """
    for plan_id in ("p1", "p2", "p3", "p4", "p5"):
        orch("plan", "new", plan_id, store=store)
    first = orch("plan", "list", "--limit", "2", store=store).stdout.splitlines()
    assert [line.split()[0] for line in first[:2]] == ["p1", "p2"]
    assert first[2] == "next page: orch plan list --limit 2 --after p2"
    second = orch_json("plan", "list", "--limit", "2", "--after", "p2", store=store)
    assert [p["planId"] for p in second["plans"]] == ["p3", "p4"] and second["next"] == "p4"
    last = orch_json("plan", "list", "--limit", "2", "--after", "p4", store=store)
    assert [p["planId"] for p in last["plans"]] == ["p5"] and last["next"] is None
    assert orch("plan", "list", "--after", "p5", store=store).stdout == "(no plans)\n"
    for args, code in ((["--after", "ghost"], "bad_cursor"), (["--limit", "0"], "bad_limit")):
        refused = orch("plan", "list", *args, store=store, check=False)
        assert refused.returncode == 2 and refused.stderr.startswith(f"error[{code}]: ")
        assert len(refused.stderr.splitlines()) == 1
