"""The taint check: no call argument reads data that entered through the run input unsanitised."""

from __future__ import annotations

from orchestration.taint import analyse_taint, tainted_arguments
from orchestration.types import PlanIssue
from orchestration.validation.context import CheckContext
from orchestration.validation.issues import blocking

__all__ = ["check_taint"]


def check_taint(ctx: CheckContext) -> list[PlanIssue]:
    """One issue per tainted argument reference, naming the route the taint took."""
    issues: list[PlanIssue] = []
    for found in tainted_arguments(ctx.view, analyse_taint(ctx.view, ctx.sites)):
        ref = found.site.ref
        issues.append(
            blocking(
                "tainted_call_arg",
                f'Call node "{found.call}" passes tainted data from node "{ref.node}" into its '
                f"args (at {found.site.location}; taint route: {found.route()}); a tainted "
                "reference may reach a reason prompt but not a call node's args. Declassify "
                f'via this call node\'s "declassifies" field, or route the value through a '
                "sanitising step first.",
                node_id=found.call,
            )
        )
    return issues
