"""The public surfaces of the forge and templates packages, pinned."""

from __future__ import annotations

import subprocess
import sys

import orchestration.forge as forge
import orchestration.templates as templates


def test_forge_exports_exactly_its_public_names() -> None:
    """__all__ is pinned, and every name in it resolves."""
    assert sorted(forge.__all__) == [
        "FRONT_TOOLS",
        "ForgeTool",
        "NODE_VOCABULARY",
        "Tier",
        "ToolResult",
        "anthropic_tools",
        "call_tool",
        "forge_tools",
        "openai_tools",
        "refusal",
    ]
    for name in forge.__all__:
        assert getattr(forge, name) is not None


def test_templates_exports_exactly_its_public_names() -> None:
    """__all__ is pinned, and every name in it resolves."""
    assert sorted(templates.__all__) == [
        "HOLE_PLACES",
        "InstantiateOk",
        "InstantiateRefused",
        "InstantiateResult",
        "InvalidTemplateError",
        "ParamRef",
        "PlanTemplate",
        "TemplateDefinition",
        "TemplateNode",
        "TemplateSummary",
        "args_problems",
        "check_hole_declassification",
        "describe_param",
        "instantiate_template",
        "validate_template",
    ]
    for name in templates.__all__:
        assert getattr(templates, name) is not None


def test_the_forge_does_not_import_the_mcp_sdk() -> None:
    """Only the MCP server module needs the optional mcp package."""
    probe = "import sys, orchestration.api, orchestration.forge; print('mcp' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"
