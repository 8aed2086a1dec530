"""The work of one frame, where the side effect happens: one implementation for every host.

The Temporal activities (``plan.call``, ``plan.reason``, ``plan.transform``, ``plan.evaluate``)
and the in-process host both run a frame through :class:`FrameWork`, so a tool is checked,
invoked, normalised and its failure named the same way wherever the plan runs (ruling 33).

A call is guarded at the last moment before the tool runs (defence in depth; the workflow has
already checked the approval against the plan):

* the tool must be in this host's toolbox (the allowlist where it is enforced);
* every claim of the calling node must be inside the approved authority set;
* every (capability, verb) the tool declares it needs must be claimed by the node;
* a call approved at its gate sends exactly the approved arguments (their digest matches).

Its result is normalised to output items and checked against the node's declared output.

Every failure is a :class:`WorkFailed` with a ``name``: a stable code for a refusal
(``unknown_tool``, ``output_mismatch``, ...), or the exception's class name for a tool's own
error, with its message (ruling 29). ``transient`` says whether trying again could help;
whether the frame IS tried again is the host's policy (:mod:`orchestration.run.policy`).

A reason frame reports what its model turns spent (tokens as the provider reported them, and
their cost at the host's :class:`~orchestration.tools.pricing.PriceTable`) whether it succeeds
or fails, so every attempt's usage is recorded. Provider failures are classified as seed 002
does: a context window exceeded (``context_window_exceeded``) is final for the frame, since the
same request can only fail again; an unavailable provider (``reasoner_unavailable``) is
transient and retried under ruling 29; a request the provider refuses
(``reasoner_rejected``: a bad key, an unknown model) is not.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import structlog

from orchestration.artifacts import ArtifactRegistry, ArtifactSpool, MemorySpool, SpooledArtifact
from orchestration.artifacts import run_transform as apply_steps
from orchestration.errors import ArtifactError, OrchestrationError, ReasonerError, TransformError
from orchestration.plan.gates import args_digest
from orchestration.plan.references import decode_output_schema
from orchestration.review.validation.schemas import schema_problem
from orchestration.run.engine.results import FailureKind, is_transient
from orchestration.run.messages import (
    AttemptUsage,
    CallRequest,
    CallResponse,
    EvaluateRequest,
    EvaluateResponse,
    ReasonRequest,
    ReasonResponse,
    TransformRequest,
    TransformResponse,
    usage_of,
)
from orchestration.tools.contracts import (
    ArtifactReturn,
    BranchVerdict,
    ExplainingEvaluator,
    Judgement,
    PredicateContext,
    PredicateEvaluator,
)
from orchestration.tools.pricing import PriceTable
from orchestration.tools.reasoning import (
    AnsweredRound,
    AttemptRecord,
    Reasoner,
    ask_arguments,
    questions_of,
    reason,
)
from orchestration.tools.toolbox import Toolbox, ToolContext
from orchestration.types import (
    ArtifactHandle,
    BooleanField,
    BranchNode,
    DeclaredField,
    EnumField,
    NumberField,
    OutputItem,
    SelectNode,
    StringField,
    Usage,
)

__all__ = [
    "MAX_RESULT_BYTES",
    "FrameWork",
    "WorkFailed",
    "check_output",
    "decide_with",
    "judge",
    "normalise_result",
]

MAX_RESULT_BYTES = 2_000_000
"""Just under Temporal's 2 MiB payload limit; larger results must travel as artifact handles."""

Heartbeat = Callable[..., None]

_log = structlog.get_logger("orchestration.run.work")


def _no_heartbeat(*details: Any) -> None:
    return None


class WorkFailed(Exception):
    """A frame's work failed.

    Attributes:
        name: A stable code for a refusal, or the exception's class name for a tool's error.
        message: What happened, naming the fix where there is one.
        transient: Whether trying again could help.
        kind: ``error``, ``predicate`` (a cell), ``output_schema`` (a reason node's attempts)
            or ``budget`` (a reason attempt stopped between turns: its budget is spent).
        details: Extra facts for the host (a reason node's attempts).
        usage: What the attempt spent on a model before it failed.

    """

    def __init__(
        self,
        name: str,
        message: str,
        *,
        transient: bool = False,
        kind: FailureKind = "error",
        details: Sequence[Any] = (),
        usage: Usage | None = None,
    ) -> None:
        super().__init__(f"{name}: {message}")
        self.name = name
        self.message = message
        self.transient = transient
        self.kind: FailureKind = kind
        self.details = tuple(details)
        self.usage = usage


