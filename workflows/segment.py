"""This execution's part of a run's log, kept in workflow state: record, page, count, mirror.

A run that continues as new is a chain of executions; each holds only its own *segment* of the
compact log (:mod:`orchestration.run.log`), from global index :attr:`Segment.offset` on. Earlier
segments are in the plan store, and so is this one once mirrored: ``plan.mirror`` (a local
activity, idempotent by position) writes the unmirrored tail in chunks, so no payload nears
Temporal's 2 MiB limit however long the segment grew. For the same reason the ``events`` query
is served in pages (:meth:`Segment.page`), bounded by count and by size.

The segment also keeps the run's settle counts, carried across continue-as-new
(:meth:`Segment.carry`, :meth:`Segment.continue_from`) so the result counts the whole run, and
counts each entry once on the worker's metrics.

This module is passed through the workflow sandbox (see :mod:`workflows.plan_run`): it reads no
clock, randomness or environment, and its state lives in instances a run owns.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.common import MetricMeter

from orchestration.plan.gates import seconds_until
from orchestration.run.checkpoint import Checkpoint
from orchestration.run.log import (
    LogAttempt,
    LogEdge,
    LogEnd,
    LogEnter,
    LogEntry,
    LogGateDecided,
    LogGateOpen,
    LogGateTimeout,
    LogInterrupt,
    LogSettle,
    LogStart,
)
from orchestration.run.messages import ContinuedRun, LogPage, MirrorRequest
from workflows.port import LOCAL_TIMEOUT

__all__ = ["PAGE_LIMIT", "Segment", "counts_of"]

PAGE_LIMIT = 2000
"""Most entries one ``events`` page holds."""

_PAGE_BYTES = 1_000_000
_MIRROR_EVERY = 4000
_MIRROR_CHUNK = 2000
_LET_GO_AFTER = 8000


class Segment:
    """The log entries this execution recorded, where they start, and what they counted.

    A new segment opens a fresh run's log; :meth:`continue_from` and :meth:`resume_after` set
    it to go on from what earlier executions recorded.

    Attributes:
        plan_id: The plan whose run record the segment is mirrored into.
        log: The entries this execution recorded, in order.
        offset: The global index of the first entry held (entries before it are in the plan
            store: earlier executions', and this one's once many are mirrored).
        mirrored: How far (global index) the run's log is in the plan store.
        number: Which execution of the run this is (1 for the first).
        counts: Settlements so far, this segment's and earlier ones', by status.
        keep_all: Hold every entry recorded, mirrored or not (a rebuild from history).

    """

    def __init__(self, plan_id: str, *, keep_all: bool = False) -> None:
        self.plan_id = plan_id
        self.keep_all = keep_all
        self.log: list[LogEntry] = []
        self.offset = 0
        self.mirrored = 0
        self.number = 1
        self.counts = {"ok": 0, "failed": 0, "skipped": 0}
        self._kinds: dict[int, str] = {}
        self._gates: dict[tuple[int, int], LogGateOpen] = {}

    def continue_from(self, continued: ContinuedRun) -> None:
        """Go on from the execution before this one, which carried ``continued`` (:meth:`carry`)."""
        self.offset = self.mirrored = continued.entries_before
        self.number = continued.segments + 1
        self.counts = {
            "ok": continued.settled,
            "failed": continued.failed,
            "skipped": continued.skipped,
        }
        for frame in continued.checkpoint.frames:
            opened = frame.gate.open if frame.gate is not None else None
            if opened is not None:
                self._gates[(opened.frame, opened.request)] = opened

    def resume_after(self, previous: list[LogEntry]) -> None:
        """Go on from a resumed run's log: start after ``previous``, which is already stored."""
        self.offset = self.mirrored = len(previous)
        self.counts = counts_of(previous)
        for entry in previous:
            if isinstance(entry, LogGateOpen):
                self._gates[(entry.frame, entry.request)] = entry
            elif isinstance(entry, LogGateDecided | LogGateTimeout):
                self._gates.pop((entry.frame, entry.request), None)

    @property
    def total(self) -> int:
        """The run's log length so far: entries before this segment and in it."""
        return self.offset + len(self.log)

    def carry(self, checkpoint: Checkpoint) -> ContinuedRun:
        """What the next execution needs to go on from ``checkpoint`` (the log stays behind)."""
        return ContinuedRun(
            checkpoint=checkpoint,
            segments=self.number,
            entries_before=self.total,
            settled=self.counts["ok"],
            failed=self.counts["failed"],
            skipped=self.counts["skipped"],
        )

    def record(self, entries: list[LogEntry]) -> None:
        """Append ``entries``, counting their settlements and, once, on the worker's metrics."""
        if not entries:
            return
        _count(entries, self._kinds, self._gates)
        for entry in entries:
            if type(entry) is LogSettle:
                self.counts[entry.status] += 1
        self.log.extend(entries)

    async def mirror(self, *, everything: bool = False) -> None:
        """Write the unmirrored tail into the plan store, in chunks, in order.

        Without ``everything``, only once the tail is a few thousand entries long. Call it only
        for a run that holds its plan's claim: the run record is the claimant's.
        """
        total = self.total
        if not everything and total - self.mirrored < _MIRROR_EVERY:
            return
        while self.mirrored < total:
            start = self.mirrored
            chunk = self.log[start - self.offset : start - self.offset + _MIRROR_CHUNK]
            await workflow.execute_local_activity(
                "plan.mirror",
                MirrorRequest(
                    plan_id=self.plan_id,
                    run_id=workflow.info().workflow_id,
                    start=start,
                    entries=tuple(chunk),
                ),
                summary=f"log entries {start}–{start + len(chunk) - 1} to the plan store",
                start_to_close_timeout=LOCAL_TIMEOUT,
            )
            self.mirrored = start + len(chunk)
        self._let_go()

    def _let_go(self) -> None:
        """Drop the entries the store holds once they are many, so memory stays bounded.

        A long run (a map of 10,000 items logs some 110,000 entries) would otherwise hold its
        whole log, and the garbage collector's passes over it grow with it until one outlasts
        the SDK's two-second deadlock limit. The store has every dropped entry: the ``events``
        query pages from :attr:`offset` (readers take what is before it from the store). A
        rebuild of the log from history (:mod:`workflows.runlog`) sets :attr:`keep_all`.
        """
        held = self.mirrored - self.offset
        if held < _LET_GO_AFTER or self.keep_all:
            return
        del self.log[:held]
        self.offset = self.mirrored

    def page(self, since: int, limit: int, *, done: bool) -> LogPage:
        """Entries from global index ``since`` (this segment's), at most ``limit``, under 1 MB.

        A page holds at least one entry when any is left, however large.
        """
        start = max(0, since - self.offset)
        limit = max(1, min(limit, PAGE_LIMIT))
        page: list[LogEntry] = []
        size = 0
        for entry in self.log[start : start + limit]:
            size += len(entry.model_dump_json())
            if page and size > _PAGE_BYTES:
                break
            page.append(entry)
        return LogPage(
            entries=tuple(page),
            next=self.offset + start + len(page),
            total=self.total,
            segment_offset=self.offset,
            done=done,
        )


