"""What every ``orch`` command shares: the store, the tool allowlist, output and errors.

Conventions: every read command takes ``--json`` and then prints exactly one JSON document on
stdout; a failure prints ``error[<code>]: <what happened> — <what to do>`` on stderr and exits
with a documented status (see :mod:`orchestration.cli.failures`, the one place failures are
mapped).
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

from orchestration.cli.failures import CliError, mark_json_printed

__all__ = [
    "CliError",
    "DEFAULT_STORE",
    "add_json_flag",
    "add_store_flag",
    "add_strict_authority_flag",
    "emit",
    "jsonable",
    "load_json_text",
    "load_object",
    "open_store",
    "read_text_file",
    "run_async",
    "with_store",
]

DEFAULT_STORE = ".data/plans.sqlite3"
T = TypeVar("T")


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
        print(json.dumps(jsonable(payload), indent=2, ensure_ascii=False))
        mark_json_printed()
    else:
        print(text())


def jsonable(payload: Any) -> Any:
    """``payload`` as plain JSON values (wire models in their camelCase wire form)."""
    if isinstance(payload, BaseModel):
        return payload.model_dump(mode="json", exclude_none=True)
    if isinstance(payload, list | tuple):
        return [jsonable(p) for p in payload]
    if isinstance(payload, dict):
        return {k: jsonable(v) for k, v in payload.items()}
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


def read_text_file(path: str, what: str) -> str:
    """The UTF-8 text of ``path`` (``-``: stdin), or a refusal naming the file and the fix.

    Args:
        path: The file the user named.
        what: What the file should hold, for the message (``"the op file"``).

    Raises:
        CliError: ``file_unreadable`` (missing, a folder, no permission) or ``not_utf8``.

    """
    try:
        if path == "-":
            return sys.stdin.read()
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise CliError(
            "not_utf8",
            f"{what} {path} is not UTF-8 text ({exc.reason} at byte {exc.start}) — save it as "
            "UTF-8 and run the command again",
        ) from exc
    except OSError as exc:
        raise CliError(
            "file_unreadable",
            f"cannot read {what} {path} ({exc.strerror or exc}) — check the path",
        ) from exc


def load_json_text(text: str, where: str, code: str) -> Any:
    """``json.loads(text)``, refusing malformed or too deeply nested JSON with ``code``."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(code, f"{where} is not JSON ({exc}) — fix the syntax") from exc
    except RecursionError as exc:
        raise CliError(
            code,
            f"{where} is nested too deeply to read — keep it under a few hundred levels of "
            "nesting",
        ) from exc
