"""What every source-string cell (CEL, jexl, Lua) must do alike: load, validate, evaluate,
evidence for every verdict, and bounded work. One case table, one test per property."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

import pytest

from orchestration.predicates import (
    CelCell,
    JexlCell,
    LuaCell,
    PredicateLimitExceeded,
)
from orchestration.tools.contracts import BranchVerdict, ExplainingEvaluator, SelectVerdict

from .helpers import branch, context, select


@dataclass(frozen=True)
class Case:
    """One cell and the sources that exercise it."""

    cell: Any
    true: str  # a branch source that holds over CTX
    false: str  # one that does not
    label: str  # a select source naming "large"
    failing: str  # one that fails at run time
    syntax: str  # one that does not parse
    language: str  # as the cell's refusals name it
    runaway: str  # one past the cell's work ceiling
    blocked: tuple[str, ...]  # modules whose absence makes load() fail
    extra: str  # the install extra


CASES = {
    "cel": Case(
        CelCell(),
        "fetch.count >= 10 && entry.owner == 'ops'",
        "fetch.count > 100",
        "fetch.count > 10 ? 'large' : 'small'",
        "elsewhere.count > 1",
        "fetch.count >",
        "CEL",
        "fetch.rows.all(a, fetch.rows.all(b, fetch.rows.all(c, a.v + b.v + c.v >= 0)))",
        ("cel_expr_python",),
        "cel",
    ),
    "jexl": Case(
        JexlCell({"upper": str.upper}),
        "fetch.count >= 10 && entry.owner|upper == 'OPS'",
        "fetch.count > 100",
        "fetch.count > 10 ? 'large' : 'small'",
        "fetch.count + 'a'",
        "fetch.count >",
        "JEXL",
        "fetch.rows[.v > 0 && fetch.rows[.v > 0 && fetch.rows[.v > 0].v].v].v",
        ("pyjexl",),
        "jexl",
    ),
    "lua": Case(
        LuaCell(timeout_seconds=5.0),
        "return outputs.fetch.count >= 10 and outputs.entry.owner == 'ops'",
        "return outputs.fetch.count > 100",
        "return outputs.fetch.count > 10 and 'large' or 'small'",
        "error('no')",
        "return (",
        "Lua",
        "while true do end",
        ("lupa", "lupa.lua54"),
        "lua",
    ),
}
CELLS = sorted(CASES)
CTX = context(
    entry={"owner": "ops"},
    fetch={"count": 12, "rows": [{"v": i} for i in range(60)]},
)


def decide(case: Case, node: Any) -> Any:
    return case.cell.decide(node, CTX)


@pytest.mark.parametrize("cell_id", CELLS)
def test_load_without_the_package_names_the_install_command(cell_id: str) -> None:
    """load() raises E_ORCH_CELL_UNAVAILABLE with `pip install 'orchestration[<extra>]'`."""
    case = CASES[cell_id]
    blocked = "; ".join(f"sys.modules[{name!r}] = None" for name in case.blocked)
    probe = (
        f"import sys, asyncio; {blocked}\n"
        f"from orchestration.predicates import {type(case.cell).__name__} as Cell\n"
        "try:\n    asyncio.run(Cell().load())\n"
        "except Exception as e:\n    print(type(e).__name__, e.code, e.message)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert out.startswith("CellUnavailableError E_ORCH_CELL_UNAVAILABLE"), out
    assert f"pip install 'orchestration[{case.extra}]'" in out


@pytest.mark.parametrize("cell_id", CELLS)
def test_validate_accepts_source_and_refuses_the_rest(cell_id: str) -> None:
    """A source string that parses passes; a non-string, a syntax error and a select without
    cases are refused with the fix named."""
    case = CASES[cell_id]
    asyncio.run(case.cell.load())
    asyncio.run(case.cell.validate(branch(case.true, cell_id)))
    with pytest.raises(ValueError, match="SOURCE STRING"):
        asyncio.run(case.cell.validate(branch({"path": "x"}, cell_id)))
    with pytest.raises(ValueError, match=f"not valid {case.language}"):
        asyncio.run(case.cell.validate(branch(case.syntax, cell_id)))
    with pytest.raises(ValueError, match="declares no cases"):
        asyncio.run(case.cell.validate(select(case.label, cell_id, cases=())))


@pytest.mark.parametrize("cell_id", CELLS)
def test_branch_and_select_verdicts(cell_id: str) -> None:
    """A holding source matches, another does not; a select takes the label its source names."""
    case = CASES[cell_id]
    assert decide(case, branch(case.true, cell_id)).verdict == BranchVerdict(matched=True)
    assert decide(case, branch(case.false, cell_id)).verdict == BranchVerdict(matched=False)
    picked = decide(case, select(case.label, cell_id))
    assert picked.verdict == SelectVerdict(case_label="large")


@pytest.mark.parametrize("cell_id", CELLS)
def test_every_verdict_carries_evidence(cell_id: str) -> None:
    """A match and a no-match carry the value the source produced; a failure carries why."""
    case = CASES[cell_id]
    assert isinstance(case.cell, ExplainingEvaluator)
    hit = asyncio.run(case.cell.judge(branch(case.true, cell_id), CTX))
    miss = asyncio.run(case.cell.judge(branch(case.false, cell_id), CTX))
    assert hit.evidence["cell"] == miss.evidence["cell"] == cell_id
    assert hit.evidence["result"] is True and miss.evidence["result"] is False
    failed = asyncio.run(case.cell.judge(branch(case.failing, cell_id), CTX))
    assert failed.verdict == BranchVerdict(matched=False) and failed.evidence["error"]
    assert asyncio.run(case.cell.judge(select(case.label, cell_id), CTX)).evidence["result"] == (
        "large"
    )


@pytest.mark.parametrize("cell_id", CELLS)
def test_work_is_bounded(cell_id: str) -> None:
    """A source past the cell's work ceiling raises the named limit error, quickly."""
    case = CASES[cell_id]
    started = time.monotonic()
    with pytest.raises(PredicateLimitExceeded) as raised:
        decide(case, branch(case.runaway, cell_id))
    assert raised.value.limit in ("work", "instructions")
    assert raised.value.code == "predicate_limit_exceeded"
    assert time.monotonic() - started < 5.0