def _refuse(code: str, message: str, kind: FailureKind = "error") -> WorkFailed:
    return WorkFailed(code, message, kind=kind)


# -- results ------------------------------------------------------------------------------------


def normalise_result(result: Any, output: Sequence[DeclaredField]) -> CallResponse:
    """Turn what a tool returned into items.

    A string becomes one item whose only field is the first declared output path (or
    ``value``); a mapping is one item; a list of mappings is one item each; an
    ``ArtifactHandle`` or a ``SpooledArtifact`` (or a mapping holding one under ``artifact``,
    beside the declared fields) is kept as the artifact's handle. A bare artifact instance's
    item is its ``summary()`` (``artifactClass``, ``byteLength``); a bare handle's is empty.

    Raises:
        WorkFailed: ``unsupported_result`` for anything else.

    """
    artifact: ArtifactHandle | None = None
    if isinstance(result, SpooledArtifact):
        artifact, result = result.encode(), result.summary()
    elif isinstance(result, Mapping) and isinstance(result.get("artifact"), SpooledArtifact):
        artifact = result["artifact"].encode()
        result = {k: v for k, v in result.items() if k != "artifact"}
    elif isinstance(result, ArtifactHandle):
        artifact, result = result, {}
    elif isinstance(result, Mapping) and isinstance(result.get("artifact"), ArtifactHandle):
        artifact = result["artifact"]
        result = {k: v for k, v in result.items() if k != "artifact"}
    if isinstance(result, str):
        field = output[0].path if output else "value"
        rows: list[Any] = [{field: result}]
    elif isinstance(result, Mapping):
        rows = [dict(result)]
    elif isinstance(result, list) and all(isinstance(r, Mapping) for r in result):
        rows = [dict(r) for r in result]
    else:
        raise _refuse(
            "unsupported_result",
            f"the tool returned {type(result).__name__}; return a string, a mapping of the "
            "declared fields, a list of such mappings, or an ArtifactHandle",
        )
    try:
        items = tuple(OutputItem.model_validate({"json": row}) for row in rows)
    except ValueError as exc:
        raise _refuse("unsupported_result", f"the tool's result is not encodable: {exc}") from exc
    return CallResponse(items=items, artifact=artifact)


def _read_path(fields: Mapping[str, Any], path: str) -> tuple[bool, Any]:
    value: Any = fields
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return False, None
        value = value[part]
    return True, value


def check_output(items: Sequence[OutputItem], output: Sequence[DeclaredField], tool: str) -> None:
    """Refuse items that lack a declared field or hold one of the wrong type.

    Raises:
        WorkFailed: ``output_mismatch``, naming the item, the field and the tool.

    """
    for index, item in enumerate(items):
        for declared in output:
            present, value = _read_path(item.json_, declared.path)
            where = f"item {index} field {declared.path!r} of tool {tool!r}"
            if not present:
                raise _refuse(
                    "output_mismatch",
                    f"{where} is missing; the tool must return every declared output field",
                )
            problem = _type_problem(declared, value)
            if problem:
                raise _refuse("output_mismatch", f"{where} {problem}")


def _type_problem(declared: DeclaredField, value: Any) -> str | None:
    if isinstance(declared, StringField):
        if not isinstance(value, str):
            return f"should be a string, got {type(value).__name__}"
        if declared.max_bytes is not None and len(value.encode()) > declared.max_bytes:
            return f"is longer than its declared maxBytes {declared.max_bytes}"
    elif isinstance(declared, NumberField):
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"should be a number, got {type(value).__name__}"
    elif isinstance(declared, BooleanField):
        if not isinstance(value, bool):
            return f"should be a boolean, got {type(value).__name__}"
    elif isinstance(declared, EnumField) and value not in declared.values:
        return f"should be one of {list(declared.values)}, got {value!r}"
    return None


