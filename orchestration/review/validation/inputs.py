"""What freeze needs that the plan cannot supply: the tool allowlist and the predicate cells.

Construction holds the defaults; a freeze may override them. The override rule is stated once,
here: an ``invocable`` override REPLACES the configured allowlist (two allowlists are one answer
to "what may a staged call invoke", and intersecting them silently would give a set nobody
wrote), while ``evaluators`` MERGE by cell id (a per-freeze cell replaces the configured cell
with the same id; the others stay), because cells with different ids are additive.
``strict_authority`` is a deployment's policy, set at construction: no freeze overrides it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from orchestration.tools.contracts import InvocableTools, PredicateEvaluator

__all__ = ["FreezeInputs", "FreezeOverrides", "merge_evaluators", "resolve_inputs"]


@dataclass(frozen=True)
class FreezeInputs:
    """The fully resolved inputs of :func:`~orchestration.review.validation.validate`.

    Attributes:
        invocable: The tier-C allowlist, and each tool's declared return.
        evaluators: The wired predicate cells; a branch or select naming another is refused.
        strict_authority: Whether a call that claims no authority refuses the freeze. Off by
            default: ``missing_authority`` is then advisory (the contract allows such a call,
            and the operator view marks it as potentially mutating). A deployment that wants
            every call to state what it may do turns it on at construction.

    """

    invocable: InvocableTools
    evaluators: tuple[PredicateEvaluator, ...] = field(default=())
    strict_authority: bool = False


@dataclass(frozen=True)
class FreezeOverrides:
    """A partial :class:`FreezeInputs`: what one freeze changes from the configured defaults.

    Attributes:
        invocable: Replaces the configured allowlist wholesale when given. A host-only power:
            a wider allowlist here lets a plan naming a tool outside the assembly's reach
            ``executable``, so never pass one on behalf of anything less trusted.
        evaluators: Merged into the configured cells by id.

    """

    invocable: InvocableTools | None = None
    evaluators: tuple[PredicateEvaluator, ...] = field(default=())


def merge_evaluators(
    base: Sequence[PredicateEvaluator], extra: Sequence[PredicateEvaluator]
) -> tuple[PredicateEvaluator, ...]:
    """Merge cells by id: ``extra`` replaces a same-id cell in place, new ids are appended."""
    merged: dict[str, PredicateEvaluator] = {}
    for cell in (*base, *extra):
        merged[cell.id] = cell
    return tuple(merged.values())


def resolve_inputs(
    base: FreezeInputs, override: FreezeOverrides | FreezeInputs | None
) -> FreezeInputs:
    """Apply ``override`` to ``base`` with the rule in the module docstring."""
    if override is None:
        return base
    return FreezeInputs(
        invocable=override.invocable if override.invocable is not None else base.invocable,
        evaluators=merge_evaluators(base.evaluators, override.evaluators),
        strict_authority=base.strict_authority,
    )
