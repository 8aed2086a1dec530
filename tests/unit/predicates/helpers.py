"""Frames and nodes for exercising predicate cells directly."""

from __future__ import annotations

from typing import Any

from orchestration.run.routes import BranchId, EdgeSegment
from orchestration.tools.contracts import PredicateContext
from orchestration.types import (
    BranchDefinition,
    BranchNode,
    FrameRef,
    NodeOutput,
    OutputItem,
    SelectDefinition,
    SelectNode,
)


def branch(predicate: Any, evaluator: str) -> BranchNode:
    return BranchNode(
        id="gate", definition=BranchDefinition(evaluator=evaluator, predicate=predicate)
    )


def select(
    predicate: Any, evaluator: str, cases: tuple[str, ...] = ("small", "large")
) -> SelectNode:
    return SelectNode(
        id="size",
        definition=SelectDefinition(evaluator=evaluator, predicate=predicate, cases=cases),
    )


def context(**records: dict[str, Any] | list[dict[str, Any]]) -> PredicateContext:
    """A frame whose table holds each node's items (a record or a list of records)."""
    outputs = {}
    for i, (node_id, value) in enumerate(records.items()):
        route = (
            BranchId(segments=(EdgeSegment(edge=f"e{i}"),)) if node_id != "entry" else BranchId()
        )
        rows = value if isinstance(value, list) else [value]
        outputs[f"{node_id}:{route.key}"] = NodeOutput(
            items=tuple(OutputItem.model_validate({"json": r}) for r in rows), branch_id=route
        )
    return PredicateContext(
        outputs=outputs, frame=FrameRef(node_id="gate", kind="branch", branch_id=BranchId())
    )
