"""The Lua sandbox itself: one predicate run in a fresh Lua 5.4 state, and the process loop.

This module is deliberately standalone (it imports only the standard library, ``lupa`` and
``ormsgpack``, never the rest of ``orchestration``), because it is what each evaluator process
of the Lua cell runs as a script: a process started per pool slot must be ready in tens of
milliseconds, not after importing pydantic. :mod:`orchestration.predicates.lua` describes the
sandbox a predicate sees; this module enforces it:

* a fresh ``LuaRuntime`` per evaluation with an allocator cap (``max_memory``), so every
  allocation, those made inside library functions included, fails past the memory ceiling;
* an instruction budget kept by a count hook that ``pcall`` cannot escape (past the budget it
  re-arms itself to fire on every instruction);
* the library functions whose work is not bounded by one VM instruction (``string.rep``,
  ``table.move``, ``table.concat``, ``table.unpack``, ``table.insert``/``remove``/``sort``, the
  string scans) are wrapped so they CHARGE the work they are about to do to that budget first:
  ``string.rep('', 1 << 62)`` or ``table.move({}, 1, 1 << 40, 2)`` exhaust the budget before
  the C loop starts. What no wrapper can see (a VM instruction such as ``..`` or ``==`` on
  long strings costs time in proportion to their length) is bounded by the wall-clock deadline
  the parent enforces by killing this process.

The wire protocol on stdin/stdout is a 4-byte big-endian length followed by an ``ormsgpack``
map: a request ``{source, ctx, outputs, instructions, interval, memory}``; a reply ``{ok: true,
type, value}`` (the first return value's Lua type, and the value when it is a scalar) or
``{ok: false, kind, message}`` with ``kind`` one of ``error`` (the chunk failed: a syntax or
runtime error), ``instructions`` or ``memory`` (a ceiling was reached). The loop ends at EOF.
"""

from __future__ import annotations

import struct
import sys
from typing import Any

__all__ = ["BUDGET_MESSAGE", "evaluate", "main"]

BUDGET_MESSAGE = "lua-cell: instruction budget exceeded"

_BUDGET = r"""
local limit, interval, message = ...
local sethook, error = debug.sethook, error
local used, exhausted = 0, false
local hook
local function trip()
  exhausted = true
  sethook(hook, "", 1)
  error(message, 0)
end
hook = function()
  if exhausted then error(message, 0) end
  used = used + interval
  if used > limit then trip() end
end
local function charge(units)
  if exhausted then error(message, 0) end
  if units ~= units or units < 0 then units = 0 end
  used = used + units
  if used > limit then trip() end
end
local function arm() sethook(hook, "", interval) end
return arm, charge
"""

_SANDBOX = r"""
local source, ctx, outputs, charge = ...
local type, error, sort, pack, unpack = type, error, table.sort, table.pack, table.unpack
local raw_tostring, raw_next, raw_find, raw_format = tostring, next, string.find, string.format
local raw_tonumber = tonumber

-- Work units: one per element a library loop visits, plus one per 32 bytes it reads or writes.
local function bytes(n) return n // 32 end
local function len(v)
  local t = type(v)
  if t == "string" then return #v end
  if t == "number" then return 24 end
  return 0
end

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
  charge(#keys)
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
-- A wrapper charging `cost(...)` before calling the library function with the same arguments.
local function charged(f, cost)
  return function(...)
    charge(cost(...))
    return f(...)
  end
end
local function span(n, i, j)
  i = raw_tonumber(i) or 1
  j = raw_tonumber(j) or n
  if j < i then return 0 end
  return j - i + 1
end

local s, t, u = string, table, utf8
local safe_string = {
  byte = charged(s.byte, function(v, i, j) return span(len(v), i, j or i) end),
  char = charged(s.char, function(...) return select("#", ...) end),
  len = s.len,
  lower = charged(s.lower, function(v) return bytes(len(v)) end),
  upper = charged(s.upper, function(v) return bytes(len(v)) end),
  reverse = charged(s.reverse, function(v) return bytes(len(v)) end),
  sub = charged(s.sub, function(v) return bytes(len(v)) end),
  rep = charged(s.rep, function(v, n, sep)
    n = raw_tonumber(n) or 0
    if n < 1 then return 1 end
    return n + bytes(len(v) * n + len(sep) * (n - 1))
  end),
}
safe_string.find = charged(function(v, needle, init) return raw_find(v, needle, init, true) end,
  function(v, needle) return bytes(len(v)) * (1 + bytes(len(needle))) + 1 end)
safe_string.format = function(fmt, ...)
  if type(fmt) == "string" and raw_find(fmt, "%p", 1, true) then
    error("string.format: %p is not available", 2)
  end
  local args = pack(...)
  local size = len(fmt)
  for i = 1, args.n do
    if opaque(args[i]) then args[i] = type(args[i]) end
    size = size + len(args[i])
  end
  charge(args.n + bytes(size))
  return raw_format(fmt, unpack(args, 1, args.n))
end
local safe_table = {
  concat = charged(t.concat, function(list, sep, i, j)
    local n = span(type(list) == "table" and #list or 0, i, j)
    return n + bytes(len(sep) * n)
  end),
  insert = charged(t.insert, function(list, ...)
    if select("#", ...) >= 2 and type(list) == "table" then return #list + 1 end
    return 1
  end),
  remove = charged(t.remove, function(list)
    return type(list) == "table" and #list + 1 or 1
  end),
  sort = charged(t.sort, function(list) return type(list) == "table" and #list + 1 or 1 end),
  unpack = charged(t.unpack, function(list, i, j)
    return span(type(list) == "table" and #list or 0, i, j)
  end),
  pack = charged(t.pack, function(...) return select("#", ...) end),
  move = charged(t.move, function(a1, f, e) return span(0, f, e) end),
}
local safe_utf8 = {
  char = charged(u.char, function(...) return select("#", ...) end),
  charpattern = u.charpattern,
  codepoint = charged(u.codepoint, function(v, i, j) return span(len(v), i, j or i) end),
  len = charged(u.len, function(v) return bytes(len(v)) end),
  offset = charged(u.offset, function(v) return bytes(len(v)) end),
}
local env = {
  assert = assert, error = error, ipairs = ipairs, pairs = sorted_pairs, pcall = pcall,
  xpcall = safe_xpcall, select = select,
  tonumber = charged(raw_tonumber, function(v) return bytes(len(v)) end),
  tostring = safe_tostring, type = type, unpack = safe_table.unpack,
  math = pick(math, {"abs", "ceil", "floor", "fmod", "huge", "max", "maxinteger", "min",
                     "mininteger", "modf", "pi", "sqrt", "tointeger", "type", "ult", "exp",
                     "log", "sin", "cos", "tan", "asin", "acos", "atan"}),
  string = safe_string, table = safe_table, utf8 = safe_utf8,
  ctx = ctx, outputs = outputs,
}
getmetatable("").__index = safe_string
return load(source, "=predicate", "t", env)
"""

