"""The Lua cell's sandbox: nothing reaches the host, loops stop at the budget, memory is capped."""

from __future__ import annotations

import asyncio
import time

import pytest

from orchestration.predicates import LuaCell, LuaMemoryExceeded, PredicateLimitExceeded
from orchestration.tools.contracts import BranchVerdict, SelectVerdict

from .helpers import branch, context, select

CELL = LuaCell(instruction_limit=200_000, memory_ceiling_bytes=4 * 1024 * 1024)
CTX = context(entry={"n": 3, "name": "x", "tags": {"b": 1, "a": 2, "c": 3}})


def judge(source: str):  # type: ignore[no-untyped-def]
    started = time.monotonic()
    judgement = CELL.decide(branch(source, "lua"), CTX)
    return judgement, time.monotonic() - started


def refused(source: str, reason: str) -> None:
    judgement, _ = judge(source)
    assert judgement.verdict == BranchVerdict(matched=False), source
    assert reason in judgement.evidence["error"], judgement.evidence


def test_outputs_and_ctx_are_readable() -> None:
    """A predicate reads node records by id and the reference's ctx form; truthiness is Lua's."""
    assert judge("return outputs.entry.n == 3")[0].verdict.matched
    assert judge("return ctx['entry:'][1].json.name == 'x'")[0].verdict.matched
    assert judge("return 0")[0].verdict.matched  # 0 is true in Lua
    assert not judge("return nil")[0].verdict.matched
    assert judge("return outputs.entry.n")[0].evidence == {"cell": "lua", "result": 3}
    assert judge("return {}")[0].evidence == {"cell": "lua", "result": "<table>"}


@pytest.mark.parametrize(
    "source",
    [
        "while true do end",
        "while true do pcall(function() while true do end end) end",
        "for i = 1, 1e12 do pcall(error, 'x') end return true",
        "while true do xpcall(function() while true do end end,"
        " function(e) while true do end end) end",
        "local function f() return pcall(f) end while true do f() end",
        "local t = {} for i = 1, 1e9 do t[#t % 10 + 1] = i end",
    ],
)
def test_loops_stop_at_the_budget_even_under_pcall(source: str) -> None:
    """Infinite and pcall/xpcall-wrapped loops raise the budget error (not a verdict), quickly."""
    started = time.monotonic()
    with pytest.raises(PredicateLimitExceeded, match="instruction budget exceeded") as raised:
        CELL.decide(branch(source, "lua"), CTX)
    assert raised.value.limit == "instructions" and raised.value.code == "predicate_limit_exceeded"
    assert time.monotonic() - started < 2.0


@pytest.mark.parametrize(
    "source",
    [
        "local s = 'x' for i = 1, 64 do s = s .. s end return #s",
        "local t, s = {}, string.rep('x', 1000) for i = 1, 1e6 do t[i] = s .. i end return #t",
    ],
)
def test_memory_bombs_hit_the_ceiling(source: str) -> None:
    """Doubling strings and growing tables fail at the memory ceiling, as a node failure."""
    with pytest.raises(LuaMemoryExceeded, match="memory ceiling exceeded"):
        CELL.decide(branch(source, "lua"), CTX)


@pytest.mark.parametrize(
    "source",
    [
        "return #string.rep('x', 1e10)",
        "local ok = pcall(string.rep, 'x', 1e8) return ok",
        "return #string.rep('', 1 << 62)",
        "return table.move({}, 1, 1 << 40, 2)",
        "return table.concat({}, ',', 1, 1 << 40)",
        "return table.unpack({}, 1, 1 << 40)",
        "local t = {} for i = 1, 2000 do t[i] = i end "
        "for i = 1, 1e6 do table.insert(t, 1, i) table.remove(t, 1) end",
    ],
)
def test_library_calls_charge_their_work_to_the_budget(source: str) -> None:
    """Work inside a library call counts: a one-shot bomb exhausts the budget before it runs,
    and pcall cannot swallow that."""
    started = time.monotonic()
    with pytest.raises(PredicateLimitExceeded, match="instruction budget exceeded"):
        CELL.decide(branch(source, "lua"), CTX)
    assert time.monotonic() - started < 2.0


def test_ordinary_library_use_stays_within_the_budget() -> None:
    """The charges are proportional: everyday string and table work is not refused."""
    judgement, _ = judge(
        "local t = {} for i = 1, 100 do t[#t + 1] = string.rep('ab', 10) end "
        "return #table.concat(t, ',') == 2099 and ('x'):upper() == 'X'"
    )
    assert judgement.verdict == BranchVerdict(matched=True), judgement.evidence


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ("return os.execute('id')", "global 'os'"),
        ("return io.open('/etc/passwd')", "global 'io'"),
        ("return load('return 1')()", "global 'load'"),
        ("return require('os')", "global 'require'"),
        ("return debug.sethook()", "global 'debug'"),
        ("return dofile('/etc/passwd')", "global 'dofile'"),
        ("return coroutine.wrap(function() end)", "global 'coroutine'"),
        ("return getmetatable('').__index", "global 'getmetatable'"),
        ("return python.eval('1')", "global 'python'"),
        ("return _G.os", "global '_G'"),
        ("return string.dump(function() end)", "field 'dump'"),
        ("return ('x'):match('x')", "method 'match'"),
        ("return string.gsub('aaa', 'a', 'b')", "field 'gsub'"),
        ("return math.random()", "field 'random'"),
        ("return collectgarbage('count')", "global 'collectgarbage'"),
    ],
)
def test_dangerous_globals_are_absent(source: str, reason: str) -> None:
    """os, io, load, require, debug and friends do not exist inside the sandbox."""
    refused(source, reason)


def test_bytecode_is_refused_at_freeze_and_at_run_time() -> None:
    """validate() refuses bytecode; a chunk is only ever loaded as text."""
    with pytest.raises(ValueError, match="bytecode"):
        asyncio.run(CELL.validate(branch("\x1bLuaT\x00", "lua")))
    refused("\x1bLuaT\x00", "binary")


def test_iteration_and_rendering_are_deterministic() -> None:
    """pairs walks sorted keys; tostring shows no addresses; %p is refused."""
    judgement, _ = judge(
        "local k = {} for key in pairs(outputs.entry.tags) do k[#k + 1] = key end "
        "return table.concat(k, ',')"
    )
    assert judgement.evidence["result"] == "a,b,c"
    assert judge("return tostring({})")[0].evidence["result"] == "table"
    refused("return string.format('%p', {})", "%p is not available")


def test_select_takes_an_exact_case_label() -> None:
    """A select's verdict is the returned string when it is a case, else the default edge."""
    node = select("return outputs.entry.n > 2 and 'large' or 'small'", "lua")
    assert CELL.decide(node, CTX).verdict == SelectVerdict(case_label="large")
    assert CELL.decide(select("return 'huge'", "lua"), CTX).verdict == SelectVerdict(None)
    assert CELL.decide(select("return 1", "lua"), CTX).verdict == SelectVerdict(None)


def test_validate_checks_syntax_without_running() -> None:
    """A syntax check runs nothing: a predicate that would loop for ever passes validate."""
    asyncio.run(CELL.validate(branch("while true do end", "lua")))
