"""Shared test configuration."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from orchestration.exiting import exit_process, native_runtime_loaded
from tests.postgres_cluster import PostgresCluster, PostgresNotFoundError

settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("dev", max_examples=30, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


_exit_status: list[int] = []


def pytest_sessionfinish(session: object, exitstatus: int) -> None:
    """Remember the run's status for the exit guard below."""
    _exit_status.append(int(exitstatus))


def pytest_unconfigure(config: object) -> None:
    """Leave without interpreter finalisation once pytest has reported everything.

    See :mod:`orchestration.exiting`: the native runtime can abort the interpreter as it
    finalises, turning a green run red. Pytest's own status is kept, including 5 for "no tests
    collected".
    """
    if _exit_status and native_runtime_loaded():
        exit_process(_exit_status[-1])


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresCluster]:
    """A throwaway PostgreSQL cluster for the session; fails (never skips) when not installed."""
    try:
        cluster = PostgresCluster()
    except PostgresNotFoundError as exc:
        pytest.fail(str(exc), pytrace=False)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()
