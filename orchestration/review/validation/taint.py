"""The taint check: no call argument reads data that entered through the run input unsanitised."""

from __future__ import annotations

from orchestration.review.taint import analyse_taint, tainted_arguments
from orchestration.review.validation.context import CheckContext
from orchestration.review.validation.issues import blocking
from orchestration.types import CallDefinition, PlanIssue, RawPlanView

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
                "reference may reach a reason prompt but not a call node's args. "
                f"{_declassify_fix(ctx.view, found.call)}, or route the value through a "
                "sanitising step first.",
                node_id=found.call,
            )
        )
    return issues


def _declassify_fix(view: RawPlanView, call: str) -> str:
    """How to declassify at ``call``: the names ``declassifies`` takes are its output fields."""
    definition = next(
        (n.definition for n in view.nodes if n.id == call and n.kind == "call"), None
    )
    fields = [f.path for f in definition.output] if isinstance(definition, CallDefinition) else []
    if not fields:
        return (
            f'To declassify, declare the output fields of "{call}" (its "output") and list '
            'those its tool sanitises in its "declassifies" field'
        )
    names = ", ".join(f'"{name}"' for name in fields)
    return (
        f'Declassify via this call node\'s "declassifies" field: list those of its output '
        f"fields its tool sanitises, out of {names} (for example "
        f'"declassifies": [{names}])'
    )
