"""Predicate cells: how ``branch`` and ``select`` nodes interpret their own predicate form.

``structured`` needs nothing; ``cel``, ``jexl`` and ``lua`` need an optional package each
(``pip install 'orchestration[cel]'`` / ``'orchestration[jexl]'`` / ``'orchestration[lua]'``),
imported only by their ``load()``, so importing this package never requires them.

Every cell's ``judge()`` gives its verdict with evidence, a no-match included; the evidence's
shape is described on :class:`~orchestration.tools.contracts.Judgement`. A predicate that runs past
its cell's ceilings raises :class:`PredicateLimitExceeded` (see
:mod:`orchestration.predicates.errors`).
"""

from orchestration.predicates.cel import CEL_INSTALL, CelCell
from orchestration.predicates.errors import (
    CellEvaluationError,
    LuaMemoryExceeded,
    PredicateLimitExceeded,
)
from orchestration.predicates.jexl import JEXL_INSTALL, JexlCell
from orchestration.predicates.lua import LUA_INSTALL, LuaCell
from orchestration.predicates.snapshot import merged_record, node_records
from orchestration.predicates.structured import (
    LEGAL_OPS,
    MAX_PREDICATE_DEPTH,
    StructuredCell,
    StructuredPredicate,
    evaluate_predicate,
    parse_structured_predicate,
)

__all__ = [
    "CEL_INSTALL",
    "CellEvaluationError",
    "JEXL_INSTALL",
    "JexlCell",
    "LEGAL_OPS",
    "LUA_INSTALL",
    "MAX_PREDICATE_DEPTH",
    "PredicateLimitExceeded",
    "CelCell",
    "LuaCell",
    "LuaMemoryExceeded",
    "StructuredCell",
    "StructuredPredicate",
    "evaluate_predicate",
    "merged_record",
    "node_records",
    "parse_structured_predicate",
]
