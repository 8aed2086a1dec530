"""The Lua predicate cell (``id = "lua"``): a Lua 5.4 chunk in a sandbox, run by a local activity.

A predicate is a Lua source chunk whose FIRST return value is the verdict (through ``lupa``,
which embeds Lua 5.4). It reads two globals:

* ``outputs``: each node on the frame's route by node id, as its merged record
  (``return outputs.count_orders.count >= 10``);
* ``ctx``: the reference's form, ``ctx['<nodeId>:<branchKey>'][i].json.<field>`` (1-based).

**branch**: Lua truthiness (only ``nil`` and ``false`` are false; ``0`` and ``""`` are true).
**select**: the value must be a string naming one of the cases, else ``default`` (no coercion).

**The sandbox**, rebuilt for every evaluation (a fresh Lua state each time, nothing shared):

* No ``os``, ``io``, ``load``, ``loadstring``, ``dofile``, ``require``, ``package``, ``debug``,
  ``coroutine``, ``collectgarbage``, ``getmetatable``/``setmetatable``, raw access, ``next``,
  ``print`` or ``python``: the chunk is loaded as text only (bytecode is refused) with an
  environment holding just ``assert error ipairs pairs pcall xpcall select tonumber tostring
  type unpack`` and trimmed ``math`` (no random), ``string``, ``table`` and ``utf8`` libraries.
* **An instruction budget that ``pcall`` cannot escape.** A count hook fires every
  ``hook_interval`` VM instructions; past ``instruction_limit`` it raises, and re-arms itself
  to fire on EVERY instruction, so the first instruction run after a ``pcall`` swallowed the
  error raises again, outside any ``pcall`` that could catch it. Hooks are per coroutine, which
  is why ``coroutine`` is absent; and Lua runs an ``xpcall`` message handler with hooks still
  disabled by the error a hook raised, so the sandbox's ``xpcall`` calls the handler only after
  the protected call has returned.
* **No unbounded work outside the VM.** The hook cannot interrupt a C function, so the string
  functions whose cost is not bounded by their input (pattern matching: ``match``, ``gmatch``,
  ``gsub``, and ``find`` with patterns) are left out; ``string.find`` searches plain text only.
  What remains is linear in sizes the memory ceiling caps.
* **A memory ceiling** (``memory_ceiling_bytes``) enforced by Lua's allocator: a string or table
  bomb fails to allocate.
* **Deterministic iteration and rendering.** ``pairs`` walks keys in sorted order (Lua's own
  order depends on a per-state hash seed); ``tostring`` and ``string.format`` render tables and
  functions as their type name rather than an address, and ``%p`` is refused.

Any runtime error, including an exhausted budget, gives the safe verdict (``no_match`` /
``default``) with the error as evidence. Running out of memory is the exception: it raises
:class:`LuaMemoryExceeded`, a failure of the node, because a predicate that needs more memory
than it is allowed is broken rather than false.

``load()`` fails with ``E_ORCH_CELL_UNAVAILABLE`` and the install command when ``lupa`` is
missing.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from typing import Any

from orchestration.contracts import (
    BranchVerdict,
    Judgement,
    PredicateContext,
    PredicateVerdict,
)
from orchestration.errors import CellUnavailableError, OrchestrationError
from orchestration.predicates.snapshot import node_records
from orchestration.predicates.verdicts import safe_verdict, select_verdict
from orchestration.types import BranchNode, NodeOutput, SelectNode

__all__ = [
    "DEFAULT_HOOK_INTERVAL",
    "DEFAULT_INSTRUCTION_LIMIT",
    "DEFAULT_MEMORY_CEILING",
    "LUA_INSTALL",
    "LuaCell",
    "LuaMemoryExceeded",
]

LUA_INSTALL = "pip install 'orchestration[lua]'  (lupa)"
DEFAULT_INSTRUCTION_LIMIT = 1_000_000
DEFAULT_HOOK_INTERVAL = 1_000
DEFAULT_MEMORY_CEILING = 16 * 1024 * 1024

_BYTECODE = "\x1bLua"
_I64 = (-(2**63), 2**63 - 1)

_SANDBOX = r"""
local source, ctx, outputs = ...
local type, error, sort, pack, unpack = type, error, table.sort, table.pack, table.unpack
local raw_tostring, raw_next, raw_find, raw_format = tostring, next, string.find, string.format

local function opaque(v)
  local t = type(v)
  return t == "table" or t == "function" or t == "userdata" or t == "thread"
end
local function safe_tostring(v)
  if opaque(v) then return type(v) end
  return raw_tostring(v)
end
local function key_order(a, b)
  local ta, tb = type(a), type(b)
  if ta ~= tb then return ta < tb end
  if ta == "number" or ta == "string" then return a < b end
  return safe_tostring(a) < safe_tostring(b)
