"""The SQLite store and the memory store, driven by the same random operations, never differ.

The memory store is the executable model: every step runs on both stores, the answers (values
or error types and messages) must be equal, and after every step every plan must read back the
same from both, and so must the plan and run listings (``updatedAt`` and ``claimedAt``
aside, which are wall-clock stamps).
"""

from __future__ import annotations

import asyncio
import itertools
import shutil
import tempfile
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    MultipleResults,
    RuleBasedStateMachine,
    initialize,
    invariant,
    multiple,
    rule,
)

from orchestration.plan.encoding import NodeRef
from orchestration.run.log import LogEdge, LogEnd, LogEnter, LogEntry, LogSettle, LogStart
from orchestration.store import (
    CreateOk,
    MemoryPlanStore,
    PlanStore,
    SqlitePlanStore,
    TransitionRequest,
)
from orchestration.types import (
    AddEdgeOp,
    AddNodeOp,
    ApprovalRecord,
    CallDefinition,
    CallNode,
    EntryNode,
    OutputItem,
    PlanEdge,
    PlanOp,
    PlanState,
    RunOutcome,
    SetNodeFieldOp,
    TemplateProvenance,
)

AT = "2026-01-01T00:00:00Z"
RUN_IDS = ("run-1", "run-2")
EXECUTIONS = (None, "exec-a", "exec-b")
STATES: tuple[PlanState, ...] = ("editable", "reviewable", "executable")
BOGUS = "0" * 64
ENDS: tuple[RunOutcome, ...] = ("aborted", "halted", "completed")


def make_op(index: int, variant: int, lamport: int) -> PlanOp:
    """A small op vocabulary; the same (index, variant, lamport) always builds the same op.

    Op ids repeat across draws, so re-deliveries (same content) and conflicts (same id, other
    content) both happen.
    """
    op_id = f"op-{index}"
    if index == 0:
        return AddNodeOp(
            op_id=op_id, actor_id="a", lamport=lamport, at=AT, node=EntryNode(id="entry")
        )
    if index % 3 == 1:
        node = CallNode(
            id=f"n{index}",
            definition=CallDefinition(
                tool=f"tool_{variant}", args={"from": NodeRef("entry", path="x")}
            ),
        )
        return AddNodeOp(op_id=op_id, actor_id="a", lamport=lamport, at=AT, node=node)
    if index % 3 == 2:
        edge = PlanEdge(id=f"e{index}", from_="entry", to=f"n{index - 1}", handle="always")
        return AddEdgeOp(op_id=op_id, actor_id="b", lamport=lamport, at=AT, edge=edge)
    return SetNodeFieldOp(
        op_id=op_id,
        actor_id="b",
        lamport=lamport,
        at=AT,
        node_id=f"n{index - 2}",
        path="args.limit",
        value=[variant, {b"k": {variant}}],
    )


def entry_at(position: int, variant: int) -> LogEntry:
    """The entry a writer puts at ``position``: the run's own (variant 0), or an ``end``.

    Writers that disagree on a position conflict; an ``end`` cut in where the run's own entry
    was due leaves a log that names a frame it never defined, which a clone must refuse (the
    same way on both stores).
    """
    if position == 0:
        return LogStart(run_id="run-1", digest="d", entry="entry", at=AT)
    if variant:
        return LogEnd(outcome=ENDS[variant - 1], at=AT)
    if position == 1:
        return LogEnter(frame=0, at=AT)
    if position % 2 == 0:
        ok = position % 4 != 2
        items = (OutputItem(json_={"v": position}),) if ok else ()
        return LogSettle(
            frame=0 if position == 2 else position - 1,
            status="ok" if ok else "skipped",
            items=items,
            at=AT,
        )
    node = f"n{position % 3}"
    return LogEdge(
        edge=f"e{position}",
        handle="always",
        source=0,
        frame=position,
        node=node,
        node_kind="call",
        at=AT,
    )


ops = st.builds(make_op, st.integers(0, 6), st.integers(0, 1), st.integers(0, 3))
batches = st.lists(ops, max_size=4)
expected_revisions = st.one_of(st.none(), st.just("current"), st.integers(0, 8))
digest_choices = st.sampled_from(("current", "current", "bogus"))
variants = st.lists(st.sampled_from((0, 0, 0, 1, 2, 3)), max_size=4)


Outcome = tuple[str, Any]


