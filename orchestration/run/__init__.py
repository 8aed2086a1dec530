"""Running an approved plan, on any host: the engine, its log, the run loop, the projection.

* :mod:`~orchestration.run.engine`: the sans-IO engine (frames, routes, joins, budgets);
  :mod:`~orchestration.run.routes`, :mod:`~orchestration.run.tables`,
  :mod:`~orchestration.run.resolve`: frame identity, branch-local tables, reference
  resolution;
* :mod:`~orchestration.run.log`: the compact run log the engine records (O(1) an entry);
  :mod:`~orchestration.run.trace` reads it forward, :mod:`~orchestration.run.expand` gives the
  contract's ``RunEvent`` list, :mod:`~orchestration.run.fold` is ``fold_run``;
* :mod:`~orchestration.run.driver`: the run loop both hosts drive, with
  :mod:`~orchestration.run.policy` (retry, settle or halt, ruling 29) and
  :mod:`~orchestration.run.work` (what a node's attempt does);
* :mod:`~orchestration.run.admission`: the checks before a run is claimed;
  :mod:`~orchestration.run.restore` and :mod:`~orchestration.run.checkpoint`: resuming from a
  log and continuing as new;
* :mod:`~orchestration.run.messages`: the wire messages of a ``PlanRun`` (its input, settings,
  activity requests); :mod:`~orchestration.run.inputs`: the run input's checks;
* :mod:`~orchestration.run.host` (``InProcessRuns``) and :mod:`~orchestration.run.local`: the
  in-process host. The Temporal host is ``workers.runs.TemporalRuns``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orchestration._exports import lazy_exports

if TYPE_CHECKING:
    from orchestration.run.engine.machine import RunEngine
    from orchestration.run.expand import expand_log, project_log
    from orchestration.run.fold import fold_run
    from orchestration.run.host import InProcessRuns
    from orchestration.run.messages import PlanRunInput, RunSettings

__all__ = [
    "InProcessRuns",
    "PlanRunInput",
    "RunEngine",
    "RunSettings",
    "expand_log",
    "fold_run",
    "project_log",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "InProcessRuns": "host",
        "PlanRunInput": "messages",
        "RunEngine": "engine.machine",
        "RunSettings": "messages",
        "expand_log": "expand",
        "fold_run": "fold",
        "project_log": "expand",
    },
)
