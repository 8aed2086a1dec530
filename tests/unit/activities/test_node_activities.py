"""The reason, transform and evaluate activities, run in Temporal's activity test environment."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.frames import FrameActivities
from orchestration.artifacts import (
    ArtifactRegistry,
    FileSpoolStore,
    SpooledArtifact,
    SpooledJsonArtifact,
    SpooledMarkdownArtifact,
)
from orchestration.predicates import LuaCell
from orchestration.run.messages import (
    CallRequest,
    EvaluateRequest,
    ReasonRequest,
    TransformRequest,
)
from orchestration.run.routes import BranchId
from orchestration.run.work import FrameWork
from orchestration.testing import ScriptedReasoner
from orchestration.tools.toolbox import Toolbox, ToolContext
from orchestration.types import (
    ArtifactHandle,
    BranchDefinition,
    BranchNode,
    EmitRows,
    EmitValue,
    FrameRef,
    NumberField,
    StringField,
    TransformStep,
)
from workers.example_tools import TOOLBOX

SCHEMA = json.dumps({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})


def run(fn: Any, arg: Any) -> Any:
    return asyncio.run(ActivityEnvironment().run(fn, arg))


def failure(fn: Any, arg: Any) -> ApplicationError:
    with pytest.raises(ApplicationError) as raised:
        run(fn, arg)
    return raised.value


def reason_request(**kw: Any) -> ReasonRequest:
    base: dict[str, Any] = dict(
        plan_id="p",
        run_id="r",
        node_id="think",
        frame_key="think:e1",
        prompt="How many?",
        output_schema=SCHEMA,
        max_attempts=2,
    )
    base.update(kw)
    return ReasonRequest(**base)


# -- reason ------------------------------------------------------------------------------------


def test_reason_returns_the_answer_and_every_attempts_tokens() -> None:
    """The accepted arguments are the one item; usage per attempt is in the response."""
    reasoner = ScriptedReasoner({"think": [{"n": "two"}, {"n": 2}]})
    response = run(FrameActivities(FrameWork(reasoner=reasoner)).reason, reason_request())
    assert [item.json_ for item in response.items] == [{"n": 2}]
    assert [a.outcome for a in response.attempts] == ["invalid", "accepted"]
    assert response.input_tokens == sum(a.input_tokens for a in response.attempts) > 0
    assert response.reasoner == "scripted"


def test_exhausted_attempts_are_a_non_retryable_schema_violation() -> None:
    """No valid answer after maxAttempts: output_schema_violation, with the attempts attached."""
    reasoner = ScriptedReasoner({"think": {"n": "x"}})
    error = failure(FrameActivities(FrameWork(reasoner=reasoner)).reason, reason_request())
    assert error.type == "output_schema_violation" and error.non_retryable
    assert "after 2 attempt(s)" in error.message and "'x' is not of type 'integer'" in error.message
    facts = error.details[0]
    assert (facts["transient"], facts["kind"]) == (False, "output_schema")
    attempts = error.details[1]
    assert [a["outcome"] for a in attempts] == ["invalid", "invalid"]
    # What the turns spent travels with the failure, so the run records the attempt's usage.
    usage = facts["usage"]
    assert [t["outcome"] for t in usage["turns"]] == ["invalid", "invalid"]
    assert usage["inputTokens"] == sum(a["inputTokens"] for a in attempts) > 0


def test_no_reasoner_and_bad_schemas_are_refused() -> None:
    """A worker without a reasoner, or an unusable schema, fails the node without retrying."""
    assert (
        failure(FrameActivities(FrameWork(reasoner=None)).reason, reason_request()).type
        == "no_reasoner"
    )
    bad = failure(
        FrameActivities(FrameWork(reasoner=ScriptedReasoner())).reason,
        reason_request(output_schema='{"type": "string"}'),
    )
    assert bad.type == "invalid_output_schema" and bad.non_retryable


def test_provider_outages_stay_retryable() -> None:
    """A reasoner that is unavailable surfaces as a transient reasoner_unavailable.

    Temporal does not retry it itself: the run's policy does, so every attempt is recorded.
    """
    from orchestration.errors import ReasonerUnavailableError

    reasoner = ScriptedReasoner({"think": ReasonerUnavailableError("HTTP 503: overloaded", 503)})
    error = failure(FrameActivities(FrameWork(reasoner=reasoner)).reason, reason_request())
    assert error.type == "reasoner_unavailable" and error.details[0]["transient"] is True


# -- transform ---------------------------------------------------------------------------------


def transform_request(
    source: ArtifactHandle, steps: list[TransformStep], **kw: Any
) -> TransformRequest:
    base: dict[str, Any] = dict(
        plan_id="p",
        run_id="r",
        node_id="slice",
        frame_key="slice:e2",
        source=source,
        steps=tuple(steps),
        emit=EmitValue(field="text"),
        output=(StringField(path="text"),),
    )
    base.update(kw)
    return TransformRequest(**base)


def test_transform_reads_a_spooled_artifact(tmp_path: Path) -> None:
    """A file-spool handle is reopened through its resolver and the steps applied."""
    store = FileSpoolStore(tmp_path)
    handle = store.put(b'{"files": [{"n": 1}, {"n": 7}]}', SpooledJsonArtifact).encode()
    activities = FrameActivities(FrameWork(artifacts=ArtifactRegistry({"fs": store.resolver})))
    response = run(
        activities.transform,
        transform_request(
            handle,
            [TransformStep(name="artifact_json_filter", args={"path": "$.files[?@.n > 2]"})],
            emit=EmitRows(),
            output=(NumberField(path="n"),),
        ),
    )
    assert [item.json_ for item in response.items] == [{"n": 7}]


def test_a_missing_resolver_fails_naming_the_tag(tmp_path: Path) -> None:
    """A handle whose tag this worker cannot resolve: E_NO_READER_RESOLVER naming the tag."""
    handle = FileSpoolStore(tmp_path, tag="vault").put(b"{}", SpooledJsonArtifact).encode()
    error = failure(
        FrameActivities(FrameWork(artifacts=ArtifactRegistry())).transform,
        transform_request(handle, [TransformStep(name="artifact_json_type")]),
    )
    assert error.type == "E_NO_READER_RESOLVER" and error.non_retryable
    assert "'vault'" in error.message


def test_an_artifact_of_another_class_than_declared_is_refused() -> None:
    """A tool declared to return JSON that returned Markdown fails the transform by name."""
    handle = SpooledMarkdownArtifact.from_text("# x\n").encode()
    activities = FrameActivities(FrameWork(TOOLBOX, artifacts=ArtifactRegistry()))
    error = failure(
        activities.transform,
        transform_request(handle, [TransformStep(name="artifact_head")], source_tool="files.stats"),
    )
    assert error.type == "artifact_class_mismatch"
    assert "SpooledJsonArtifact" in error.message and "SpooledMarkdownArtifact" in error.message


def test_transform_items_are_checked_against_the_declared_output() -> None:
    """Emitting into an undeclared shape fails with output_mismatch, as a call would."""
    handle = SpooledJsonArtifact.from_value({"a": "text"}).encode()
    error = failure(
        FrameActivities(FrameWork(artifacts=ArtifactRegistry())).transform,
        transform_request(
            handle,
            [TransformStep(name="artifact_json_get", args={"path": "$.a"})],
            output=(NumberField(path="text"),),
        ),
    )
    assert error.type == "output_mismatch"
    failed_step = failure(
        FrameActivities(FrameWork(artifacts=ArtifactRegistry())).transform,
        transform_request(handle, [TransformStep(name="artifact_json_slice")]),
    )
    assert (
        failed_step.type == "transform_step_failed" and "needs a JSON array" in failed_step.message
    )


# -- evaluate ----------------------------------------------------------------------------------


def evaluate_request(predicate: str, evaluator: str = "lua") -> EvaluateRequest:
    node = BranchNode(
        id="gate", definition=BranchDefinition(evaluator=evaluator, predicate=predicate)
    )
    return EvaluateRequest(
        node=node, frame=FrameRef(node_id="gate", kind="branch", branch_id=BranchId())
    )


def test_evaluate_returns_the_verdict_and_evidence() -> None:
    """A worker-side cell's verdict and evidence come back as the response."""
    response = run(
        FrameActivities(FrameWork(cells=[LuaCell()])).evaluate, evaluate_request("return 1 < 2")
    )
    assert response.kind == "branch" and response.matched
    assert response.evidence == {"cell": "lua", "result": True}