class StoresAgree(RuleBasedStateMachine):
    """Runs each rule on a MemoryPlanStore and a SqlitePlanStore and compares everything."""

    plans = Bundle("plans")

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.directory = tempfile.mkdtemp(prefix="plans-")
        self.memory = MemoryPlanStore()
        self.sqlite = SqlitePlanStore(Path(self.directory) / "plans.sqlite3")
        self.known: list[str] = []
        self.clone_ids = itertools.count()

    def teardown(self) -> None:
        self.loop.run_until_complete(self.sqlite.close())
        self.loop.run_until_complete(self.loop.shutdown_default_executor())
        self.loop.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    def outcome(self, call: Callable[[PlanStore], Awaitable[Any]], store: PlanStore) -> Outcome:
        try:
            return ("ok", self.loop.run_until_complete(call(store)))
        except Exception as exc:  # noqa: BLE001 - the error itself is what is compared
            return ("raised", (type(exc), str(exc)))

    def both(self, call: Callable[[PlanStore], Awaitable[Any]]) -> Outcome:
        expected = self.outcome(call, self.memory)
        actual = self.outcome(call, self.sqlite)
        assert actual == expected
        return expected

    def created(self, plan_id: str, outcome: Outcome) -> MultipleResults[str]:
        if isinstance(outcome[1], CreateOk):
            self.known.append(plan_id)
            return multiple(plan_id)
        return multiple()

    def run_id(self, plan_id: str, choice: str) -> str:
        """``choice``, or for ``claimed`` the plan's run id (the first run id before a claim)."""
        if choice != "claimed":
            return choice
        kind, value = self.outcome(lambda s: s.read_run_id(plan_id), self.memory)
        return value if kind == "ok" and value is not None else RUN_IDS[0]

    def digest(self, plan_id: str, choice: str) -> str:
        if choice == "bogus":
            return BOGUS
        kind, value = self.outcome(lambda s: s.read_state(plan_id), self.memory)
        return value.digest if kind == "ok" else BOGUS

    @initialize(target=plans)
    def create_two_plans(self) -> MultipleResults[str]:
        provenance = TemplateProvenance(template="t", args={"x": 1})
        self.both(lambda s: s.create_plan("p", label="templated", provenance=provenance))
        self.both(lambda s: s.create_plan("q"))
        self.known += ["p", "q"]
        return multiple("p", "q")

    @rule(
        target=plans,
        plan_id=st.sampled_from(("p", "q", "r")),
        label=st.sampled_from((None, "label")),
        templated=st.booleans(),
    )
    def create(self, plan_id: str, label: str | None, templated: bool) -> MultipleResults[str]:
        provenance = TemplateProvenance(template="t", args={"x": 1}) if templated else None
        outcome = self.both(lambda s: s.create_plan(plan_id, label=label, provenance=provenance))
        return self.created(plan_id, outcome)

    @rule(
        target=plans,
        source=st.one_of(plans, plans, plans, st.just("ghost")),
        onto=st.sampled_from(("fresh", "fresh", "fresh", "p")),
        at_revision=st.one_of(st.none(), st.none(), st.integers(-1, 8)),
    )
    def clone(self, source: str, onto: str, at_revision: int | None) -> MultipleResults[str]:
        new_id = f"c{next(self.clone_ids)}" if onto == "fresh" else onto
        outcome = self.both(lambda s: s.clone_plan(source, new_id, at_revision=at_revision))
        return self.created(new_id, outcome)

    @rule(plan_id=plans, batch=batches, expected=expected_revisions)
    def append(self, plan_id: str, batch: list[PlanOp], expected: int | str | None) -> None:
        revision: int | None
        if expected == "current":
            kind, value = self.outcome(lambda s: s.read_state(plan_id), self.memory)
            revision = value.revision if kind == "ok" else 0
        else:
            revision = expected if isinstance(expected, int) else None
        self.both(lambda s: s.append_ops(plan_id, batch, expected_revision=revision))

    @rule(
        plan_id=plans,
        source=st.sampled_from(STATES),
        to_state=st.sampled_from(STATES),
        choice=digest_choices,
        approval=st.sampled_from(("none", "right", "wrong")),
    )
    def transition(
        self, plan_id: str, source: PlanState, to_state: PlanState, choice: str, approval: str
    ) -> None:
        digest = self.digest(plan_id, choice)
        record = None
        if approval != "none":
            record = ApprovalRecord(
                plan_id=plan_id,
                digest=digest if approval == "right" else BOGUS,
                authority_set=(),
                decided_by="op",
                decided_at=AT,
            )
        request = TransitionRequest(
            from_=source, to=to_state, expected_digest=digest, approval=record
        )
        self.both(lambda s: s.transition(plan_id, request))

    @rule(
        target=plans,
        plan_id=plans,
        moves=st.integers(1, 8),
        approved=st.sampled_from((True, True, False)),
        run_id=st.sampled_from(RUN_IDS),
        execution=st.sampled_from(EXECUTIONS),
        written=st.lists(variants, min_size=1, max_size=8),
        then_clone=st.booleans(),
    )
    def operate(
        self,
        plan_id: str,
        moves: int,
        approved: bool,
        run_id: str,
        execution: str | None,
        written: list[list[int]],
        then_clone: bool,
    ) -> MultipleResults[str]:
        """Take the plan forward as its operator and worker would.

        Freeze, approve, claim, then mirror log entries, resuming whenever the run has ended;
        then, maybe, clone it the way one recovers a spent plan.
        """
        for move in range(moves):
            self.operate_once(plan_id, approved, run_id, execution, written[move % len(written)])
        if not then_clone:
            return multiple()
        new_id = f"c{next(self.clone_ids)}"
        return self.created(new_id, self.both(lambda s: s.clone_plan(plan_id, new_id)))

    def operate_once(
        self,
        plan_id: str,
        approved: bool,
        run_id: str,
        execution: str | None,
        written: list[int],
    ) -> None:
        kind, value = self.outcome(lambda s: s.read_state(plan_id), self.memory)
        if kind != "ok":
            return
        state: PlanState = value.state
        digest: str = value.digest
        if state == "executable":
            run = self.outcome(lambda s: s.read_run(plan_id), self.memory)[1]
            if run is None:
                self.both(lambda s: s.claim_run(plan_id, digest, run_id, execution=execution))
            elif run.outcome == "completed":
                return
            elif run.outcome is not None:
                self.both(
                    lambda s: s.claim_run(
                        plan_id, digest, run.run_id, execution=execution, resume=True
                    )
                )
            else:
                start = run.log_length
                entries = [entry_at(start + i, v) for i, v in enumerate(written)]
                self.both(lambda s: s.append_run_log(plan_id, run.run_id, start, entries))
            return
        approval = ApprovalRecord(
            plan_id=plan_id, digest=digest, authority_set=(), decided_by="op", decided_at=AT
        )
        request = TransitionRequest(
            from_=state,
            to="reviewable" if state == "editable" else "executable",
            expected_digest=digest,
            approval=approval if approved else None,
        )
        self.both(lambda s: s.transition(plan_id, request))

    @rule(
        plan_id=plans,
        run=st.sampled_from(("claimed", "claimed", *RUN_IDS)),
        execution=st.sampled_from(EXECUTIONS),
        resume=st.booleans(),
        choice=digest_choices,
    )
    def claim(
        self, plan_id: str, run: str, execution: str | None, resume: bool, choice: str
    ) -> None:
        digest = self.digest(plan_id, choice)
        run_id = self.run_id(plan_id, run)
        self.both(
            lambda s: s.claim_run(plan_id, digest, run_id, execution=execution, resume=resume)
        )

    @rule(
        plan_id=plans,
        run=st.sampled_from(("claimed", "claimed", *RUN_IDS)),
        back=st.sampled_from((0, 0, 1, 2, 3, -1)),
        written=variants,
    )
    def record_log(self, plan_id: str, run: str, back: int, written: list[int]) -> None:
        """Mirror entries from the end, again from earlier (a retry or a conflict), or past it."""
        kind, record = self.outcome(lambda s: s.read_run(plan_id), self.memory)
        at = (record.log_length if kind == "ok" and record is not None else 0) - back
        run_id = self.run_id(plan_id, run)
        entries = [entry_at(at + i, v) for i, v in enumerate(written)]
        self.both(lambda s: s.append_run_log(plan_id, run_id, at, entries))

    @rule(
        plan_id=st.one_of(plans, st.just("ghost")),
        run_id=st.sampled_from((None, None, *RUN_IDS)),
        start=st.integers(-1, 12),
        limit=st.one_of(st.none(), st.integers(-1, 5)),
    )
    def read_log(self, plan_id: str, run_id: str | None, start: int, limit: int | None) -> None:
        self.both(lambda s: s.read_run_log(plan_id, run_id, start=start, limit=limit))

    @rule(
        plan_id=st.one_of(plans, st.just("ghost")),
        through=st.one_of(st.none(), st.integers(-1, 8)),
        since=st.one_of(st.none(), st.integers(0, 3)),
    )
    def query(self, plan_id: str, through: int | None, since: int | None) -> None:
        self.both(lambda s: s.read_ops(plan_id, through_revision=through, since_lamport=since))
        self.both(lambda s: s.fold(plan_id, revision=through))

    @invariant()
    def every_plan_reads_back_the_same(self) -> None:
        plan_ids = [*self.known, "ghost"]

        async def read_back(store: PlanStore) -> list[Outcome]:
            reads: list[Callable[[], Awaitable[Any]]] = []
            for plan_id in plan_ids:
                reads += [
                    partial(store.read_state, plan_id),
                    partial(store.read_ops, plan_id),
                    partial(store.read_provenance, plan_id),
                    partial(store.read_approval, plan_id),
                    partial(store.read_run_id, plan_id),
                    partial(store.read_run, plan_id),
                    partial(store.read_run_log, plan_id),
                ]
            seen: list[Outcome] = []
            for read in reads:
                try:
                    seen.append(("ok", await read()))
                except Exception as exc:  # noqa: BLE001 - the error itself is what is compared
                    seen.append(("raised", (type(exc), str(exc))))
            listing = [s.model_dump(exclude={"updated_at"}) for s in await store.list_plans()]
            runs = [r.model_dump(exclude={"claimed_at"}) for r in await store.list_runs()]
            pages = [
                [r.plan_id for r in await store.list_runs(outcome=outcome, limit=1, after=a)]
                for outcome in ("running", "aborted", None)
                for a in (None, *(r["plan_id"] for r in runs))
            ]
            return [*seen, ("ok", listing), ("ok", runs), ("ok", pages)]

        self.both(read_back)


StoresAgree.TestCase.settings = settings(
    max_examples=40,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


class TestSqliteMatchesMemory(StoresAgree.TestCase):  # type: ignore[misc,valid-type]
    """Random sequences of every store operation give the same results on both stores."""
