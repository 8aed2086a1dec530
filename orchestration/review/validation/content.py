"""Content checks: no unedited scaffold text, and the plan within its own bounds.

Bounds are plan content (digested and approved), and an operator approves them expecting them
to hold, so ``maxNodes``, ``maxEdges`` and ``maxEncodedBytes`` (of the canonical encoding the
digest hashes) are enforced here; ``maxSteps`` and ``maxConcurrentFrames`` bound a run and are
enforced by the engine.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel

from orchestration.plan.encoding import NodeRef
from orchestration.review.validation.context import CheckContext
from orchestration.review.validation.issues import blocking
from orchestration.types import PlanIssue

__all__ = ["PLACEHOLDER", "check_bounds", "check_scaffold"]

PLACEHOLDER = "lorem ipsum"
"""The text authoring scaffolds fill in for the author to replace."""

_PLACEHOLDER_BYTES = re.compile(re.escape(PLACEHOLDER.encode()), re.IGNORECASE)


def check_scaffold(ctx: CheckContext) -> list[PlanIssue]:
    """One issue per node whose definition still holds the scaffold placeholder.

    The canonical encoding holds every staged string as UTF-8, and only ASCII letters lower-case
    to the placeholder's letters, so a plan whose encoding lacks the text (in any case) has no
    placeholder, and the per-node walk is skipped.
    """
    encoded = ctx.encoded
    if isinstance(encoded, bytes) and _PLACEHOLDER_BYTES.search(encoded) is None:
        return []
    issues: list[PlanIssue] = []
    for node in ctx.view.nodes:
        if _holds_placeholder(node.definition):
            issues.append(
                blocking(
                    "scaffold_placeholder",
                    f'Node "{node.id}" still carries the unedited scaffold placeholder '
                    f'"{PLACEHOLDER}"; replace it with the intended content.',
                    node_id=node.id,
                )
            )
    return issues


def _holds_placeholder(value: Any) -> bool:
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str:
            if item.strip().lower() == PLACEHOLDER:
                return True
        elif isinstance(item, BaseModel):
            stack.extend(item.__dict__.values())
        elif kind is dict:
            stack.extend(item.keys())
            stack.extend(item.values())
        elif kind in (list, tuple, set, frozenset):
            stack.extend(item)
        elif kind is NodeRef:
            continue
    return False


def check_bounds(ctx: CheckContext) -> list[PlanIssue]:
    """``maxNodes``, ``maxEdges`` and ``maxEncodedBytes``, in that order."""
    issues: list[PlanIssue] = []
    view = ctx.view
    bounds = view.bounds
    if len(view.nodes) > bounds.max_nodes:
        issues.append(
            blocking(
                "max_nodes_exceeded",
                f"The plan has {len(view.nodes)} nodes, above its bound maxNodes "
                f"{bounds.max_nodes}; remove nodes, or raise maxNodes with set_bounds if the "
                "operator should approve a larger plan.",
            )
        )
    if len(view.edges) > bounds.max_edges:
        issues.append(
            blocking(
                "max_edges_exceeded",
                f"The plan has {len(view.edges)} edges, above its bound maxEdges "
                f"{bounds.max_edges}; remove edges, or raise maxEdges with set_bounds if the "
                "operator should approve a larger plan.",
            )
        )
    encoded = ctx.encoded
    if isinstance(encoded, Exception):
        issues.append(
            blocking(
                "unencodable_value",
                f"The plan cannot be encoded canonically ({encoded}); replace the offending staged "
                "value with a plain encodable value.",
            )
        )
        return issues
    size = len(encoded)
    if size > bounds.max_encoded_bytes:
        issues.append(
            blocking(
                "max_encoded_bytes_exceeded",
                f"The plan encodes to {size} bytes, above its bound maxEncodedBytes "
                f"{bounds.max_encoded_bytes}; move large staged values behind a tool that "
                "fetches them, or raise maxEncodedBytes with set_bounds.",
            )
        )
    return issues
