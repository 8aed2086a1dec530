"""Every `orch` command answers bad input with one `error[code]` line, never a traceback.

The commands are enumerated from the argparse tree, so a new command fails
`test_every_command_has_a_bad_input_case` until it gets a case here.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from orchestration.cli import build_parser

from .cli import ORCH

UNREACHABLE = ["--address", "127.0.0.1:1"]
"""A Temporal address nothing listens on: connecting is refused at once."""


def leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[
    tuple[tuple[str, ...], argparse.ArgumentParser]
]:
    """Every runnable command of the tree, with its parser."""
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not actions:
        yield path, parser
        return
    for action in actions:
        for name, sub in action.choices.items():
            yield from leaves(sub, (*path, name))


COMMANDS = dict(leaves(build_parser()))


def cases(tmp: Path) -> dict[tuple[str, ...], tuple[list[str], str, int]]:
    """Per command: arguments that are wrong for a reason of its own, the code, the status."""
    store = ["--store", str(tmp / "plans.sqlite3")]
    return {
        ("plan", "new"): (["plan", "new", "p", *store], "duplicate_id", 2),
        ("plan", "apply"): (["plan", "apply", "p", "/nonexistent.json", *store],
                            "file_unreadable", 2),
        ("plan", "show"): (["plan", "show", "missing", *store], "plan_not_found", 2),
        ("plan", "ops"): (["plan", "ops", "missing", *store], "plan_not_found", 2),
        ("plan", "diff"): (["plan", "diff", "p", "x", *store], "bad_revision", 2),
        ("plan", "list"): (["plan", "list", "--store", str(tmp)], "store_unavailable", 3),
        ("plan", "clone"): (["plan", "clone", "missing", *store], "source_missing", 2),
        ("plan", "graph"): (["plan", "graph", "missing", *store], "plan_not_found", 2),
        ("plan", "freeze"): (["plan", "freeze", "p", *store], "tools_required", 2),
        ("plan", "render"): (["plan", "render", "missing", *store], "plan_not_found", 2),
        ("plan", "outline"): (["plan", "outline", "missing", *store], "plan_not_found", 2),
        ("plan", "slice"): (["plan", "slice", "p", "--node", "nope", *store], "unknown_node", 2),
        ("plan", "approve"): (["plan", "approve", "p", "--digest", "00", "--by", "x", *store],
                              "state_mismatch", 2),
        ("template", "list"): (["template", "list", *store], "tools_required", 2),
        ("template", "instantiate"): (["template", "instantiate", "t", "--tools", "nosuch.m:X",
                                       *store], "bad_import_spec", 2),
        ("run", "start"): (["run", "start", "p", "--input", "[1", *store], "bad_input", 2),
        ("run", "resume"): (["run", "resume", "p", *UNREACHABLE, *store],
                            "temporal_unreachable", 3),
        ("run", "input"): (["run", "input", "p", "--input", "[1", *store], "bad_input", 2),
        ("run", "list"): (["run", "list", "--limit", "0", *store], "bad_limit", 2),
        ("tools", "list"): (["tools", "list", "--tools", "nosuch.m:X"], "bad_import_spec", 2),
        ("run", "watch"): (["run", "watch", "p", *UNREACHABLE, *store],
                           "temporal_unreachable", 3),
        ("run", "show"): (["run", "show", "p", *UNREACHABLE, *store], "temporal_unreachable", 3),
        ("run", "log"): (["run", "log", "p", *UNREACHABLE, *store], "temporal_unreachable", 3),
        ("run", "stop"): (["run", "stop", "p", *UNREACHABLE, *store], "temporal_unreachable", 3),
        ("run", "resolve"): (["run", "resolve", "p", "k", "retry", *UNREACHABLE, *store],
                             "temporal_unreachable", 3),
        ("run", "graph"): (["run", "graph", "p", *UNREACHABLE, *store],
                           "temporal_unreachable", 3),
        ("run", "gates"): (["run", "gates", "p", *store], "run_not_found", 2),
        ("run", "decide"): (["run", "decide", "p", "k", "approve", "--args", "[1", *UNREACHABLE,
                             *store], "bad_input", 2),
        ("run", "answer"): (["run", "answer", "p", "k", "--json", "{bad", *UNREACHABLE, *store],
                            "bad_input", 2),
        ("dev",): (["dev", "--toolbox", "nosuch.m:X", "--data", str(tmp / "dev")],
                   "bad_import_spec", 2),
        ("mcp",): (["mcp", "--tools", "nosuch.m:X", *store], "bad_import_spec", 2),
        ("replay-check",): (["replay-check", *UNREACHABLE, *store], "temporal_unreachable", 3),
        ("schema",): (["schema", "--check", "--write", str(tmp / "none.json")],
                      "schema_drift", 2),
        ("demo",): (["demo", "--data", str(tmp / "plans.sqlite3")], "path_unusable", 2),
    }


def run(args: list[str], *, json_mode: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ORCH_", "TEMPORAL_"))}
    return subprocess.run([ORCH, *args, *(["--json"] if json_mode else [])],
                          capture_output=True, text=True, timeout=120, env=env)


def assert_refused(result: subprocess.CompletedProcess[str], code: str, status: int,
                   json_mode: bool) -> None:
    what = f"{result.args}: rc {result.returncode}\n{result.stdout}\n{result.stderr}"
    assert "Traceback" not in result.stderr + result.stdout, what
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error[{code}]: "), what
    assert result.returncode == status, what
    if json_mode:
        body = json.loads(result.stdout)
        assert body["ok"] is False and body["error"]["code"] == code, what
        assert body["error"]["message"], what


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("errors")
    created = run(["plan", "new", "p", "--store", str(tmp / "plans.sqlite3")], json_mode=False)
    assert created.returncode == 0, created.stderr
    return tmp


def test_every_command_has_a_bad_input_case(workdir: Path) -> None:
    """The case table covers exactly the commands the parser has."""
    assert set(cases(workdir)) == set(COMMANDS)


def test_every_command_refuses_its_bad_input_with_one_line(workdir: Path) -> None:
    """Each command's own bad input: its code and status, one line, JSON under --json."""
    table = cases(workdir)
    jobs = [(path, json_mode) for path in sorted(table) for json_mode in (False, True)
            if json_mode is False or "--json" in COMMANDS[path]._option_string_actions]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda job: run(table[job[0]][0], json_mode=job[1]), jobs))
    for (path, json_mode), result in zip(jobs, results, strict=True):
        _, code, status = table[path]
        assert_refused(result, code, status, json_mode)


