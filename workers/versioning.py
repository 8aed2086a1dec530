"""Worker Versioning: which deployment version a worker is, and how it makes itself current.

A worker started with a deployment name joins Temporal's Worker Versioning as the version
``<deploymentName>.<buildId>``: the server then sends each ``PlanRun`` only to workers of the
version the run started on (the workflow's behavior is ``PINNED``, see
:data:`workflows.plan_run.VERSIONING_BEHAVIOR`), and new runs to the deployment's *current*
version, which an operator moves (``temporal worker deployment set-current-version``). Without
a deployment name a worker is unversioned and every worker of a task queue takes any task, as
before.

The build id names the code a version runs. By default it is derived from what decides how a
run is interpreted, so two workers share a build id only when they would replay each other's
histories: ``<package version>-<12 hex digits>``, the digits being a SHA-256 over every Python
source file of the ``workflows``, ``activities`` and ``orchestration`` packages (path and
bytes, in path order). Tools are not in it: a deployment that changes its toolbox without
changing this package should pass its own build id (an image tag, a commit).
"""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

from temporalio.client import Client
from temporalio.common import WorkerDeploymentVersion
from temporalio.worker import WorkerDeploymentConfig

from workflows.plan_run import VERSIONING_BEHAVIOR

__all__ = [
    "HASHED_PACKAGES",
    "DeploymentSettingsError",
    "code_digest",
    "default_build_id",
    "deployment_config",
    "make_current",
    "package_roots",
]

HASHED_PACKAGES: tuple[str, ...] = ("workflows", "activities", "orchestration")
"""The packages whose source the default build id hashes: the run path's code."""


class DeploymentSettingsError(ValueError):
    """The deployment name or build id cannot name a Worker Deployment Version."""


def package_roots(packages: Sequence[str] = HASHED_PACKAGES) -> list[Path]:
    """The folders ``packages`` are imported from in this process (what this worker runs)."""
    roots: list[Path] = []
    for package in packages:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise DeploymentSettingsError(f"package {package!r} cannot be found to hash")
        roots.extend(Path(location) for location in spec.submodule_search_locations)
    return roots


def code_digest(roots: Sequence[Path]) -> str:
    """SHA-256 (hex) over the Python sources under ``roots`` (package folders).

    Each file contributes its path relative to its package's parent and its bytes, in path
    order, so the digest changes with any edit, rename, addition or removal, and with nothing
    else (not the checkout's location, not file times).
    """
    digest = hashlib.sha256()
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            name = path.relative_to(root.parent).as_posix()
            digest.update(name.encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def default_build_id() -> str:
    """``<package version>-<first 12 hex digits of the code digest of HASHED_PACKAGES>``."""
    try:
        version = metadata.version("orchestration")
    except metadata.PackageNotFoundError:  # a source tree that was never installed
        version = "0+unknown"
    return f"{version}-{code_digest(package_roots())[:12]}"


def deployment_config(
    deployment_name: str | None, build_id: str | None
) -> WorkerDeploymentConfig | None:
    """The worker's versioning settings: ``None`` (unversioned) without a deployment name.

    With a name, Worker Versioning is on, the version is ``<name>.<build id>`` (the build id
    defaulting to :func:`default_build_id`), and workflows the worker runs are ``PINNED``.

    Raises:
        DeploymentSettingsError: a build id without a deployment name (it would be ignored, and
            the worker would silently run unversioned), or a name that cannot be one.
    """
    name = (deployment_name or "").strip()
    build = (build_id or "").strip()
    if not name:
        if build:
            raise DeploymentSettingsError(
                f"a build id ({build!r}) was given without a deployment name — pass "
                "--deployment-name (env ORCH_DEPLOYMENT_NAME) too, or drop the build id to run "
                "unversioned"
            )
        return None
    if "." in name:
        raise DeploymentSettingsError(
            f"the deployment name {name!r} contains '.', which separates it from the build id "
            "in a version's name — choose a name without '.'"
        )
    return WorkerDeploymentConfig(
        version=WorkerDeploymentVersion(deployment_name=name, build_id=build or default_build_id()),
        use_worker_versioning=True,
        default_versioning_behavior=VERSIONING_BEHAVIOR,
    )


async def make_current(client: Client, version: WorkerDeploymentVersion) -> None:
    """Make ``version`` its deployment's current version (what ``set-current-version`` does).

    The server accepts this only once a worker of that version has polled, so it is retried for
    a while. Meant for a single local worker (``orch dev``); a rollout sets it by hand.

    Raises:
        temporalio.service.RPCError: the server still refused after about 30 s.
    """
    import asyncio

    from temporalio.api.workflowservice.v1 import SetWorkerDeploymentCurrentVersionRequest
    from temporalio.service import RPCError

    request = SetWorkerDeploymentCurrentVersionRequest(
        namespace=client.namespace,
        deployment_name=version.deployment_name,
        build_id=version.build_id,
        identity=client.identity,
    )
    for attempt in range(300):
        try:
            await client.workflow_service.set_worker_deployment_current_version(request)
            return
        except RPCError:
            if attempt == 299:
                raise
            await asyncio.sleep(0.1)