end
local function sorted_pairs(t)
  local keys = {}
  for k in raw_next, t do keys[#keys + 1] = k end
  sort(keys, key_order)
  local i = 0
  return function()
    i = i + 1
    local k = keys[i]
    if k ~= nil then return k, t[k] end
  end
end
local function pick(lib, names)
  local out = {}
  for _, name in ipairs(names) do out[name] = lib[name] end
  return out
end
-- The message handler runs only after pcall has returned: Lua runs a handler while hooks are
-- still disabled by the error a hook raised, so a handler called in place would run unmetered.
local function safe_xpcall(f, handler, ...)
  local results = pack(pcall(f, ...))
  if results[1] then return unpack(results, 1, results.n) end
  return false, handler(results[2])
end
local safe_string = pick(string, {"byte", "char", "len", "lower", "upper", "rep", "reverse", "sub"})
safe_string.find = function(s, needle, init) return raw_find(s, needle, init, true) end
safe_string.format = function(fmt, ...)
  if raw_find(fmt, "%p", 1, true) then error("string.format: %p is not available", 2) end
  local args = pack(...)
  for i = 1, args.n do
    if opaque(args[i]) then args[i] = type(args[i]) end
  end
  return raw_format(fmt, unpack(args, 1, args.n))
end
local env = {
  assert = assert, error = error, ipairs = ipairs, pairs = sorted_pairs, pcall = pcall,
  xpcall = safe_xpcall, select = select, tonumber = tonumber, tostring = safe_tostring,
  type = type, unpack = unpack,
  math = pick(math, {"abs", "ceil", "floor", "fmod", "huge", "max", "maxinteger", "min",
                     "mininteger", "modf", "pi", "sqrt", "tointeger", "type", "ult", "exp",
                     "log", "sin", "cos", "tan", "asin", "acos", "atan"}),
  string = safe_string,
  table = pick(table, {"concat", "insert", "remove", "sort", "unpack", "pack", "move"}),
  utf8 = pick(utf8, {"char", "charpattern", "codepoint", "len", "offset"}),
  ctx = ctx, outputs = outputs,
}
getmetatable("").__index = safe_string
return load(source, "=predicate", "t", env)
"""

_ARM = r"""
local limit, interval = ...
local sethook, error = debug.sethook, error
local count = 0
local function hook()
  count = count + 1
  if count > limit then
    sethook(hook, "", 1)
    error("lua-cell: instruction budget exceeded", 0)
  end
end
sethook(hook, "", interval)
"""


class LuaMemoryExceeded(OrchestrationError):
    """A Lua predicate needed more memory than the cell's ceiling allows."""

    code = "lua_memory_exceeded"


def _load_lupa() -> Any:
    try:
        import lupa.lua54 as lua54
    except ImportError as exc:
        raise CellUnavailableError("lua", LUA_INSTALL, str(exc)) from exc
    return lua54


def _deny_attributes(obj: Any, name: Any, is_setting: bool) -> Any:
    raise AttributeError("the Lua sandbox gives no access to Python objects")


def _marshal(value: Any) -> Any:
    """An encodable value as plain data ``lupa`` turns into Lua values and tables."""
    if value is None or isinstance(value, bool | float | str | bytes):
        return value
    if isinstance(value, int):
        return value if _I64[0] <= value <= _I64[1] else str(value)
    if isinstance(value, dict):
        return {k if isinstance(k, str) else str(k): _marshal(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_marshal(v) for v in value]
    if isinstance(value, set | frozenset):
        return [_marshal(v) for v in sorted(value, key=repr)]
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, re.Pattern):
        return value.pattern
    return str(value)


def _ctx_table(outputs: Mapping[str, NodeOutput]) -> dict[str, Any]:
    return {
        key: [{"json": _marshal(item.json_)} for item in outputs[key].items]
        for key in sorted(outputs)
    }


def _evidence_value(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return f"<{type(value).__name__}>"


class LuaCell:
    """The ``lua`` predicate cell (see the module docstring).

    Args:
        instruction_limit: VM instructions a predicate may run (rounded up to the interval).
        memory_ceiling_bytes: What the Lua state may allocate, libraries included.
        hook_interval: Instructions between budget checks.

    """

    def __init__(
        self,
        *,
        instruction_limit: int = DEFAULT_INSTRUCTION_LIMIT,
        memory_ceiling_bytes: int = DEFAULT_MEMORY_CEILING,
        hook_interval: int = DEFAULT_HOOK_INTERVAL,
    ) -> None:
        if instruction_limit < 1 or hook_interval < 1 or memory_ceiling_bytes < 256 * 1024:
            raise ValueError(
                "instruction_limit and hook_interval must be positive and the memory ceiling "
                "at least 256 KiB (the Lua libraries alone need some)"
            )
        self.instruction_limit = instruction_limit
        self.memory_ceiling_bytes = memory_ceiling_bytes
        self.hook_interval = hook_interval
        self._lupa: Any = None

    @property
    def id(self) -> str:
        """``"lua"``."""
        return "lua"

    @property
    def deterministic(self) -> bool:
        """``False``: it runs in a local activity, outside workflow code."""
        return False

    def _module(self) -> Any:
        if self._lupa is None:
            self._lupa = _load_lupa()
        return self._lupa

    async def load(self) -> None:
        """Import ``lupa``.

        Raises:
            CellUnavailableError: the package is not installed.

        """
        self._module()

    def _runtime(self) -> Any:
        return self._module().LuaRuntime(
            register_eval=False,
            register_builtins=False,
            unpack_returned_tuples=False,
            attribute_filter=_deny_attributes,
            max_memory=self.memory_ceiling_bytes,
        )

    async def validate(self, node: BranchNode | SelectNode) -> None:
        """Refuse a predicate that is not Lua source text (syntax is checked, nothing runs).

        Raises:
            ValueError: naming the fix.

        """
        source = node.definition.predicate
        if not isinstance(source, str) or not source.strip():
            raise ValueError(
                f'lua cell: node "{node.id}" must carry a Lua chunk SOURCE STRING as its '
                f'predicate, e.g. "return outputs.count_orders.count >= 1"'
            )
        if source.startswith(_BYTECODE):
            raise ValueError(f'lua cell: node "{node.id}" predicate is bytecode; give source text')
        if isinstance(node, SelectNode) and not node.definition.cases:
            raise ValueError(f'lua cell: select "{node.id}" declares no cases')
        runtime = self._runtime()
        check = runtime.eval('function(s) local f, e = load(s, "=predicate", "t", {}) return e end')
        error = check(source)
        if error is not None:
            raise ValueError(f'lua cell: node "{node.id}" predicate is not valid Lua: {error}')

    def run(self, source: str, outputs: Mapping[str, NodeOutput]) -> Any:
        """Run ``source`` in a fresh sandbox; its first return value.

        Raises:
            LuaMemoryExceeded: the predicate hit the memory ceiling.
            lupa.LuaError: any other failure of the chunk (syntax, runtime, budget).

        """
        lua = self._module()
        runtime = self._runtime()
        try:
            ctx = runtime.table_from(_ctx_table(outputs), recursive=True)
            records = runtime.table_from(
                {k: _marshal(v) for k, v in node_records(outputs).items()}, recursive=True
            )
            loaded = runtime.execute(_SANDBOX, source, ctx, records)
            if isinstance(loaded, tuple):  # load failed: (nil, message)
                raise lua.LuaSyntaxError(str(loaded[1]))
            runtime.execute(_ARM, self._budget_firings(), self.hook_interval)
            result = loaded()
            return result[0] if isinstance(result, tuple) else result
        except lua.LuaMemoryError as exc:
            raise LuaMemoryExceeded(
                f"lua-cell: memory ceiling exceeded ({self.memory_ceiling_bytes} bytes)"
            ) from exc

    def _budget_firings(self) -> int:
        return -(-self.instruction_limit // self.hook_interval)

    def decide(self, node: BranchNode | SelectNode, ctx: PredicateContext) -> Judgement:
        """The verdict and its evidence (see the module docstring).

        Blocking (it runs Lua), so call it off the event loop.

        Raises:
            LuaMemoryExceeded: the predicate hit the memory ceiling.

        """
        lua = self._module()
        safe = safe_verdict(node)
        source = node.definition.predicate
        if not isinstance(source, str):
            return Judgement(safe, {"cell": "lua", "error": "the predicate is not a string"})
        try:
            value = self.run(source, ctx.outputs)
        except lua.LuaError as exc:
            message = str(exc).split("\nstack traceback:")[0]
            return Judgement(safe, {"cell": "lua", "error": message})
        evidence = {"cell": "lua", "result": _evidence_value(value)}
        if isinstance(node, BranchNode):
            matched = value is not None and value is not False
            return Judgement(BranchVerdict(matched=matched), evidence)
        return Judgement(select_verdict(node, value), evidence)

    async def judge(self, node: BranchNode | SelectNode, ctx: PredicateContext) -> Judgement:
        """See :meth:`decide` (runs on the calling thread)."""
        return self.decide(node, ctx)

    async def evaluate(
        self, node: BranchNode | SelectNode, ctx: PredicateContext
    ) -> PredicateVerdict:
        """See :meth:`decide` (the verdict only)."""
        return self.decide(node, ctx).verdict