def test_evaluate_refuses_unknown_cells_and_memory_bombs() -> None:
    """An unregistered cell id and a predicate over its memory ceiling are named failures."""
    assert (
        failure(FrameActivities(FrameWork(cells=[])).evaluate, evaluate_request("return true")).type
        == "unwired_evaluator"
    )
    bomb = "local s = 'x' for i = 1, 40 do s = s .. s end return true"
    error = failure(
        FrameActivities(FrameWork(cells=[LuaCell(memory_ceiling_bytes=1 << 20)])).evaluate,
        evaluate_request(bomb),
    )
    assert error.type == "lua_memory_exceeded" and error.non_retryable


# -- call returning an artifact ----------------------------------------------------------------


def test_a_tool_returning_an_artifact_instance_yields_its_handle(tmp_path: Path) -> None:
    """The call keeps the declared fields as its item and the spooled artifact as a handle."""
    tools = Toolbox()

    @tools.tool("doc.make")
    def make(context: ToolContext) -> dict[str, Any]:
        art = context.spool.put(b"line\n", SpooledArtifact)
        return {"artifact": art, "lines": 1}

    @tools.tool("doc.bare")
    def bare(context: ToolContext) -> SpooledArtifact:
        return context.spool.put(b"abc", SpooledArtifact)

    calls = FrameActivities(FrameWork(tools, spool=FileSpoolStore(tmp_path)))
    base: dict[str, Any] = dict(plan_id="p", run_id="r", node_id="n", frame_key="n:e1", args={})
    made = run(
        calls.call, CallRequest(tool="doc.make", output=(NumberField(path="lines"),), **base)
    )
    assert [i.json_ for i in made.items] == [{"lines": 1}]
    assert made.artifact is not None and made.artifact.tag == "fs"
    assert made.artifact.artifact_class == "text" and len(made.artifact.locator) == 64
    plain = run(calls.call, CallRequest(tool="doc.bare", **base))
    assert [i.json_ for i in plain.items] == [{"artifactClass": "text", "byteLength": 3}]
