"""What ``orch run show`` says beneath a frame: its attempts, its verdict's provenance, its usage.

A frame that ran once, cleanly, and spent nothing on a model needs no more than its row. Any
other gets lines beneath it (indented, so a reader skims the rows):

* each attempt, when there was more than one, or one that did not succeed, or one that spent
  tokens: ``#2 failed  ConnectionError: the service hung up  (retry: transient_error)``, with
  its model turns and each rejected turn's violations;
* a call whose arguments a model's output reached: which, and from where;
* a branch or select: its verdict, ``verified`` (nothing a model produced was compared) or
  ``asserted`` (a model could have steered it), with the values compared and their origins.

Then, for the run, what it spent on models (and per node), and the liveness of its calls in
flight, when a reader observed it.
"""

from __future__ import annotations

from collections.abc import Iterable

from orchestration.cli.labels import seconds_between
from orchestration.review.render_run import attempt_lines, money
from orchestration.types import (
    ComparedValue,
    RunProjection,
    UsageTotals,
    ValueOrigin,
    Verdict,
)

__all__ = ["attempt_lines", "frame_detail", "liveness_lines", "usage_lines"]

_INDENT = "      "


def _origin(origin: ValueOrigin) -> str:
    if origin.source == "literal":
        return f"a literal ({origin.path})"
    if origin.source == "run_input":
        return f"the run input ({origin.path})" if origin.path else "the run input"
    if origin.source == "node_output":
        who = "a model" if origin.obtained_by == "model" else "the runtime"
        where = f"{origin.node_id}.{origin.path}" if origin.path else f"{origin.node_id}"
        return f"{where} (from {who})"
    return "unknown (counted as a model's)"


def _compared(value: ComparedValue) -> str:
    origins = ", ".join(_origin(o) for o in value.origins) or "nothing on this route"
    return f"{value.name} = {value.value!r} ← {origins}"


def _verdict_lines(verdict: Verdict) -> list[str]:
    check = verdict.check
    if check is None:
        return []
    if check.provenance is None:
        return [f"{_INDENT}verdict {verdict.handle}: nothing compared (no provenance label)"]
    why = (
        "no compared value traces back to a model"
        if check.provenance == "verified"
        else "a model could have steered it"
    )
    scope = "" if check.reads == "exact" else " (its cell may read any output on its route)"
    lines = [f"{_INDENT}verdict {verdict.handle}: {check.provenance}: {why}{scope}"]
    lines += [f"{_INDENT}  {_compared(value)}" for value in check.values]
    return lines


def frame_detail(projection: RunProjection, key: str) -> list[str]:
    """The lines beneath a frame's row in ``orch run show`` (often none)."""
    lines = attempt_lines(projection.attempts.get(key, ()))
    origins = projection.arg_origins.get(key, {})
    steered = {
        name: [o for o in found if o.obtained_by == "model"] for name, found in origins.items()
    }
    for name, found in sorted(steered.items()):
        if found:
            lines.append(
                f"{_INDENT}argument {name} from a model: " + ", ".join(_origin(o) for o in found)
            )
    verdict = projection.verdicts.get(key)
    if verdict is not None:
        lines += _verdict_lines(verdict)
    return lines


def _totals(totals: UsageTotals) -> str:
    said = f"{totals.input_tokens} input + {totals.output_tokens} output tokens"
    priced = totals.tokens - totals.unpriced_tokens
    if priced:
        said += f", {money(totals.cost_usd)}"
    if totals.unpriced_tokens:
        said += f" ({totals.unpriced_tokens} tokens unpriced)"
    return said + f" over {totals.attempts} attempt" + ("" if totals.attempts == 1 else "s")


def usage_lines(projection: RunProjection) -> list[str]:
    """What the run spent on models, in all and per node (nothing when it spent nothing)."""
    if not projection.usage.attempts:
        return []
    lines = [f"usage: {_totals(projection.usage)}"]
    for node, totals in projection.node_usage.items():
        lines.append(f"  {node}: {_totals(totals)}")
    return lines


def liveness_lines(projection: RunProjection, labels: Iterable[tuple[str, str]] = ()) -> list[str]:
    """The liveness of the frames in flight, when a reader observed it."""
    names = dict(labels)
    lines = []
    for key, live in sorted(projection.liveness.items()):
        name = names.get(key, key)
        silent = ""
        if live.last_activity is not None:
            ago = seconds_between(live.last_activity, live.observed_at)
            silent = f", last activity {ago:.1f}s ago"
        limit = (
            f" (heartbeat timeout {live.heartbeat_timeout_seconds:g}s)"
            if live.heartbeat_timeout_seconds
            else ""
        )
        lines.append(f"  {name}: {live.status}{silent}{limit}, attempt {live.attempt}")
    return ["liveness:", *lines] if lines else []
