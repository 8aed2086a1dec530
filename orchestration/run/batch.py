"""Run one batch of a map's items: the code both hosts call (see :mod:`orchestration.run.batching`).

The in-process host calls :func:`run_batch` directly for each batch; on Temporal the
``PlanBatch`` child workflow calls it with its own port. Either way the batch is the shared run
loop over :meth:`RunEngine.batch <orchestration.run.engine.machine.RunEngine.batch>`, so the
two hosts record the same batch log.

A frame that would halt for an operator (its outcome lost, a call that must not be repeated)
ends the batch instead: nobody can be asked inside a batch, and the run that spliced its log
fails every item the batch did not finish, naming why.
"""

from __future__ import annotations

from orchestration.run.batching import BatchResult, BatchSpec
from orchestration.run.driver import HostPort, Inbox, RunDriver
from orchestration.run.engine.machine import RunEngine
from orchestration.run.engine.results import Dispatch
from orchestration.run.log import LogEntry
from orchestration.run.messages import RetrySettings
from orchestration.types import ProcessDeath, RawPlanView

__all__ = ["run_batch"]


async def run_batch(
    view: RawPlanView,
    spec: BatchSpec,
    port: HostPort,
    retry: RetrySettings,
    inbox: Inbox,
    log: list[LogEntry],
    *,
    max_in_flight: int,
) -> BatchResult:
    """Run ``spec``'s items to their end (or until ``inbox.stop``); say what they came to.

    Args:
        view: The plan (checked against its approval by the caller).
        spec: The batch.
        port: The host's transport; its ``record`` must append to ``log``.
        retry: How transient failures and lost attempts are retried.
        inbox: Where a stop arrives (the run that started the batch is ending).
        log: Where ``port`` records the batch's entries.
        max_in_flight: The host's cap on frames in flight.

    """
    engine = RunEngine.batch(view, spec, at=port.now(), max_in_flight=max_in_flight)
    lost: list[str] = []

    def on_halt(dispatch: Dispatch) -> None:
        lost.append(dispatch.key)
        engine.stop(ProcessDeath(), port.now())

    port.record(engine.drain())
    driver = RunDriver(engine, port, retry, inbox, on_halt=on_halt)
    await driver.run()
    result = engine.batch_result(log)
    if lost:
        ended = (
            f"the outcome of {lost[0]} was lost and a batch asks no operator, so the call is "
            "not repeated: resolve it by hand if it must run"
        )
        result = result.model_copy(update={"ended": ended})
    elif result.ended is not None:
        result = result.model_copy(update={"ended": f"it was stopped ({result.ended})"})
    return result