_SCALARS = (bool, int, float, str, bytes)


def _deny_attributes(obj: Any, name: Any, is_setting: bool) -> Any:
    raise AttributeError("the Lua sandbox gives no access to Python objects")


def _lua_type(value: Any) -> str:
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str | bytes):
        return "string"
    return type(value).__name__.replace("_Lua", "").lower() or "userdata"


def evaluate(request: dict[str, Any]) -> dict[str, Any]:
    """Run one predicate in a fresh sandbox and describe its first return value or its failure.

    Never raises for anything the predicate does; see the module docstring for the reply.
    """
    import lupa.lua54 as lua

    runtime = lua.LuaRuntime(
        register_eval=False,
        register_builtins=False,
        unpack_returned_tuples=False,
        attribute_filter=_deny_attributes,
        max_memory=request["memory"],
    )
    try:
        arm, charge = runtime.execute(
            _BUDGET, request["instructions"], request["interval"], BUDGET_MESSAGE
        )
        ctx = runtime.table_from(request["ctx"], recursive=True)
        outputs = runtime.table_from(request["outputs"], recursive=True)
        loaded = runtime.execute(_SANDBOX, request["source"], ctx, outputs, charge)
        if isinstance(loaded, tuple):  # load failed: (nil, message)
            return {"ok": False, "kind": "error", "message": str(loaded[1])}
        arm()
        result = loaded()
        value = result[0] if isinstance(result, tuple) else result
    except lua.LuaMemoryError as exc:
        return {"ok": False, "kind": "memory", "message": str(exc)}
    except lua.LuaError as exc:
        message = str(exc).split("\nstack traceback:")[0]
        if message.endswith(BUDGET_MESSAGE):
            return {"ok": False, "kind": "instructions", "message": message}
        if "not enough memory" in message:
            return {"ok": False, "kind": "memory", "message": message}
        return {"ok": False, "kind": "error", "message": message}
    except MemoryError as exc:
        return {"ok": False, "kind": "memory", "message": str(exc) or "out of memory"}
    kind = _lua_type(value)
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return {"ok": True, "type": kind, "value": value if isinstance(value, _SCALARS) else None}


def _read_exactly(stream: Any, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = stream.read(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def main() -> None:
    """Serve requests on stdin until EOF (the parent closed the pipe, or died)."""
    import lupa.lua54  # noqa: F401 - imported before the ready signal, not on first use
    import ormsgpack

    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    stdout.write(b"\x00\x00\x00\x00")  # ready: the loop is running
    stdout.flush()

    while True:
        header = _read_exactly(stdin, 4)
        if header is None:
            return
        body = _read_exactly(stdin, struct.unpack(">I", header)[0])
        if body is None:
            return
        reply = ormsgpack.packb(evaluate(ormsgpack.unpackb(body)))
        stdout.write(struct.pack(">I", len(reply)) + reply)
        stdout.flush()


if __name__ == "__main__":
    main()
