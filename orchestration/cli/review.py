"""``orch plan freeze | render | outline | slice | approve``: the operator's review path.

An operator, from a shell: freezes a stored plan and reads its issues; renders it and reads the
prose and the digest; approves it by typing that digest. ``approve`` builds the record from the
plan as it is now (its canonical authority set) and the digest typed, so a digest that is not
the current one is refused and nothing is written: ``error[<reason>]: (<cause>) <the fix>``,
where the reason is the contract's (``digest_mismatch``, ``state_mismatch``) and the cause the
finer one (``stale_digest``, ``not_reviewable``, ...); ``--json`` also gives the refusal as
JSON on stdout.

Freeze needs the tool allowlist: ``--tools module:attr`` (env ``ORCH_TOOLS``) names an
``InvocableTools``, a mapping of tool name to declared return, a list of names, or a function
returning one of those. The structured cell is always wired; more cells come from ``--cells
module:attr`` (env ``ORCH_CELLS``): a cell, a list of cells, or a function returning either
(merged by id, so a cell with id ``structured`` replaces the built-in one). The read commands
show freeze issues when the allowlist is given, and only the fold's issues otherwise. A call
that claims no authority is an advisory ``missing_authority``; ``--strict-authority`` (env
``ORCH_STRICT_AUTHORITY=1``) makes it block the freeze.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
from collections.abc import Iterable, Mapping
from typing import Any

from orchestration.api import FreezeResult, Orchestration, create_orchestration
from orchestration.cli.common import (
    CliError,
    add_json_flag,
    add_store_flag,
    add_strict_authority_flag,
    emit,
    jsonable,
    load_object,
    open_store,
    run_async,
)
from orchestration.review.approval import ApprovalRefused, approval_record
from orchestration.review.outline import PlanOutline, PlanSlice, plan_outline, plan_slice
from orchestration.review.render import render_plan
from orchestration.review.validation import merge_evaluators
from orchestration.tools.allowlist import ToolAllowlist
from orchestration.tools.contracts import InvocableTools, PredicateEvaluator
from orchestration.types import PlanIssue

__all__ = ["issue_lines", "load_cells", "load_tools", "register"]


def register(plan_commands: Any) -> None:
    """Add the review commands to the ``orch plan`` subcommands."""
    freeze = plan_commands.add_parser(
        "freeze", help="validate a plan and, if nothing blocks, make it reviewable"
    )
    freeze.add_argument("plan_id")
    _add_inputs(freeze)
    freeze.set_defaults(handler=_freeze)

    render = plan_commands.add_parser("render", help="the plan as prose, with its digest")
    render.add_argument("plan_id")
    render.add_argument("--audience", choices=["operator", "model"], default="operator")
    render.add_argument("--revision", type=int, help="render the first N ops (default: all)")
    _add_inputs(render)
    render.set_defaults(handler=_render)

    outline = plan_commands.add_parser("outline", help="phases with node ids, tools, issues")
    outline.add_argument("plan_id")
    _add_inputs(outline)
    outline.set_defaults(handler=_outline)

    sliced = plan_commands.add_parser("slice", help="one phase's nodes, or one node, in full")
    sliced.add_argument("plan_id")
    which = sliced.add_mutually_exclusive_group(required=True)
    which.add_argument("--phase", help='a phase label ("" for the unphased nodes)')
    which.add_argument("--node", help="a node id")
    _add_inputs(sliced)
    sliced.set_defaults(handler=_slice)

    approve = plan_commands.add_parser(
        "approve", help="approve a reviewable plan by the digest you were shown"
    )
    approve.add_argument("plan_id")
    approve.add_argument("--digest", required=True, help="the digest printed by `render`")
    approve.add_argument("--by", required=True, help="who approves (recorded)")
    approve.add_argument("--at", help="ISO-8601 decision time (default: now, UTC)")
    approve.add_argument(
        "--sign-key",
        metavar="PATH",
        help="Ed25519 private key (PEM) to sign the approval with; workers configured with "
        "approval keys run only signed approvals",
    )
    add_store_flag(approve)
    add_json_flag(approve)
    approve.set_defaults(handler=_approve)


def _add_inputs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tools",
        default=os.environ.get("ORCH_TOOLS"),
        help="module:attr of the tool allowlist (env ORCH_TOOLS)",
    )
    parser.add_argument(
        "--cells",
        default=os.environ.get("ORCH_CELLS"),
        help="module:attr of the predicate cells (env ORCH_CELLS)",
    )
    add_strict_authority_flag(parser)
    add_store_flag(parser)
    add_json_flag(parser)


# -- loading the inputs ----------------------------------------------------------------------


def load_tools(spec: str) -> InvocableTools:
    """The allowlist named by ``module:attr`` (see the module docstring for accepted shapes)."""
    target = _instantiate(load_object(spec), InvocableTools)
    if isinstance(target, InvocableTools):
        return target
    if isinstance(target, Mapping):
        return ToolAllowlist(target)
    if isinstance(target, Iterable) and not isinstance(target, str | bytes):
        names = list(target)
        if all(isinstance(n, str) for n in names):
            return ToolAllowlist(names)
    raise CliError(
        "bad_tools",
        f"{spec} is not a tool allowlist; point it at an InvocableTools, a dict of tool name to "
        "return, or a list of tool names",
    )


def load_cells(spec: str | None) -> tuple[PredicateEvaluator, ...]:
    """The structured cell, merged (by id) with the cells named by ``module:attr``, if any."""
    from orchestration.predicates.structured import StructuredCell

    return merge_evaluators((StructuredCell(),), _named_cells(spec))


def _named_cells(spec: str | None) -> tuple[PredicateEvaluator, ...]:
    if not spec:
        return ()
    target = _instantiate(load_object(spec), PredicateEvaluator)
    if isinstance(target, PredicateEvaluator):
        return (target,)
    if isinstance(target, Iterable):
        cells = tuple(target)
        if all(isinstance(c, PredicateEvaluator) for c in cells):
            return cells
    raise CliError(
        "bad_cells", f"{spec} is not a predicate cell or a list of cells; point it at one"
    )


def _instantiate(target: Any, protocol: type) -> Any:
    """Call a class or a factory function; leave an instance (or a plain value) as it is."""
    if isinstance(target, type) or (callable(target) and not isinstance(target, protocol)):
        try:
            return target()
        except TypeError as exc:
            raise CliError(
                "bad_import_spec", f"{target!r} could not be called with no arguments ({exc})"
            ) from exc
    return target


async def _open(args: argparse.Namespace, *, need_tools: bool) -> tuple[Orchestration, bool]:
    if not args.tools and need_tools:
        raise CliError(
            "tools_required",
            "freeze needs the tool allowlist; pass --tools module:attr (or set ORCH_TOOLS)",
        )
    tools = load_tools(args.tools) if args.tools else ToolAllowlist()
    cells = load_cells(getattr(args, "cells", None))
    orch = await create_orchestration(
        store=open_store(args.store),
        invocable=tools,
        evaluators=cells,
        strict_authority=args.strict_authority,
    )
    return orch, bool(args.tools)


def issue_lines(issues: Iterable[PlanIssue]) -> list[str]:
    """``[<severity>] <code> (node x, edge y): <message>`` per issue."""
    lines = []
    for issue in issues:
        where = [f"node {issue.node_id}"] if issue.node_id else []
        where += [f"edge {issue.edge_id}"] if issue.edge_id else []
        at = f" ({', '.join(where)})" if where else ""
        lines.append(f"[{issue.severity}] {issue.code}{at}: {issue.message}")
    return lines


# -- commands --------------------------------------------------------------------------------


def _freeze(args: argparse.Namespace) -> int:
    async def go() -> FreezeResult:
        orch, _ = await _open(args, need_tools=True)
        try:
            return await orch.freeze_plan(args.plan_id)
        finally:
            await orch.store.close()

    result = run_async(go)

    def text() -> str:
        head = (
            f"{args.plan_id} is reviewable: render it, read it, then approve its digest"
            if result.ok
            else f"{args.plan_id} stays editable"
        )
        return "\n".join([head, *issue_lines(result.issues)])

    if result.ok:
        emit(args, result, text)
        return 0
    if not args.json:
        print(text())
    blocking = sum(1 for i in result.issues if i.severity == "blocking")
    raise CliError(
        "freeze_refused",
        f"{blocking} blocking issue(s); fix each as its message says and freeze again",
        details=jsonable({"issues": result.issues}),
    )


def _render(args: argparse.Namespace) -> int:
    async def go() -> tuple[str, str, list[PlanIssue]]:
        orch, checked = await _open(args, need_tools=False)
        try:
            fold = await orch.store.fold(args.plan_id, revision=args.revision)
            issues = (
                await orch.check_plan(args.plan_id, revision=args.revision)
                if checked
                else list(fold.issues)
            )
            text = render_plan(fold.view, args.audience, issues, short_tools=orch.short_tools())
            return text, fold.view.digest, issues
        finally:
            await orch.store.close()

    text, digest, issues = run_async(go)
    payload = {"planId": args.plan_id, "digest": digest, "text": text, "issues": issues}
    emit(args, payload, lambda: text.rstrip("\n"))
    return 0


def _outline(args: argparse.Namespace) -> int:
    async def go() -> PlanOutline:
        orch, checked = await _open(args, need_tools=False)
        try:
            if checked:
                return await orch.outline(args.plan_id)
            state = await orch.store.read_state(args.plan_id)
            fold = await orch.store.fold(args.plan_id)
            return plan_outline(fold.view, state.state, fold.issues)
        finally:
            await orch.store.close()

    outline = run_async(go)

    def text() -> str:
        lines = [
            f"plan {outline.plan_id}  {outline.state}  {outline.node_count} nodes  "
            f"digest {outline.digest}"
        ]
        entries = [*outline.phases, *([outline.unphased] if outline.unphased else [])]
        for entry in entries:
            lines.append(f"{entry.summary}  ({entry.issue_count} issue(s))")
            lines.append(f"  nodes: {', '.join(entry.node_ids)}")
            if entry.tools:
                lines.append(f"  tools: {', '.join(entry.tools)}")
        return "\n".join(lines)

    emit(args, outline, text)
    return 0


def _slice(args: argparse.Namespace) -> int:
    async def go() -> PlanSlice:
        orch, checked = await _open(args, need_tools=False)
        try:
            if checked:
                return await orch.slice(args.plan_id, phase=args.phase, node=args.node)
            fold = await orch.store.fold(args.plan_id)
            return plan_slice(fold.view, phase=args.phase, node=args.node, issues=fold.issues)
        finally:
            await orch.store.close()

    sliced = run_async(go)

    def text() -> str:
        where = f" in phase {sliced.phase}" if sliced.phase else ""
        lines = [f"{len(sliced.nodes)} node(s){where}"]
        for node in sliced.nodes:
            definition = node.definition.model_dump_json(by_alias=True)
            lines.append(f"  {node.id} ({node.kind}): {definition}")
        lines.append(f"incoming from: {', '.join(sliced.boundary.incoming) or '(none)'}")
        lines.append(f"outgoing to: {', '.join(sliced.boundary.outgoing) or '(none)'}")
        lines += issue_lines(sliced.issues)
        return "\n".join(lines)

    emit(args, sliced, text)
    return 0


def _approve(args: argparse.Namespace) -> int:
    decided_at = args.at or dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace(
        "+00:00", "Z"
    )

    async def go() -> Any:
        # Approval re-validates nothing (the plan was validated when it was frozen), so it
        # needs no allowlist or cells: only the store.
        orch = await create_orchestration(store=open_store(args.store), invocable=ToolAllowlist())
        try:
            view = (await orch.store.fold(args.plan_id)).view
            record = approval_record(view, args.by, decided_at).model_copy(
                update={"digest": args.digest.strip().lower()}
            )
            if args.sign_key:
                from orchestration.review.signing import load_private_key, sign_approval

                with open(args.sign_key, "rb") as pem:
                    record = sign_approval(record, load_private_key(pem.read()))
            return await orch.approve_plan(args.plan_id, record)
        finally:
            await orch.store.close()

    result = run_async(go)
    if isinstance(result, ApprovalRefused):
        # The contract's wire reason is the stable code; the finer cause leads the message.
        # Under --json the error document carries the refusal too, so a script reads reason,
        # cause and the plan's actual state and digest without parsing prose.
        raise CliError(
            result.reason,
            f"({result.cause}) {result.message}",
            details={"refusal": result.model_dump(mode="json", by_alias=True)},
        )
    emit(
        args,
        result,
        lambda: f"{result.plan_id} is executable: approved digest {result.digest} "
        f"by {args.by} at {decided_at}",
    )
    return 0

