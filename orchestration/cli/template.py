"""``orch template list | instantiate``: the registered plan templates, from a shell.

``list`` shows each template's id, summary and params (what to fill); ``instantiate`` makes a
new editable plan from one, with arguments given as a JSON object (``--args``) and/or one
``--arg name=value`` per param (a value that parses as JSON is taken as JSON, so ``n=3`` is a
number and ``s=hello`` a string). The new plan's freeze issues are printed; freeze, render and
approve it with ``orch plan``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from orchestration.cli.assembly import add_assembly_flags, open_orchestration
from orchestration.cli.common import (
    CliError,
    add_json_flag,
    emit,
    load_json_text,
    read_text_file,
    run_async,
)
from orchestration.cli.review import issue_lines
from orchestration.plan.encoding import from_json_value
from orchestration.templates import InstantiateOk, InstantiateRefused, describe_param

__all__ = ["register"]


def register(commands: Any) -> None:
    """Add the ``template`` group."""
    template = commands.add_parser("template", help="list and instantiate plan templates")
    sub = template.add_subparsers(dest="template_command", required=True, metavar="COMMAND")

    listing = sub.add_parser("list", help="the registered templates and their params")
    add_assembly_flags(listing)
    add_json_flag(listing)
    listing.set_defaults(handler=_list)

    inst = sub.add_parser("instantiate", help="make a new editable plan from a template")
    inst.add_argument("template_id")
    inst.add_argument("--args", dest="args_json", help="the arguments as a JSON object")
    inst.add_argument("--args-file", help="read the arguments from a JSON file")
    inst.add_argument(
        "--arg", action="append", default=[], metavar="NAME=VALUE", help="one argument"
    )
    inst.add_argument("--plan-id", help="the new plan's id (default: a fresh plan-<hex>)")
    inst.add_argument("--label", help="its listing label (default: the template's summary)")
    inst.add_argument("--actor", default="cli", help="actor id for the minted ops")
    add_assembly_flags(inst)
    add_json_flag(inst)
    inst.set_defaults(handler=_instantiate)


def _list(args: argparse.Namespace) -> int:
    async def go() -> Any:
        orch = await open_orchestration(args)
        try:
            return orch.templates()
        finally:
            await orch.store.close()

    templates = run_async(go)

    def text() -> str:
        if not templates:
            return "(no templates registered; pass --templates module:attr)"
        lines = []
        for t in templates:
            lines.append(f"{t.id}  {t.summary}")
            for p in t.params:
                lines.append(f"  {p.path}: {describe_param(p)}")
            if not t.params:
                lines.append("  (no params)")
        return "\n".join(lines)

    emit(args, list(templates), text)
    return 0


def _json_object(text: str, where: str) -> dict[str, Any]:
    value = load_json_text(text, where, "bad_args")
    if not isinstance(value, dict):
        raise CliError("bad_args", f"{where} must be a JSON object of param name to value")
    return value


def _arguments(args: argparse.Namespace) -> dict[str, Any]:
    raw: dict[str, Any] = {}
    if args.args_file:
        raw.update(_json_object(read_text_file(args.args_file, "the arguments file"),
                                args.args_file))
    if args.args_json:
        raw.update(_json_object(args.args_json, "--args"))
    for item in args.arg:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise CliError("bad_args", f"--arg {item!r} is not NAME=VALUE; e.g. --arg city=Paris")
        try:
            raw[name] = json.loads(value)
        except json.JSONDecodeError:
            raw[name] = value
    try:
        return {k: from_json_value(v, "none", k) for k, v in raw.items()}
    except ValueError as exc:
        raise CliError("bad_args", f"{exc}; pass plain JSON values") from exc


def _instantiate(args: argparse.Namespace) -> int:
    values = _arguments(args)

    async def go() -> InstantiateOk | InstantiateRefused:
        orch = await open_orchestration(args)
        try:
            return await orch.instantiate(
                args.template_id,
                values,
                actor_id=args.actor,
                plan_id=args.plan_id,
                label=args.label,
            )
        finally:
            await orch.store.close()

    result = run_async(go)
    if isinstance(result, InstantiateRefused):
        raise CliError(result.reason, result.detail)

    def text() -> str:
        blocking = sum(1 for i in result.issues if i.severity == "blocking")
        lines = [f"instantiated {result.plan_id} from template {args.template_id} (editable)"]
        lines += issue_lines(result.issues)
        if blocking:
            lines.append(f"fix the {blocking} blocking issue(s) before freezing it")
        else:
            lines.append(
                f"next: orch plan freeze {result.plan_id} --tools ...; orch plan render "
                f"{result.plan_id}; orch plan approve {result.plan_id} --digest ... --by ..."
            )
        return "\n".join(lines)

    emit(args, result, text)
    return 0
