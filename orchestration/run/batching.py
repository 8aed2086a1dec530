"""Distributed maps: a large map's items run in batches, each batch a run of its own.

A map whose list is long runs its items in **batches** instead of in the run itself, once the
host's :class:`Batching` says so: contiguous slices of the list, each run by a sub-run that
holds only the map's frame and the outputs its body reads (:class:`BatchSpec`). On Temporal a
batch is a child workflow (``PlanBatch``), so no execution holds more than one batch's
activities or history; in process it is the same sub-run, called directly. Both hosts run
the same code (:func:`orchestration.run.batch.run_batch`), so both record the same log.

**What is deterministic, and why.** A batch runs its items one after another, in index order,
so its own log does not depend on timing. The run starts at most the map's ``concurrency``
batches at once (so at most that many items run at once, as without batches) and takes their
results **in batch order**: batch ``k``'s result is recorded, and the next batch started, only
once every batch before it was. So the log, and which batches ran before the failure
tolerance was exceeded, are the same on every host, however the batches' finishes
interleave. The price is head-of-line waiting: a slow batch holds back the start of the next
one (batches are of equal size, and the same body, so this costs little).

**The log is folded in.** A batch's log (:class:`BatchResult`) numbers its frames from
:attr:`BatchSpec.base` up; the run splices it into its own log at the batch's turn, renumbered
into the run's frame numbers (:func:`renumbered`), so the run's log reads as if the run had run
the items itself, and ``fold_run`` needs nothing else. Its ``interrupt``, ``end`` and
``snapshot`` entries are the sub-run's own and are not spliced.

**What a batch cannot do**, and so when a map runs in the run instead (:func:`batchable`): a
body with a gate, an input node or a model that may ask (a person answers the run, not a
batch), a plan with token, cost or wall-time budgets (spend is counted run-wide), or a body
whose reads cannot be bounded. A frame whose outcome is lost halts a run for an operator; in a
batch nothing is waited for: the batch ends there, and every item it did not finish fails by
name (the map's tolerance decides), so no call is repeated without a person.

Results travel compressed (:func:`encode_result`): a batch of a few hundred items logs a few
thousand entries, and the parent's history holds every batch's result.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import ormsgpack
from pydantic import Field, PrivateAttr

from orchestration.plan.graph import topological_order
from orchestration.plan.maps import region_repeats, worst_case
from orchestration.run.checkpoint import Checkpoint, node_reads
from orchestration.run.engine.compiled import CompiledPlan
from orchestration.run.log import (
    LOG_ADAPTER,
    LogArrive,
    LogCancel,
    LogEdge,
    LogEnd,
    LogEntry,
    LogInterrupt,
    LogItem,
    LogMerge,
    LogSettle,
    LogSnapshot,
)
from orchestration.types import (
    EncodableValue,
    InputNode,
    ReasonNode,
    UsageTotals,
    WireModel,
)

__all__ = [
    "DEFAULT_BATCH_STEPS",
    "DEFAULT_BATCHES_OVER",
    "BatchDispatch",
    "BatchResult",
    "BatchFacts",
    "BatchSpec",
    "Batching",
    "batch_facts",
    "decode_result",
    "encode_result",
    "renumbered",
    "spliceable",
    "unsettled",
]

DEFAULT_BATCHES_OVER = 1000
"""A map with more items than this runs them in batches (``RunSettings.batch_maps_over``)."""

DEFAULT_BATCH_STEPS = 300
"""The most steps one batch may take (``RunSettings.batch_steps``): with a workflow task and an
activity's three events per step, a batch's history stays far from Temporal's 4,096-event
continue-as-new suggestion."""


@dataclass(frozen=True, slots=True)
class Batching:
    """When a map's items run in batches, and how large a batch is.

    Attributes:
        over: A map with more items than this runs them in batches.
        steps: The most steps a batch may take: a batch holds ``steps // (1 + the body's
            worst-case steps)`` items (at least one).

    """

    over: int = DEFAULT_BATCHES_OVER
    steps: int = DEFAULT_BATCH_STEPS

    def size(self, item_steps: int) -> int:
        """Items per batch for a body whose item takes at most ``item_steps`` steps."""
        return max(1, self.steps // max(1, item_steps))


@dataclass(frozen=True, slots=True)
class BatchFacts:
    """What running a map's items in batches needs to know of its body.

    Attributes:
        item_steps: The most steps one item takes (its own frame and its body's worst case).
        reads: The nodes whose outputs the body may read (a batch carries only theirs).

    """

    item_steps: int
    reads: frozenset[str]


def batch_facts(plan: CompiledPlan, map_id: str, gated: frozenset[str]) -> BatchFacts | None:
    """Whether map ``map_id``'s items may run in batches, and what a batch needs; else ``None``.

    Not when the plan has a token, cost or wall-time budget (counted run-wide, so a batch
    could not keep it), nor when the body holds a gated node (``gated``), an input node, a
    reason node that may ask a person, or a node whose reads cannot be bounded (a cell that
    may read any output).
    """
    if plan.budgets is not None:
        return None
    graph = plan.graph
    order = topological_order(graph)
    if order is None:
        return None
    target = graph.index[map_id]
    worst = worst_case(graph, order, graph.index[plan.entry.id], region_repeats(graph, plan.nodes))
    region = next((r for r in worst.regions if r.node == target), None)
    if region is None:
        return None
    reads: set[str] = set()
    for member in region.body:
        node = plan.nodes[graph.ids[member]]
        if node.id in gated or isinstance(node, InputNode):
            return None
        if isinstance(node, ReasonNode) and node.definition.asks is not None:
            return None
        read = node_reads(node)
        if read is None:
            return None
        reads |= read
    return BatchFacts(1 + region.body_steps, frozenset(reads))


class BatchSpec(WireModel):
    """What one batch's sub-run needs: the map's frame, its tables, and the batch's items.

    Attributes:
        plan_id: The plan (loaded by reference and checked against the approval).
        map_frame: The map's frame number in the run's log (``item`` entries name it).
        batch: The batch's position among the map's batches, from 0.
        first: The list index of the batch's first item.
        items: The batch's items, in order.
        model: Whether the list traces back to a model's output (its items inherit it).
        base: The number the batch's first new frame gets (frames below it are the run's).
        checkpoint: The map's frame with the outputs its body may read, and nothing else.

    """

    plan_id: str
    map_frame: int
    batch: int
    first: int
    items: tuple[EncodableValue, ...]
    model: bool | None = None
    base: int
    checkpoint: Checkpoint


@dataclass(frozen=True, slots=True)
class BatchDispatch:
    """One batch the host must run now.

    Attributes:
        key: ``<map frame key>#batch<k>``: unique in the run and stable across replays (a
            ``PlanBatch`` child's workflow id is derived from it).
        map_id: The map node.
        spec: What the batch's sub-run needs.

    """

    key: str
    map_id: str
    spec: BatchSpec


class BatchResult(WireModel):
    """What a batch came to: its items' rows, its log, and what it counted.

    Attributes:
        rows: One row per item it finished, in index order: ``{index, ok, result}`` or
            ``{index, ok: false, error: {node, name, message}}`` (the map's output rows).
        log: Its log entries (frames numbered from the spec's ``base``), without the
            sub-run's ``interrupt``, ``end`` and ``snapshot`` entries.
        next_frame: The number its next new frame would have had.
        steps: The steps it took.
        spent: What its attempts spent on models, when any did.
        ended: Why it ended before every item ran (``None``: every item ran).

    """

    rows: tuple[dict[str, Any], ...]
    log: tuple[LogEntry, ...]
    next_frame: int
    steps: int
    spent: UsageTotals | None = Field(default=None, exclude_if=lambda v: v is None)
    ended: str | None = None


    _packed: list[dict[str, Any]] | None = PrivateAttr(default=None)

    def entries(self, base: int, offset: int) -> list[LogEntry]:
        """The log renumbered into the run's frames (see :func:`renumbered`); once.

        A result decoded from the wire (:func:`decode_result`) holds its log as plain data
        until now: it is renumbered as data and validated once, here, when the run takes it,
        so a workflow task that receives many results does not validate them all at once.
        """
        packed = self._packed
        if packed is None:
            return [renumber_in_place(entry, base, offset) for entry in self.log]
        self._packed = None
        if offset:
            for raw in packed:
                _move_raw(raw, base, offset)
        return LOG_ADAPTER.validate_python(packed)


def encode_result(result: BatchResult) -> bytes:
    """The result as compressed MessagePack (what a ``PlanBatch`` child returns)."""
    packed = ormsgpack.packb(result.model_dump(mode="json", by_alias=True))
    return zlib.compress(packed, 6)


def decode_result(data: bytes) -> BatchResult:
    """The inverse of :func:`encode_result`; the log stays plain data until taken."""
    raw = ormsgpack.unpackb(zlib.decompress(data))
    log = raw.pop("log", [])
    result = BatchResult.model_validate({**raw, "log": ()})
    result._packed = log
    return result


_NOT_SPLICED = (LogInterrupt, LogEnd, LogSnapshot)


def spliceable(entries: Iterable[LogEntry]) -> tuple[LogEntry, ...]:
    """A sub-run's entries without those that speak of the sub-run itself."""
    return tuple(e for e in entries if not isinstance(e, _NOT_SPLICED))


_NUMBERED = ("frame", "source", "fork", "map", "after")
"""The fields of a log entry that hold a frame number (``arrivals`` holds several)."""


def renumbered(entry: LogEntry, base: int, offset: int) -> LogEntry:
    """A copy of ``entry`` with every frame number at or past ``base`` moved by ``offset``.

    Numbers below ``base`` are the run's own (the map's frame) and stay.
    """
    return renumber_in_place(entry.model_copy(), base, offset) if offset else entry


def renumber_in_place(entry: LogEntry, base: int, offset: int) -> LogEntry:
    """:func:`renumbered` on ``entry`` itself, for an entry nothing else holds (a batch's).

    Entries are frozen models; a batch's entries are owned by the result that carries them,
    and a copy per entry (``model_copy``) costs more than everything else the run does to take
    a batch.
    """
    if offset:
        _move_raw(entry.__dict__, base, offset)
    return entry


def _move_raw(values: dict[str, Any], base: int, offset: int) -> None:
    """Move the frame numbers among an entry's fields: its ``__dict__``, or its plain data.

    The numbered fields are one word each, so their names and wire names agree.
    """
    for name in _NUMBERED:
        number = values.get(name)
        if isinstance(number, int) and number >= base:
            values[name] = number + offset
    arrivals = values.get("arrivals")
    if arrivals:
        values["arrivals"] = type(arrivals)(a + offset if a >= base else a for a in arrivals)


def unsettled(entries: Sequence[LogEntry]) -> list[int]:
    """Frames a sub-run's log brings into being and never settles, cancels or parks, in order."""
    live: dict[int, None] = {}
    for entry in entries:
        if isinstance(entry, LogEdge | LogItem) or type(entry) is LogMerge:
            live[entry.frame] = None
        elif isinstance(entry, LogSettle | LogCancel | LogArrive):
            live.pop(entry.frame, None)
    return list(live)

