"""Issue constructors and the shared vocabulary of fixes."""

from __future__ import annotations

from collections.abc import Iterable

from orchestration.types import PlanIssue

__all__ = ["advisory", "blocking", "has_blocking", "quote_list"]


def blocking(
    code: str, message: str, *, node_id: str | None = None, edge_id: str | None = None
) -> PlanIssue:
    """An issue that refuses the freeze."""
    return PlanIssue(
        code=code, message=message, node_id=node_id, edge_id=edge_id, severity="blocking"
    )


def advisory(
    code: str, message: str, *, node_id: str | None = None, edge_id: str | None = None
) -> PlanIssue:
    """An issue surfaced to the author and the operator, which does not refuse the freeze."""
    return PlanIssue(
        code=code, message=message, node_id=node_id, edge_id=edge_id, severity="advisory"
    )


def has_blocking(issues: Iterable[PlanIssue]) -> bool:
    """Whether any issue refuses the freeze."""
    return any(issue.severity == "blocking" for issue in issues)


def quote_list(items: Iterable[str], *, empty: str = "(none)") -> str:
    """``"a", "b", "c"`` for a message, or ``empty``."""
    quoted = [f'"{item}"' for item in items]
    return ", ".join(quoted) if quoted else empty
