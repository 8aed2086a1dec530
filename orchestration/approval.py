"""Approval: the canonical authority set, the operator's record, and the checks that bind them.

Approval IS the ``reviewable → executable`` transition, so "approved" and "executable" are one
fact. It binds two things, both compared exactly:

* the **digest**, which is lossless: two plans that differ in any staged value differ here, so an
  approval cannot authorise content that was never rendered, and a later revision never
  inherits an approval;
* the **authority set**: the union of the claims of every call reachable from the entry,
  deduplicated and sorted by (capability, scope, verb) comparing UTF-16 code units (the
  contract's string order), so set equality is a byte comparison and a stored record can be
  re-checked by anyone. A record whose set holds a duplicate, misses a claim, adds one, or lists
  them out of canonical order is refused: the operator must have been shown exactly the set the
  plan will exercise.

A denial is never recorded: it is the absence of a record. Every refusal here is a value with
its own stable ``code`` and a message naming the fix; none touches the store.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from orchestration.graph import PlanGraph, reachable
from orchestration.types import (
    ApprovalRecord,
    AuthorityClaim,
    CallDefinition,
    PlanState,
    RawPlanView,
    WireModel,
)

__all__ = [
    "ApprovalOk",
    "ApprovalRefused",
    "ApprovalResult",
    "approval_record",
    "authority_problem",
    "authority_set",
    "check_approval",
    "claim_key",
    "describe_claim",
]


class ApprovalOk(WireModel):
    """The plan is ``executable``, bound to ``digest`` and the record's authority set."""

    ok: Literal[True] = True
    plan_id: str
    digest: str
    revision: int


class ApprovalRefused(WireModel):
    """Why an approval was refused; nothing was written.

    Attributes:
        code: Stable: ``wrong_plan``, ``not_reviewable``, ``stale_digest``, ``digest_mismatch``,
            ``authority_duplicate``, ``authority_missing``, ``authority_extra``,
            ``authority_not_canonical`` or ``transition_rejected``.
        message: What is wrong and what to do.
        state: The plan's state when it was refused.
        digest: The plan's current digest.

    """

    ok: Literal[False] = False
    code: str
    message: str
    state: PlanState | None = None
    digest: str | None = None


ApprovalResult = ApprovalOk | ApprovalRefused


def claim_key(claim: AuthorityClaim) -> tuple[bytes, bytes, bytes]:
    """The canonical sort key: (capability, scope, verb) as UTF-16 code units."""
    return (
        claim.capability.encode("utf-16-be", "surrogatepass"),
        claim.scope.encode("utf-16-be", "surrogatepass"),
        claim.verb.encode("utf-16-be", "surrogatepass"),
    )


def describe_claim(claim: AuthorityClaim) -> str:
    """``capability · scope · verb``, as the operator reads it."""
    return f"{claim.capability} · {claim.scope} · {claim.verb}"


def authority_set(view: RawPlanView) -> tuple[AuthorityClaim, ...]:
    """The canonical authority set: claims of calls reachable from any entry, deduped, sorted.

    Unreachable calls never run, so their claims are not asked for.
    """
    graph = PlanGraph.from_view(view)
    live = reachable(graph, (i for i, kind in enumerate(graph.kinds) if kind == "entry"))
    claims: dict[tuple[bytes, bytes, bytes], AuthorityClaim] = {}
    for index, node in enumerate(view.nodes):
        if not live[index] or not isinstance(node.definition, CallDefinition):
            continue
        for claim in node.definition.authority:
            key = claim_key(claim)
            if key not in claims:
                claims[key] = AuthorityClaim(
                    capability=claim.capability, scope=claim.scope, verb=claim.verb
                )
    return tuple(claims[key] for key in sorted(claims))


