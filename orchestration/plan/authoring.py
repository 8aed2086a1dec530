"""Author plans in a few readable lines: ``PlanAuthor`` mints each op's identity.

Every op needs ``opId``, ``actorId``, a Lamport timestamp and ``at``. Getting these right by
hand is tedious and easy to get subtly wrong (two ops of one actor at one Lamport value collide
in order; an author that restarts at 0 sorts its new edits *before* edits it has already seen).
``PlanAuthor`` keeps a Lamport clock per actor: every op it mints takes the next value, and
:meth:`PlanAuthor.observe` moves the clock past a log it has read, so a later edit of this author
always wins over what it saw (last writer wins is then what the author meant).

This is client-side code: it reads the wall clock for ``at`` and draws random op ids by default
(both injectable). ``at`` only informs; the fold orders by ``(lamport, actorId, opId)``.

Example::

    author = PlanAuthor("alice")
    ops = [
        author.entry(input=[StringField(path="city")]),
        author.call("weather", tool="weather.lookup", args={"city": ref("entry", path="city")},
                    output=[StringField(path="summary")], authority=[claim("weather", "*", "read")],
                    replay_safe=True, on_indeterminate="retry"),
        author.edge("entry", "weather"),
    ]
"""

from __future__ import annotations

import datetime as dt
import re
import secrets
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

from orchestration.plan.encoding import NodeRef, Select
from orchestration.run.routes import BranchId
from orchestration.types import (
    AddEdgeOp,
    AddNodeOp,
    ApprovalGate,
    AskPolicy,
    AuthorityClaim,
    AuthorityVerb,
    BranchDefinition,
    BranchNode,
    CallDefinition,
    CallNode,
    DeclaredField,
    EmitRows,
    EmitValue,
    EntryDefinition,
    EntryNode,
    InputDefinition,
    InputNode,
    InputSchema,
    JoinDefinition,
    JoinNode,
    JoinQuorum,
    JoinStrategy,
    LoopDefinition,
    LoopNode,
    LoopUntil,
    MapDefinition,
    MapNode,
    NodeBudget,
    PlanBounds,
    PlanEdge,
    PlanNode,
    PlanOp,
    PromptPart,
    ReasonDefinition,
    ReasonNode,
    RemoveEdgeOp,
    RemoveNodeOp,
    SelectDefinition,
    SelectNode,
    SetBoundsOp,
    SetNodeDefinitionOp,
    SetNodeFieldOp,
    SetNodePhaseOp,
    TextPart,
    TransformDefinition,
    TransformNode,
    TransformStep,
)

__all__ = ["PlanAuthor", "claim", "new_plan_id", "ref", "text"]

_EDGE_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def ref(
    node: str,
    *,
    path: str | None = None,
    select: Select = "first",
    branch_id: BranchId | None = None,
) -> NodeRef:
    """A reference to ``node``'s output (``path`` into the selected item)."""
    return NodeRef(node, select, path, branch_id)


def claim(capability: str, scope: str, verb: AuthorityVerb) -> AuthorityClaim:
    """One authority claim: ``verb`` on ``scope`` of ``capability``."""
    return AuthorityClaim(capability=capability, scope=scope, verb=verb)


def text(value: str) -> TextPart:
    """A literal prompt part."""
    return TextPart(text=value)


def new_plan_id() -> str:
    """A fresh plan id, ``plan-<16 hex digits>``."""
    return f"plan-{secrets.token_hex(8)}"


def _utc_now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _random_id() -> str:
    return uuid.uuid4().hex


