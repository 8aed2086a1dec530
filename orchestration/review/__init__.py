"""Everything between an edited plan and an approved one: freeze, render, approve.

* :mod:`~orchestration.review.validation`: the freeze checks (``validate`` -> ``PlanIssue``s,
  each naming its fix);
* :mod:`~orchestration.review.approval`: the canonical authority set and approval checks;
* :mod:`~orchestration.review.signing`: Ed25519 signatures over approval records;
* :mod:`~orchestration.review.render`: the operator's and the model's prose, as planned or
  as executed; :mod:`~orchestration.review.outline`: the short outline;
* :mod:`~orchestration.review.diagram`: Mermaid and Graphviz pictures;
  :mod:`~orchestration.review.ui_details`: what the Temporal Web UI shows for a run;
* :mod:`~orchestration.review.taint`: which values a model's output can reach.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orchestration._exports import lazy_exports

if TYPE_CHECKING:
    from orchestration.review.approval import approval_record, authority_set, check_approval
    from orchestration.review.diagram import plan_mermaid
    from orchestration.review.outline import plan_outline
    from orchestration.review.render import render_diff, render_plan
    from orchestration.review.validation import FreezeInputs, FreezeOverrides, validate

__all__ = [
    "FreezeInputs",
    "FreezeOverrides",
    "approval_record",
    "authority_set",
    "check_approval",
    "plan_mermaid",
    "plan_outline",
    "render_diff",
    "render_plan",
    "validate",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "FreezeInputs": "validation",
        "FreezeOverrides": "validation",
        "approval_record": "approval",
        "authority_set": "approval",
        "check_approval": "approval",
        "plan_mermaid": "diagram",
        "plan_outline": "outline",
        "render_diff": "render",
        "render_plan": "render",
        "validate": "validation",
    },
)
