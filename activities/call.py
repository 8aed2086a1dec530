"""The call activity: where a staged call's side effect actually happens.

The workflow has already checked the approval against the plan, but the checks that guard the
side effect are repeated here, at the last moment before the tool runs (defence in depth):

* the tool must be in this worker's toolbox (the allowlist where it is enforced);
* every claim of the calling node must be inside the approved authority set;
* every (capability, verb) the tool declares it needs must be claimed by the node.

The tool receives only the resolved arguments and, if it asks for one, a ``ToolContext`` with
the node's approved claims (so it can check the scope of what it touches), a frame-stable
idempotency key, and a heartbeat. Its result is normalised to output items and checked against
the node's declared output; a mismatch fails the node with ``output_mismatch``.

Failures are ``ApplicationError`` with a stable ``type`` (see ``ErrorCode``). Deterministic
refusals are non-retryable; a tool's own exception is retryable unless it says otherwise (the
workflow allows retries only for replay-safe calls).
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Mapping
from typing import Any

import structlog
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.heartbeat import heartbeating
from orchestration.artifacts import ArtifactSpool, MemorySpool, SpooledArtifact
from orchestration.execution import CallRequest, CallResponse
from orchestration.toolbox import Toolbox, ToolContext
from orchestration.types import (
    ArtifactHandle,
    BooleanField,
    DeclaredField,
    EnumField,
    NumberField,
    OutputItem,
    StringField,
)

__all__ = ["MAX_RESULT_BYTES", "CallActivities", "normalise_result", "check_output"]

MAX_RESULT_BYTES = 2_000_000
"""Just under Temporal's 2 MiB payload limit; larger results must travel as artifact handles."""

_log = structlog.get_logger("activities.call")



def _refuse(code: str, message: str) -> ApplicationError:
    return ApplicationError(message, type=code, non_retryable=True)


def normalise_result(result: Any, output: tuple[DeclaredField, ...]) -> CallResponse:
    """Turn what a tool returned into items.

    A string becomes one item whose only field is the first declared output path (or
    ``value``); a mapping is one item; a list of mappings is one item each; an
    ``ArtifactHandle`` or a ``SpooledArtifact`` (or a mapping holding one under ``artifact``,
    beside the declared fields) is kept as the artifact's handle. A bare artifact instance's
    item is its ``summary()`` (``artifactClass``, ``byteLength``); a bare handle's is empty.
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


def check_output(response: CallResponse, output: tuple[DeclaredField, ...], tool: str) -> None:
    """Refuse a response whose items lack a declared field or hold one of the wrong type."""
    for index, item in enumerate(response.items):
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


class CallActivities:
    """Activities bound to one worker's toolbox (and the spool its tools put artifacts in)."""

    def __init__(self, toolbox: Toolbox, spool: ArtifactSpool | None = None) -> None:
        self.toolbox = toolbox
        self.spool = spool or MemorySpool()

    @activity.defn(name="plan.call")
    async def run_call(self, request: CallRequest) -> CallResponse:
        """Run one call frame's tool, after re-checking what may run."""
        if not self.toolbox.has(request.tool):
            raise _refuse(
                "unknown_tool",
                f"tool {request.tool!r} is not in this worker's toolbox; available: "
                f"{', '.join(self.toolbox.names())}. Run the plan on a worker that has it.",
            )
        approved = {(c.capability, c.scope, c.verb) for c in request.approved_authority}
        for claim in request.authority:
            if (claim.capability, claim.scope, claim.verb) not in approved:
                raise _refuse(
                    "authority_not_approved",
                    f"node {request.node_id!r} claims {claim.verb} on {claim.capability}:"
                    f"{claim.scope}, which the approval does not contain; re-approve the plan",
                )
        spec = self.toolbox.get(request.tool)
        claimed = {(c.capability, c.verb) for c in request.authority}
        for capability, verb in spec.requires:
            if (capability, verb) not in claimed:
                raise _refuse(
                    "authority_missing",
                    f"tool {request.tool!r} needs {verb} on {capability}, which node "
                    f"{request.node_id!r} does not claim; add the claim and re-approve",
                )
        # The frame's ids are bound for every line logged while the tool runs, the tool's own
        # included (a sync tool's thread inherits the context), so one run's lines can be joined.
        with structlog.contextvars.bound_contextvars(
            plan_id=request.plan_id,
            run_id=request.run_id,
            node_id=request.node_id,
            frame_key=request.frame_key,
            tool=request.tool,
            attempt=activity.info().attempt,
        ):
            _log.info("tool call started")
            try:
                result = await self._invoke(spec.fn, spec.wants_context, request)
            except BaseException as exc:
                _log.info("tool call ended", status="failed", error=type(exc).__name__)
                raise
            _log.info("tool call ended", status="ok")
        response = normalise_result(result, request.output)
        check_output(response, request.output, request.tool)
        size = len(response.model_dump_json())
        if size > MAX_RESULT_BYTES:
            raise _refuse(
                "output_too_large",
                f"tool {request.tool!r} returned {size} bytes, over the {MAX_RESULT_BYTES}-byte "
                "payload limit; return an artifact handle and read it with a transform",
            )
        return response

    async def _invoke(self, fn: Any, wants_context: bool, request: CallRequest) -> Any:
        kwargs: dict[str, Any] = dict(request.args)
        if wants_context:
            kwargs["context"] = ToolContext(
                plan_id=request.plan_id,
                node_id=request.node_id,
                frame_key=request.frame_key,
                idempotency_key=request.idempotency_key,
                claims=request.authority,
                heartbeat=activity.heartbeat,
                spool=self.spool,
            )
        work = fn(**kwargs) if inspect.iscoroutinefunction(fn) else asyncio.to_thread(fn, **kwargs)
        try:
            return await heartbeating(work)
        except ApplicationError:
            raise
        except Exception as exc:
            raise ApplicationError(
                f"{type(exc).__name__}: {exc}",
                json.dumps({"exception": type(exc).__name__}),
                type="tool_failed",
                non_retryable=bool(getattr(exc, "non_retryable", False)),
            ) from exc
