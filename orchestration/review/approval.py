"""Approval: the canonical authority set, the operator's record, and the checks that bind them.

Approval IS the ``reviewable → executable`` transition, so "approved" and "executable" are one
fact. It binds two things:

* the **digest**, which is lossless: two plans that differ in any staged value differ here, so an
  approval cannot authorise content that was never rendered, and a later revision never
  inherits an approval;
* the **authority set**: the union of the claims of every call reachable from the entry,
  deduplicated and sorted by (capability, scope, verb) comparing UTF-16 code units (the
  contract's string order). A record's set is compared with it **as a set**: any order is
  accepted, a claim listed twice is refused (a set holds each claim once), and a claim missing
  or added is refused. The record that is stored holds the canonical sorted form, so stored
  records stay byte-comparable and anyone can re-check one.

A refusal is a value shaped like the contract's ``TransitionResult`` refusal: ``reason`` is
one of the contract's wire reasons (``digest_mismatch`` for a record naming another plan, a
digest that is not the current one, or an authority set that is not the computed one;
``state_mismatch`` when the plan is not ``reviewable``), and ``cause`` beside it says which
(``wrong_plan``, ``stale_digest``, ``authority_mismatch``, ...), so a client written against
the contract branches on ``reason`` and a person reads ``cause`` and ``message``. A denial is
never recorded: it is the absence of a record. No refusal touches the store.

:func:`authority_refusal` is the one comparison of a record's authority set with a plan: the
facade's gate and the worker's deviation check both call it, so they cannot disagree.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from orchestration.plan.graph import PlanGraph, reachable
from orchestration.types import (
    ApprovalRecord,
    AuthorityClaim,
    CallDefinition,
    PlanState,
    RawPlanView,
    StateDigest,
    WireModel,
)

__all__ = [
    "ApprovalCause",
    "ApprovalOk",
    "ApprovalReason",
    "ApprovalRefused",
    "ApprovalResult",
    "AuthorityRefusal",
    "approval_record",
    "authority_refusal",
    "authority_set",
    "canonical_record",
    "check_approval",
    "claim_key",
    "describe_claim",
]

ApprovalReason = Literal["digest_mismatch", "state_mismatch"]
"""The contract's wire reasons for a refused approval."""

ApprovalCause = Literal[
    "wrong_plan",
    "not_reviewable",
    "stale_digest",
    "unknown_digest",
    "authority_duplicate",
    "authority_mismatch",
    "transition_rejected",
]
"""Which check refused, beside the wire reason:

* ``wrong_plan`` (``digest_mismatch``): the record names another plan;
* ``not_reviewable`` (``state_mismatch``): the plan is editable or already executable;
* ``stale_digest`` (``digest_mismatch``): the record names an earlier revision's digest;
* ``unknown_digest`` (``digest_mismatch``): a digest the plan has not had recently (mistyped);
* ``authority_duplicate`` (``digest_mismatch``): the record lists a claim more than once;
* ``authority_mismatch`` (``digest_mismatch``): claims are missing or added;
* ``transition_rejected`` (the store's reason): the plan moved between the check and the write.
"""


class ApprovalOk(WireModel):
    """The plan is ``executable``, bound to ``digest`` and the record's authority set.

    ``approval`` is the record as stored (its authority set canonical): what a service
    starting the run from another SDK passes as ``PlanRunInput.approval``.
    """

    ok: Literal[True] = True
    plan_id: str
    digest: str
    revision: int
    approval: ApprovalRecord


class ApprovalRefused(WireModel):
    """Why an approval was refused; nothing was written.

    Attributes:
        reason: The contract's wire reason: ``digest_mismatch`` or ``state_mismatch``.
        cause: The finer, stable cause (see :data:`ApprovalCause`).
        message: What is wrong and what to do.
        actual: The plan's state and digest when it was refused (``None`` only when the store
            refused without saying).

    """

    ok: Literal[False] = False
    reason: ApprovalReason
    cause: ApprovalCause
    message: str
    actual: StateDigest | None = None


ApprovalResult = ApprovalOk | ApprovalRefused


@dataclass(frozen=True)
class AuthorityRefusal:
    """Why a record's authority set is not the plan's: a stable ``cause`` and a ``message``.

    Attributes:
        cause: ``authority_duplicate`` or ``authority_mismatch``.
        message: Names the offending claims and the fix.

    """

    cause: Literal["authority_duplicate", "authority_mismatch"]
    message: str


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