def approval_record(view: RawPlanView, decided_by: str, decided_at: str) -> ApprovalRecord:
    """The record an operator signs for exactly this view: its id, digest and canonical set.

    Args:
        view: The plan as rendered to the operator.
        decided_by: Who approves.
        decided_at: When, ISO-8601 (passed in: the core reads no clock).

    """
    return ApprovalRecord(
        plan_id=view.plan_id,
        digest=view.digest,
        authority_set=authority_set(view),
        decided_by=decided_by,
        decided_at=decided_at,
    )


def check_approval(
    plan_id: str,
    state: PlanState,
    view: RawPlanView,
    record: ApprovalRecord,
    *,
    stale: bool = False,
) -> ApprovalRefused | None:
    """Why ``record`` may not approve ``view`` now, or ``None`` when it may.

    Args:
        plan_id: The plan being approved.
        state: Its lifecycle state now.
        view: Its current content.
        record: The operator's decision.
        stale: Whether ``record.digest`` is the digest of an earlier revision of this plan
            (the caller knows the history; a stale digest gets its own code).

    Checks, in order: the plan id, the state, the digest, then the authority set (duplicates,
    missing claims, extra claims, canonical order).

    """

    def refuse(code: str, message: str) -> ApprovalRefused:
        return ApprovalRefused(code=code, message=message, state=state, digest=view.digest)

    if record.plan_id != plan_id:
        return refuse(
            "wrong_plan",
            f'The approval record is for plan "{record.plan_id}", not "{plan_id}"; approve '
            "each plan with a record made for it.",
        )
    if state != "reviewable":
        fix = (
            "freeze it first (`orch plan freeze`), then review and approve"
            if state == "editable"
            else "it is already approved and runs at most once; clone it to run it again"
        )
        return refuse(
            "not_reviewable",
            f'Plan "{plan_id}" is {state}, not reviewable, so it cannot be approved; {fix}.',
        )
    if record.digest != view.digest:
        if stale:
            return refuse(
                "stale_digest",
                f"The approval names digest {record.digest}, which is an earlier revision of "
                f'plan "{plan_id}"; the plan changed since it was shown. Re-render it and '
                f"approve digest {view.digest} if the current content is acceptable.",
            )
        return refuse(
            "digest_mismatch",
            f"The approval names digest {record.digest}, but plan \"{plan_id}\" has digest "
            f"{view.digest}; approve only the digest you were shown — re-render the plan and "
            "type its digest exactly.",
        )
    problem = authority_problem(view, record.authority_set)
    if problem is not None:
        return refuse(*problem)
    return None


def authority_problem(
    view: RawPlanView, granted: Sequence[AuthorityClaim]
) -> tuple[str, str] | None:
    """``(code, message)`` when ``granted`` is not exactly the canonical set of ``view``."""
    canonical = authority_set(view)
    keys = [claim_key(c) for c in granted]
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    if repeated:
        names = [describe_claim(c) for c in granted if claim_key(c) in repeated]
        return (
            "authority_duplicate",
            f"The approval's authority set lists {', '.join(dict.fromkeys(names))} more than "
            "once; an authority set is canonical (each claim once, sorted): rebuild the record "
            "from the rendered plan.",
        )
    wanted = {claim_key(c): c for c in canonical}
    given = set(keys)
    missing = [describe_claim(c) for k, c in wanted.items() if k not in given]
    extra = [describe_claim(c) for c in granted if claim_key(c) not in wanted]
    if missing:
        also = f"; it also grants {', '.join(extra)}, which no call claims" if extra else ""
        return (
            "authority_missing",
            f"The approval's authority set omits {', '.join(missing)}, which the plan's calls "
            f"claim{also}; approve exactly the authority shown in the rendered plan.",
        )
    if extra:
        return (
            "authority_extra",
            f"The approval's authority set grants {', '.join(extra)}, which no reachable call "
            "claims; approve exactly the authority shown in the rendered plan.",
        )
    if keys != sorted(keys):
        return (
            "authority_not_canonical",
            "The approval's authority set holds the right claims in the wrong order; list them "
            "sorted by capability, scope, verb (as authority_set() returns them) so the record "
            "is byte-comparable.",
        )
    return None
