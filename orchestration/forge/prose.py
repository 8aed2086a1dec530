"""The words the forged tools share: the node grammar, issue lists, node excerpts."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import TypeAdapter

from orchestration.predicates.structured import AUTHORING_GUIDE
from orchestration.types import PlanIssue, PlanNode

__all__ = [
    "NODE_VOCABULARY",
    "PREDICATES",
    "compact",
    "issue_lines",
    "issues_json",
    "node_json",
    "render_issues",
]

NODE_VOCABULARY = """
NODE GRAMMAR — the only node kinds are: entry, call, reason, transform, branch, select, join.
EDGE HANDLES — the handle an edge may carry depends on its source node kind:
  · entry → always
  · call → always | error
  · reason → always | error
  · transform → always | error
  · branch → match | no_match | default | error
  · select → case_<label> (one per label in its cases) | default | error
  · join → always | error
A select node requires a default edge. When a node settles, every edge whose handle applies to \
that outcome fires once; on a FAILURE only error edges fire (always is a success-path edge, not \
a finally). A join waits for every incoming edge of the diamond its fork opened. Node ids are \
snake_case (no "/", no leading "."); edge ids match ^[A-Za-z0-9_-]{1,64}$. A reference to \
another node's output is written {"$ref": {"node": <id>, "select": "first"|"last"|"all"|\
{"index": n}, "path": "<field>"}}; {"$param": {"path": <name>}} is a template hole and belongs \
only in templates. The $ref and $param keys are reserved."""
"""Appended to the graph-editing tools' descriptions: the grammar a model must write in."""

PREDICATES = "\nPREDICATES (evaluator \"structured\") — " + AUTHORING_GUIDE
"""How a branch or select predicate reads outputs, for the tools that write them."""

_NODE = TypeAdapter[PlanNode](PlanNode)


def issue_lines(issues: Iterable[PlanIssue]) -> list[str]:
    """``  · (<severity>) <code> [node <id>]: <message>`` per issue."""
    lines = []
    for issue in issues:
        where = ""
        if issue.node_id is not None:
            where = f" [node {issue.node_id}]"
        elif issue.edge_id is not None:
            where = f" [edge {issue.edge_id}]"
        lines.append(f"  · ({issue.severity}) {issue.code}{where}: {issue.message}")
    return lines


def render_issues(issues: Sequence[PlanIssue]) -> str:
    """``No issues.`` or ``Issues (<n>):`` and one line per issue."""
    if not issues:
        return "No issues."
    return "\n".join([f"Issues ({len(issues)}):", *issue_lines(issues)])


def issues_json(issues: Iterable[PlanIssue]) -> list[dict[str, Any]]:
    """Issues in their wire form."""
    return [issue.model_dump(mode="json", exclude_none=True) for issue in issues]


def node_json(node: PlanNode) -> dict[str, Any]:
    """A node in its wire form (references as ``{"$ref": ...}``), ready to copy into an edit."""
    dumped: dict[str, Any] = _NODE.dump_python(node, mode="json", exclude_none=True)
    return dumped


def compact(value: Any) -> str:
    """One-line JSON."""
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
