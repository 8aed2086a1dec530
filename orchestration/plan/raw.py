"""Raw views for tools rather than readers: a folded plan, its op log, and structural diffs.

``diff_views`` is pure and compares final states: nodes by id (added, removed, and changed field
by field with dot paths relative to the definition, plus ``phase`` and ``kind``), edges by id (a
changed edge appears in both the removed and the added list, since an edge has no fields worth
tracking apart from its endpoints and handle). Values are compared by their canonical encoding,
so ``1`` and ``1.0``, or ``1`` and ``true``, count as different, exactly as the digest does. An
edit that was later reverted leaves no trace in a diff of final states.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from orchestration.errors import OrchestrationError
from orchestration.plan.encoding import encode
from orchestration.types import (
    FieldChange,
    NodeChange,
    PlanDiff,
    PlanEdge,
    PlanNode,
    PlanOp,
    RawPlanView,
    RevisionRef,
)

if TYPE_CHECKING:
    from orchestration.store.base import PlanStore

__all__ = ["Revision", "diff_views", "raw_diff", "raw_ops", "raw_plan", "revision_number"]

Revision = int | str
"""A revision number, or ``"current"`` for the plan as it is now."""


def revision_number(revision: Revision) -> int | None:
    """``None`` for ``"current"``, else the revision number.

    Raises:
        ValueError: for any other string, naming the accepted forms.

    """
    if revision == "current":
        return None
    if isinstance(revision, int) and not isinstance(revision, bool):
        return revision
    raise ValueError(f"revision {revision!r} is neither a revision number nor 'current'")


async def raw_plan(store: PlanStore, plan_id: str, revision: int | None = None) -> RawPlanView:
    """The plan folded at ``revision`` (default: current), with its provenance."""
    return (await store.fold(plan_id, revision=revision)).view


async def raw_ops(
    store: PlanStore,
    plan_id: str,
    *,
    through_revision: int | None = None,
    since_lamport: int | None = None,
) -> list[PlanOp]:
    """The op log in append order (see :meth:`PlanStore.read_ops`)."""
    return await store.read_ops(
        plan_id, through_revision=through_revision, since_lamport=since_lamport
    )


async def raw_diff(store: PlanStore, plan_id: str, a: Revision, b: Revision) -> PlanDiff:
    """The structural diff from revision ``a`` to revision ``b`` of one plan."""
    view_a = await raw_plan(store, plan_id, revision_number(a))
    view_b = await raw_plan(store, plan_id, revision_number(b))
    return diff_views(view_a, view_b)


def diff_views(a: RawPlanView, b: RawPlanView) -> PlanDiff:
    """What changed from view ``a`` to view ``b`` (see the module docstring)."""
    nodes_a = {n.id: n for n in a.nodes}
    nodes_b = {n.id: n for n in b.nodes}
    changed: list[NodeChange] = []
    for node_id, before in nodes_a.items():
        after = nodes_b.get(node_id)
        if after is None:
            continue
        fields = tuple(_node_changes(before, after))
        if fields:
            changed.append(NodeChange(node_id=node_id, fields=fields))
    edges_a = {e.id: e for e in a.edges}
    edges_b = {e.id: e for e in b.edges}
    return PlanDiff.model_validate(
        {
            "from": RevisionRef(revision=a.revision, digest=a.digest),
            "to": RevisionRef(revision=b.revision, digest=b.digest),
            "nodes_added": tuple(n for n in b.nodes if n.id not in nodes_a),
            "nodes_removed": tuple(n for n in a.nodes if n.id not in nodes_b),
            "nodes_changed": tuple(changed),
            "edges_added": tuple(e for e in b.edges if not _same_edge(edges_a.get(e.id), e)),
            "edges_removed": tuple(e for e in a.edges if not _same_edge(edges_b.get(e.id), e)),
        }
    )


def _same_edge(other: PlanEdge | None, edge: PlanEdge) -> bool:
    return (
        other is not None
        and other.from_ == edge.from_
        and other.to == edge.to
        and other.handle == edge.handle
    )


def _node_changes(before: PlanNode, after: PlanNode) -> Iterator[FieldChange]:
    if before.kind != after.kind:
        yield FieldChange(path="kind", before=before.kind, after=after.kind)
    if before.phase != after.phase:
        yield FieldChange(path="phase", before=before.phase, after=after.phase)
    yield from _walk(_plain(before.definition), _plain(after.definition), "")


def _plain(value: Any) -> Any:
    """A model as nested dicts of wire names (``None`` fields dropped); tuples become lists."""
    if isinstance(value, BaseModel):
        names = {
            name: info.serialization_alias or info.alias or name
            for name, info in type(value).model_fields.items()
        }
        return {
            names[k]: _plain(v) for k, v in value.__dict__.items() if v is not None and k in names
        }
    kind = type(value)
    if kind is tuple or kind is list:
        return [_plain(v) for v in value]
    if kind is dict:
        return {k: _plain(v) for k, v in value.items()}
    return value


def _walk(a: Any, b: Any, path: str) -> Iterator[FieldChange]:
    if _is_record(a) and _is_record(b):
        for key in [*a, *(k for k in b if k not in a)]:
            child = f"{path}.{key}" if path else key
            yield from _walk(a.get(key), b.get(key), child)
        return
    if type(a) is list and type(b) is list and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            yield from _walk(x, y, f"{path}.{i}" if path else str(i))
        return
    if not _same(a, b):
        yield FieldChange(path=path or "definition", before=a, after=b)


def _is_record(value: Any) -> bool:
    return type(value) is dict and all(type(k) is str for k in value)


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    try:
        return encode(a) == encode(b)
    except (OrchestrationError, TypeError, ValueError):
        return bool(type(a) is type(b) and a == b)
