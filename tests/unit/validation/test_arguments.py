"""Call arguments are checked against the tool's shape at freeze, each issue naming the fix."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from orchestration.api import create_orchestration
from orchestration.plan.authoring import PlanAuthor, claim, ref, text
from orchestration.store.memory import MemoryPlanStore
from orchestration.tools.allowlist import ToolAllowlist
from orchestration.tools.toolbox import Toolbox, ToolContext
from orchestration.types import EnumField, NumberField, PlanOp, StringField
from workers.example_tools import TOOLBOX

from .helpers import SAFE, author, check, codes, only


def _tools() -> Toolbox:
    tools = Toolbox()

    @tools.tool("report.write")
    def write(path: str, lines: int, context: ToolContext, when: dt.datetime | None = None,
              mode: str = "w") -> dict[str, Any]:
        return {}

    @tools.tool("stamp")
    def stamp(**args: Any) -> dict[str, Any]:
        return {}

    return tools


def _plan(a: PlanAuthor, tool: str, args: dict[str, Any], **extra: Any) -> list[PlanOp]:
    return [
        a.entry(input=[StringField(path="s"), NumberField(path="n"),
                       EnumField(path="level", values=("1", "2"))]),
        a.call("work", tool=tool, args=args, authority=[claim("files", "out", "create")],
               **{**SAFE, **extra}),
        a.edge("entry", "work"),
    ]


@pytest.mark.asyncio
async def test_a_misspelt_argument_of_files_list_is_refused_with_one_issue() -> None:
    """The example toolbox's files.list with `dirr`: one issue, naming the node and `dir`."""
    a = author()
    store = MemoryPlanStore()
    orch = await create_orchestration(store=store, invocable=TOOLBOX)
    await store.create_plan("p")
    await store.append_ops("p", [
        a.entry(),
        a.call("scan", tool="files.list", args={"dirr": "/tmp"},
               output=[NumberField(path="count")], authority=[claim("files", "/tmp", "list")],
               **SAFE),
        a.edge("entry", "scan"),
    ])
    result = await orch.freeze_plan("p")
    assert not result.ok
    (issue,) = result.issues
    assert (issue.code, issue.node_id, issue.severity) == ("unknown_argument", "scan", "blocking")
    assert 'did you mean "dir"? It is required and not set.' in issue.message
    assert "files.list(dir: string)" in issue.message
    assert (await store.read_state("p")).state == "editable"


def test_an_unknown_argument_without_a_close_name() -> None:
    """An argument far from every name is refused with what the tool takes."""
    issues = check(_plan(author(), "report.write", {"path": "x", "lines": 1, "zzz": 2}),
                   tools=_tools())
    issue = only(issues, "unknown_argument")
    assert "remove it, or pass one the tool takes." in issue.message
    assert "report.write(path: string, lines: integer, when?: string | null, mode?: string)" in (
        issue.message
    )


def test_a_missing_required_argument() -> None:
    """A required argument not staged is missing_argument, naming its type."""
    issue = only(check(_plan(author(), "report.write", {"path": "x"}), tools=_tools()),
                 "missing_argument")
    assert issue.node_id == "work" and '"lines"' in issue.message
    assert "requires (an integer); add it to args" in issue.message


def test_a_literal_of_the_wrong_type() -> None:
    """A literal the argument's schema refuses is argument_type, showing the value."""
    issue = only(check(_plan(author(), "report.write", {"path": 5, "lines": 1}), tools=_tools()),
                 "argument_type")
    assert 'passes 5 as argument "path"' in issue.message and "takes a string" in issue.message


def test_a_live_value_is_judged_by_the_annotation() -> None:
    """A datetime staged for a datetime argument fits; bytes for it do not."""
    when = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    fine = _plan(author(), "report.write", {"path": "x", "lines": 1, "when": when})
    assert check(fine, tools=_tools()) == []
    bad = _plan(author(), "report.write", {"path": "x", "lines": 1, "when": b"2026"})
    assert "a bytes" in only(check(bad, tools=_tools()), "argument_type").message


def test_a_reference_whose_field_type_never_fits() -> None:
    """A string field into an integer argument is refused; a number field fits."""
    a = author()
    bad = _plan(a, "report.write", {"path": "x", "lines": ref("entry", path="s")})
    issues = [i for i in check(bad, tools=_tools()) if i.code != "tainted_call_arg"]
    issue = only(issues, "argument_reference_type")
    assert 'field "s" of node "entry"' in issue.message
    assert "the field holds a string, and it takes an integer" in issue.message
    fits = _plan(author(), "report.write", {"path": "x", "lines": ref("entry", path="n")})
    assert "argument_reference_type" not in codes(check(fits, tools=_tools()))


def test_a_reason_field_is_typed_by_its_output_schema() -> None:
    """A reason node's top-level output property has a type too."""
    a = author()
    ops = [
        a.entry(),
        a.reason("think", prompt=[text("How many?")], max_attempts=1,
                 output_schema='{"type": "object", "properties": {"n": {"type": "boolean"}}}'),
        a.call("work", tool="report.write", args={"path": "x", "lines": ref("think", path="n")},
               authority=[claim("files", "out", "create")], **SAFE),
        a.edge("entry", "think"), a.edge("think", "work"),
    ]
    issue = only(check(ops, tools=_tools()), "argument_reference_type")
    assert "the field holds a boolean" in issue.message


def test_kwargs_tools_and_name_allowlists_are_not_checked() -> None:
    """A tool taking **kwargs accepts any name; a plain allowlist has no shapes to check."""
    assert check(_plan(author(), "stamp", {"anything": 1}), tools=_tools()) == []
    names = ToolAllowlist(["report.write"])
    assert check(_plan(author(), "report.write", {"zzz": 1}), tools=names) == []
