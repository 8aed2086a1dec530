"""Composition root of a worker: the PlanRun workflow, the activities, the sandbox wiring.

The workflow sandbox re-imports every module a workflow imports, for every run, unless the
module is passed through. The pure core is passed through once here (and imported under
``imports_passed_through`` in the workflow module): it is deterministic by construction and
by test, and re-importing pydantic models per run would cost far more than the run itself.
Anything else a workflow imports unintentionally fails the worker at start-up rather than
silently running outside the sandbox's checks.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import PayloadCodec
from temporalio.worker import Worker, WorkerDeploymentConfig
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions
from temporalio.workflow import SandboxImportNotificationPolicy

from activities.approval import ApprovalVerifier
from activities.frames import FrameActivities
from activities.runs import RunStoreActivities
from orchestration.artifacts import ArtifactRegistry, ArtifactSpool, FileSpoolStore
from orchestration.predicates import JexlCell, LuaCell
from orchestration.run.work import FrameWork
from orchestration.store.base import PlanStore
from orchestration.tools.contracts import PredicateEvaluator
from orchestration.tools.pricing import PriceTable
from orchestration.tools.reasoning import Reasoner
from orchestration.tools.toolbox import Toolbox
from workflows.batch import PlanBatch
from workflows.externs import RunServices, ToolShapes
from workflows.plan_run import PlanRun
from workflows.signatures import SignedApprovalsOnly

__all__ = [
    "PASSED_THROUGH",
    "SignedApprovalsOnly",
    "build_worker",
    "connect",
    "default_cells",
    "sandbox_runner",
]

PASSED_THROUGH: tuple[str, ...] = (
    "orchestration",
    "msgpack",
    "ormsgpack",
    "immutables",
    # The CEL cell evaluates inside workflow code; its C++ extension cannot be re-imported.
    "cel_expr_python",
)
"""Modules shared with the sandbox instead of re-imported per run."""


def default_cells() -> list[PredicateEvaluator]:
    """The cells a worker runs in ``plan.evaluate`` when none are given: jexl and Lua.

    Each only if its package is installed (``orchestration[jexl]``, ``orchestration[lua]``).

    The default jexl cell has no transforms; a worker whose plans use some passes its own
    ``JexlCell(transforms=...)`` in ``evaluators``, the same one freeze was given.
    """
    import importlib.util

    cells: list[PredicateEvaluator] = []
    if importlib.util.find_spec("pyjexl") is not None:
        cells.append(JexlCell())
    if importlib.util.find_spec("lupa") is not None:
        cells.append(LuaCell())
    return cells


def sandbox_runner() -> SandboxedWorkflowRunner:
    """The sandbox with the pure core passed through and accidental passthrough refused."""
    restrictions = SandboxRestrictions.default.with_passthrough_modules(
        *PASSED_THROUGH
    ).with_import_notification_policy(
        SandboxImportNotificationPolicy.RAISE_ON_UNINTENTIONAL_PASSTHROUGH
    )
    return SandboxedWorkflowRunner(restrictions=restrictions)


async def connect(
    address: str,
    namespace: str = "default",
    *,
    payload_codec: PayloadCodec | None = None,
    **kwargs: Any,
) -> Client:
    """A client with the pydantic data converter (workers built on it inherit it).

    With ``payload_codec`` (for example :class:`workers.codec.AesGcmCodec`) every payload is
    encoded by it after pydantic serialisation, so history holds only what the codec emits.
    """
    converter = pydantic_data_converter
    if payload_codec is not None:
        converter = dataclasses.replace(converter, payload_codec=payload_codec)
    return await Client.connect(address, namespace=namespace, data_converter=converter, **kwargs)


def build_worker(
    client: Client,
    *,
    task_queue: str,
    toolbox: Toolbox,
    store: PlanStore,
    extra_activities: Sequence[Any] = (),
    extra_workflows: Sequence[type] = (),
    max_concurrent_activities: int = 200,
    approval_keys: Sequence[Ed25519PublicKey] = (),
    reasoner: Reasoner | None = None,
    spool: ArtifactSpool | None = None,
    artifacts: ArtifactRegistry | None = None,
    evaluators: Sequence[PredicateEvaluator] | None = None,
    fast_tools: Sequence[str] | None = None,
    deployment_config: WorkerDeploymentConfig | None = None,
    prices: PriceTable | None = None,
    heartbeat_throttle: timedelta = timedelta(seconds=1),
    **options: Any,
) -> Worker:
    """A worker that runs ``PlanRun`` and the node activities for ``toolbox``.

    Call it from the event loop the worker will run on (the plan store is read from workflow
    threads through that loop).

    ``store`` is the plan store runs are claimed in: every worker of a task queue, and every
    client that starts runs, must share it (the SQLite file on one machine, PostgreSQL across
    machines). The worker claims a run there before any node runs, mirrors the run's log into
    it, and loads plans started by reference from it.

    A short sticky schedule-to-start timeout means that after a worker dies, its runs move to
    another worker in about 2 s instead of the default 10 s.

    With ``approval_keys`` the worker runs only approvals signed by one of those (operators')
    public keys: ``PlanRun`` verifies the signature in a local activity before any node and
    refuses an unsigned or forged record with ``deviation_abort``. Every worker on a task queue
    must share this setting, or a run's replay on another worker diverges.

    ``fast_tools`` are the tools whose replay-safe calls run as local activities (default: the
    toolbox's tools declared ``short``). A run reads the set once per execution from the
    worker it starts on (a local activity, so replay does not depend on configuration).

    ``deployment_config`` (from :func:`workers.versioning.deployment_config`) makes the worker a
    Worker Deployment Version whose runs are pinned to it; ``None`` runs unversioned.

    Reason, transform and cell activities:

    * ``reasoner`` answers ``reason`` nodes (``None``: they fail with ``no_reasoner``).
    * ``spool`` is where tools put artifacts (``context.spool``; default: in memory, inside the
      handle). A :class:`~orchestration.artifacts.FileSpoolStore`'s resolver is registered in
      the artifact registry automatically, so transforms on this worker read what it wrote.
    * ``artifacts`` reopens handles for ``transform`` nodes (default: the in-memory resolver and
      the built-in classes); register every durable store's resolver whose handles this worker
      may read, or transforms fail with ``E_NO_READER_RESOLVER``.
    * ``evaluators`` are the cells ``plan.evaluate`` runs for ``branch``/``select`` nodes whose
      cell the workflow does not evaluate inline (default: :func:`default_cells`).
    * ``prices`` is what each model's tokens cost (see :mod:`orchestration.tools.pricing`); a
      reason attempt's cost is computed here and recorded with it. Without one every model's
      tokens are recorded unpriced, and a plan with a cost budget halts at its first.

    ``heartbeat_throttle`` caps how long the SDK holds an activity's heartbeats before it sends
    them (its default is 80% of the heartbeat timeout): the server's last-heartbeat time is what
    a run's liveness reads (``healthy`` until half the timeout), so it must stay fresh.
    """
    registry = artifacts or ArtifactRegistry()
    if isinstance(spool, FileSpoolStore):
        registry.register_resolver(spool.tag, spool.resolver)
    work = FrameWork(
        toolbox,
        spool=spool,
        reasoner=reasoner,
        artifacts=registry,
        cells=default_cells() if evaluators is None else evaluators,
        prices=prices,
    )
    frames = FrameActivities(work)
    runs = RunStoreActivities(
        store, fast_tools=toolbox.short_tools() if fast_tools is None else fast_tools
    )
    activities: list[Any] = [
        frames.call,
        frames.reason,
        frames.transform,
        frames.evaluate,
        runs.claim,
        runs.mirror,
        runs.fast_tools,
        *extra_activities,
    ]
    interceptors = [
        *options.pop("interceptors", ()),
        RunServices(store),
        ToolShapes(work.check_args),
    ]
    if approval_keys:
        activities.append(ApprovalVerifier(approval_keys).verify)
        interceptors.append(SignedApprovalsOnly())
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[PlanRun, PlanBatch, *extra_workflows],
        activities=activities,
        workflow_runner=sandbox_runner(),
        sticky_queue_schedule_to_start_timeout=timedelta(seconds=2),
        max_concurrent_activities=max_concurrent_activities,
        interceptors=interceptors,
        deployment_config=deployment_config,
        max_heartbeat_throttle_interval=options.pop(
            "max_heartbeat_throttle_interval", heartbeat_throttle
        ),
        **options,
    )
