"""Lazy re-exports for package ``__init__`` modules.

A package's ``__init__`` names its public API without importing it: importing
``orchestration.plan.encoding`` runs ``orchestration/plan/__init__.py`` first, and an eager
re-export there would import the whole package (and, through it, modules that import the one
being loaded) before the module asked for exists. Each name resolves on first access instead,
so a package's listing costs nothing and adds no import edge.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: each name in ``exports`` from its module.

    ``exports`` maps a public name to the submodule (relative to ``package``) defining it.
    """

    def get(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        return value

    def names() -> list[str]:
        return sorted(exports)

    return get, names