def test_every_command_refuses_an_unknown_flag_as_a_usage_error(workdir: Path) -> None:
    """argparse's usage errors are refusals too: one line, status 2, JSON under --json."""
    paths = sorted(COMMANDS)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(
            lambda path: run([*path, "--no-such-flag"], json_mode=True), paths))
    for result in results:
        assert_refused(result, "usage", 2, json_mode=True)


def test_run_list_refuses_a_bad_page_filter_or_cursor(workdir: Path) -> None:
    """`run list`: a page size out of range or not a number, an outcome that is none, a
    cursor that names no plan with a run (an unknown id, a plan never run, an empty id)."""
    store = ["--store", str(workdir / "plans.sqlite3")]
    table = [
        (["--limit", "0"], "bad_limit"),
        (["--limit", "1001"], "bad_limit"),
        (["--limit", "-5"], "bad_limit"),
        (["--limit", "ten"], "usage"),
        (["--outcome", "finished"], "usage"),
        (["--after", "ghost"], "bad_cursor"),
        (["--after", "p"], "bad_cursor"),
        (["--after", ""], "bad_cursor"),
    ]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(
            lambda case: run(["run", "list", *case[0], *store], json_mode=True), table))
    for (_, code), result in zip(table, results, strict=True):
        assert_refused(result, code, 2, json_mode=True)
    assert "--after" in results[5].stderr and "previous page" in results[5].stderr


def test_op_files_that_cannot_be_read(workdir: Path) -> None:
    """Missing, nested 100,000 deep, or not UTF-8: each a refusal naming the file."""
    deep = workdir / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    latin = workdir / "latin.json"
    latin.write_bytes(b'[{"op": "caf\xe9"}]')
    folder = workdir / "folder"
    folder.mkdir()
    store = ["--store", str(workdir / "plans.sqlite3")]
    for path, code in ((deep, "bad_ops_file"), (latin, "not_utf8"),
                       (folder, "file_unreadable")):
        result = run(["plan", "apply", "p", str(path), *store], json_mode=True)
        assert_refused(result, code, 2, json_mode=True)
        assert str(path) in result.stderr


def test_a_closed_stdout_ends_quietly_with_141(workdir: Path) -> None:
    """`orch ... | head` that stops reading: status 141, and nothing on stderr."""
    proc = subprocess.Popen([ORCH, "plan", "ops", "p", "--json", "--store",
                             str(workdir / "plans.sqlite3")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141, err
    assert err == ""


def test_version_and_the_exit_status_table() -> None:
    """`orch --version` names the package version; `orch --help` documents every status."""
    version = subprocess.run([ORCH, "--version"], capture_output=True, text=True, timeout=60)
    assert version.returncode == 0 and version.stdout.startswith("orch 0.")
    helped = subprocess.run([ORCH, "--help"], capture_output=True, text=True, timeout=60)
    assert "exit status:" in helped.stdout
    for status in ("0 ", "1 ", "2 ", "3 ", "4 ", "5 ", "6 ", "7 ", "130 ", "141 "):
        assert f"  {status}" in helped.stdout or f" {status.strip()}  " in helped.stdout


def test_gate_commands_refuse_bad_decisions_before_connecting(workdir: Path) -> None:
    """`run decide` and `run answer`: arguments given twice, a rejection with arguments, a
    response given twice or not at all, a response that is not JSON: each refused at once."""
    store = ["--store", str(workdir / "plans.sqlite3"), *UNREACHABLE]
    args = workdir / "args.json"
    args.write_text('{"s": "x"}')
    table = [
        (["run", "decide", "p", "k", "approve", "--args", "{}", "--args-file", str(args)],
         "bad_input", "not both"),
        (["run", "decide", "p", "k", "reject", "--args", "{}"], "bad_input", "drop --args"),
        (["run", "decide", "p", "k", "approve", "--args", "[1, 2]"], "bad_input", "JSON object"),
        (["run", "answer", "p", "k", "--json", "1", "--file", str(args)], "bad_input",
         "not both"),
        (["run", "answer", "p", "k", "--file", str(workdir / "missing.json")],
         "file_unreadable", "missing.json"),
        (["run", "decide", "p", "k", "maybe"], "usage", "invalid choice"),
    ]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda case: run([*case[0], *store], json_mode=False), table))
    for (_, code, says), result in zip(table, results, strict=True):
        assert_refused(result, code, 2, json_mode=False)
        assert says in result.stderr, result.stderr

