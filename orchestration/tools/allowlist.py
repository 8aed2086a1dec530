"""``ToolAllowlist``: the simplest tier-C boundary, a fixed set of tool names and their returns.

A consumer with a tool registry of their own implements
:class:`~orchestration.tools.contracts.InvocableTools` over it; this class is for everyone else
(tests, the CLI's ``--tools module:attr``, small deployments). Each tool is either just allowed
(return undeclared, so a transform over it is refused at freeze) or allowed with a declared
return.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from orchestration.tools.contracts import (
    ArtifactReturn,
    BytesReturn,
    MediaReturn,
    TextReturn,
    ToolReturn,
)

__all__ = ["ToolAllowlist"]


class ToolAllowlist:
    """A fixed allowlist: ``has``, ``names`` and ``returns`` over a name → return mapping.

    Args:
        tools: Tool names (return undeclared), or a mapping from name to its declared return
            (``None`` for undeclared).

    """

    def __init__(self, tools: Iterable[str] | Mapping[str, ToolReturn | None] = ()) -> None:
        if isinstance(tools, Mapping):
            self._tools: dict[str, ToolReturn | None] = dict(tools)
        else:
            self._tools = dict.fromkeys(tools)

    @classmethod
    def of(
        cls,
        *,
        text: Iterable[str] = (),
        bytes_: Iterable[str] = (),
        media: Iterable[str] = (),
        artifacts: Mapping[str, type] | None = None,
        undeclared: Iterable[str] = (),
    ) -> ToolAllowlist:
        """Build from groups of names by what each returns."""
        tools: dict[str, ToolReturn | None] = {}
        tools.update(dict.fromkeys(undeclared))
        tools.update({name: TextReturn() for name in text})
        tools.update({name: BytesReturn() for name in bytes_})
        tools.update({name: MediaReturn() for name in media})
        tools.update({name: ArtifactReturn(cls_) for name, cls_ in (artifacts or {}).items()})
        return cls(tools)

    def has(self, tool: str) -> bool:
        """Whether a staged call may invoke ``tool``."""
        return tool in self._tools

    def names(self) -> Sequence[str]:
        """Every allowed tool, sorted."""
        return sorted(self._tools)

    def returns(self, tool: str) -> ToolReturn | None:
        """The declared return of ``tool``, or ``None`` when undeclared or not allowed."""
        return self._tools.get(tool)

    def __repr__(self) -> str:
        return f"ToolAllowlist({self.names()!r})"
