"""Shared test configuration."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

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

    The Temporal SDK's native runtime can abort while the interpreter finalises
    ("PyGILState_Release ... finalizing", exit 134; sdk-python issue #300), turning a green run
    red. Exiting here keeps pytest's own status, including 5 for "no tests collected".
    """
    if _exit_status and "temporalio.bridge.temporal_sdk_bridge" in sys.modules:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_exit_status[-1])


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
