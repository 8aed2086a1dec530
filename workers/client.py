"""What the ``orch`` command line uses of this package: its one way in.

The command line is a client: it starts and reads runs (:class:`~workers.runs.TemporalRuns`),
connects with the deployment's payload codec, launches the local dev server, and, for
``orch dev`` and ``orch demo``, runs a worker in its own process the way ``python -m workers``
does. It imports those through this module alone, never ``activities`` or ``workflows``, so the
dependency between the core and the worker side stays one named surface. Every name resolves on
first use: a command that only reads a run never loads the worker's code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orchestration._exports import lazy_exports

if TYPE_CHECKING:
    from activities.reasoners import reasoner_from_env
    from workers.codec import (
        ENCODING,
        KEY_ID_KEY,
        KEYS_ENV,
        AesGcmCodec,
        CodecKeyError,
        codec_from_env,
        new_key_spec,
        parse_keys,
    )
    from workers.devserver import DevServer
    from workers.example_tools import TOOLBOX
    from workers.liveness import LivenessMonitor
    from workers.logging import configure_logging
    from workers.prices import load_prices
    from workers.replay_check import ReplayOutcome, check_histories
    from workers.runs import TemporalRuns
    from workers.versioning import DeploymentSettingsError, deployment_config, make_current
    from workers.worker import build_worker, connect

__all__ = [
    "ENCODING",
    "KEYS_ENV",
    "KEY_ID_KEY",
    "TOOLBOX",
    "AesGcmCodec",
    "CodecKeyError",
    "DeploymentSettingsError",
    "DevServer",
    "LivenessMonitor",
    "ReplayOutcome",
    "TemporalRuns",
    "build_worker",
    "check_histories",
    "codec_from_env",
    "configure_logging",
    "connect",
    "deployment_config",
    "load_prices",
    "make_current",
    "new_key_spec",
    "parse_keys",
    "reasoner_from_env",
]

_WHERE = {
    "ENCODING": "codec",
    "KEYS_ENV": "codec",
    "KEY_ID_KEY": "codec",
    "AesGcmCodec": "codec",
    "CodecKeyError": "codec",
    "codec_from_env": "codec",
    "new_key_spec": "codec",
    "parse_keys": "codec",
    "TOOLBOX": "example_tools",
    "DeploymentSettingsError": "versioning",
    "deployment_config": "versioning",
    "make_current": "versioning",
    "DevServer": "devserver",
    "ReplayOutcome": "replay_check",
    "check_histories": "replay_check",
    "TemporalRuns": "runs",
    "build_worker": "worker",
    "connect": "worker",
    "configure_logging": "logging",
    "LivenessMonitor": "liveness",
    "load_prices": "prices",
}

_worker_side, _names = lazy_exports("workers", _WHERE)


def __getattr__(name: str) -> object:
    if name == "reasoner_from_env":
        from activities.reasoners import reasoner_from_env

        return reasoner_from_env
    return _worker_side(name)


def __dir__() -> list[str]:
    return sorted(__all__)
