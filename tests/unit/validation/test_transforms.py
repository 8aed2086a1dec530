"""Transform checks: source kind, declared artifact class, steps and their args."""

from __future__ import annotations

from orchestration.artifacts import (
    SpooledJsonArtifact,
    SpooledMarkdownArtifact,
    effective_tool_methods,
)
from orchestration.plan.authoring import ref
from orchestration.tools.allowlist import ToolAllowlist
from orchestration.types import StringField

from .helpers import author, call, check, only


def _transform(source_tool: str = "files.read_json", steps=None, source_kind="call",  # type: ignore[no-untyped-def]
               emit_field="text", output=None):
    a = author()
    source = (call(a, "src", tool=source_tool, output=[]) if source_kind == "call"
              else a.reason("src", prompt=[], output_schema='{"type": "object"}'))
    return [a.entry(), source,
            a.transform("t", source=ref("src"), steps=steps if steps is not None else
                        [("artifact_json_get", {"path": "$.a"})], emit_field=emit_field,
                        output=output if output is not None else [StringField(path="text")]),
            a.edge("entry", "src", edge_id="e1"), a.edge("src", "t", edge_id="e2")]


def test_source_that_is_not_a_call() -> None:
    """A transform reading a reason node is refused."""
    issue = only(check(_transform(source_kind="reason")), "transform_source_not_call")
    assert issue.node_id == "t" and "point source at the call" in issue.message


def test_source_tool_with_undeclared_return() -> None:
    """A tool whose return class is undeclared is refused by name: no class is guessed."""
    issue = only(check(_transform(source_tool="legacy.tool")), "transform_undeclared_tool")
    assert issue.node_id == "t" and '"legacy.tool"' in issue.message
    assert "declare what" in issue.message


def test_source_tool_returning_text() -> None:
    """A tool returning text has no artifact class to transform."""
    issue = only(check(_transform(source_tool="web.fetch")), "transform_source_not_artifact")
    assert "returns text" in issue.message


def test_unknown_step_names_the_legal_set() -> None:
    """A step that is not a method of the class is refused, listing the whole legal set."""
    ops = _transform(steps=[("artifact_md_sections", None)])
    issue = only(check(ops), "transform_unknown_step")
    assert issue.node_id == "t"
    legal = ", ".join(d.name for d in effective_tool_methods(SpooledJsonArtifact))
    assert f"SpooledJsonArtifact; use one of: {legal}." in issue.message
    assert legal.startswith("artifact_json_type") and legal.endswith("artifact_estimate_tokens")


def test_step_args_fail_the_method_schema() -> None:
    """Step args are validated against the descriptor's own schema."""
    issue = only(check(_transform(steps=[("artifact_head", {"n": 0})])), "transform_step_args")
    assert issue.node_id == "t" and "n: 0 is less than the minimum of 1" in issue.message


def test_required_step_arg_missing() -> None:
    """A required argument left out is refused too."""
    issue = only(check(_transform(steps=[("artifact_json_get", None)])), "transform_step_args")
    assert "'path' is a required property" in issue.message


def test_no_steps() -> None:
    """A transform with no steps would emit the artifact itself and is refused."""
    issue = only(check(_transform(steps=[])), "transform_no_steps")
    assert "add at least one step" in issue.message


def test_emit_into_an_undeclared_field() -> None:
    """emit value into a field the output does not declare is refused."""
    issue = only(check(_transform(emit_field="title")), "transform_emit_undeclared")
    assert '"text"' in issue.message


MD_TOOLS = ToolAllowlist.of(artifacts={"files.read_md": SpooledMarkdownArtifact})


def test_markdown_source_accepts_its_own_and_inherited_methods() -> None:
    """A Markdown artifact's transform may chain its own methods and the base seven."""
    steps = [("artifact_md_sections", {"depth": 2}), ("artifact_line_count", None)]
    ops = _transform(source_tool="files.read_md", steps=steps, emit_field="text")
    assert check(ops, tools=MD_TOOLS) == []
    issue = only(check(_transform(source_tool="files.read_md"), tools=MD_TOOLS),
                 "transform_unknown_step")
    assert "SpooledMarkdownArtifact" in issue.message
    assert len(effective_tool_methods(SpooledMarkdownArtifact)) == 15


def test_step_args_use_the_reference_names() -> None:
    """Markdown range args are startLine/endLine; a snake_case spelling is refused."""
    good = [("artifact_md_links", {"startLine": 1, "endLine": 9})]
    assert check(_transform(source_tool="files.read_md", steps=good), tools=MD_TOOLS) == []
    bad = [("artifact_md_links", {"start_line": 1})]
    issue = only(check(_transform(source_tool="files.read_md", steps=bad), tools=MD_TOOLS),
                 "transform_step_args")
    assert "'start_line' was unexpected" in issue.message