def counts_of(log: list[LogEntry]) -> dict[str, int]:
    """Settlements in ``log``, by status (``ok``, ``failed``, ``skipped``)."""
    counts = {"ok": 0, "failed": 0, "skipped": 0}
    for entry in log:
        if type(entry) is LogSettle:
            counts[entry.status] += 1
    return counts


def _count(
    entries: list[LogEntry],
    kinds: dict[int, str],
    gates: dict[tuple[int, int], LogGateOpen] | None = None,
) -> None:
    """Count log entries on the worker's metrics (kinds: each frame's node kind, kept here).

    ``workflow.metric_meter()`` records nothing while a workflow task replays, so each fact is
    counted once however often history is replayed: ``plan_nodes_started`` (by ``kind``),
    ``plan_nodes_settled`` (by ``kind`` and ``status``), ``plan_runs_settled`` (by ``outcome``)
    and, where the loss is seen (:func:`workflows.port.attempt_from_error`),
    ``plan_indeterminate_frames`` (a frame halted or retried because its outcome was lost).
    From each attempt's entry: ``plan_attempts`` (by ``kind``, ``result`` and ``reason``, the
    first attempt's reason being ``first``), ``plan_model_tokens`` (by ``direction``: input or
    output) and ``plan_attempt_cost_usd`` (a histogram of each priced attempt's cost: its sum is
    what the runs spent); and ``plan_budgets_exhausted`` (by ``budget``) when a run halts on one.

    Gates: ``plan_gates_opened`` (by ``gate``), ``plan_gates_closed`` (by ``gate`` and
    ``outcome``: approved, rejected, answered, timed_out), so the requests open now are the
    difference; and ``plan_gate_wait_seconds`` (by ``gate``), the time each request waited
    (``gates`` keeps the open ones, carried across continue-as-new and resume).
    """
    meter = workflow.metric_meter()
    open_gates = gates if gates is not None else {}
    for entry in entries:
        if isinstance(entry, LogGateOpen | LogGateDecided | LogGateTimeout):
            _count_gate(meter, entry, open_gates)
            continue
        if isinstance(entry, LogEdge):
            kinds[entry.frame] = entry.node_kind
        elif isinstance(entry, LogStart):
            kinds[0] = "entry"
        elif isinstance(entry, LogEnter):
            if entry.attempt == 1:
                frame_kind = kinds.get(entry.frame, "join")
                meter.create_counter("plan_nodes_started").add(1, {"kind": frame_kind})
        elif isinstance(entry, LogSettle):
            attributes = {"kind": kinds.get(entry.frame, "join"), "status": entry.status}
            meter.create_counter("plan_nodes_settled").add(1, attributes)
        elif isinstance(entry, LogEnd):
            meter.create_counter("plan_runs_settled").add(1, {"outcome": entry.outcome})
        elif isinstance(entry, LogAttempt):
            attributes = {
                "kind": kinds.get(entry.frame, "call"),
                "result": entry.result,
                "reason": entry.reason or "first",
            }
            meter.create_counter("plan_attempts").add(1, attributes)
            usage = entry.usage
            if usage is not None:
                tokens = meter.create_counter("plan_model_tokens")
                tokens.add(usage.input_tokens, {"direction": "input"})
                tokens.add(usage.output_tokens, {"direction": "output"})
                if usage.cost_usd is not None:
                    meter.create_histogram_float(
                        "plan_attempt_cost_usd", "what each priced model attempt cost", "USD"
                    ).record(usage.cost_usd)
        elif isinstance(entry, LogInterrupt) and entry.cause.kind == "budget_exhausted":
            budget = getattr(entry.cause, "budget", None) or "maxSteps"
            meter.create_counter("plan_budgets_exhausted").add(1, {"budget": budget})


def _count_gate(
    meter: MetricMeter,
    entry: LogGateOpen | LogGateDecided | LogGateTimeout,
    open_gates: dict[tuple[int, int], LogGateOpen],
) -> None:
    key = (entry.frame, entry.request)
    if isinstance(entry, LogGateOpen):
        open_gates[key] = entry
        meter.create_counter("plan_gates_opened").add(1, {"gate": entry.gate})
        return
    opened = open_gates.pop(key, None)
    gate = opened.gate if opened is not None else "unknown"
    outcome = entry.decision if isinstance(entry, LogGateDecided) else "timed_out"
    meter.create_counter("plan_gates_closed").add(1, {"gate": gate, "outcome": outcome})
    if opened is not None:
        waited = max(0.0, seconds_until(entry.at, opened.at))
        meter.create_histogram_float(
            "plan_gate_wait_seconds", "seconds a gate request waited", "s"
        ).record(waited, {"gate": gate})
