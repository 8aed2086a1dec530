"""What every ``orch`` command shares: the store, the tool allowlist, output and errors.

Conventions: every read command takes ``--json`` and then prints exactly one JSON document on
stdout; a refusal prints ``error[<code>]: <message naming the fix>`` on stderr and exits 2
(usage errors exit 2 through argparse as well; an unexpected crash exits 1).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import sys
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from orchestration.errors import OrchestrationError

__all__ = [
    "CliError",
    "DEFAULT_STORE",
    "add_json_flag",
    "add_store_flag",
    "add_strict_authority_flag",
    "emit",
    "fail",
    "load_object",
    "open_store",
    "run_async",
    "with_store",
]

DEFAULT_STORE = ".data/plans.sqlite3"
T = TypeVar("T")


class CliError(OrchestrationError):
    """A refusal to show the user: ``code`` is stable, ``message`` names the fix."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def add_store_flag(parser: argparse.ArgumentParser) -> None:
    """``--store PATH`` (env ``ORCH_STORE``; default ``.data/plans.sqlite3``)."""
    parser.add_argument(
        "--store",
        default=os.environ.get("ORCH_STORE", DEFAULT_STORE),
        help="plan store: a SQLite file or a postgresql:// DSN (env ORCH_STORE; "
        "default %(default)s)",
    )


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"", "0", "false", "no", "off"})


def add_strict_authority_flag(parser: argparse.ArgumentParser) -> None:
    """``--strict-authority`` (env ``ORCH_STRICT_AUTHORITY``): refuse calls claiming no authority.

    Raises:
        CliError: ``bad_env`` when the variable is set to something other than a yes or a no.

    """
    raw = os.environ.get("ORCH_STRICT_AUTHORITY", "").strip().lower()
    if raw not in _TRUE | _FALSE:
        raise CliError(
            "bad_env",
            f"ORCH_STRICT_AUTHORITY={raw!r} is neither yes nor no; set it to 1 or 0 (or unset it)",
        )
    parser.add_argument(
        "--strict-authority",
        action=argparse.BooleanOptionalAction,
        default=raw in _TRUE,
        help="make missing_authority (a call claiming no authority) block the freeze instead "
        "of an advisory (env ORCH_STRICT_AUTHORITY=1; default: off)",
    )


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    """``--json``: print one machine-readable JSON document instead of text."""
    parser.add_argument("--json", action="store_true", help="print JSON for scripts")


def open_store(location: str) -> Any:
    """The plan store at ``location``: a PostgreSQL DSN, else a SQLite file (created if needed).

    ``postgresql://...`` (or ``postgres://``) selects the shared
    :class:`~orchestration.store.postgres.PostgresPlanStore`, so every host of a deployment
    reads and writes the same plans; anything else is a path to the embedded SQLite store.
    """
    if location.startswith(("postgresql://", "postgres://")):
        try:
            from orchestration.store.postgres import PostgresPlanStore
        except ImportError as exc:
            raise CliError(
                "postgres_unavailable",
                "a PostgreSQL store needs psycopg; install it with "
                "`pip install 'orchestration[postgres]'`",
            ) from exc
        return PostgresPlanStore(location)
    from orchestration.store.sqlite import SqlitePlanStore

    Path(location).parent.mkdir(parents=True, exist_ok=True)
    return SqlitePlanStore(location)


def load_object(spec: str) -> Any:
    """Import ``module:attribute`` (the attribute may be dotted)."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise CliError("bad_import_spec", f"{spec!r} is not module:attribute; e.g. pkg.tools:TOOLS")
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise CliError(
            "bad_import_spec", f"cannot import {module_name!r} ({exc}); check PYTHONPATH"
        ) from exc
    for part in attr.split("."):
        try:
            target = getattr(target, part)
        except AttributeError as exc:
            raise CliError("bad_import_spec", f"{module_name} has no attribute {attr!r}") from exc
    return target


def emit(args: argparse.Namespace, payload: Any, text: Callable[[], str]) -> None:
    """Print ``payload`` as JSON under ``--json``, else the human text."""
    if getattr(args, "json", False):
        print(json.dumps(_jsonable(payload), indent=2, ensure_ascii=False))
    else:
        print(text())


def _jsonable(payload: Any) -> Any:
    if isinstance(payload, BaseModel):
        return payload.model_dump(mode="json", exclude_none=True)
    if isinstance(payload, list | tuple):
        return [_jsonable(p) for p in payload]
    if isinstance(payload, dict):
        return {k: _jsonable(v) for k, v in payload.items()}
    return payload


def run_async(make: Callable[[], Coroutine[Any, Any, T] | Awaitable[T]]) -> T:
    """Run one command's coroutine to completion."""

    async def runner() -> T:
        return await make()

    return asyncio.run(runner())


def with_store(args: argparse.Namespace, work: Callable[[Any], Awaitable[T]]) -> T:
    """Open the store named by ``--store``, run ``work(store)`` to completion, close it."""

    async def runner() -> T:
        store = open_store(args.store)
        try:
            return await work(store)
        finally:
            await store.close()

    return asyncio.run(runner())


def fail(code: str, message: str) -> int:
    """Print a refusal and return the exit status for it."""
    print(f"error[{code}]: {message}", file=sys.stderr)
    return 2