def authority_set(
    view: RawPlanView, already_live: Callable[[AuthorityClaim], bool] | None = None
) -> tuple[AuthorityClaim, ...]:
    """The canonical authority set: claims of calls reachable from any entry, deduped, sorted.

    The contract's ``computeAuthoritySet(view, alreadyLive?)``. Unreachable calls never run, so
    their claims are not asked for; claims are copied to ``{capability, scope, verb}``.

    Args:
        view: The plan.
        already_live: Answers whether a claim is already granted where the plan will run
            (a standing grant the operator need not be asked for again); such claims are left
            out. Use it to show an operator what is *new* in a plan. An approval record always
            binds the whole set (``already_live`` omitted): the approval is what binds every
            claim a plan makes, and the worker re-checks the whole set.

    """
    graph = PlanGraph.from_view(view)
    live = reachable(graph, (i for i, kind in enumerate(graph.kinds) if kind == "entry"))
    claims: dict[tuple[bytes, bytes, bytes], AuthorityClaim] = {}
    for index, node in enumerate(view.nodes):
        if not live[index] or not isinstance(node.definition, CallDefinition):
            continue
        for claim in node.definition.authority:
            if already_live is not None and already_live(claim):
                continue
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


def canonical_record(record: ApprovalRecord) -> ApprovalRecord:
    """``record`` with its authority set in the canonical sorted order (what a store keeps).

    Only the order changes: a record whose set holds a duplicate is refused before it is
    stored, so sorting never hides one. A signature stays valid, because the signed message is
    computed over the canonical order too (:func:`orchestration.review.signing.approval_message`).
    """
    ordered = tuple(sorted(record.authority_set, key=claim_key))
    if ordered == tuple(record.authority_set):
        return record
    return record.model_copy(update={"authority_set": ordered})


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
            (the caller knows the history; a stale digest gets its own cause).

    Checks, in order: the plan id, the state, the digest, then the authority set (see
    :func:`authority_refusal`). Each refusal carries the contract's wire ``reason`` and its
    ``cause`` (see :data:`ApprovalCause`).

    """
    actual = StateDigest(state=state, digest=view.digest)

    def refuse(reason: ApprovalReason, cause: ApprovalCause, message: str) -> ApprovalRefused:
        return ApprovalRefused(reason=reason, cause=cause, message=message, actual=actual)

    if record.plan_id != plan_id:
        return refuse(
            "digest_mismatch",
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
            "state_mismatch",
            "not_reviewable",
            f'Plan "{plan_id}" is {state}, not reviewable, so it cannot be approved; {fix}.',
        )
    if record.digest != view.digest:
        if stale:
            return refuse(
                "digest_mismatch",
                "stale_digest",
                f"The approval names digest {record.digest}, which is an earlier revision of "
                f'plan "{plan_id}"; the plan changed since it was shown. Re-render it and '
                f"approve digest {view.digest} if the current content is acceptable.",
            )
        return refuse(
            "digest_mismatch",
            "unknown_digest",
            f"The approval names digest {record.digest}, but plan \"{plan_id}\" has digest "
            f"{view.digest}; approve only the digest you were shown — re-render the plan and "
            "type its digest exactly.",
        )
    problem = authority_refusal(view, record)
    if problem is not None:
        return refuse("digest_mismatch", problem.cause, problem.message)
    return None


def authority_refusal(view: RawPlanView, record: ApprovalRecord) -> AuthorityRefusal | None:
    """Why ``record``'s authority set is not the canonical set of ``view``, or ``None``.

    The set is compared as a set: any order is accepted; a claim listed twice is refused
    (``authority_duplicate``); a claim the plan makes and the record omits, or one the record
    grants and no reachable call makes, is refused (``authority_mismatch``, naming each).
    This is the one comparison of an approval's authority with a plan, for the approval gate
    and for a worker checking the approval it was handed.
    """
    keys = [claim_key(c) for c in record.authority_set]
    repeated = {k for k in keys if keys.count(k) > 1}
    if repeated:
        names = [describe_claim(c) for c in record.authority_set if claim_key(c) in repeated]
        return AuthorityRefusal(
            "authority_duplicate",
            f"The approval's authority set lists {', '.join(dict.fromkeys(names))} more than "
            "once; an authority set holds each claim once: rebuild the record from the "
            "rendered plan.",
        )
    wanted = {claim_key(c): c for c in authority_set(view)}
    given = set(keys)
    missing = [describe_claim(c) for k, c in wanted.items() if k not in given]
    extra = [describe_claim(c) for c in record.authority_set if claim_key(c) not in wanted]
    if not missing and not extra:
        return None
    parts = []
    if missing:
        parts.append(f"omits {', '.join(missing)}, which the plan's reachable calls claim")
    if extra:
        parts.append(f"grants {', '.join(extra)}, which no reachable call claims")
    return AuthorityRefusal(
        "authority_mismatch",
        f"The approval's authority set {'; it also '.join(parts)}; approve exactly the "
        "authority shown in the rendered plan (in any order).",
    )
