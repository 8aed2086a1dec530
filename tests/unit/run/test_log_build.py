"""The run log's start names the build it started on, without changing the contract's events."""

from __future__ import annotations

from orchestration.run.engine.machine import RunEngine
from orchestration.run.expand import expand_log
from orchestration.run.log import LOG_ADAPTER, LogStart, started_build
from orchestration.testing import PlanSketch
from orchestration.types import DeviationAbort, StringField

AT = "2026-01-01T00:00:00.000Z"


def _view():  # type: ignore[no-untyped-def]
    sketch = PlanSketch("p-build").entry(StringField(path="s"))
    return sketch.call("a", "t", output=[StringField(path="value")]).chain("entry", "a").view()


def test_a_log_written_before_the_field_reads_as_unversioned() -> None:
    """A stored start entry without ``build`` decodes, with no build."""
    stored = {"kind": "start", "runId": "plan/p", "digest": "d", "entry": "entry", "at": AT}
    (entry,) = LOG_ADAPTER.validate_python([stored])
    assert isinstance(entry, LogStart) and entry.build is None
    assert started_build([entry]) is None


def test_the_engine_records_the_build_on_start_and_on_refusal() -> None:
    """``start`` and ``refuse`` both open the log with the build they were given."""
    view = _view()
    started = RunEngine.start(view, "plan/p-build", {"s": "x"}, AT, build="orch.b-1").drain()
    refusal = DeviationAbort(detail="x")
    refused = RunEngine.refuse("plan/p-build", "d", refusal, AT, build="orch.b-1")
    assert started_build(started) == "orch.b-1"
    assert started_build(refused.drain()) == "orch.b-1"
    assert started_build(RunEngine.start(view, "plan/p-build", {"s": "x"}, AT).drain()) is None


def test_the_build_round_trips_but_stays_out_of_the_contracts_events() -> None:
    """The build survives the log's JSON form; ``run_started`` is the contract's, unchanged."""
    log = RunEngine.start(_view(), "plan/p-build", {"s": "x"}, AT, build="orch.b-1").drain()
    again = LOG_ADAPTER.validate_json(LOG_ADAPTER.dump_json(log, by_alias=True))
    assert started_build(again) == "orch.b-1"
    first = expand_log(again)[0]
    assert first.kind == "run_started"
    assert "build" not in first.model_dump(by_alias=True)
    assert started_build([]) is None
