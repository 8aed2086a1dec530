"""The import graph: no cycles anywhere, and every dependency points the way the layout says.

Read statically from the source (module-level and function-level imports alike, since a
function's import runs too; ``if TYPE_CHECKING:`` blocks aside, since they never run), so a
cycle is caught whether or not today's import order happens to survive it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("orchestration", "workflows", "activities", "workers")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            found[_module_name(path)] = path
    return found


MODULES = _modules()


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, here: str, is_package: bool) -> Iterator[str]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node):
            yield from (m for child in node.orelse for m in _imports(child, here, is_package))
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = here.split(".") if is_package else here.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                yield candidate if candidate in MODULES else base
        else:
            yield from _imports(node, here, is_package)


def import_graph() -> dict[str, set[str]]:
    """Each project module and the project modules it imports.

    ``from package import name`` is an edge to the package when ``name`` is not a submodule
    (the package's ``__init__`` must have run far enough to define it); importing a submodule
    is an edge to the submodule only, since a package's ``__init__`` that is still running
    already lets its submodules load.
    """
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(), str(path))
        targets: set[str] = set()
        for imported in _imports(tree, name, path.name == "__init__.py"):
            if imported in MODULES:
                targets.add(imported)
        targets.discard(name)
        graph[name] = targets
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(start: str) -> None:
        nonlocal counter
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            advanced = False
            for target in edges:
                if target not in index:
                    index[target] = low[target] = counter
                    counter += 1
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                    advanced = True
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_the_import_graph_has_no_cycles() -> None:
    """No module reaches itself through its imports."""
    graph = import_graph()
    assert len(graph) > 100, "the source tree was not found"
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    """The check above can fail: a planted two-module cycle is reported."""
    graph = {"a": {"b"}, "b": {"a", "c"}, "c": set()}
    assert cycles(graph) == [["a", "b"]]


def test_the_core_imports_no_worker_side_package() -> None:
    """``orchestration`` imports none of ``workflows``, ``activities`` or ``workers``, except the
    CLI, which reaches them through ``workers.client`` alone (the client side)."""
    graph = import_graph()
    offenders = {
        (module, target)
        for module, targets in graph.items()
        if module.split(".")[0] == "orchestration"
        for target in targets
        if target.split(".")[0] in ("workflows", "activities", "workers")
        and not (module.startswith("orchestration.cli") and target in ("workers", "workers.client"))
    }
    assert offenders == set()


def test_the_plan_side_imports_nothing_of_review_or_the_hosts() -> None:
    """Plans are edited without the review, tools or run-loop layers: the plan package and the
    wire types import only each other, errors, and the run's frame identity and tables."""
    graph = import_graph()
    allowed_run = {"orchestration.run", "orchestration.run.routes", "orchestration.run.tables"}
    offenders = {
        (module, target)
        for module, targets in graph.items()
        if module.startswith("orchestration.plan") or module == "orchestration.types"
        for target in targets
        if target.startswith(("orchestration.review", "orchestration.tools", "orchestration.store"))
        or (target.startswith("orchestration.run") and target not in allowed_run)
    }
    assert offenders == set()
