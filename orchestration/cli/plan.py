"""``orch plan``: create, edit (apply an op file), read, diff, list and clone plans.

``apply`` reads a JSON array of ops. Each op may omit its identity (``opId``, ``actorId``,
``lamport``, ``at``): the CLI mints it with a :class:`~orchestration.plan.authoring.PlanAuthor`
that has observed the plan's log, so hand-written op files stay short and a later edit always
wins over what the author saw. Values use the tagged JSON form (``{"$ref": {...}}`` reads a
node's output), and the file is read in JSON mode so tags are decoded, never guessed.
"""

from __future__ import annotations

import argparse
import json
import secrets
from typing import Any

from pydantic import TypeAdapter, ValidationError

from orchestration.cli.common import (
    CliError,
    add_json_flag,
    add_store_flag,
    emit,
    load_json_text,
    read_text_file,
    with_store,
)
from orchestration.cli.paging import add_paging_flags, next_page, paged
from orchestration.plan.authoring import PlanAuthor
from orchestration.predicates.structured import AUTHORING_GUIDE
from orchestration.types import PlanOp, PlanSummary, RawPlanView

__all__ = ["register"]

_OPS = TypeAdapter(list[PlanOp])
_IDENTITY = ("opId", "actorId", "lamport", "at")


def register(commands: Any) -> None:
    """Add the ``plan`` group to the top-level subcommands."""
    plan = commands.add_parser("plan", help="author and inspect plans")
    sub = plan.add_subparsers(dest="plan_command", required=True, metavar="COMMAND")

    new = sub.add_parser("new", help="create an empty editable plan")
    new.add_argument("plan_id", nargs="?", help="id to use (default: a fresh plan-<hex>)")
    new.add_argument("--label", help="a human label shown in listings")
    add_store_flag(new)
    add_json_flag(new)
    new.set_defaults(handler=_new)

    apply = sub.add_parser(
        "apply",
        help="append the ops of a JSON file (or - for stdin)",
        description="Append the ops of a JSON file (or - for stdin) to an editable plan.",
        epilog="A branch or select on the structured cell takes a predicate: "
        + AUTHORING_GUIDE.replace("%", "%%"),
    )
    apply.add_argument("plan_id")
    apply.add_argument("ops_file", help="JSON array of ops; identity fields may be omitted")
    apply.add_argument("--actor", default="cli", help="actor id for minted ops")
    apply.add_argument(
        "--expected-revision", type=int, help="refuse if the plan moved past this revision"
    )
    add_store_flag(apply)
    add_json_flag(apply)
    apply.set_defaults(handler=_apply)

    show = sub.add_parser("show", help="the folded plan at a revision, with fold issues")
    show.add_argument("plan_id")
    show.add_argument("--revision", type=int, help="fold the first N ops (default: all)")
    add_store_flag(show)
    add_json_flag(show)
    show.set_defaults(handler=_show)

    ops = sub.add_parser("ops", help="the raw op log in append order")
    ops.add_argument("plan_id")
    ops.add_argument(
        "--through-revision",
        type=int,
        metavar="N",
        help="only the first N ops in append order (the ops revision N was folded from)",
    )
    ops.add_argument(
        "--since-lamport",
        type=int,
        metavar="L",
        help="only ops whose Lamport time is greater than L (what changed since an op you saw)",
    )
    add_store_flag(ops)
    add_json_flag(ops)
    ops.set_defaults(handler=_ops)

    diff = sub.add_parser("diff", help="structural diff between two revisions")
    diff.add_argument("plan_id")
    diff.add_argument("from_revision", help="a revision number, or 'current'")
    diff.add_argument("to_revision", nargs="?", default="current")
    add_store_flag(diff)
    add_json_flag(diff)
    diff.set_defaults(handler=_diff)

    listing = sub.add_parser(
        "list",
        help="plan summaries in creation order; a plan that ran says how its run ended",
    )
    listing.add_argument("--state", choices=["editable", "reviewable", "executable"])
    add_paging_flags(listing, "plans")
    add_store_flag(listing)
    add_json_flag(listing)
    listing.set_defaults(handler=_list)

    clone = sub.add_parser("clone", help="copy a plan into a new editable plan")
    clone.add_argument("source_id")
    clone.add_argument("new_id", nargs="?")
    clone.add_argument("--revision", type=int, help="clone the first N ops (default: all)")
    add_store_flag(clone)
    add_json_flag(clone)
    clone.set_defaults(handler=_clone)

    graph = sub.add_parser(
        "graph",
        help="draw the plan as Mermaid, DOT or SVG",
        description="Draw the plan: node kinds by shape, edge handles as labels (unlabelled: "
        "always; dashed: error), joins with the arrivals they wait for. `orch run graph` "
        "colours the same picture by a run.",
    )
    graph.add_argument("plan_id")
    graph.add_argument("--format", choices=["mermaid", "dot", "svg"], default="mermaid")
    graph.add_argument("--output", "-o", metavar="PATH", help="write to PATH instead of stdout")
    graph.add_argument("--revision", type=int, help="draw the first N ops (default: all)")
    add_store_flag(graph)
    add_json_flag(graph)
    graph.set_defaults(handler=_graph)

    try:
        from orchestration.cli import review
    except ImportError:  # pragma: no cover - the review commands ship with the package
        return
    review.register(sub)


