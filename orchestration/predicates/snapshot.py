"""What an expression cell sees of a frame's outputs: one record per node, by node id.

A frame's branch-local table is keyed ``<nodeId>:<branchKey>``; an expression author knows node
ids, not route keys. So the expression cells (CEL, Lua) expose each node that produced output on
the frame's route under its bare id, as the merge of its items' fields (a later item's field
wins, as in the structured cell). A node id that occurs under more than one key in one table
(which the diamond rule makes impossible in a frozen plan, but a hand-built table could hold) is
left out rather than picked arbitrarily. Node ids are visited in sorted order, so building the
snapshot is deterministic.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from orchestration.types import NodeOutput

__all__ = ["merged_record", "node_records"]


def merged_record(output: NodeOutput) -> dict[str, Any]:
    """A node's items merged into one record (a later item's field wins)."""
    merged: dict[str, Any] = {}
    for item in output.items:
        merged.update(item.json_)
    return merged


def node_records(outputs: Mapping[str, NodeOutput]) -> dict[str, dict[str, Any]]:
    """Each unambiguous node id's merged record, in sorted id order."""
    by_id: dict[str, list[str]] = {}
    for key in outputs:
        by_id.setdefault(key.split(":", 1)[0], []).append(key)
    return {
        node_id: merged_record(outputs[keys[0]])
        for node_id, keys in sorted(by_id.items())
        if len(keys) == 1
    }
