"""The template taint rule: a hole's argument reaches a tool only past a declassifying call.

A hole's argument is supplied by whoever instantiates the template, usually a model relaying
someone's request, so it is as untrusted as a run's input. Once substituted, though, it is a
literal: the freeze-time taint analysis (which follows references from the entry) cannot tell
it from text the template's author wrote. So the template must carry the proof itself, once,
at construction: for every call whose ``args`` hold a hole with path ``p``, every route from
the entry to that call passes, strictly before the call, a call node declaring ``p`` in
``declassifies`` (under the prefix rule: ``d == p``, or one is a dotted prefix of the other).

"Every route passes a declassifier" is checked as "the call is unreachable from the entry once
the declassifiers are removed", a linear search rather than a route enumeration, so it needs no
cap and is exact on any graph. A call no route reaches is not checked (nothing can run it), and
the rule needs exactly one entry (freeze reports any other count).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from orchestration.plan.graph import PlanGraph
from orchestration.review.validation.issues import blocking
from orchestration.templates.holes import hole_sites
from orchestration.templates.model import PlanTemplate
from orchestration.types import PlanIssue

__all__ = ["check_hole_declassification", "covers"]


def covers(declared: str, path: str) -> bool:
    """Whether a ``declassifies`` entry covers a hole's param path (the prefix rule)."""
    return declared == path or declared.startswith(path + ".") or path.startswith(declared + ".")


def _declassifies(definition: dict[str, object]) -> tuple[str, ...]:
    value = definition.get("declassifies")
    if isinstance(value, list | tuple):
        return tuple(v for v in value if isinstance(v, str))
    return ()


def _reaches(graph: PlanGraph, start: int, goal: int, blocked: Iterable[int]) -> bool:
    stop = set(blocked)
    if start in stop:
        return False
    seen = {start}
    stack = [start]
    while stack:
        node = stack.pop()
        if node == goal:
            return True
        for nxt in graph.successors(node):
            if nxt not in seen and nxt not in stop:
                seen.add(nxt)
                stack.append(nxt)
    return False


def check_hole_declassification(template: PlanTemplate) -> list[PlanIssue]:
    """One ``param_not_declassified`` issue per (call, hole path) with an undeclassified route."""
    nodes = template.nodes
    graph = PlanGraph(
        [n.id for n in nodes],
        [n.kind for n in nodes],
        ((e.id, e.from_, e.to, e.handle) for e in template.edges),
    )
    entries = [i for i, n in enumerate(nodes) if n.kind == "entry"]
    if len(entries) != 1:
        return []
    entry = entries[0]
    issues: list[PlanIssue] = []
    for position, node in enumerate(nodes):
        if node.kind != "call" or graph.index.get(node.id) != position:
            continue
        paths = _hole_paths(node.definition.get("args"))
        for path in paths:
            blockers: Sequence[int] = [
                i
                for i, other in enumerate(nodes)
                if i != position
                and other.kind == "call"
                and any(covers(d, path) for d in _declassifies(other.definition))
            ]
            if _reaches(graph, entry, position, ()) and _reaches(graph, entry, position, blockers):
                issues.append(
                    blocking(
                        "param_not_declassified",
                        f'Template "{template.id}" routes template hole "{path}" into the args '
                        f'of call node "{node.id}" through a route that does not declassify '
                        f'it; every route to that call must pass a node declaring "{path}" '
                        'in "declassifies".',
                        node_id=node.id,
                    )
                )
    return issues


def _hole_paths(args: object) -> list[str]:
    return list(dict.fromkeys(ref.path for _, ref in hole_sites(args)))
