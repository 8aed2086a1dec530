"""The sans-IO run engine: frames, routes, tables, joins, budgets, and its compact log.

* :mod:`~orchestration.run.engine.machine`: ``RunEngine``, the state machine hosts drive
  (``ready`` / ``settle`` / ``retry`` / ``drain``);
* :mod:`~orchestration.run.engine.results`: what a host hands back (``Succeeded``,
  ``Failed``, ``Decided``, ``Skipped``) and what it is handed (``Dispatch``);
* :mod:`~orchestration.run.engine.state`: frames and barriers;
* :mod:`~orchestration.run.engine.compiled`: the plan indexed once per run;
* :mod:`~orchestration.run.engine.builders`: trusted constructors for the wire objects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orchestration._exports import lazy_exports

if TYPE_CHECKING:
    from orchestration.run.engine.compiled import CompiledPlan
    from orchestration.run.engine.machine import RunEngine
    from orchestration.run.engine.results import (
        Decided,
        Dispatch,
        Failed,
        SettleResult,
        Skipped,
        Succeeded,
    )

__all__ = [
    "CompiledPlan",
    "Decided",
    "Dispatch",
    "Failed",
    "RunEngine",
    "SettleResult",
    "Skipped",
    "Succeeded",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "CompiledPlan": "compiled",
        "Decided": "results",
        "Dispatch": "results",
        "Failed": "results",
        "RunEngine": "machine",
        "SettleResult": "results",
        "Skipped": "results",
        "Succeeded": "results",
    },
)
