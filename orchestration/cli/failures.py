"""How every ``orch`` command fails: one line, a stable code, a documented exit status.

A person at a shell reads ``error[<code>]: <what happened> — <what to do>`` on stderr; a script
reads the exit status and, under ``--json``, one JSON document on stdout::

    {"ok": false, "error": {"code": "<code>", "message": "<what happened — what to do>"}}

Every command runs through :func:`run_command`, so this module is the one place where an
exception becomes that line: a library refusal keeps its own code, a Temporal RPC failure is
named for the run it concerns, a file that cannot be read names the file, and anything
unexpected is ``internal_error`` (a bug to report) rather than a traceback. ``ORCH_DEBUG=1``
adds the traceback for a developer.

The exit statuses (also printed by ``orch --help``):

====  ==============================================================================
code  meaning
====  ==============================================================================
0     done; for ``run start --watch`` and ``run watch``: the run completed
1     internal error: a bug in orch (the message says what to report)
2     refused: bad arguments, or a refusal whose code and message name the fix
3     unavailable: a service the command needs (Temporal, the plan store) is unreachable
4     the watched run settled ``halted`` (its own content or bounds stopped it)
5     the watched run settled ``aborted`` (a failure, a stop or a refused approval)
6     the watched run was cancelled (``aborted`` by ``turn_abort``)
7     the watched run's workflow closed without settling (terminated or timed out)
130   interrupted by Ctrl-C
141   stdout was closed by its reader (``orch ... | head``); nothing more is printed
====  ==============================================================================
"""

from __future__ import annotations

import argparse
import enum
import json
import os
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from orchestration.errors import OrchestrationError
from orchestration.types import RunProjection

__all__ = [
    "EXIT_STATUS_HELP",
    "CliError",
    "ExitCode",
    "Failure",
    "describe_failure",
    "outcome_exit",
    "report",
    "run_command",
]


class ExitCode(enum.IntEnum):
    """The documented exit statuses of ``orch`` (see the module docstring)."""

    OK = 0
    INTERNAL = 1
    REFUSED = 2
    UNAVAILABLE = 3
    RUN_HALTED = 4
    RUN_ABORTED = 5
    RUN_CANCELLED = 6
    RUN_UNSETTLED = 7
    INTERRUPTED = 130
    BROKEN_PIPE = 141


EXIT_STATUS_HELP = """exit status:
  0    done (run start --watch, run watch: the run completed)
  1    internal error: a bug in orch; the message says what to report
  2    refused: bad arguments, or a refusal whose message names the fix
  3    unavailable: Temporal or the plan store cannot be reached
  4    the watched run halted        5  the watched run aborted
  6    the watched run was cancelled 7  its workflow closed without settling
  130  interrupted (Ctrl-C)          141 stdout closed by its reader
failures print `error[<code>]: <what happened> — <what to do>` on stderr, and under --json
`{"ok": false, "error": {"code": ..., "message": ...}}` on stdout."""
"""The epilog of ``orch --help``: the table above, short."""


