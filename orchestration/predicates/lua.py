"""The Lua predicate cell (``id = "lua"``): a Lua 5.4 chunk in a sandbox, in a killable process.

A predicate is a Lua source chunk whose FIRST return value is the verdict (through ``lupa``,
which embeds Lua 5.4). It reads two globals:

* ``outputs``: each node on the frame's route by node id, as its merged record
  (``return outputs.count_orders.count >= 10``);
* ``ctx``: the reference's form, ``ctx['<nodeId>:<branchKey>'][i].json.<field>`` (1-based).

**branch**: Lua truthiness (only ``nil`` and ``false`` are false; ``0`` and ``""`` are true).
**select**: the value must be a string naming one of the cases, else ``default`` (no coercion).

**The sandbox**, rebuilt for every evaluation (a fresh Lua state each time, nothing shared;
enforced by :mod:`orchestration.predicates.lua_sandbox`):

* No ``os``, ``io``, ``load``, ``loadstring``, ``dofile``, ``require``, ``package``, ``debug``,
  ``coroutine``, ``collectgarbage``, ``getmetatable``/``setmetatable``, raw access, ``next``,
  ``print`` or ``python``: the chunk is loaded as text only (bytecode is refused) with an
  environment holding just ``assert error ipairs pairs pcall xpcall select tonumber tostring
  type unpack`` and trimmed ``math`` (no random), ``string``, ``table`` and ``utf8`` libraries.
* **An instruction budget that ``pcall`` cannot escape**, and that holds inside library calls:
  a count hook fires every ``hook_interval`` VM instructions and, past ``instruction_limit``,
  raises and re-arms itself to fire on EVERY instruction, so the first instruction run after a
  ``pcall`` swallowed the error raises again. The hook never runs inside a C function, so each
  library function whose work is not one instruction's (``string.rep``, ``table.move``,
  ``table.concat``, ``table.unpack``, the string scans, ...) charges the work it is about to do
  to the same budget first: ``string.rep('', 1 << 62)`` is refused before its loop starts.
  Pattern matching (``match``, ``gmatch``, ``gsub``, patterned ``find``) is left out.
* **A memory ceiling** (``memory_ceiling_bytes``) enforced by Lua's allocator, inside library
  functions too: a string or table bomb fails to allocate.
* **A wall-clock deadline** (``timeout_seconds``). What no counter sees (one ``..`` or ``==``
  over long strings costs time in proportion to their length) is bounded by running every
  evaluation in a separate process (:mod:`orchestration.predicates.lua_pool`) that is killed,
  and replaced, when the deadline passes: nothing a predicate starts outlives its verdict.
* **Deterministic iteration and rendering.** ``pairs`` walks keys in sorted order (Lua's own
  order depends on a per-state hash seed); ``tostring`` and ``string.format`` render tables and
  functions as their type name rather than an address, and ``%p`` is refused.

A runtime error gives the safe verdict (``no_match`` / ``default``) with the error as evidence.
A predicate that runs past a ceiling (instructions, memory or time) is broken rather than false:
the cell raises :class:`~orchestration.predicates.errors.PredicateLimitExceeded` (for memory,
its subclass :class:`LuaMemoryExceeded`), the node fails, and the run stops
``predicate_unevaluatable``.

``load()`` fails with ``E_ORCH_CELL_UNAVAILABLE`` and the install command when ``lupa`` is
missing, and otherwise starts the evaluator processes; :meth:`LuaCell.close` stops them.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from typing import Any

from orchestration.predicates.errors import (
    CellEvaluationError,
    LuaMemoryExceeded,
    PredicateLimitExceeded,
    import_optional,
)
from orchestration.predicates.evidence import shown
from orchestration.predicates.snapshot import node_records
from orchestration.predicates.verdicts import DecidingCell, safe_verdict, select_verdict
from orchestration.tools.contracts import (
    BranchVerdict,
    Judgement,
    PredicateContext,
)
from orchestration.types import BranchNode, NodeOutput, SelectNode

__all__ = [
    "DEFAULT_HOOK_INTERVAL",
    "DEFAULT_INSTRUCTION_LIMIT",
    "DEFAULT_MEMORY_CEILING",
    "DEFAULT_PROCESSES",
    "DEFAULT_TIMEOUT_SECONDS",
    "LUA_INSTALL",
    "LuaCell",
    "LuaMemoryExceeded",
]

LUA_INSTALL = "pip install 'orchestration[lua]'  (lupa)"
DEFAULT_INSTRUCTION_LIMIT = 1_000_000
DEFAULT_HOOK_INTERVAL = 1_000
DEFAULT_MEMORY_CEILING = 16 * 1024 * 1024
DEFAULT_TIMEOUT_SECONDS = 5.0
DEFAULT_PROCESSES = 2

_BYTECODE = "\x1bLua"
_I64 = (-(2**63), 2**63 - 1)


def _load_lupa() -> Any:
    return import_optional("lua", LUA_INSTALL, "lupa.lua54")


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


class LuaCell(DecidingCell):
    """The ``lua`` predicate cell (see the module docstring).

    Args:
        instruction_limit: VM instructions (and charged library work) a predicate may run.
        memory_ceiling_bytes: What the Lua state may allocate, libraries included.
        hook_interval: Instructions between budget checks.
        timeout_seconds: Wall-clock time one evaluation may take; past it the evaluator
            process is killed and the cell raises ``PredicateLimitExceeded``.
        processes: Evaluator processes kept ready (more start while all are busy).

    """

    def __init__(
        self,
        *,
        instruction_limit: int = DEFAULT_INSTRUCTION_LIMIT,
        memory_ceiling_bytes: int = DEFAULT_MEMORY_CEILING,
        hook_interval: int = DEFAULT_HOOK_INTERVAL,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        processes: int = DEFAULT_PROCESSES,
    ) -> None:
        if instruction_limit < 1 or hook_interval < 1 or memory_ceiling_bytes < 256 * 1024:
            raise ValueError(
                "instruction_limit and hook_interval must be positive and the memory ceiling "
                "at least 256 KiB (the Lua libraries alone need some)"
            )
        if timeout_seconds <= 0 or processes < 1:
            raise ValueError("timeout_seconds must be positive and processes at least 1")
        self.instruction_limit = instruction_limit
        self.memory_ceiling_bytes = memory_ceiling_bytes
        self.hook_interval = hook_interval
        self.timeout_seconds = timeout_seconds
        self.processes = processes
        self._lupa: Any = None
        self._pool: Any = None

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

    def _processes(self) -> Any:
        if self._pool is None:
            from orchestration.predicates.lua_pool import LuaProcessPool

            self._module()
            self._pool = LuaProcessPool(self.processes)
            self._pool.start()
        return self._pool

    async def load(self) -> None:
        """Import ``lupa`` and start the evaluator processes.

        Raises:
            CellUnavailableError: the package is not installed.

        """
        self._processes()

    def close(self) -> None:
        """Stop the idle evaluator processes (an evaluation after this starts new ones)."""
        if self._pool is not None:
            self._pool.close()
            self._pool = None

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
        runtime = self._module().LuaRuntime(
            register_eval=False, register_builtins=False, max_memory=self.memory_ceiling_bytes
        )
        check = runtime.eval('function(s) local f, e = load(s, "=predicate", "t", {}) return e end')
        error = check(source)
        if error is not None:
            raise ValueError(f'lua cell: node "{node.id}" predicate is not valid Lua: {error}')

    def request(self, source: str, outputs: Mapping[str, NodeOutput]) -> dict[str, Any]:
        """What an evaluator process is sent: the source, the two views of the table, limits."""
        return {
            "source": source,
            "ctx": _ctx_table(outputs),
            "outputs": {k: _marshal(v) for k, v in node_records(outputs).items()},
            "instructions": self.instruction_limit,
            "interval": self.hook_interval,
            "memory": self.memory_ceiling_bytes,
        }

    def decide(self, node: BranchNode | SelectNode, ctx: PredicateContext) -> Judgement:
        """The verdict and its evidence (see the module docstring).

        Blocking (it waits for an evaluator process, at most ``timeout_seconds``), so call it
        off the event loop.

        Raises:
            PredicateLimitExceeded: the predicate ran past its instruction budget or its time.
            LuaMemoryExceeded: the predicate hit the memory ceiling.
            CellEvaluationError: the evaluator process died.

        """
        from orchestration.predicates.lua_pool import EvaluatorDied, EvaluatorTimedOut

        safe = safe_verdict(node)
        source = node.definition.predicate
        if not isinstance(source, str):
            return Judgement(safe, {"cell": "lua", "error": "the predicate is not a string"})
        try:
            reply = self._processes().run(self.request(source, ctx.outputs), self.timeout_seconds)
        except EvaluatorTimedOut:
            raise PredicateLimitExceeded(
                "time",
                f"lua-cell: wall-clock deadline exceeded ({self.timeout_seconds:g} s); the "
                "evaluation was stopped",
            ) from None
        except EvaluatorDied as exc:
            raise CellEvaluationError(f"lua-cell: the evaluator process died ({exc})") from None
        if not reply["ok"]:
            kind, message = reply["kind"], str(reply["message"])
            if kind == "instructions":
                raise PredicateLimitExceeded(
                    "instructions",
                    f"lua-cell: instruction budget exceeded ({self.instruction_limit} "
                    "instructions, library work included)",
                )
            if kind == "memory":
                raise LuaMemoryExceeded(
                    f"lua-cell: memory ceiling exceeded ({self.memory_ceiling_bytes} bytes)"
                )
            return Judgement(safe, {"cell": "lua", "error": message})
        value, lua_type = reply["value"], reply["type"]
        evidence = {"cell": "lua", "result": shown(value) if value is not None else None}
        if value is None and lua_type != "nil":
            evidence["result"] = f"<{lua_type}>"
        if isinstance(node, BranchNode):
            matched = lua_type != "nil" and value is not False
            return Judgement(BranchVerdict(matched=matched), evidence)
        return Judgement(select_verdict(node, value), evidence)
