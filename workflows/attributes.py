"""What a ``PlanRun`` shows of itself outside its log: search attributes, its build, its pinning.

Clients list and find runs by these names (:mod:`workers.runs`, :mod:`workers.replay_check`)
and a versioned worker applies :data:`VERSIONING_BEHAVIOR`, so they live apart from the workflow
that sets them: importing a name does not import the workflow.

Like every module ``PlanRun`` imports, this one is passed through the workflow sandbox (see
:mod:`workflows.plan_run`): it reads nothing but ``workflow.info()``, which history decides.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.common import SearchAttributeKey, VersioningBehavior

__all__ = [
    "PLAN_BUILD",
    "PLAN_DIGEST",
    "PLAN_ID",
    "PLAN_OUTCOME",
    "VERSIONING_BEHAVIOR",
    "current_build",
]

PLAN_ID = SearchAttributeKey.for_keyword("PlanId")
PLAN_DIGEST = SearchAttributeKey.for_keyword("PlanDigest")
PLAN_OUTCOME = SearchAttributeKey.for_keyword("PlanOutcome")
PLAN_BUILD = SearchAttributeKey.for_keyword("PlanBuild")
"""The worker deployment version a run's execution runs on (upserted on versioned workers only)."""

VERSIONING_BEHAVIOR = VersioningBehavior.PINNED
"""``PlanRun``'s versioning behavior, applied by a versioned worker as its default behavior.

It is not declared on ``@workflow.defn``: a behavior declared there is sent with every workflow
task completion, and the server refuses a completion that carries one from a worker without
Worker Versioning ("versioning behavior cannot be specified without deployment options being
set with versioned mode"), so every run on an unversioned worker would stay stuck. The worker
sets it instead (``WorkerDeploymentConfig.default_versioning_behavior``, see
:mod:`workers.versioning`) exactly when it runs with a deployment version.
"""


def current_build() -> str | None:
    """The worker deployment version running this workflow task, as ``<name>.<buildId>``.

    ``None`` on a worker without a deployment name (an unversioned worker still reports the
    SDK's own build id, which names no deployment and so is not recorded). On replay this is the
    version history recorded for the task, so it is deterministic.
    """
    version = workflow.info().get_current_deployment_version()
    if version is None or not version.deployment_name:
        return None
    return version.to_canonical_string()
