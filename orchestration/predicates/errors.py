"""The errors a predicate cell raises when it cannot reach a verdict at all.

A predicate that merely fails (a runtime error, a missing field) takes the safe verdict with the
error as evidence: the author routed "nothing matched" somewhere. A predicate that runs past a
ceiling is different: it is broken, not false, so the cell raises, the node fails, and the run
stops ``predicate_unevaluatable`` (ruling 31). Every one of these is deterministic for its input
and never worth retrying, so the evaluate activity reports it as a non-retryable failure.

::

    OrchestrationError
    └── CellEvaluationError          predicate_unevaluatable  (the cell could not evaluate)
        └── PredicateLimitExceeded   predicate_limit_exceeded (instructions, memory or time)
            └── LuaMemoryExceeded    lua_memory_exceeded      (the Lua cell's memory ceiling)
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Literal

from orchestration.errors import CellUnavailableError, OrchestrationError

__all__ = [
    "CellEvaluationError",
    "LuaMemoryExceeded",
    "PredicateLimitExceeded",
    "import_optional",
]

Limit = Literal["instructions", "memory", "time", "work"]


class CellEvaluationError(OrchestrationError):
    """A cell could not evaluate a predicate at all (for example, its evaluator process died)."""

    code = "predicate_unevaluatable"


class PredicateLimitExceeded(CellEvaluationError):
    """A predicate ran past one of its cell's ceilings.

    Attributes:
        limit: Which ceiling: ``instructions`` (or ``work``, for a cell that counts evaluation
            steps), ``memory``, or ``time`` (the wall-clock deadline).

    """

    code = "predicate_limit_exceeded"

    def __init__(self, limit: Limit, message: str) -> None:
        super().__init__(message)
        self.limit: Limit = limit


class LuaMemoryExceeded(PredicateLimitExceeded):
    """A Lua predicate needed more memory than the cell's ceiling allows."""

    code = "lua_memory_exceeded"

    def __init__(self, message: str) -> None:
        super().__init__("memory", message)


def import_optional(cell: str, install: str, *modules: str) -> ModuleType:
    """Import a cell's optional package (each of ``modules``), returning the first.

    Raises:
        CellUnavailableError: one is missing; the message names ``install``.

    """
    try:
        imported = [importlib.import_module(name) for name in modules]
    except ImportError as exc:
        raise CellUnavailableError(cell, install, str(exc)) from exc
    return imported[0]
