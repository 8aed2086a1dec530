"""The facade as the template and MCP commands assemble it from their flags.

``--store`` names the SQLite plan store; ``--tools module:attr`` the tool allowlist (required:
templates are checked against it, and freeze needs it); ``--cells module:attr`` extra predicate
cells (the structured cell is always wired); ``--templates module:attr`` the registered
templates: a :class:`~orchestration.templates.PlanTemplate`, a list or tuple of them, a mapping
whose values are templates, or a function returning any of those; ``--strict-authority`` makes
a call claiming no authority block the freeze. Each flag also reads an environment variable
(``ORCH_STORE``, ``ORCH_TOOLS``, ``ORCH_CELLS``, ``ORCH_TEMPLATES``,
``ORCH_STRICT_AUTHORITY``).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping
from typing import Any

from orchestration.api import Orchestration, create_orchestration
from orchestration.cli.common import (
    CliError,
    add_store_flag,
    add_strict_authority_flag,
    load_object,
    open_store,
)
from orchestration.cli.review import load_cells, load_tools
from orchestration.run.host import RunHost
from orchestration.templates import PlanTemplate

__all__ = ["add_assembly_flags", "load_templates", "open_orchestration"]


def add_assembly_flags(parser: argparse.ArgumentParser) -> None:
    """``--store``, ``--tools``, ``--cells`` and ``--templates``."""
    add_store_flag(parser)
    parser.add_argument(
        "--tools",
        default=os.environ.get("ORCH_TOOLS"),
        help="module:attr of the tool allowlist (env ORCH_TOOLS)",
    )
    parser.add_argument(
        "--cells",
        default=os.environ.get("ORCH_CELLS"),
        help="module:attr of extra predicate cells (env ORCH_CELLS)",
    )
    parser.add_argument(
        "--templates",
        default=os.environ.get("ORCH_TEMPLATES"),
        help="module:attr of the plan templates (env ORCH_TEMPLATES)",
    )
    add_strict_authority_flag(parser)


def load_templates(spec: str | None) -> list[PlanTemplate]:
    """The templates named by ``module:attr`` (see the module docstring), or none."""
    if not spec:
        return []
    target = load_object(spec)
    if callable(target) and not isinstance(target, PlanTemplate):
        try:
            target = target()
        except TypeError as exc:
            raise CliError(
                "bad_import_spec", f"{spec} could not be called with no arguments ({exc})"
            ) from exc
    if isinstance(target, PlanTemplate):
        return [target]
    items = list(target.values()) if isinstance(target, Mapping) else target
    if isinstance(items, list | tuple) and all(isinstance(t, PlanTemplate) for t in items):
        return list(items)
    raise CliError(
        "bad_templates",
        f"{spec} is not a plan template or a list of them; point it at a PlanTemplate, a "
        "list or dict of PlanTemplates, or a function returning one",
    )


async def open_orchestration(
    args: argparse.Namespace, runs: Callable[[Any], RunHost] | None = None
) -> Orchestration:
    """The facade over ``--store`` with the allowlist, cells and templates of the flags.

    ``runs`` makes the run host for the opened store (default: in process, over the store).

    Raises:
        CliError: ``tools_required`` without ``--tools``; a bad import spec.
        InvalidTemplateError: a template fails its checks (each issue names its fix).

    """
    if not args.tools:
        raise CliError(
            "tools_required",
            "templates are checked against the tool allowlist; pass --tools module:attr (or "
            "set ORCH_TOOLS)",
        )
    store = open_store(args.store)
    return await create_orchestration(
        store=store,
        invocable=load_tools(args.tools),
        evaluators=load_cells(args.cells),
        templates=load_templates(args.templates),
        strict_authority=args.strict_authority,
        runs=runs(store) if runs is not None else None,
    )