def _check_size(response: Any, what: str, fix: str) -> None:
    size = len(response.model_dump_json())
    if size > MAX_RESULT_BYTES:
        raise _refuse(
            "output_too_large",
            f"{what} returned {size} bytes, over the {MAX_RESULT_BYTES}-byte payload limit; {fix}",
        )


async def judge(
    cell: PredicateEvaluator, node: BranchNode | SelectNode, ctx: PredicateContext
) -> Judgement:
    """The cell's verdict, with its evidence when it offers any.

    A non-deterministic cell with a synchronous ``decide(node, ctx)`` (returning a
    ``Judgement`` or a verdict) is called on a worker thread: such cells do blocking work.
    """
    decide = getattr(cell, "decide", None)
    if callable(decide) and not cell.deterministic:
        result = await asyncio.to_thread(decide, node, ctx)
        return result if isinstance(result, Judgement) else Judgement(result)
    if isinstance(cell, ExplainingEvaluator):
        return await cell.judge(node, ctx)
    return Judgement(await cell.evaluate(node, ctx))


# -- the work -----------------------------------------------------------------------------------


class FrameWork:
    """What a host needs to do a frame's work: tools, a model, artifacts and cells.

    Args:
        toolbox: The tools calls may run (``None``: every call is refused ``unknown_tool``).
        spool: Where tools put artifacts (default: in memory, inside the handle).
        reasoner: Answers ``reason`` nodes (``None``: they fail ``no_reasoner``).
        artifacts: Reopens handles for ``transform`` nodes (default: the in-memory resolver
            and the built-in classes).
        cells: The predicate cells ``evaluate`` runs, by id.
        prices: What each model's tokens cost (``None``: no prices; every model's tokens are
            recorded unpriced).

    """

    def __init__(
        self,
        toolbox: Toolbox | None = None,
        *,
        spool: ArtifactSpool | None = None,
        reasoner: Reasoner | None = None,
        artifacts: ArtifactRegistry | None = None,
        cells: Sequence[PredicateEvaluator] = (),
        prices: PriceTable | None = None,
    ) -> None:
        self.toolbox = toolbox or Toolbox()
        self.spool = spool or MemorySpool()
        self.reasoner = reasoner
        self.artifacts = artifacts or ArtifactRegistry()
        self.cells = {cell.id: cell for cell in cells}
        self.prices = prices

    # -- call ------------------------------------------------------------------------------

    def check_call(self, request: CallRequest) -> None:
        """The guards a call passes before its tool runs (see the module docstring).

        Raises:
            WorkFailed: ``unknown_tool``, ``authority_not_approved`` or ``authority_missing``.

        """
        toolbox = self.toolbox
        if not toolbox.has(request.tool):
            raise _refuse(
                "unknown_tool",
                f"tool {request.tool!r} is not in this worker's toolbox; available: "
                f"{', '.join(toolbox.names())}. Run the plan on a worker that has it.",
            )
        approved = {(c.capability, c.scope, c.verb) for c in request.approved_authority}
        for claim in request.authority:
            if (claim.capability, claim.scope, claim.verb) not in approved:
                raise _refuse(
                    "authority_not_approved",
                    f"node {request.node_id!r} claims {claim.verb} on {claim.capability}:"
                    f"{claim.scope}, which the approval does not contain; re-approve the plan",
                )
        if request.args_digest is not None and args_digest(request.args) != request.args_digest:
            raise _refuse(
                "arguments_not_approved",
                f"call {request.node_id!r} carries arguments that are not the ones approved at "
                "its gate; approve the arguments it would send",
            )
        claimed = {(c.capability, c.verb) for c in request.authority}
        for capability, verb in toolbox.get(request.tool).requires:
            if (capability, verb) not in claimed:
                raise _refuse(
                    "authority_missing",
                    f"tool {request.tool!r} needs {verb} on {capability}, which node "
                    f"{request.node_id!r} does not claim; add the claim and re-approve",
                )

    def check_args(self, tool: str, args: Mapping[str, Any]) -> str | None:
        """Why ``tool``'s input shape refuses ``args`` (an approver's edit), or ``None``."""
        toolbox = self.toolbox
        if not toolbox.has(tool):
            return f"tool {tool!r} is not in this host's toolbox"
        shape = toolbox.shape(tool)
        return None if shape is None else shape.arguments_problem(args)

    async def call(
        self, request: CallRequest, *, attempt: int = 1, heartbeat: Heartbeat = _no_heartbeat
    ) -> CallResponse:
        """Run one call frame's tool, after re-checking what may run.

        Raises:
            WorkFailed: a refusal (a stable code), or the tool's own error (its class name).

        """
        self.check_call(request)
        spec = self.toolbox.get(request.tool)
        # The frame's ids are bound for every line logged while the tool runs, the tool's own
        # included (a sync tool's thread inherits the context), so one run's lines can be joined.
        with structlog.contextvars.bound_contextvars(
            plan_id=request.plan_id,
            run_id=request.run_id,
            node_id=request.node_id,
            frame_key=request.frame_key,
            tool=request.tool,
            attempt=attempt,
        ):
            _log.info("tool call started")
            try:
                result = await self._invoke(spec.fn, spec.wants_context, request, heartbeat)
            except WorkFailed:
                _log.info("tool call ended", status="failed")
                raise
            except Exception as exc:
                _log.info("tool call ended", status="failed", error=type(exc).__name__)
                raise WorkFailed(
                    type(exc).__name__, str(exc), transient=is_transient(exc)
                ) from exc
            _log.info("tool call ended", status="ok")
        response = normalise_result(result, request.output)
        check_output(response.items, request.output, request.tool)
        _check_size(
            response,
            f"tool {request.tool!r}",
            "return an artifact handle and read it with a transform",
        )
        return response

    async def _invoke(
        self, fn: Any, wants_context: bool, request: CallRequest, heartbeat: Heartbeat
    ) -> Any:
        kwargs: dict[str, Any] = dict(request.args)
        if wants_context:
            kwargs["context"] = ToolContext(
                plan_id=request.plan_id,
                node_id=request.node_id,
                frame_key=request.frame_key,
                idempotency_key=request.idempotency_key,
                claims=request.authority,
                heartbeat=heartbeat,
                spool=self.spool,
            )
        if inspect.iscoroutinefunction(fn):
            return await fn(**kwargs)
        return await asyncio.to_thread(fn, **kwargs)

    # -- reason ----------------------------------------------------------------------------

    async def reason(
        self,
        request: ReasonRequest,
        *,
        on_attempt: Callable[[AttemptRecord], None] | None = None,
    ) -> ReasonResponse:
        """Ask the model until its forced tool call validates, or the attempts run out.

        Stops before a model turn once the turns so far spent ``request.max_tokens`` tokens or
        ``request.max_cost_usd`` dollars (what is left of the frame's budgets).

        Raises:
            WorkFailed: ``no_reasoner``, ``invalid_output_schema``, ``output_schema_violation``
                (kind ``output_schema``; details hold every attempt's accounting),
                ``budget_exhausted`` (kind ``budget``), or the provider's
                ``reasoner_unavailable`` (transient), ``reasoner_rejected`` or
                ``context_window_exceeded``. Each carries the turns' usage.

        """
        reasoner = self.reasoner
        if reasoner is None:
            raise _refuse(
                "no_reasoner",
                f"reason node {request.node_id!r} needs a reasoner, and this worker has none; "
                "start the worker with ORCH_REASONER (openai, anthropic or scripted) or pass "
                "reasoner= to build_worker",
            )
        schema = decode_output_schema(request.output_schema)
        problem = (
            "it does not decode to a JSON object"
            if schema is None
            else schema_problem(schema, object_only=True)
        )
        if schema is None or problem is not None:
            raise _refuse(
                "invalid_output_schema",
                f"reason node {request.node_id!r} has an unusable outputSchema: {problem}",
            )
        bounded = request.max_tokens is not None or request.max_cost_usd is not None
        try:
            outcome = await reason(
                reasoner,
                prompt=request.prompt,
                schema=schema,
                max_attempts=request.max_attempts,
                node_id=request.node_id,
                frame_key=request.frame_key,
                on_attempt=on_attempt,
                before_turn=self._budget_stop(request, reasoner.name) if bounded else None,
                asks_left=request.asks_left,
                rounds=tuple(
                    AnsweredRound(
                        call_id=r.call or f"ask_{request.node_id}_{i + 1}",
                        arguments=ask_arguments(r.questions),
                        answers=r.answers,
                    )
                    for i, r in enumerate(request.rounds)
                ),
            )
        except ReasonerError as exc:
            turns = _turns(getattr(exc, "turns", ()))
            raise WorkFailed(
                exc.code,
                f"{reasoner.name}: {exc.message}",
                transient=exc.retryable,
                usage=self._usage(turns, getattr(exc, "model", ""), reasoner.name),
            ) from exc
        usage = _turns(outcome.attempts)
        spent = self._usage(usage, outcome.model, reasoner.name)
        if outcome.stopped is not None:
            raise WorkFailed(
                "budget_exhausted",
                f"reason node {request.node_id!r} stopped after {len(outcome.attempts)} "
                f"turn(s): {outcome.stopped}",
                kind="budget",
                usage=spent,
            )
        if outcome.asked is not None:
            total = outcome.usage
            return ReasonResponse(
                items=(),
                asked=questions_of(outcome.asked),
                call=outcome.call_id,
                attempts=usage,
                reasoner=reasoner.name,
                model=outcome.model,
                input_tokens=total.input_tokens,
                output_tokens=total.output_tokens,
                cost_usd=spent.cost_usd,
            )
        if outcome.arguments is None:
            last = outcome.attempts[-1].problems if outcome.attempts else ()
            raise WorkFailed(
                "output_schema_violation",
                f"reason node {request.node_id!r}: no valid structured result after "
                f"{len(outcome.attempts)} attempt(s); last rejection: {'; '.join(last)}",
                kind="output_schema",
                details=[[u.model_dump(mode="json") for u in usage]],
                usage=spent,
            )
        try:
            item = OutputItem.model_validate({"json": outcome.arguments})
        except ValueError as exc:
            raise WorkFailed(
                "output_schema_violation",
                f"reason node {request.node_id!r}: the accepted arguments are not encodable: {exc}",
                kind="output_schema",
            ) from exc
        total = outcome.usage
        return ReasonResponse(
            items=(item,),
            attempts=usage,
            reasoner=reasoner.name,
            model=outcome.model,
            input_tokens=total.input_tokens,
            output_tokens=total.output_tokens,
            cost_usd=spent.cost_usd,
        )

    def _usage(self, turns: tuple[AttemptUsage, ...], model: str, reasoner: str) -> Usage:
        """The turns' usage, priced at this host's table (``None`` cost: no price)."""
        cost = None
        if self.prices is not None:
            cost = self.prices.cost(
                model,
                sum(t.input_tokens for t in turns),
                sum(t.output_tokens for t in turns),
                reasoner,
            )
        return usage_of(turns, model or reasoner, cost)

    def _budget_stop(
        self, request: ReasonRequest, reasoner: str
    ) -> Callable[[tuple[AttemptRecord, ...], str], str | None]:
        """Before each later turn: a message when the attempt's allowance is spent."""

        def stop(records: tuple[AttemptRecord, ...], model: str) -> str | None:
            spent = self._usage(_turns(records), model, reasoner)
            if request.max_tokens is not None and spent.tokens >= request.max_tokens:
                return (
                    f"its turns spent {spent.tokens} tokens, all its budgets left it "
                    f"({request.max_tokens})"
                )
            if request.max_cost_usd is not None:
                if spent.cost_usd is None:
                    return (
                        f"model {spent.model or reasoner} has no price in this worker's price "
                        "table, so its cost budget cannot be kept"
                    )
                if spent.cost_usd >= request.max_cost_usd:
                    return (
                        f"its turns cost ${spent.cost_usd:.6f}, all its budgets left it "
                        f"(${request.max_cost_usd:.6f})"
                    )
            return None

        return stop

    # -- transform -------------------------------------------------------------------------

    async def transform(self, request: TransformRequest) -> TransformResponse:
        """Apply one transform frame's steps to its source artifact (on a worker thread).

        Raises:
            WorkFailed: ``E_NO_READER_RESOLVER``, ``unknown_artifact_class``,
                ``artifact_unreadable``, ``artifact_class_mismatch``, a ``transform_*`` code,
                ``unsupported_result``, ``output_mismatch`` or ``output_too_large``.

        """
        items = await asyncio.to_thread(self._apply, request)
        check_output(items, request.output, f"transform:{request.node_id}")
        response = TransformResponse(items=items)
        _check_size(response, f"transform {request.node_id!r}", "select a smaller slice")
        return response

    def _open(self, request: TransformRequest) -> SpooledArtifact:
        try:
            artifact = self.artifacts.open(request.source)
        except ArtifactError as exc:
            raise _refuse(
                exc.code, f"transform {request.node_id!r} cannot open its source: {exc.message}"
            ) from exc
        if request.source_tool is not None:
            declared = self.toolbox.returns(request.source_tool)
            if isinstance(declared, ArtifactReturn) and not isinstance(
                artifact, declared.artifact_class
            ):
                raise _refuse(
                    "artifact_class_mismatch",
                    f"tool {request.source_tool!r} is declared to return "
                    f"{declared.artifact_class.__name__}, but returned a "
                    f"{type(artifact).__name__} ({artifact.artifact_class}); fix the tool or "
                    "its declaration",
                )
        return artifact

    def _apply(self, request: TransformRequest) -> tuple[OutputItem, ...]:
        artifact = self._open(request)
        try:
            rows = apply_steps(artifact, request.steps, request.emit, request.output)
        except (TransformError, ArtifactError) as exc:
            raise _refuse(exc.code, f"transform {request.node_id!r}: {exc.message}") from exc
        try:
            return tuple(OutputItem.model_validate({"json": row}) for row in rows)
        except ValueError as exc:
            raise _refuse(
                "unsupported_result",
                f"transform {request.node_id!r} emitted unencodable items: {exc}",
            ) from exc

    # -- evaluate --------------------------------------------------------------------------

    async def evaluate(self, request: EvaluateRequest) -> EvaluateResponse:
        """Decide one branch or select frame (sent by value) with the cell its node names.

        Raises:
            WorkFailed: see :func:`decide_with`.

        """
        ctx = PredicateContext(outputs=request.outputs, frame=request.frame)
        return await decide_with(self.cells, request.node, ctx)


