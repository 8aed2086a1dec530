"""The call activity re-checks what may run, runs the tool, and checks what it returned."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.frames import FrameActivities
from orchestration.run.messages import CallRequest
from orchestration.run.work import FrameWork
from orchestration.tools.toolbox import Toolbox, ToolContext
from orchestration.types import (
    ArtifactHandle,
    AuthorityClaim,
    EnumField,
    NumberField,
    StringField,
)
from workers.example_tools import TOOLBOX

READ = AuthorityClaim(capability="text", scope="*", verb="read")


def request(tool: str, args: dict[str, Any], **kw: Any) -> CallRequest:
    base: dict[str, Any] = dict(
        plan_id="p",
        run_id="r",
        node_id="n",
        frame_key="n:e1:a",
        tool=tool,
        args=args,
        output=(StringField(path="value"),),
        authority=(READ,),
        approved_authority=(READ,),
    )
    base.update(kw)
    return CallRequest(**base)


def run(toolbox: Toolbox, req: CallRequest) -> Any:
    return asyncio.run(ActivityEnvironment().run(FrameActivities(FrameWork(toolbox)).call, req))


def refusal(toolbox: Toolbox, req: CallRequest) -> ApplicationError:
    with pytest.raises(ApplicationError) as info:
        run(toolbox, req)
    return info.value


def test_string_result_becomes_the_declared_field() -> None:
    """A tool returning a string yields one item under the first declared output path."""
    response = run(TOOLBOX, request("text.upper", {"s": "quiet"}))
    assert [item.json_ for item in response.items] == [{"value": "QUIET"}]


def test_unknown_tool_is_refused_naming_the_available_ones() -> None:
    """A tool missing from the worker is a non-retryable refusal listing what exists."""
    err = refusal(TOOLBOX, request("rm.rf", {}))
    assert err.type == "unknown_tool" and err.non_retryable and "text.upper" in err.message


def test_claims_outside_the_approval_are_refused() -> None:
    """A node claim not in the approved set stops the call before the tool runs."""
    wider = AuthorityClaim(capability="text", scope="*", verb="delete")
    err = refusal(TOOLBOX, request("text.upper", {"s": "x"}, authority=(READ, wider)))
    assert err.type == "authority_not_approved" and err.non_retryable


def test_tool_requirements_must_be_claimed(tmp_path: Path) -> None:
    """A tool that needs files:create refuses a node that did not claim it."""
    err = refusal(TOOLBOX, request("files.write", {"path": str(tmp_path / "x"), "text": "t"}))
    assert err.type == "authority_missing" and not (tmp_path / "x").exists()


def test_scope_is_enforced_by_the_tool(tmp_path: Path) -> None:
    """A write outside the claimed scope fails the call; inside it, the file is written."""
    allowed = AuthorityClaim(capability="files", scope=f"{tmp_path}/ok/", verb="create")
    ok = request(
        "files.write",
        {"path": str(tmp_path / "ok" / "a.txt"), "text": "hi"},
        output=(StringField(path="path"),),
        authority=(allowed,),
        approved_authority=(allowed,),
    )
    assert run(TOOLBOX, ok).items[0].json_["path"].endswith("a.txt")
    assert (tmp_path / "ok" / "a.txt").read_text() == "hi"
    outside = ok.model_copy(update={"args": {"path": str(tmp_path / "elsewhere.txt"), "text": "x"}})
    err = refusal(TOOLBOX, outside)
    assert err.type == "ScopeError" and err.non_retryable and str(tmp_path) in err.message
    assert not (tmp_path / "elsewhere.txt").exists()


def test_output_is_checked_against_declared_fields() -> None:
    """Missing fields and wrong types fail the node with output_mismatch."""
    tools = Toolbox()
    tools.tool("bad")(lambda: {"count": "seven"})
    tools.tool("partial")(lambda: {"other": 1})
    tools.tool("enum")(lambda: {"level": "purple"})
    err = refusal(
        tools,
        request(
            "bad", {}, output=(NumberField(path="count"),), authority=(), approved_authority=()
        ),
    )
    assert err.type == "output_mismatch" and "number" in err.message
    err = refusal(tools, request("partial", {}, authority=(), approved_authority=()))
    assert err.type == "output_mismatch" and "missing" in err.message
    err = refusal(
        tools,
        request(
            "enum",
            {},
            output=(EnumField(path="level", values=("low",)),),
            authority=(),
            approved_authority=(),
        ),
    )
    assert err.type == "output_mismatch"


def test_a_tool_exception_is_named_by_its_class_and_marked_transient_or_not() -> None:
    """A tool's exception fails the call with its class name and message (ruling 29).

    Temporal never retries it (the run's policy does, and records every attempt); the details
    say whether it is transient: a connection error is, a TypeError never is.
    """
    tools = Toolbox()

    def boom() -> str:
        raise RuntimeError("disk on fire")

    def flaky() -> str:
        raise ConnectionError("reset by peer")

    tools.tool("boom")(boom)
    tools.tool("flaky")(flaky)
    err = refusal(tools, request("boom", {}, authority=(), approved_authority=()))
    assert (err.type, err.message, err.non_retryable) == ("RuntimeError", "disk on fire", True)
    assert err.details[0] == {"transient": False, "kind": "error"}
    err = refusal(tools, request("flaky", {}, authority=(), approved_authority=()))
    assert err.type == "ConnectionError" and err.details[0]["transient"] is True
    err = refusal(tools, request("boom", {"unexpected": 1}, authority=(), approved_authority=()))
    assert err.type == "TypeError" and err.details[0]["transient"] is False


def test_context_carries_a_frame_stable_idempotency_key() -> None:
    """Tools asking for a context get the claims and a key made of plan id and frame key."""
    tools = Toolbox()
    seen: list[ToolContext] = []

    async def probe(context: ToolContext) -> str:
        seen.append(context)
        return "ok"

    tools.tool("probe")(probe)
    run(tools, request("probe", {}))
    assert seen[0].idempotency_key == "p/n:e1:a" and seen[0].claims == (READ,)


def test_artifact_handles_and_rows() -> None:
    """Artifact handles pass through beside the items; a list of mappings gives one item each."""
    tools = Toolbox()
    handle = ArtifactHandle(tag="fs", locator="/spool/1", artifact_class="json")
    tools.tool("art")(lambda: {"artifact": handle, "value": "summary"})
    tools.tool("rows")(lambda: [{"value": "a"}, {"value": "b"}])
    response = run(tools, request("art", {}, authority=(), approved_authority=()))
    assert response.artifact == handle and response.items[0].json_ == {"value": "summary"}
    rows = run(tools, request("rows", {}, authority=(), approved_authority=()))
    assert [i.json_["value"] for i in rows.items] == ["a", "b"]


def test_oversized_results_fail_clearly() -> None:
    """A result over the payload limit is refused with the artifact advice, not retried."""
    tools = Toolbox()
    tools.tool("huge")(lambda: "x" * 2_100_000)
    err = refusal(tools, request("huge", {}, authority=(), approved_authority=()))
    assert err.type == "output_too_large" and err.non_retryable and "artifact" in err.message
