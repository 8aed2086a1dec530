"""Test doubles for plans and runs: build small plans tersely, script tools, run in process.

:func:`run_in_process` drives :class:`~orchestration.run.engine.machine.RunEngine` with real
concurrency (one asyncio task per frame in flight) against a :class:`FakeToolbox`. It is a **test
double, not a second runtime**: nothing is durable, nothing survives the process, and no claim is
made about a crash. Production runs go through the Temporal workflow, which drives the same engine;
this driver exists so branching, joins, budgets and failure handling can be tested (by us and by
users of the library) without a server.

Everything is deterministic given the scripts: the clock is a counter (:class:`TickClock`), and
results that complete together are settled in dispatch order.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from orchestration.plan.authoring import PlanAuthor
from orchestration.plan.encoding import NodeRef
from orchestration.plan.ops import plan_digest
from orchestration.predicates.structured import StructuredCell
from orchestration.review.approval import approval_record
from orchestration.run.batching import Batching
from orchestration.run.driver import Inbox, RunDriver, decided
from orchestration.run.engine.gating import Waiting
from orchestration.run.engine.machine import (
    DEFAULT_MAX_IN_FLIGHT,
    Decided,
    Dispatch,
    Failed,
    RunEngine,
    SettleResult,
    Skipped,
    Succeeded,
)
from orchestration.run.expand import expand_log
from orchestration.run.fold import fold_run
from orchestration.run.local import LocalPort, failed_from
from orchestration.run.log import LogEntry
from orchestration.run.messages import PendingGateDecision, RetrySettings, RunSettings
from orchestration.run.policy import Attempt, Lost
from orchestration.run.work import FrameWork, WorkFailed, decide_with
from orchestration.store.base import PlanStore, TransitionRequest
from orchestration.tools.contracts import PredicateEvaluator
from orchestration.tools.scripted import (
    Ask,
    NoToolCall,
    Refusal,
    ScriptedReasoner,
    example_for_schema,
)
from orchestration.types import (
    ApprovalGate,
    ApprovalRecord,
    ArtifactHandle,
    AskPolicy,
    BooleanField,
    BranchDefinition,
    BranchNode,
    CallDefinition,
    CallNode,
    DeclaredField,
    EmitRows,
    EmitValue,
    EntryDefinition,
    EntryNode,
    EnumField,
    InputDefinition,
    InputNode,
    InputSchema,
    InterruptionCause,
    JoinDefinition,
    JoinNode,
    JoinStrategy,
    LoopDefinition,
    LoopNode,
    LoopUntil,
    MapDefinition,
    MapNode,
    NumberField,
    PlanBounds,
    PlanEdge,
    PlanNode,
    PlanOp,
    PromptPart,
    RawPlanView,
    ReasonDefinition,
    ReasonNode,
    RunEvent,
    RunProjection,
    SelectDefinition,
    SelectNode,
    StringField,
    TextPart,
    TransformDefinition,
    TransformNode,
    TransformStep,
)

__all__ = [
    "Ask",
    "Attempts",
    "approve_into",
    "FakeToolbox",
    "HaltDecision",
    "Indeterminate",
    "Invocation",
    "NoToolCall",
    "PlanSketch",
    "Refusal",
    "ScriptedReasoner",
    "TickClock",
    "example_for_schema",
    "run_in_process",
]


# ------------------------------------------------------------------------------------------
# Plans
# ------------------------------------------------------------------------------------------


class PlanSketch:
    """Build a small frozen-looking plan view in a few lines, for tests.

    No op log and no authoring identity: nodes and edges go straight into a
    :class:`~orchestration.types.RawPlanView` (digest computed). Edge ids default to ``e0``,
    ``e1``, ... in the order edges are added. Calls default to replay-safe, ``retry`` on
    indeterminate, and ``onMissingValue: fail``.

    Example::

        view = (
            PlanSketch()
            .entry(StringField(path="q"))
            .call("a", args={"q": NodeRef("entry", path="q")})
            .call("b")
            .chain("entry", "a", "b")
            .view()
        )
    """

    def __init__(
        self,
        plan_id: str = "plan",
        *,
        max_steps: int = 4096,
        max_concurrent_frames: int = 32,
        max_nodes: int = 10_000,
        max_edges: int = 20_000,
    ) -> None:
        self.plan_id = plan_id
        self.bounds = PlanBounds(
            max_nodes=max_nodes,
            max_edges=max_edges,
            max_steps=max_steps,
            max_concurrent_frames=max_concurrent_frames,
            max_encoded_bytes=64 * 1024 * 1024,
        )
        self.nodes: list[PlanNode] = []
        self.edges: list[PlanEdge] = []

    def add(self, node: PlanNode) -> PlanSketch:
        """Add any node."""
        self.nodes.append(node)
        return self

    def entry(self, *fields: DeclaredField, node_id: str = "entry") -> PlanSketch:
        """The entry node, accepting ``fields``."""
        return self.add(EntryNode(id=node_id, definition=EntryDefinition(input=fields)))

    def call(
        self,
        node_id: str,
        tool: str | None = None,
        *,
        args: Mapping[str, Any] | None = None,
        output: Sequence[DeclaredField] = (),
        on_missing: Literal["fail", "omit"] = "fail",
        replay_safe: bool = True,
        on_indeterminate: Literal["retry", "halt", "skip"] = "retry",
        gate: ApprovalGate | None = None,
    ) -> PlanSketch:
        """A call node; ``tool`` defaults to ``"tool.<node_id>"``."""
        return self.add(
            CallNode(
                id=node_id,
                definition=CallDefinition(
                    tool=tool or f"tool.{node_id}",
                    args=dict(args or {}),
                    output=tuple(output),
                    on_missing_value=on_missing,
                    replay_safe=replay_safe,
                    on_indeterminate=on_indeterminate,
                    gate=gate,
                ),
            )
        )

    def reason(
        self,
        node_id: str,
        *prompt: str | NodeRef,
        max_attempts: int = 1,
        output_schema: str = "{}",
        asks: AskPolicy | None = None,
        gate: ApprovalGate | None = None,
    ) -> PlanSketch:
        """A reason node whose prompt is ``prompt`` (strings become text parts)."""
        parts: list[PromptPart] = [TextPart(text=p) if isinstance(p, str) else p for p in prompt]
        return self.add(
            ReasonNode(
                id=node_id,
                definition=ReasonDefinition(
                    prompt=tuple(parts),
                    output_schema=output_schema,
                    max_attempts=max_attempts,
                    asks=asks,
                    gate=gate,
                ),
            )
        )

    def input(
        self,
        node_id: str,
        schema: InputSchema,
        *prompt: str | NodeRef,
        timeout: str | None = None,
        on_timeout: Literal["reject", "default", "halt"] | None = None,
        default: Any = None,
    ) -> PlanSketch:
        """An input request asking ``prompt`` with ``schema`` (strings become text parts)."""
        parts: list[PromptPart] = [TextPart(text=p) if isinstance(p, str) else p for p in prompt]
        return self.add(
            InputNode(
                id=node_id,
                definition=InputDefinition(
                    prompt=tuple(parts),
                    schema_=schema,
                    timeout=timeout,
                    on_timeout=on_timeout,
                    default=default,
                ),
            )
        )

    def transform(
        self,
        node_id: str,
        source: NodeRef,
        *steps: str | TransformStep,
        emit: str | None = "value",
        output: Sequence[DeclaredField] = (),
    ) -> PlanSketch:
        """A transform of ``source``'s artifact through ``steps``.

        Each step is a descriptor name, or a ``TransformStep`` with its args.
        """
        return self.add(
            TransformNode(
                id=node_id,
                definition=TransformDefinition(
                    source=source,
                    steps=tuple(TransformStep(name=s) if isinstance(s, str) else s for s in steps),
                    emit=EmitRows() if emit is None else EmitValue(field=emit),
                    output=tuple(output),
                ),
            )
        )

    def branch(self, node_id: str, predicate: Any, *, evaluator: str = "structured") -> PlanSketch:
        """A branch node deciding ``match`` / ``no_match``."""
        return self.add(
            BranchNode(
                id=node_id, definition=BranchDefinition(evaluator=evaluator, predicate=predicate)
            )
        )

    def select(
        self,
        node_id: str,
        cases: Sequence[str],
        predicate: Any,
        *,
        evaluator: str = "structured",
    ) -> PlanSketch:
        """A select node deciding one of ``case_<label>`` or ``default``."""
        return self.add(
            SelectNode(
                id=node_id,
                definition=SelectDefinition(
                    evaluator=evaluator, predicate=predicate, cases=tuple(cases)
                ),
            )
        )

    def map(
        self,
        node_id: str,
        over: NodeRef,
        *,
        max_items: int,
        concurrency: int | None = None,
        tolerated_failures: int | None = None,
        tolerated_failure_percent: float | None = None,
    ) -> PlanSketch:
        """A map node over ``over``; its body is what its ``item`` edges reach."""
        return self.add(
            MapNode(
                id=node_id,
                definition=MapDefinition(
                    over=over,
                    max_items=max_items,
                    concurrency=concurrency,
                    tolerated_failures=tolerated_failures,
                    tolerated_failure_percent=tolerated_failure_percent,
                ),
            )
        )

    def loop(
        self,
        node_id: str,
        until: object,
        *,
        max_iterations: int,
        evaluator: str = "structured",
        watch: NodeRef | None = None,
        fail_unless_met: bool = False,
    ) -> PlanSketch:
        """A loop node; its body is what its ``body`` edges reach, run until ``until`` holds."""
        return self.add(
            LoopNode(
                id=node_id,
                definition=LoopDefinition(
                    max_iterations=max_iterations,
                    until=LoopUntil(evaluator=evaluator, predicate=until),
                    watch=watch,
                    fail_unless_met=fail_unless_met,
                ),
            )
        )

    def join(self, node_id: str, strategy: JoinStrategy | None = None) -> PlanSketch:
        """A diamond join (``strategy``: ``"any"``, ``JoinQuorum(quorum=N)``; default all)."""
        if strategy is None:
            return self.add(JoinNode(id=node_id))
        return self.add(JoinNode(id=node_id, definition=JoinDefinition(strategy=strategy)))

    def edge(
        self, source: str, target: str, handle: str = "always", *, edge_id: str | None = None
    ) -> PlanSketch:
        """An edge; its id defaults to ``e<n>``."""
        self.edges.append(
            PlanEdge.model_validate(
                {
                    "id": edge_id or f"e{len(self.edges)}",
                    "from": source,
                    "to": target,
                    "handle": handle,
                }
            )
        )
        return self

    def chain(self, *node_ids: str, handle: str = "always") -> PlanSketch:
        """Edges between consecutive nodes."""
        for source, target in zip(node_ids, node_ids[1:], strict=False):
            self.edge(source, target, handle)
        return self

    def view(self) -> RawPlanView:
        """The plan view, with its digest."""
        view = RawPlanView(
            plan_id=self.plan_id,
            digest="",
            revision=len(self.nodes) + len(self.edges),
            nodes=tuple(self.nodes),
            edges=tuple(self.edges),
            bounds=self.bounds,
        )
        return view.model_copy(update={"digest": plan_digest(view)})


# ------------------------------------------------------------------------------------------
# Scripted tools
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Indeterminate:
    """Script value: the call started and its outcome is unknown (say, its worker died).

    The driver resolves it by the node's ``onIndeterminate``: ``retry`` runs the next attempt,
    ``skip`` settles it skipped, ``halt`` interrupts the frame and asks ``on_halt``.
    """


@dataclass(frozen=True)
class Attempts:
    """Script value: one script per attempt; the last one repeats."""

    scripts: tuple[Any, ...]

    def __init__(self, *scripts: Any) -> None:
        if not scripts:
            raise ValueError("Attempts needs at least one script")
        object.__setattr__(self, "scripts", scripts)


@dataclass(frozen=True)
class Invocation:
    """One dispatch the toolbox answered."""

    key: str
    node_id: str
    kind: str
    tool: str | None
    args: Mapping[str, Any] | None
    attempt: int


Answer = SettleResult | Indeterminate


def _placeholder(declared: DeclaredField, node_id: str) -> Any:
    if isinstance(declared, StringField):
        return node_id
    if isinstance(declared, NumberField):
        return 0
    if isinstance(declared, BooleanField):
        return False
    if isinstance(declared, EnumField):
        return declared.values[0] if declared.values else ""
    return None  # pragma: no cover


class FakeToolbox:
    """Scripted answers for call, reason and transform frames.

    A script is looked up by node id first, then (for calls) by tool name. It may be:

    * a ``Succeeded``, ``Failed`` or ``Skipped`` result, or :class:`Indeterminate`;
    * a mapping (one item of those fields), a list of mappings (one item each), a string (one
      item: the first declared output path, or ``value``), or an ``ArtifactHandle``;
    * a callable taking the :class:`~orchestration.run.engine.results.Dispatch` (sync or async)
      returning any of the above; an exception it raises becomes ``Failed``;
    * :class:`Attempts` of any of the above.

    Unscripted frames succeed with one item holding a placeholder per declared output field
    (or ``{"value": <node_id>}``). ``delays`` (seconds, by node id or tool) make a frame take
    time, so concurrency is real. Every answer is logged in :attr:`calls`, and the most frames
    ever running at once in :attr:`max_concurrent`.
    """

    def __init__(
        self,
        tools: Mapping[str, Any] | None = None,
        nodes: Mapping[str, Any] | None = None,
        delays: Mapping[str, float] | None = None,
    ) -> None:
        self.tools = dict(tools or {})
        self.nodes = dict(nodes or {})
        self.delays = dict(delays or {})
        self.calls: list[Invocation] = []
        self.running = 0
        self.max_concurrent = 0

    def invocations(self, node_id: str | None = None) -> list[Invocation]:
        """The answered dispatches, optionally only those of ``node_id``."""
        return [c for c in self.calls if node_id is None or c.node_id == node_id]

    async def run(self, dispatch: Dispatch) -> Answer:
        """Answer one dispatch."""
        node_id = dispatch.node.id
        tool = dispatch.tool
        self.calls.append(
            Invocation(dispatch.key, node_id, dispatch.kind, tool, dispatch.args, dispatch.attempt)
        )
        self.running += 1
        self.max_concurrent = max(self.max_concurrent, self.running)
        try:
            delay = self.delays.get(node_id, self.delays.get(tool or "", 0.0))
            if delay:
                await asyncio.sleep(delay)
            else:
                await asyncio.sleep(0)
            script = self.nodes.get(node_id, self.tools.get(tool or "", _UNSCRIPTED))
            if isinstance(script, Attempts):
                script = script.scripts[min(dispatch.attempt, len(script.scripts)) - 1]
            return await self._answer(script, dispatch)
        finally:
            self.running -= 1

    async def _answer(self, script: Any, dispatch: Dispatch) -> Answer:
        if script is _UNSCRIPTED:
            return Succeeded.one(self._default_fields(dispatch))
        if isinstance(script, Succeeded | Failed | Skipped | Decided | Indeterminate):
            return script
        if callable(script):
            try:
                value = script(dispatch)
                if inspect.isawaitable(value):
                    value = await value
            except Exception as exc:  # noqa: BLE001 - a tool's exception is its failure
                return Failed.of(exc)
            return await self._answer(value, dispatch)
        if isinstance(script, ArtifactHandle):
            return Succeeded.one(self._default_fields(dispatch), artifact=script)
        if isinstance(script, str):
            output = getattr(dispatch.node.definition, "output", ())
            return Succeeded.one({output[0].path if output else "value": script})
        if isinstance(script, Mapping):
            return Succeeded.one(script)
        if isinstance(script, list):
            return Succeeded(items=tuple(script))
        return Failed("UnsupportedScript", f"cannot answer with a {type(script).__name__}")

    @staticmethod
    def _default_fields(dispatch: Dispatch) -> dict[str, Any]:
        output: Sequence[DeclaredField] = getattr(dispatch.node.definition, "output", ())
        node_id = dispatch.node.id
        if not output:
            return {"value": node_id}
        return {f.path: _placeholder(f, node_id) for f in output}


_UNSCRIPTED: Any = object()


# ------------------------------------------------------------------------------------------
# The driver
# ------------------------------------------------------------------------------------------


class TickClock:
    """A deterministic clock: each call is one microsecond after the last, as ISO-8601 UTC."""

    def __init__(self, start: dt.datetime | None = None) -> None:
        self._now = start or dt.datetime(2026, 1, 1, tzinfo=dt.UTC)

    def __call__(self) -> str:
        """The next instant."""
        self._now += dt.timedelta(microseconds=1)
        return self._now.isoformat().replace("+00:00", "Z")


HaltDecision = Literal["retry", "skip", "abort"]


async def run_in_process(
    view: RawPlanView,
    run_input: Mapping[str, Any],
    toolbox: FakeToolbox | None = None,
    *,
    evaluators: Sequence[PredicateEvaluator] | None = None,
    run_id: str = "run-1",
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
    clock: Callable[[], str] | None = None,
    on_halt: Callable[[Dispatch], HaltDecision] | None = None,
    stop_when: Callable[[RunEngine], InterruptionCause | None] | None = None,
    max_attempts: int = 5,
    on_gate: Callable[[Waiting], PendingGateDecision | None] | None = None,
    autonomous: bool = False,
    batching: Batching | None = None,
) -> tuple[list[RunEvent], RunProjection]:
    """Run a plan in this process against scripted tools; return its log and its projection.

    The run goes through the hosts' shared loop (:class:`~orchestration.run.driver.RunDriver`),
    so retries, lost attempts, halts and stops follow the same rules as on Temporal; only the
    work is scripted: calls, reason nodes and transforms are answered by ``toolbox``, branches
    and selects by their cell in ``evaluators`` (default: the structured cell). Retries do not
    wait.

    Args:
        view: The plan.
        run_input: The run's input.
        toolbox: The scripts (default: every frame succeeds with placeholders).
        evaluators: The predicate cells by id.
        run_id: The run's id.
        max_in_flight: The host's cap on frames in flight.
        clock: Returns ``at`` for each entry (default: a :class:`TickClock`).
        on_halt: Decides a halted indeterminate call (default: ``abort``).
        stop_when: Checked after every settlement; a cause it returns stops the run.
        max_attempts: Attempts of a frame that may be repeated, before a lost or transient
            outcome settles it.
        on_gate: Decides each gate request as it opens (``None`` from it: no decision, and a
            run that can only wait for one then fails; in process nothing else decides).
        autonomous: Autonomous mode (approval gates the plan opens to it approve themselves).
        batching: Run long maps' items in batches (sub-runs), as the hosts do by default.

    Raises:
        InvalidRunInputError: the input is refused (nothing was recorded).

    """
    tools = toolbox or FakeToolbox()
    cells = {cell.id: cell for cell in (evaluators or [StructuredCell()])}
    now = clock or TickClock()
    engine = RunEngine.start(view, run_id, run_input, now(), max_in_flight=max_in_flight)
    engine.use_batches(batching)
    log: list[LogEntry] = engine.drain()
    inbox = Inbox()

    async def executor(dispatch: Dispatch) -> Attempt:
        node = dispatch.node
        if isinstance(node, BranchNode | SelectNode):
            assert dispatch.context is not None
            try:
                answer = await decide_with(cells, node, dispatch.context)
            except WorkFailed as error:
                return failed_from(error)
            return decided(answer.kind, answer.matched, answer.case_label, answer.evidence)
        outcome = await tools.run(dispatch)
        if isinstance(outcome, Indeterminate):
            return Lost("the script says the call's outcome is unknown")
        return outcome

    def sink(entries: list[LogEntry]) -> None:
        log.extend(entries)
        if stop_when is not None and not engine.done and inbox.stop is None:
            inbox.stop = stop_when(engine)

    async def no_pause(seconds: float) -> None:
        await asyncio.sleep(0)

    port = LocalPort(
        FrameWork(),
        view,
        ApprovalRecord(
            plan_id=view.plan_id,
            digest=view.digest,
            authority_set=(),
            decided_by="test",
            decided_at="2026-01-01T00:00:00Z",
        ),
        run_id,
        RunSettings(),
        clock=now,
        executor=executor,
        sink=sink,
        pause=no_pause,
    )
    retry = RetrySettings(maximum_attempts=max_attempts)
    driver = RunDriver(
        engine,
        port,
        retry,
        inbox,
        on_halt=on_halt or (lambda dispatch: "abort"),
        on_gate=on_gate,
        autonomous=autonomous,
    )
    await driver.run()
    events = expand_log(log)
    return events, fold_run(events)


async def approve_into(
    store: PlanStore, view: RawPlanView, *, decided_by: str = "tester"
) -> RawPlanView:
    """Write a sketched plan into ``store`` and take it to ``executable``, as a test fixture.

    The ops are one ``add_node`` per node, one ``add_edge`` per edge and the bounds, so the
    stored view holds the same content under the store's own revision and digest: the view
    returned is the stored one, and the approval (recorded with the transition) binds it.
    Freeze's checks are not run: a test may approve a plan freeze would refuse.
    """
    author = PlanAuthor(decided_by)
    ops: list[PlanOp] = [author.add_node(node) for node in view.nodes]
    ops += [author.edge(e.from_, e.to, e.handle, edge_id=e.id) for e in view.edges]
    ops.append(author.set_bounds(view.bounds))
    created = await store.create_plan(view.plan_id)
    if not created.ok:
        raise ValueError(f"plan {view.plan_id!r} cannot be created: {created}")
    appended = await store.append_ops(view.plan_id, ops)
    if not appended.ok:
        raise ValueError(f"the ops of {view.plan_id!r} were refused: {appended}")
    stored = (await store.fold(view.plan_id)).view
    frozen = await store.transition(
        view.plan_id,
        TransitionRequest.model_validate(
            {"from": "editable", "to": "reviewable", "expected_digest": stored.digest}
        ),
    )
    approved = await store.transition(
        view.plan_id,
        TransitionRequest.model_validate(
            {
                "from": "reviewable",
                "to": "executable",
                "expected_digest": stored.digest,
                "approval": approval_record(stored, decided_by, "2026-01-01T00:00:00Z"),
            }
        ),
    )
    if not (frozen.ok and approved.ok):
        raise ValueError(f"plan {view.plan_id!r} could not be approved: {frozen} {approved}")
    return stored
