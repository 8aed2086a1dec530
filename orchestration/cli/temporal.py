"""How ``orch`` commands reach Temporal: the flags, and one client built like the worker's.

Every command that talks to Temporal builds its client here, with the payload codec loaded
from the same setting the worker reads (``ORCH_CODEC_KEYS``, see :mod:`workers.codec`). So a
run started from the CLI is encrypted exactly when the workers' runs are, and an encrypted
run's history reads back through ``orch run show`` / ``orch run log``. Without keys the client
still carries a codec: it passes payloads through unchanged, and refuses an encrypted one with
``codec_key`` naming the setting to fix, instead of the data converter's ``KeyError``.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from orchestration.cli.failures import CliError, ExitCode

if TYPE_CHECKING:
    from temporalio.api.common.v1 import Payload
    from temporalio.client import Client
    from temporalio.converter import PayloadCodec

__all__ = ["add_deployment_flags", "add_temporal_flags", "cli_codec", "connect_client"]


def add_temporal_flags(parser: argparse.ArgumentParser, *, task_queue: bool = True) -> None:
    """``--address``, ``--namespace`` and (unless told not to) ``--task-queue``."""
    parser.add_argument(
        "--address",
        default=os.environ.get("TEMPORAL_ADDRESS", "127.0.0.1:7233"),
        help="Temporal frontend host:port (env TEMPORAL_ADDRESS; default %(default)s)",
    )
    parser.add_argument(
        "--namespace",
        default=os.environ.get("TEMPORAL_NAMESPACE", "default"),
        help="Temporal namespace the runs live in (env TEMPORAL_NAMESPACE; default "
        "%(default)s)",
    )
    if task_queue:
        parser.add_argument(
            "--task-queue",
            default=os.environ.get("ORCH_TASK_QUEUE", "plans"),
            help="task queue the workers poll (env ORCH_TASK_QUEUE; default %(default)s)",
        )


def add_deployment_flags(parser: argparse.ArgumentParser) -> None:
    """``--deployment-name`` and ``--build-id``: a worker's Worker Deployment Version.

    Both default to their environment variables; an empty value is unset. Without a deployment
    name the worker is unversioned (see :mod:`workers.versioning`).
    """
    parser.add_argument(
        "--deployment-name",
        default=os.environ.get("ORCH_DEPLOYMENT_NAME") or None,
        metavar="NAME",
        help="join Temporal Worker Versioning as a version of this Worker Deployment; runs are "
        "pinned to the version they start on (env ORCH_DEPLOYMENT_NAME; default: unversioned)",
    )
    parser.add_argument(
        "--build-id",
        default=os.environ.get("ORCH_BUILD_ID") or None,
        metavar="ID",
        help="this worker's build id within the deployment (env ORCH_BUILD_ID; default: "
        "<package version>-<hash of the workflow code>); needs --deployment-name",
    )


def cli_codec() -> PayloadCodec:
    """The codec ``ORCH_CODEC_KEYS`` configures, or one that only refuses encrypted payloads.

    Raises:
        CodecKeyError: the setting is malformed (its message names the entry).

    """
    from workers.client import codec_from_env

    codec = codec_from_env()
    return codec if codec is not None else _keyless_codec()


def _keyless_codec() -> PayloadCodec:
    from temporalio.converter import PayloadCodec

    from workers.client import ENCODING, KEY_ID_KEY, KEYS_ENV, CodecKeyError

    class KeylessCodec(PayloadCodec):
        """Plain payloads pass; an encrypted one is refused with the setting to fix."""

        async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
            return list(payloads)

        async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
            for payload in payloads:
                if payload.metadata.get("encoding") == ENCODING:
                    key_id = payload.metadata.get(KEY_ID_KEY, b"").decode(errors="replace")
                    raise CodecKeyError(
                        f"this run's payloads are encrypted (key id {key_id!r}) and no key is "
                        f"configured — set {KEYS_ENV} to the workers' keys (id:base64key,...) "
                        "and run the command again"
                    )
            return list(payloads)

    return KeylessCodec()


async def connect_client(address: str, namespace: str, **options: Any) -> Client:
    """A client for ``address``/``namespace`` with the pydantic converter and the CLI codec.

    Raises:
        CliError: ``temporal_unreachable`` (exit 3) when the server cannot be reached.
        CodecKeyError: ``ORCH_CODEC_KEYS`` is malformed.

    """
    from workers.client import connect

    codec = cli_codec()
    try:
        return await connect(address, namespace, payload_codec=codec, **options)
    except Exception as exc:  # noqa: BLE001 - any connection failure has the same fix
        raise CliError(
            "temporal_unreachable",
            f"cannot reach Temporal at {address} ({' '.join(str(exc).split())[:200]}) — start "
            "one with `orch dev`, or pass --address (env TEMPORAL_ADDRESS)",
            exit_code=ExitCode.UNAVAILABLE,
        ) from exc
