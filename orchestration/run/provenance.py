"""Provenance: which values a model could have steered, transitively and fail-closed.

A ``reason`` node's output is a model's. Any node that reads a model's output carries it on:
a call whose arguments read it, a transform whose source call did. So each settled frame's
output is marked (on its route, :attr:`~orchestration.run.routes.Route.model`) as traced to
a model or not, from the frames it read, when it settles:

* the entry's output (the run's input) and a join's output (its arrivals' routes) are the
  runtime's;
* a ``reason`` frame's is a model's;
* a ``call`` frame's is a model's when any reference in its arguments read an output that is;
* a ``transform`` frame's is its source's.

A mark that is not known (an output restored from a log or checkpoint that did not record it)
is read as a model's: **fail-closed**, so a value never reads as clean for lack of a record.

From the marks:

* :func:`arg_origins` says where each resolved argument of a call came from (a literal, the run
  input, a node's output, and whether a model produced it), recorded on the call's first
  attempt;
* :func:`verdict_check` says which values a branch or select compared, with their origins, and
  labels the verdict ``verified`` (no compared value traces back to a model), ``asserted`` (one
  does: a model could have steered it) or nothing (nothing was compared).

Pure, and host-neutral: the engine computes both, so both hosts record the same.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from orchestration.plan.encoding import NodeRef
from orchestration.run.engine.builders import compared_value, value_origin
from orchestration.run.engine.builders import verdict_check as make_check
from orchestration.run.resolve import entry_for
from orchestration.run.tables import FrameEntry, FrameTable
from orchestration.types import ComparedValue, ValueOrigin, VerdictCheck

__all__ = [
    "MAX_COMPARED",
    "arg_origins",
    "call_refs",
    "is_model",
    "origin_of",
    "reads_model",
    "verdict_check",
]

MAX_COMPARED = 32
"""At most this many compared values (and origins per value) are recorded per verdict."""

def is_model(entry: FrameEntry) -> bool:
    """Whether a table entry's value traces back to a model (unknown counts as yes)."""
    return entry.route.model is not False


def call_refs(args: Mapping[str, Any]) -> tuple[NodeRef, ...]:
    """Every reference in a call's arguments, in order (computed once per node)."""
    out: list[NodeRef] = []
    for value in args.values():
        kind = type(value)
        if kind is NodeRef:
            out.append(value)
        elif kind is list or kind is dict:
            out.extend(leaf for _, leaf in _leaves(value, "") if type(leaf) is NodeRef)
    return tuple(out)


def _leaves(value: Any, where: str) -> Iterator[tuple[str, Any]]:
    kind = type(value)
    if kind is list:
        for index, item in enumerate(value):
            yield from _leaves(item, f"{where}[{index}]")
    elif kind is dict:
        for key, item in value.items():
            yield from _leaves(item, f"{where}.{key}")
    else:
        yield where, value


def reads_model(refs: tuple[NodeRef, ...], table: FrameTable[Any]) -> bool:
    """Whether any of ``refs`` reads, in ``table``, an output a model contributed to."""
    for ref in refs:
        entry = entry_for(ref, table)
        if entry is not None and entry.route.model is not False:
            return True
    return False


def origin_of(entry: FrameEntry, path: str) -> ValueOrigin:
    """The origin of a value read at ``path`` from a table entry."""
    route = entry.route
    if route.frame == 0 and route.parent is None:
        return value_origin("run_input", path, None, "runtime")
    return value_origin(
        "node_output", path, entry.node, "runtime" if route.model is False else "model"
    )