class PlanAuthor:
    """Mints ops for one actor with a Lamport clock; see the module docstring.

    Args:
        actor_id: Who authors the ops (a person, a model, a service).
        lamport: The clock's starting value; ops get ``lamport + 1`` onward.
        now: Returns the ISO-8601 ``at`` stamp of the next op.
        new_id: Returns a fresh op id.

    """

    def __init__(
        self,
        actor_id: str,
        *,
        lamport: int = 0,
        now: Callable[[], str] = _utc_now,
        new_id: Callable[[], str] = _random_id,
    ) -> None:
        if not actor_id:
            raise ValueError("actor_id must be non-empty; name who authors these ops")
        self.actor_id = actor_id
        self.lamport = lamport
        self._now = now
        self._new_id = new_id

    def observe(self, ops: Iterable[PlanOp]) -> PlanAuthor:
        """Move the clock past every op in ``ops`` (Lamport's receive rule); returns self."""
        for op in ops:
            if op.lamport > self.lamport:
                self.lamport = op.lamport
        return self

    def _identity(self) -> dict[str, Any]:
        self.lamport += 1
        return {
            "op_id": self._new_id(),
            "actor_id": self.actor_id,
            "lamport": self.lamport,
            "at": self._now(),
        }

    # -- nodes ----------------------------------------------------------------------------

    def add_node(self, node: PlanNode) -> AddNodeOp:
        """Add (or replace) a node."""
        return AddNodeOp(node=node, **self._identity())

    def entry(
        self,
        node_id: str = "entry",
        *,
        input: Sequence[DeclaredField] = (),
        phase: str | None = None,
    ) -> AddNodeOp:
        """Add the entry node, declaring the fields a run's input must supply."""
        definition = EntryDefinition(input=tuple(input))
        return self.add_node(EntryNode(id=node_id, phase=phase, definition=definition))

    def call(
        self,
        node_id: str,
        *,
        tool: str,
        args: Mapping[str, Any] | None = None,
        output: Sequence[DeclaredField] = (),
        authority: Sequence[AuthorityClaim] = (),
        replay_safe: bool | None = None,
        on_indeterminate: Literal["retry", "halt", "skip"] | None = None,
        on_missing_value: Literal["fail", "omit"] | None = "fail",
        declassifies: Sequence[str] | None = None,
        gate: ApprovalGate | None = None,
        phase: str | None = None,
        budget: NodeBudget | None = None,
    ) -> AddNodeOp:
        """Add a staged tool call. ``replay_safe`` and ``on_indeterminate`` have no default.

        ``budget`` is the call's own wall time (``maxSeconds``; plan content, digested).

        ``gate`` pauses the run for a person's approval before the call (``on: arguments``)
        or of its result (``on: result``).
        """
        definition = CallDefinition(
            tool=tool,
            args=dict(args or {}),
            output=tuple(output),
            authority=tuple(authority),
            replay_safe=replay_safe,
            on_indeterminate=on_indeterminate,
            on_missing_value=on_missing_value,
            declassifies=None if declassifies is None else tuple(declassifies),
            budget=budget,
            gate=gate,
        )
        return self.add_node(CallNode(id=node_id, phase=phase, definition=definition))

    def reason(
        self,
        node_id: str,
        *,
        prompt: Sequence[PromptPart | str],
        output_schema: str,
        max_attempts: int = 3,
        asks: AskPolicy | None = None,
        gate: ApprovalGate | None = None,
        phase: str | None = None,
        budget: NodeBudget | None = None,
    ) -> AddNodeOp:
        """Add a reason node; plain strings in ``prompt`` become literal text parts.

        ``budget`` is the node's own token and wall-time budget (plan content, digested).
        ``asks`` lets the model ask a person questions before it answers; ``gate`` holds its
        answer for a person's approval.
        """
        parts = tuple(TextPart(text=p) if isinstance(p, str) else p for p in prompt)
        definition = ReasonDefinition(
            prompt=parts,
            output_schema=output_schema,
            max_attempts=max_attempts,
            budget=budget,
            asks=asks,
            gate=gate,
        )
        return self.add_node(ReasonNode(id=node_id, phase=phase, definition=definition))

    def transform(
        self,
        node_id: str,
        *,
        source: NodeRef,
        steps: Sequence[tuple[str, Mapping[str, Any] | None] | str],
        emit_field: str | None = None,
        output: Sequence[DeclaredField] = (),
        phase: str | None = None,
    ) -> AddNodeOp:
        """Add a transform: ``steps`` name descriptors; ``emit_field`` None emits rows."""
        step_models = tuple(
            TransformStep(name=s)
            if isinstance(s, str)
            else TransformStep(name=s[0], args=None if s[1] is None else dict(s[1]))
            for s in steps
        )
        emit: EmitValue | EmitRows = (
            EmitRows() if emit_field is None else EmitValue(field=emit_field)
        )
        definition = TransformDefinition(
            source=source, steps=step_models, emit=emit, output=tuple(output)
        )
        return self.add_node(TransformNode(id=node_id, phase=phase, definition=definition))

    def input(
        self,
        node_id: str,
        *,
        prompt: Sequence[PromptPart | str],
        schema: InputSchema,
        timeout: str | None = None,
        on_timeout: Literal["reject", "default", "halt"] | None = None,
        default: Any = None,
        phase: str | None = None,
    ) -> AddNodeOp:
        """Add an input request: the run asks a person, and the response is the output."""
        parts = tuple(TextPart(text=p) if isinstance(p, str) else p for p in prompt)
        definition = InputDefinition(
            prompt=parts, schema_=schema, timeout=timeout, on_timeout=on_timeout, default=default
        )
        return self.add_node(InputNode(id=node_id, phase=phase, definition=definition))

    def branch(
        self,
        node_id: str,
        *,
        predicate: Any,
        evaluator: str = "structured",
        phase: str | None = None,
    ) -> AddNodeOp:
        """Add a two-way branch (``match`` / ``no_match`` edges)."""
        definition = BranchDefinition(evaluator=evaluator, predicate=predicate)
        return self.add_node(BranchNode(id=node_id, phase=phase, definition=definition))

    def select(
        self,
        node_id: str,
        *,
        predicate: Any,
        cases: Sequence[str],
        evaluator: str = "structured",
        phase: str | None = None,
    ) -> AddNodeOp:
        """Add an n-way select (``case_<label>`` edges and a required ``default``)."""
        definition = SelectDefinition(evaluator=evaluator, predicate=predicate, cases=tuple(cases))
        return self.add_node(SelectNode(id=node_id, phase=phase, definition=definition))

    def join(
        self,
        node_id: str,
        *,
        strategy: Literal["all", "any"] | int | None = None,
        phase: str | None = None,
    ) -> AddNodeOp:
        """Add a diamond join barrier.

        ``strategy``: ``"any"`` closes it at the first arrival, an integer ``N`` at ``N``
        arrivals (``{quorum: N}``); the frames still on its other routes are cancelled. The
        default (or ``"all"``) waits for every route, as the contract's join does.
        """
        chosen: JoinStrategy | None = (
            JoinQuorum(quorum=strategy) if isinstance(strategy, int) else strategy
        )
        definition = JoinDefinition() if chosen is None else JoinDefinition(strategy=chosen)
        return self.add_node(JoinNode(id=node_id, phase=phase, definition=definition))

    def map(
        self,
        node_id: str,
        over: NodeRef,
        *,
        max_items: int,
        concurrency: int | None = None,
        tolerated_failures: int | None = None,
        tolerated_failure_percent: float | None = None,
        phase: str | None = None,
    ) -> AddNodeOp:
        """Add a map node: its body (what its ``item`` edges reach) runs once per item of ``over``.

        ``max_items`` is required: more items at run time fail the map (``MapTooManyItemsError``).
        ``concurrency`` caps the items running at once; ``tolerated_failures`` (a count) and
        ``tolerated_failure_percent`` say how many items may fail before the map does (none,
        by default).
        """
        definition = MapDefinition(
            over=over,
            max_items=max_items,
            concurrency=concurrency,
            tolerated_failures=tolerated_failures,
            tolerated_failure_percent=tolerated_failure_percent,
        )
        return self.add_node(MapNode(id=node_id, phase=phase, definition=definition))

    def loop(
        self,
        node_id: str,
        *,
        max_iterations: int,
        until: object,
        evaluator: str = "structured",
        watch: NodeRef | None = None,
        fail_unless_met: bool = False,
        phase: str | None = None,
    ) -> AddNodeOp:
        """Add a loop node: its body (what its ``body`` edges reach) runs round after round.

        After each round the ``until`` predicate (in the cell ``evaluator``, as a branch's)
        reads the round's outputs; the loop ends when it holds, after ``max_iterations``
        rounds (required), or, with ``watch``, when the watched output is the same two rounds
        in a row. ``fail_unless_met`` fails the loop (``LoopUnmetError``) when it ends without
        ``until`` holding.
        """
        definition = LoopDefinition(
            max_iterations=max_iterations,
            until=LoopUntil(evaluator=evaluator, predicate=until),
            watch=watch,
            fail_unless_met=fail_unless_met,
        )
        return self.add_node(LoopNode(id=node_id, phase=phase, definition=definition))

    def remove_node(self, node_id: str, incident_edge_ids: Sequence[str] = ()) -> RemoveNodeOp:
        """Remove a node and the incident edges named (record them so the fold commutes)."""
        return RemoveNodeOp(
            node_id=node_id, incident_edge_ids=tuple(incident_edge_ids), **self._identity()
        )

    def set_field(self, node_id: str, path: str, value: Any) -> SetNodeFieldOp:
        """Set a field of a node's definition by dot path (``args.city``)."""
        return SetNodeFieldOp(node_id=node_id, path=path, value=value, **self._identity())

    def set_definition(self, node_id: str, definition: Any) -> SetNodeDefinitionOp:
        """Replace a node's whole definition (a definition model or its wire dict)."""
        return SetNodeDefinitionOp(node_id=node_id, definition=definition, **self._identity())

    def set_phase(self, node_id: str, phase: str | None) -> SetNodePhaseOp:
        """Set (or clear with ``None``) a node's phase label."""
        return SetNodePhaseOp(node_id=node_id, phase=phase, **self._identity())

    # -- edges and bounds -------------------------------------------------------------------

    def edge(
        self, source: str, target: str, handle: str = "always", *, edge_id: str | None = None
    ) -> AddEdgeOp:
        """Add an edge; without ``edge_id`` one is derived from the endpoints and handle."""
        if edge_id is None:
            suffix = "" if handle == "always" else f"-{handle}"
            edge_id = _EDGE_ID_UNSAFE.sub("_", f"{source}-{target}{suffix}")[:64]
        edge = PlanEdge.model_validate(
            {"id": edge_id, "from": source, "to": target, "handle": handle}
        )
        return AddEdgeOp(edge=edge, **self._identity())

    def remove_edge(self, edge_id: str) -> RemoveEdgeOp:
        """Remove an edge."""
        return RemoveEdgeOp(edge_id=edge_id, **self._identity())

    def set_bounds(self, bounds: PlanBounds) -> SetBoundsOp:
        """Replace the plan's bounds wholesale."""
        return SetBoundsOp(bounds=bounds, **self._identity())
