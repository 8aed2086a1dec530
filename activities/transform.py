"""The transform activity (``plan.transform``): read a slice of an artifact into output items.

The workflow hands over the handle of the source call's artifact (from the frame's branch-local
artifact table) and the node's steps. This activity reopens the handle through the worker's
:class:`~orchestration.artifacts.ArtifactRegistry` (the resolver of the handle's tag rebinds its
locator; the bytes never passed through the workflow), checks the artifact is of the class the
source tool is declared to return, applies the steps and the emit
(:mod:`orchestration.artifacts.steps`), and checks the items against the declared output as a
call's are. Reading happens on a worker thread, so a large artifact does not stall the worker.

Failures (``ApplicationError.type``, all non-retryable: the same handle and steps fail the same
way every time):

* ``E_NO_READER_RESOLVER``: no resolver for the handle's tag on this worker; the message names
  the tag;
* ``unknown_artifact_class`` / ``artifact_unreadable``: the class is not registered, or the
  bytes are gone;
* ``artifact_class_mismatch``: the tool is declared to return one artifact class and returned
  another (the producing call has already settled);
* ``transform_unknown_step``, ``transform_step_args``, ``transform_step_failed``,
  ``transform_emit``: see :class:`~orchestration.errors.TransformError`;
* ``output_mismatch`` / ``output_too_large`` / ``unsupported_result``: as for a call.
"""

from __future__ import annotations

import asyncio

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.call import MAX_RESULT_BYTES, check_output
from activities.heartbeat import heartbeating
from orchestration.artifacts import ArtifactRegistry, SpooledArtifact, run_transform
from orchestration.contracts import ArtifactReturn, InvocableTools
from orchestration.errors import ArtifactError, TransformError
from orchestration.execution import CallResponse, TransformRequest, TransformResponse
from orchestration.types import OutputItem

__all__ = ["TransformActivities"]


def _refuse(code: str, message: str) -> ApplicationError:
    return ApplicationError(message, type=code, non_retryable=True)


class TransformActivities:
    """The transform activity, bound to one worker's artifact registry and tool declarations.

    Args:
        artifacts: Resolvers and classes for reopening handles.
        tools: What each tool is declared to return, to catch a tool that returned an artifact
            of another class than declared (``None`` skips that check).

    """

    def __init__(self, artifacts: ArtifactRegistry, tools: InvocableTools | None = None) -> None:
        self.artifacts = artifacts
        self.tools = tools

    def _open(self, request: TransformRequest) -> SpooledArtifact:
        try:
            artifact = self.artifacts.open(request.source)
        except ArtifactError as exc:
            raise _refuse(
                exc.code, f"transform {request.node_id!r} cannot open its source: {exc.message}"
            ) from exc
        self._check_declared(request, artifact)
        return artifact

    def _check_declared(self, request: TransformRequest, artifact: SpooledArtifact) -> None:
        if self.tools is None or request.source_tool is None:
            return
        declared = self.tools.returns(request.source_tool)
        if isinstance(declared, ArtifactReturn) and not isinstance(
            artifact, declared.artifact_class
        ):
            raise _refuse(
                "artifact_class_mismatch",
                f"tool {request.source_tool!r} is declared to return "
                f"{declared.artifact_class.__name__}, but returned a {type(artifact).__name__} "
                f"({artifact.artifact_class}); fix the tool or its declaration",
            )

    def _apply(self, request: TransformRequest) -> tuple[OutputItem, ...]:
        artifact = self._open(request)
        try:
            rows = run_transform(artifact, request.steps, request.emit, request.output)
        except TransformError as exc:
            raise _refuse(exc.code, f"transform {request.node_id!r}: {exc.message}") from exc
        except ArtifactError as exc:
            raise _refuse(exc.code, f"transform {request.node_id!r}: {exc.message}") from exc
        try:
            return tuple(OutputItem.model_validate({"json": row}) for row in rows)
        except ValueError as exc:
            raise _refuse(
                "unsupported_result",
                f"transform {request.node_id!r} emitted unencodable items: {exc}",
            ) from exc

    @activity.defn(name="plan.transform")
    async def run_transform(self, request: TransformRequest) -> TransformResponse:
        """Apply one transform frame's steps to its source artifact."""
        items = await heartbeating(asyncio.to_thread(self._apply, request))
        check_output(CallResponse(items=items), request.output, f"transform:{request.node_id}")
        response = TransformResponse(items=items)
        size = len(response.model_dump_json())
        if size > MAX_RESULT_BYTES:
            raise _refuse(
                "output_too_large",
                f"transform {request.node_id!r} emitted {size} bytes, over the "
                f"{MAX_RESULT_BYTES}-byte payload limit; select a smaller slice",
            )
        return response