async def decide_with(
    cells: Mapping[str, PredicateEvaluator], node: BranchNode | SelectNode, ctx: PredicateContext
) -> EvaluateResponse:
    """Decide a branch or select frame with the cell its node names, among ``cells``.

    Raises:
        WorkFailed: kind ``predicate``: ``unwired_evaluator``, the cell's own code (such as
            ``E_ORCH_CELL_UNAVAILABLE`` or ``lua_memory_exceeded``), or the class name and
            message of whatever else the cell raised.

    """
    wanted = node.definition.evaluator
    cell = cells.get(wanted)
    if cell is None:
        raise _refuse(
            "unwired_evaluator",
            f"node {node.id!r} names cell {wanted!r}, which this worker does not have "
            f"(it has: {', '.join(sorted(cells)) or 'none'}); register it on the worker",
            "predicate",
        )
    try:
        await cell.load()
        judgement = await judge(cell, node, ctx)
    except OrchestrationError as exc:
        raise _refuse(
            exc.code, f"cell {wanted!r} on node {node.id!r}: {exc.message}", "predicate"
        ) from exc
    except Exception as exc:  # noqa: BLE001 - a raising cell is a predicate failure
        # As for a tool (ruling 29): the error's class name and its own message.
        raise WorkFailed(type(exc).__name__, str(exc), kind="predicate") from exc
    verdict = judgement.verdict
    if isinstance(verdict, BranchVerdict):
        return EvaluateResponse(kind="branch", matched=verdict.matched, evidence=judgement.evidence)
    return EvaluateResponse(
        kind="select", case_label=verdict.case_label, evidence=judgement.evidence
    )


def _turns(records: Sequence[AttemptRecord]) -> tuple[AttemptUsage, ...]:
    return tuple(
        AttemptUsage(
            attempt=a.attempt,
            outcome=a.outcome,
            input_tokens=a.usage.input_tokens,
            output_tokens=a.usage.output_tokens,
            problems=a.problems,
        )
        for a in records
    )