def _fresh_id() -> str:
    return f"plan-{secrets.token_hex(4)}"


def _new(args: argparse.Namespace) -> int:
    async def go(store: Any) -> Any:
        return await store.create_plan(args.plan_id or _fresh_id(), label=args.label)

    result = with_store(args, go)
    if not result.ok:
        raise CliError(result.reason, "a plan with that id exists; pick another id")
    emit(args, result, lambda: f"created {result.plan_id} (revision 0, digest {result.digest})")
    return 0


def read_op_file(path: str, author: PlanAuthor) -> list[PlanOp]:
    """Parse an op file, minting missing identity fields with ``author``."""
    raw = load_json_text(read_text_file(path, "the op file"), path, "bad_ops_file")
    if not isinstance(raw, list) or not all(isinstance(op, dict) for op in raw):
        raise CliError("bad_ops_file", f"{path} must hold a JSON array of op objects")
    for op in raw:
        if any(key not in op for key in _IDENTITY):
            minted = author._identity()  # noqa: SLF001 - the CLI is the author here
            op.setdefault("opId", minted["op_id"])
            op.setdefault("actorId", minted["actor_id"])
            op.setdefault("lamport", minted["lamport"])
            op.setdefault("at", minted["at"])
    try:
        return _OPS.validate_json(json.dumps(raw))
    except RecursionError as exc:
        raise CliError(
            "bad_ops_file",
            f"{path} holds values nested too deeply to read — keep them under a few hundred "
            "levels of nesting",
        ) from exc
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise CliError(
            "invalid_op",
            f"{path}: op {where}: {first['msg']}; see `orch schema` for the op shapes",
        ) from exc


def _apply(args: argparse.Namespace) -> int:
    async def go(store: Any) -> Any:
        existing = await store.read_ops(args.plan_id)
        author = PlanAuthor(args.actor).observe(existing)
        ops = read_op_file(args.ops_file, author)
        return await store.append_ops(args.plan_id, ops, expected_revision=args.expected_revision)

    result = with_store(args, go)
    if not result.ok:
        fixes = {
            "not_editable": "the plan is frozen; clone it (`orch plan clone`) and edit the clone",
            "revision_moved": "the plan moved; re-read it (`orch plan show`) and re-apply",
            "conflicting_op": "an opId in the file is already used by a different op; rename it",
            "invalid_op": result.detail,
        }
        raise CliError(
            result.reason,
            f"{fixes[result.reason]} (state {result.actual.state}, "
            f"revision {result.actual.revision})",
        )
    emit(args, result, lambda: f"revision {result.revision}, digest {result.digest}")
    return 0