class CliError(OrchestrationError):
    """A refusal to show the user: ``code`` is stable, ``message`` names the fix.

    Attributes:
        exit_code: The status the command exits with (``REFUSED`` unless said otherwise).
        details: Extra JSON fields for the ``--json`` error document (for example the issues
            a refused freeze found), so a script gets them without a second document.

    """

    def __init__(
        self,
        code: str,
        message: str,
        *,
        exit_code: ExitCode = ExitCode.REFUSED,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.exit_code = exit_code
        self.details = details or {}


@dataclass(frozen=True)
class Failure:
    """What a failed command reports: its code, the one-line message, and its exit status."""

    code: str
    message: str
    exit_code: ExitCode
    details: dict[str, Any] = field(default_factory=dict)

    def line(self) -> str:
        """The stderr line, ``error[<code>]: <message>``."""
        return f"error[{self.code}]: {' '.join(self.message.split())}"

    def document(self) -> dict[str, Any]:
        """The ``--json`` document."""
        return {"ok": False, "error": {"code": self.code, "message": self.message}, **self.details}


_output_state = {"json_printed": False}


def mark_json_printed() -> None:
    """Record that the command printed its one JSON document (an error must not add one)."""
    _output_state["json_printed"] = True


def run_command(
    handler: Callable[[argparse.Namespace], int], args: argparse.Namespace
) -> int:
    """Run one command's handler; turn whatever it raises into its line and exit status."""
    _output_state["json_printed"] = False
    try:
        return int(handler(args))
    except (SystemExit, GeneratorExit):
        raise
    except BaseException as exc:  # noqa: BLE001 - the one place failures become a line
        failure = describe_failure(exc, args)
        report(failure, json_mode=bool(getattr(args, "json", False)), exc=exc)
        return int(failure.exit_code)


def report(failure: Failure, *, json_mode: bool, exc: BaseException | None = None) -> None:
    """Print ``failure``: its line on stderr and, under ``--json``, its document on stdout.

    A broken pipe prints nothing more (the reader is gone) and leaves stdout pointing at the
    null device, so the interpreter's last flush cannot fail again.
    """
    if failure.exit_code == ExitCode.BROKEN_PIPE:
        _silence_stdout()
        return
    if exc is not None and os.environ.get("ORCH_DEBUG", "") not in ("", "0"):
        traceback.print_exception(exc, file=sys.stderr)
    try:
        if json_mode and not _output_state["json_printed"]:
            print(json.dumps(failure.document(), ensure_ascii=False), flush=True)
        print(failure.line(), file=sys.stderr, flush=True)
    except BrokenPipeError:
        _silence_stdout()


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


# -- mapping exceptions ------------------------------------------------------------------------


def describe_failure(exc: BaseException, args: argparse.Namespace | None = None) -> Failure:
    """The failure a command reports for ``exc`` (raised while running with ``args``)."""
    if isinstance(exc, KeyboardInterrupt):
        return Failure(
            "interrupted",
            "interrupted by Ctrl-C before the command finished — check what it changed "
            "(`orch plan show`, `orch run show`) and run it again if needed",
            ExitCode.INTERRUPTED,
        )
    if isinstance(exc, BrokenPipeError):
        return Failure("broken_pipe", "stdout was closed by its reader", ExitCode.BROKEN_PIPE)
    known = _library_error(exc)
    if known is not None:
        if isinstance(known, CliError):
            return Failure(known.code, known.message, known.exit_code, known.details)
        return Failure(known.code, _with_fix(known, args), ExitCode.REFUSED)
    for describe in (_rpc_failure, _connection_failure):
        failure = describe(exc, args)
        if failure is not None:
            return failure
    if isinstance(exc, UnicodeDecodeError):
        return Failure(
            "not_utf8",
            f"an input is not UTF-8 text ({exc.reason} at byte {exc.start}) — save it as UTF-8 "
            "and run the command again",
            ExitCode.REFUSED,
        )
    if isinstance(exc, RecursionError):
        return Failure(
            "input_too_deep",
            "an input is nested too deeply to read — flatten it (keep values under a few "
            "hundred levels of nesting)",
            ExitCode.REFUSED,
        )
    if isinstance(exc, OSError) and exc.filename is not None:
        return Failure(
            "path_unusable",
            f"cannot use {exc.filename} ({exc.strerror or exc}) — check the path and its "
            "permissions",
            ExitCode.REFUSED,
        )
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "value"
        return Failure(
            "invalid_data",
            f"{exc.title}: {where}: {first['msg']} — fix that value (see `orch schema` for the "
            "shapes)",
            ExitCode.REFUSED,
        )
    return Failure(
        "internal_error",
        f"orch failed unexpectedly ({type(exc).__name__}: {exc}) — this is a bug: report it "
        "with the command you ran (ORCH_DEBUG=1 prints the traceback)",
        ExitCode.INTERNAL,
    )


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and the exceptions it was raised from (causes first, then contexts)."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen and len(seen) < 32:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _library_error(exc: BaseException) -> OrchestrationError | None:
    """The library refusal behind ``exc``, even when a framework wrapped it.

    A payload codec's refusal reaches the command through the data converter, and a replay's
    through the replayer: the code and message the user needs are the library's own.
    """
    for link in _chain(exc):
        if isinstance(link, OrchestrationError):
            return link
    return None


_FIXES: dict[str, str] = {
    "plan_not_found": "list the plans in this store with `orch plan list`, or pass the --store "
    "the plan is in",
    "run_not_found": "start it with `orch run start {plan}`, or pass the --store and --address "
    "it ran with",
    "codec_key": "set ORCH_CODEC_KEYS to the keys the workers use (id:base64key, comma "
    "separated, oldest first)",
    "codec_decrypt_failed": "set ORCH_CODEC_KEYS to the keys the workers encrypt with",
    "gate_not_open": "list what waits with `orch run gates {plan}`",
    "gate_already_decided": "read what was decided with `orch run show {plan} --render`",
    "invalid_response": "send a response that fits the request (see `orch run gates {plan}`)",
    "stale_arguments": "read the request again with `orch run gates {plan}` and decide on what "
    "it shows",
    "edit_not_allowed": "approve the arguments as shown, or reject them",
    "invalid_arguments": "change the arguments so the tool takes them",
    "answer_required": "answer it with `orch run answer`, or reject it to decline",
    "not_an_input_gate": "approve or reject it with `orch run decide`",
}
"""The fix for library refusals whose message says what happened but not what to do."""


def _with_fix(error: OrchestrationError, args: argparse.Namespace | None) -> str:
    fix = _FIXES.get(error.code)
    if fix is None or " — " in error.message:
        return error.message
    return f"{error.message} — {fix.format(plan=_plan(args))}"


def _plan(args: argparse.Namespace | None) -> str:
    plan_id = getattr(args, "plan_id", None)
    return str(plan_id) if plan_id else "PLAN"


def _rpc_failure(exc: BaseException, args: argparse.Namespace | None) -> Failure | None:
    """A Temporal RPC failure, named for the run it concerns."""
    try:
        from temporalio.service import RPCError, RPCStatusCode
    except ImportError:  # pragma: no cover - temporalio is a dependency
        return None
    rpc = next((link for link in _chain(exc) if isinstance(link, RPCError)), None)
    if rpc is None:
        return None
    plan = _plan(args)
    where = f"{getattr(args, 'address', 'Temporal')} (namespace {getattr(args, 'namespace', '?')})"
    if rpc.status == RPCStatusCode.NOT_FOUND and "already completed" in rpc.message:
        return Failure(
            "run_closed",
            f"the run of plan {plan} has already ended, so it can no longer be stopped or "
            f"answered — read how it ended with `orch run show {plan}`",
            ExitCode.REFUSED,
        )
    if rpc.status == RPCStatusCode.NOT_FOUND:
        return Failure(
            "run_not_found",
            f"plan {plan} has no run on {where} — start it with `orch run start {plan}`, or "
            "pass the --address and --namespace it ran on",
            ExitCode.REFUSED,
        )
    if rpc.status in (RPCStatusCode.UNAVAILABLE, RPCStatusCode.DEADLINE_EXCEEDED):
        return Failure(
            "temporal_unreachable",
            f"Temporal at {where} did not answer ({rpc.message}) — check that it runs "
            "(`orch dev`) and run the command again",
            ExitCode.UNAVAILABLE,
        )
    return Failure(
        "temporal_refused",
        f"Temporal refused the request ({rpc.status.name}: {rpc.message}) — check the plan id, "
        "--address and --namespace",
        ExitCode.REFUSED,
    )


def _connection_failure(exc: BaseException, args: argparse.Namespace | None) -> Failure | None:
    """A plan store that cannot be opened or reached."""
    import sqlite3

    store = getattr(args, "store", "the plan store")
    if isinstance(exc, sqlite3.Error):
        return Failure(
            "store_unavailable",
            f"cannot use the plan store {store} ({exc}) — point --store (or ORCH_STORE) at a "
            "writable SQLite file",
            ExitCode.UNAVAILABLE,
        )
    try:
        import psycopg
    except ImportError:
        return None
    if isinstance(exc, psycopg.OperationalError):
        return Failure(
            "store_unavailable",
            f"cannot reach the PostgreSQL plan store ({' '.join(str(exc).split())}) — check "
            "the DSN in --store (or ORCH_STORE) and that the server runs",
            ExitCode.UNAVAILABLE,
        )
    return None


# -- a watched run's outcome --------------------------------------------------------------------


def outcome_exit(projection: RunProjection, plan_id: str) -> int:
    """The exit status of ``run watch`` for a run that stopped being watched, with its line.

    0 only for ``completed``: a script that runs a plan and checks ``$?`` must never mistake a
    halted, aborted or cancelled run for success.
    """
    outcome = projection.outcome
    if outcome == "completed":
        return int(ExitCode.OK)
    cause = projection.interruption
    why = f" ({cause.kind})" if cause is not None else ""
    read = f"read what it did with `orch run show {plan_id} --render`"
    if outcome == "halted":
        failure = Failure(
            "run_halted", f"the run settled halted{why} — {read}", ExitCode.RUN_HALTED
        )
    elif outcome == "aborted" and cause is not None and cause.kind == "turn_abort":
        failure = Failure(
            "run_cancelled", f"the run was cancelled (turn_abort) — {read}", ExitCode.RUN_CANCELLED
        )
    elif outcome == "aborted":
        failure = Failure(
            "run_aborted", f"the run settled aborted{why} — {read}", ExitCode.RUN_ABORTED
        )
    else:
        failure = Failure(
            "run_unsettled",
            "the run's workflow closed without recording how the run ended (terminated or "
            f"timed out outside the plan) — {read}, and the workflow's history in Temporal",
            ExitCode.RUN_UNSETTLED,
        )
    report(failure, json_mode=False)
    return int(failure.exit_code)
