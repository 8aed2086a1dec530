"""What the review CLI tests load through ``--tools`` and ``--cells``."""

from __future__ import annotations

from tests.unit.validation.helpers import TOOLS, FakeCell

__all__ = ["CELLS", "TOOLS", "tool_names"]

CELLS = [FakeCell("fake")]


def tool_names() -> list[str]:
    """A factory returning plain names: accepted as an allowlist with undeclared returns."""
    return ["web.fetch"]
