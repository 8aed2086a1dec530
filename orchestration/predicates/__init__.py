"""Predicate cells: how ``branch`` and ``select`` nodes interpret their own predicate form."""

from orchestration.predicates.structured import (
    LEGAL_OPS,
    MAX_PREDICATE_DEPTH,
    StructuredCell,
    StructuredPredicate,
    evaluate_predicate,
    parse_structured_predicate,
)

__all__ = [
    "LEGAL_OPS",
    "MAX_PREDICATE_DEPTH",
    "StructuredCell",
    "StructuredPredicate",
    "evaluate_predicate",
    "parse_structured_predicate",
]
