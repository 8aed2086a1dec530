"""The plan as an agent or a person edits it: values, ops, the fold, and the graph.

* :mod:`~orchestration.plan.encoding`: the closed value set, ``NodeRef``/``ParamRef``, the
  canonical MessagePack encoding and the lossless digest;
* :mod:`~orchestration.plan.ops`: ``fold_ops`` (op log -> ``RawPlanView``), ``plan_digest``,
  branch and frame keys;
* :mod:`~orchestration.plan.authoring`: ``PlanAuthor``, which mints op identity, and the
  ``ref``/``claim``/``text`` helpers;
* :mod:`~orchestration.plan.raw`: raw views, revisions and diffs;
* :mod:`~orchestration.plan.graph`: the plan's graph (order, reachability, regions);
* :mod:`~orchestration.plan.references`: where references point and what they may read.

The wire types themselves are :mod:`orchestration.types`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orchestration._exports import lazy_exports

if TYPE_CHECKING:
    from orchestration.plan.authoring import PlanAuthor, claim, ref, text
    from orchestration.plan.encoding import NodeRef, ParamRef, canonical_digest
    from orchestration.plan.graph import PlanGraph
    from orchestration.plan.ops import branch_key, fold_ops, frame_key, plan_digest
    from orchestration.plan.raw import diff_views

__all__ = [
    "NodeRef",
    "ParamRef",
    "PlanAuthor",
    "PlanGraph",
    "branch_key",
    "canonical_digest",
    "claim",
    "diff_views",
    "fold_ops",
    "frame_key",
    "plan_digest",
    "ref",
    "text",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "NodeRef": "encoding",
        "ParamRef": "encoding",
        "PlanAuthor": "authoring",
        "PlanGraph": "graph",
        "branch_key": "ops",
        "canonical_digest": "encoding",
        "claim": "authoring",
        "diff_views": "raw",
        "fold_ops": "ops",
        "frame_key": "ops",
        "plan_digest": "ops",
        "ref": "authoring",
        "text": "authoring",
    },
)