def describe_view(view: RawPlanView) -> str:
    """A compact text listing of a view: nodes, edges, bounds, digest."""
    lines = [f"plan {view.plan_id}  revision {view.revision}  digest {view.digest}"]
    lines.append(f"nodes ({len(view.nodes)}):")
    for node in view.nodes:
        phase = f" [{node.phase}]" if node.phase else ""
        detail = ""
        tool = getattr(node.definition, "tool", None)
        if tool is not None:
            detail = f"  tool={tool}"
        lines.append(f"  {node.id:<24} {node.kind:<9}{phase}{detail}")
    lines.append(f"edges ({len(view.edges)}):")
    for edge in view.edges:
        lines.append(f"  {edge.id:<24} {edge.from_} → {edge.to}  ({edge.handle})")
    b = view.bounds
    lines.append(
        f"bounds: maxNodes {b.max_nodes}, maxEdges {b.max_edges}, maxSteps {b.max_steps}, "
        f"maxConcurrentFrames {b.max_concurrent_frames}, maxEncodedBytes {b.max_encoded_bytes}"
    )
    return "\n".join(lines)


def _show(args: argparse.Namespace) -> int:
    async def go(store: Any) -> Any:
        return await store.fold(args.plan_id, revision=args.revision)

    view, issues = with_store(args, go)

    def text() -> str:
        out = describe_view(view)
        if issues:
            out += "\nfold issues:\n" + "\n".join(
                f"  [{i.severity}] {i.code}: {i.message}" for i in issues
            )
        return out

    emit(args, {"view": view, "issues": issues}, text)
    return 0


def _ops(args: argparse.Namespace) -> int:
    async def go(store: Any) -> Any:
        return await store.read_ops(
            args.plan_id,
            through_revision=args.through_revision,
            since_lamport=args.since_lamport,
        )

    ops = with_store(args, go)
    emit(
        args,
        ops,
        lambda: "\n".join(
            f"{op.lamport:>6} {op.actor_id:<12} {op.op:<20} {op.op_id}" for op in ops
        ),
    )
    return 0


def _revision(text: str) -> int | str:
    if text == "current":
        return text
    try:
        return int(text)
    except ValueError as exc:
        raise CliError("bad_revision", f"{text!r} is not a revision number or 'current'") from exc


def _diff(args: argparse.Namespace) -> int:
    from orchestration.plan.raw import raw_diff

    async def go(store: Any) -> Any:
        return await raw_diff(
            store, args.plan_id, _revision(args.from_revision), _revision(args.to_revision)
        )

    diff = with_store(args, go)

    def text() -> str:
        from orchestration.review.render import render_diff

        return render_diff(diff)

    emit(args, diff, text)
    return 0


def _list(args: argparse.Namespace) -> int:
    async def go(store: Any) -> tuple[list[PlanSummary], bool]:
        async def fetch(limit: int, after: str | None) -> list[PlanSummary]:
            plans: list[PlanSummary] = await store.list_plans(
                state=args.state, limit=limit, after=after
            )
            return plans

        return await paged(args, fetch, cursors="a plan")

    plans, more = with_store(args, go)
    cursor = plans[-1].plan_id if more else None

    def text() -> str:
        lines = [
            f"{p.plan_id:<20} {_standing(p):<11} rev {p.revision:<5} nodes {p.node_count:<4} "
            f"{p.digest[:12]}  {p.label or ''}".rstrip()
            for p in plans
        ]
        if cursor is not None:
            state = ["--state", args.state] if args.state else []
            lines.append(next_page(["orch", "plan", "list", *state], args, cursor))
        return "\n".join(lines) or "(no plans)"

    emit(args, {"plans": plans, "next": cursor}, text)
    return 0


def _standing(plan: PlanSummary) -> str:
    """What a listing says of a plan: its state, or, once it has a run, how the run ended."""
    if plan.run_id is None:
        return plan.state
    return plan.run_outcome or "running"


def _clone(args: argparse.Namespace) -> int:
    async def go(store: Any) -> Any:
        return await store.clone_plan(
            args.source_id, args.new_id or _fresh_id(), at_revision=args.revision
        )

    result = with_store(args, go)
    if not result.ok:
        fixes = {
            "source_missing": "no plan has that id; see `orch plan list`",
            "duplicate_id": "a plan with the new id exists; pick another id",
            "revision_missing": "the source never reached that revision",
        }
        raise CliError(result.reason, fixes[result.reason])
    emit(
        args, result, lambda: f"cloned into {result.plan_id} (editable, revision {result.revision})"
    )
    return 0


def _graph(args: argparse.Namespace) -> int:
    from orchestration.cli.pictures import draw

    async def go(store: Any) -> Any:
        return (await store.fold(args.plan_id, revision=args.revision)).view

    return draw(args, with_store(args, go), None)