def arg_origins(
    args: Mapping[str, Any], table: FrameTable[Any]
) -> dict[str, tuple[ValueOrigin, ...]]:
    """Where each of a call's arguments came from, by argument name.

    A reference gives the origin of what it read (nothing when it read nothing: the argument
    was omitted or the call failed); anything else in the argument is a ``literal`` staged in
    the plan, reported once per argument at ``args.<name>``.
    """
    out: dict[str, tuple[ValueOrigin, ...]] = {}
    for key, value in args.items():
        origins: list[ValueOrigin] = []
        literal = False
        for _, leaf in _leaves(value, f"args.{key}"):
            if type(leaf) is NodeRef:
                entry = entry_for(leaf, table)
                if entry is not None:
                    origins.append(origin_of(entry, leaf.path or ""))
            else:
                literal = True
        if literal or not origins:
            origins.insert(
                0, ValueOrigin(source="literal", path=f"args.{key}", obtained_by="runtime")
            )
        out[key] = tuple(origins)
    return out


# -- verdicts ------------------------------------------------------------------------------------


def _head(path: str) -> tuple[str, str | None, str]:
    """``(node, branch key or None, rest)`` of a structured path's first segment."""
    head, _, rest = path.partition(".")
    node, sep, branch = head.partition(":")
    return node, (branch if sep else None), rest


def _path_entries(path: str, table: FrameTable[Any]) -> tuple[list[FrameEntry], str] | None:
    """The entries a structured leaf path reads, and the path inside them; ``None``: all."""
    if path == "":
        return None
    node, branch, rest = _head(path)
    if not node:
        return [], rest
    entry = table.first(node) if branch is None else table.find(node, branch)
    return ([] if entry is None else [entry]), rest


def _compared(name: str, value: Any, entries: list[FrameEntry], rest: str) -> ComparedValue:
    origins = tuple(origin_of(e, rest) for e in entries[:MAX_COMPARED])
    model = any(is_model(e) for e in entries)
    return compared_value(name, value, origins, "model" if model else "runtime")


def _whole_table(table: FrameTable[Any]) -> list[FrameEntry]:
    return [entry for _, entry in table.entries()]


def verdict_check(evidence: Any, table: FrameTable[Any]) -> VerdictCheck:
    """What a branch or select compared, with origins, and its provenance label.

    Reads the cell's evidence (see :class:`~orchestration.tools.contracts.Judgement`): the
    structured cell's ``checks`` (each leaf's path and the value read) and jexl's ``reads``
    (``<nodeId>.<field>`` and its value) say exactly what was compared. Any other cell (CEL,
    Lua, a custom one) may read any output on its route without saying which: then the check
    lists the route's outputs a model produced (``reads: route``), and is ``asserted`` exactly
    when there is one.
    """
    facts = evidence if isinstance(evidence, dict) else {}
    checks = facts.get("checks")
    reads = facts.get("reads")
    values: list[ComparedValue] = []
    exact = isinstance(checks, list) or isinstance(reads, dict)
    if isinstance(checks, list):
        for check in checks[:MAX_COMPARED]:
            if not isinstance(check, dict) or not isinstance(check.get("path"), str):
                exact = False
                continue
            path = check["path"]
            found = _path_entries(path, table)
            entries, rest = (_whole_table(table), "") if found is None else found
            values.append(_compared(path, check.get("actual"), entries, rest))
        if facts.get("omitted") or len(checks) > MAX_COMPARED:
            exact = False
    if isinstance(reads, dict):
        for name in list(reads)[:MAX_COMPARED]:
            if not isinstance(name, str):
                continue
            node, branch, rest = _head(name)
            entry = table.first(node) if branch is None else table.find(node, branch)
            values.append(_compared(name, reads[name], [] if entry is None else [entry], rest))
    if not exact:
        model = sorted(
            (e for e in table.unordered() if e.route.model is not False),
            key=lambda e: e.route.frame,
        )
        listed = {v.name for v in values}
        for entry in model[:MAX_COMPARED]:
            if entry.node not in listed:
                values.append(_compared(entry.node, None, [entry], ""))
        if not values and len(table) == 0:
            return make_check((), None, "route")
        label = "asserted" if any(v.obtained_by == "model" for v in values) else "verified"
        return make_check(tuple(values), label, "route")
    if not values:
        return make_check((), None, "exact")
    label = "asserted" if any(v.obtained_by == "model" for v in values) else "verified"
    return make_check(tuple(values), label, "exact")

