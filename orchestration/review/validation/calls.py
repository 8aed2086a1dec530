"""Call checks: the tier-C allowlist, required decisions, authority and what a tool returns.

A call is the node kind the whole approval exists to gate, so each must name an allowed tool,
state the decisions that have no safe default (``onMissingValue``, ``replaySafe``,
``onIndeterminate``), and declare output fields only where its tool returns something pathable.

A call that claims no authority (``authority: []``) is allowed by the contract: freeze reports
``missing_authority`` as an advisory naming the node, and the operator view marks the call "no
authority claimed — whether this changes anything is unknown; treat as potentially mutating".
A deployment that wants every call to state what it may do sets ``strict_authority`` at
construction, and the same issue is then blocking.
"""

from __future__ import annotations

from orchestration.review.validation.context import CheckContext
from orchestration.review.validation.issues import advisory, blocking, quote_list
from orchestration.types import CallDefinition, PlanIssue

__all__ = ["check_calls"]


def check_calls(ctx: CheckContext) -> list[PlanIssue]:
    """Every call node, in node order, each check in a fixed order."""
    issues: list[PlanIssue] = []
    invocable = ctx.inputs.invocable
    available: str | None = None
    for node in ctx.view.nodes:
        d = node.definition
        if not isinstance(d, CallDefinition):
            continue
        nid = node.id
        if not invocable.has(d.tool):
            if available is None:
                available = quote_list(sorted(invocable.names()), empty="(no tools are allowed)")
            issues.append(
                blocking(
                    "unknown_tool",
                    f'Call node "{nid}" names tool "{d.tool}", which is not on the allowlist; '
                    f"use one of the available tools: {available}.",
                    node_id=nid,
                )
            )
        if d.on_missing_value is None:
            issues.append(
                blocking(
                    "missing_on_missing_value",
                    f'Call node "{nid}" does not set "onMissingValue"; it is required and has '
                    'no default: set "fail" to fail the call when a reference resolves to '
                    'nothing, or "omit" to drop that argument.',
                    node_id=nid,
                )
            )
        if d.replay_safe is None:
            issues.append(
                blocking(
                    "missing_replay_safe",
                    f'Call node "{nid}" does not set "replaySafe"; it is required and has no '
                    "default: set true only if invoking the tool twice with the same arguments "
                    "is harmless, else false.",
                    node_id=nid,
                )
            )
        if d.on_indeterminate is None:
            issues.append(
                blocking(
                    "missing_on_indeterminate",
                    f'Call node "{nid}" does not set "onIndeterminate"; it is required and has '
                    'no default: set "retry", "halt" (wait for an operator) or "skip" for when '
                    "the call started and its outcome is unknown.",
                    node_id=nid,
                )
            )
        if d.on_indeterminate == "retry" and d.replay_safe is False:
            issues.append(
                blocking(
                    "retry_unsafe_repeat",
                    f'Call node "{nid}" sets onIndeterminate "retry" with replaySafe false — a '
                    "contradiction: it is asserted unsafe to repeat and to be repeated; set "
                    'onIndeterminate to "halt" or "skip", or replaySafe to true if it is.',
                    node_id=nid,
                )
            )
        if not d.authority:
            issues.append(_missing_authority(nid, strict=ctx.inputs.strict_authority))
        returns = invocable.returns(d.tool) if invocable.has(d.tool) else None
        if returns is not None and returns.kind in ("media", "bytes") and d.output:
            issues.append(
                blocking(
                    "media_feeds_fields",
                    f'Call node "{nid}" returns {returns.kind} but declares output fields; '
                    "bytes and media are not pathable, so a field-declaring node cannot "
                    "consume them: remove the output fields.",
                    node_id=nid,
                )
            )
        if d.declassifies:
            declared = {f.path for f in d.output}
            unknown = [p for p in d.declassifies if p not in declared]
            if unknown:
                issues.append(
                    blocking(
                        "undeclared_declassifies",
                        f'Call node "{nid}" declassifies {quote_list(unknown)}, which it does '
                        "not declare as output fields; declassify only declared output fields "
                        f"({quote_list(sorted(declared))}).",
                        node_id=nid,
                    )
                )
    return issues


def _missing_authority(node_id: str, *, strict: bool) -> PlanIssue:
    claim = (
        "add the claims {capability, scope, verb} (verb one of list, read, create, update, "
        "delete) covering what the tool does"
    )
    if strict:
        return blocking(
            "missing_authority",
            f'Call node "{node_id}" claims no authority, and this deployment requires every '
            f"call to state what it may do (strict_authority); {claim}.",
            node_id=node_id,
        )
    return advisory(
        "missing_authority",
        f'Call node "{node_id}" claims no authority, so the operator is told that whether it '
        f"changes anything is unknown and to treat it as potentially mutating; {claim}, so the "
        "approval names what it may do.",
        node_id=node_id,
    )
