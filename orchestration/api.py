"""The facade: ``create_orchestration(...) -> Orchestration``, the one handle a host holds.

Construction is the assembly point: it takes the store, the tier-C allowlist and the predicate
cells, and awaits every cell's ``load()`` so a missing dependency fails at boot rather than in
the middle of a freeze. Everything public is then reached through the object:

* ``freeze_plan`` folds the plan, validates it, and moves it ``editable → reviewable`` at the
  digest it validated, only when no blocking issue remains; it returns ``{ok, issues}`` either
  way, never raising for a plan's content.
* ``approve_plan`` is the permission gate. It refuses, before writing anything, unless the plan
  is ``reviewable`` and the record names this plan, its current digest, and its canonical
  authority set (as a set: any order, no duplicates); then it moves ``reviewable →
  executable`` with the record (its set in canonical order) in one compare-and-set. Each
  refusal is a value with the contract's wire reason and a finer cause.
* ``render``, ``outline``, ``slice`` and ``raw`` are the reading side: what an operator reads
  before approving, and what a model reads while editing. ``render(..., view="as_executed")``
  is what the plan's run did, from a projection the caller passes or from the run log the
  optional ``runs`` reader returns (the facade itself never talks to Temporal).
* ``instantiate`` mints a new editable plan from a registered template (templates are checked
  once, here at construction, so a bad one fails boot); ``tools(tier)`` forges the tools a
  model authors plans with. No tool of any tier approves: approval is an operator's act.

The structured predicate cell is always wired (it is the one cell every deployment has); cells
passed in merge with it by id.

The class keeps one seam per concern (inputs, folding, validation, transitions) so running
plans can be added beside these without touching them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from orchestration.plan.authoring import PlanAuthor, new_plan_id
from orchestration.plan.ops import FoldResult
from orchestration.plan.raw import Revision, raw_diff, raw_ops
from orchestration.predicates.structured import StructuredCell
from orchestration.review.approval import (
    ApprovalOk,
    ApprovalRefused,
    ApprovalResult,
    approval_record,
    authority_set,
    canonical_record,
    check_approval,
)
from orchestration.review.outline import PlanOutline, PlanSlice, plan_outline, plan_slice
from orchestration.review.render import Audience, RenderView, render_diff, render_plan
from orchestration.review.validation import (
    FreezeInputs,
    FreezeOverrides,
    blocking,
    has_blocking,
    merge_evaluators,
    resolve_inputs,
    validate,
)
from orchestration.run.host import InProcessRuns, RunHost
from orchestration.run.log import LogEntry
from orchestration.run.work import FrameWork
from orchestration.store.base import PlanStore, TransitionRefused, TransitionRequest
from orchestration.templates import (
    InstantiateOk,
    InstantiateRefused,
    InvalidTemplateError,
    PlanTemplate,
    TemplateSummary,
    instantiate_template,
    validate_template,
)
from orchestration.tools.allowlist import ToolAllowlist
from orchestration.tools.contracts import InvocableTools, PredicateEvaluator
from orchestration.tools.toolbox import Toolbox
from orchestration.types import (
    ApprovalRecord,
    PlanDiff,
    PlanIssue,
    PlanOp,
    RawPlanView,
    RunEvent,
    RunProjection,
    WireModel,
)

if TYPE_CHECKING:
    from orchestration.forge import ForgeTool, Tier

__all__ = [
    "STALE_SEARCH_LIMIT",
    "ApprovalOk",
    "ApprovalRefused",
    "ApprovalResult",
    "FreezeInputs",
    "FreezeOverrides",
    "FreezeResult",
    "Orchestration",
    "RawViews",
    "ToolAllowlist",
    "approval_record",
    "authority_set",
    "create_orchestration",
    "new_plan_id",
]

STALE_SEARCH_LIMIT = 64
"""How many earlier revisions an approval's digest is compared with to call it stale."""


class FreezeResult(WireModel):
    """What a freeze did: ``ok`` when the plan is now ``reviewable``; every issue either way."""

    ok: bool
    issues: tuple[PlanIssue, ...] = ()


class RawViews:
    """The structured views of one store, for diff-rendering UIs and tools."""

    def __init__(self, store: PlanStore) -> None:
        self._store = store

    async def plan(self, plan_id: str, revision: int | None = None) -> RawPlanView:
        """The plan folded at ``revision`` (default: current), with its provenance."""
        return (await self._store.fold(plan_id, revision=revision)).view

    async def ops(
        self,
        plan_id: str,
        *,
        through_revision: int | None = None,
        since_lamport: int | None = None,
    ) -> list[PlanOp]:
        """The op log in append order."""
        return await raw_ops(
            self._store, plan_id, through_revision=through_revision, since_lamport=since_lamport
        )

    async def diff(self, plan_id: str, a: Revision, b: Revision = "current") -> PlanDiff:
        """The structural diff from revision ``a`` to ``b``."""
        return await raw_diff(self._store, plan_id, a, b)


async def create_orchestration(
    *,
    store: PlanStore,
    invocable: InvocableTools,
    evaluators: Sequence[PredicateEvaluator] = (),
    templates: Sequence[PlanTemplate] = (),
    strict_authority: bool = False,
    runs: RunHost | None = None,
) -> Orchestration:
    """Assemble the facade, loading every cell and checking every template first.

    Args:
        store: Where plans live.
        invocable: The tier-C allowlist (and each tool's declared return).
        evaluators: The predicate cells plans may name, merged by id with the structured cell
            (which is always wired; a cell with id ``structured`` replaces it).
        templates: The plan shapes a model may instantiate; each is checked here (see
            :func:`~orchestration.templates.validate_template`).
        runs: Where runs happen: the in-process host by default (over ``invocable`` when it is
            a :class:`~orchestration.tools.toolbox.Toolbox`, and these cells), or a client of
            Temporal workers (``workers.runs.TemporalRuns``).
        strict_authority: Refuse to freeze a call that claims no authority. Off by default:
            the contract allows ``authority: []``, so freeze reports ``missing_authority`` as
            an advisory and the operator view marks such a call as potentially mutating. On,
            the same issue is blocking (templates are checked with the same policy). No
            freeze can override it.

    Raises:
        InvalidTemplateError: a template fails its checks (all its issues are listed), or
            two templates share an id.
        Exception: whatever a cell's ``load()`` raises, so a missing dependency fails here.

    """
    cells = merge_evaluators((StructuredCell(),), evaluators)
    for cell in cells:
        await cell.load()
    inputs = FreezeInputs(invocable=invocable, evaluators=cells, strict_authority=strict_authority)
    registry: dict[str, PlanTemplate] = {}
    for template in templates:
        if template.id in registry:
            raise InvalidTemplateError(
                template.id,
                (
                    blocking(
                        "duplicate_template_id",
                        f'Two templates have id "{template.id}"; a model names a template by '
                        "its id, so give each a distinct one.",
                    ),
                ),
            )
        issues = await validate_template(template, inputs)
        if issues:
            raise InvalidTemplateError(template.id, tuple(issues))
        registry[template.id] = template
    return Orchestration(store, inputs, registry, runs=runs)


class Orchestration:
    """The public surface over one store; build it with :func:`create_orchestration`."""

    def __init__(
        self,
        store: PlanStore,
        inputs: FreezeInputs,
        templates: Mapping[str, PlanTemplate] | None = None,
        *,
        runs: RunHost | None = None,
    ) -> None:
        self._store = store
        self._inputs = inputs
        self._templates: dict[str, PlanTemplate] = dict(templates or {})
        self.raw = RawViews(store)
        invocable = inputs.invocable
        toolbox = invocable if isinstance(invocable, Toolbox) else None
        self.runs: RunHost = runs or InProcessRuns(
            store, FrameWork(toolbox, cells=list(inputs.evaluators))
        )

    @property
    def store(self) -> PlanStore:
        """The backing store, for listing, history and cloning without a second handle."""
        return self._store

    @property
    def inputs(self) -> FreezeInputs:
        """The configured allowlist and cells."""
        return self._inputs

    # -- runs --------------------------------------------------------------------------------

    async def execute_plan(
        self,
        plan_id: str,
        run_input: Mapping[str, Any] | None = None,
        *,
        resume_run_id: str | None = None,
    ) -> RunProjection:
        """Run (or resume) the plan's one run to its end; the projection of its whole log.

        Everything that can refuse is checked before the run is claimed (the plan's state, its
        approval, the run input), so a refusal leaves the plan runnable. Host-specific options
        (per-run cells and ``on_halt`` in process, ``settings`` on Temporal) are on
        :attr:`runs` itself.

        Raises:
            RunRefusedError: with the code saying why nothing ran.

        """
        return await self.runs.execute(plan_id, dict(run_input or {}), resume_run_id=resume_run_id)

    async def start_plan(
        self,
        plan_id: str,
        run_input: Mapping[str, Any] | None = None,
        *,
        resume_run_id: str | None = None,
    ) -> Any:
        """Start (or resume) the plan's one run and return the host's handle at once.

        In process, a :class:`~orchestration.run.host.LocalRun` (stop, cancel, resolve, wait);
        on Temporal, the workflow handle.
        """
        return await self.runs.start(plan_id, dict(run_input or {}), resume_run_id=resume_run_id)

    async def run_log(self, plan_id: str) -> list[LogEntry]:
        """The run's compact log as the plan store holds it (the worker mirrors it there)."""
        return await self._store.read_run_log(plan_id)

    async def run_events(self, plan_id: str) -> list[RunEvent]:
        """The run's whole log as the contract's ``RunEvent`` list, as the run host reads it.

        In process that is the store's copy (written ahead); on Temporal, the store's copy
        with the open execution's newest entries read from the workflow.
        """
        return await self.runs.read_events(plan_id)

    async def run_projection(self, plan_id: str) -> RunProjection:
        """``fold_run`` of the run's whole log, as the run host reads it."""
        return await self.runs.projection(plan_id)

    # -- freeze ------------------------------------------------------------------------------

    async def check_plan(
        self,
        plan_id: str,
        inputs: FreezeOverrides | FreezeInputs | None = None,
        *,
        revision: int | None = None,
    ) -> list[PlanIssue]:
        """Every freeze issue of the plan (fold issues first), without changing its state."""
        fold = await self._store.fold(plan_id, revision=revision)
        return await self._validate(fold, inputs)

    async def freeze_plan(
        self, plan_id: str, inputs: FreezeOverrides | FreezeInputs | None = None
    ) -> FreezeResult:
        """Validate the plan and, when nothing blocks, move it ``editable → reviewable``.

        Args:
            plan_id: The plan.
            inputs: Per-freeze overrides: ``invocable`` replaces the configured allowlist,
                ``evaluators`` merge by id. Host-only: see :class:`FreezeOverrides`.

        Returns:
            ``ok`` when the plan is now reviewable at the digest validated; the issues (fold
            issues first, advisory ones included) either way. A plan that moved meanwhile, or
            is not editable, gets a blocking ``transition_rejected`` issue.

        """
        fold = await self._store.fold(plan_id)
        issues = await self._validate(fold, inputs)
        if has_blocking(issues):
            return FreezeResult(ok=False, issues=tuple(issues))
        result = await self._store.transition(
            plan_id,
            TransitionRequest(from_="editable", to="reviewable", expected_digest=fold.view.digest),
        )
        if isinstance(result, TransitionRefused):
            issues.append(_transition_rejected(result))
            return FreezeResult(ok=False, issues=tuple(issues))
        return FreezeResult(ok=True, issues=tuple(issues))

    async def _validate(
        self, fold: FoldResult, inputs: FreezeOverrides | FreezeInputs | None
    ) -> list[PlanIssue]:
        resolved = resolve_inputs(self._inputs, inputs)
        return await validate(fold.view, resolved, fold_issues=fold.issues)

    # -- approve -----------------------------------------------------------------------------

    async def approve_plan(self, plan_id: str, record: ApprovalRecord) -> ApprovalResult:
        """The permission gate: ``reviewable → executable``, bound to the record.

        Refuses before writing anything unless the record names this plan, the plan is
        reviewable, the record's digest is the current digest and its authority set is the
        canonical set (compared as a set: any order, no duplicates). A refusal carries the
        contract's wire ``reason`` (``digest_mismatch`` or ``state_mismatch``) and a finer
        ``cause`` (``wrong_plan``, ``not_reviewable``, ``stale_digest`` for an earlier
        revision's digest, ``unknown_digest``, ``authority_duplicate``, ``authority_mismatch``).
        The record is stored with its set in canonical order. The transition itself is a
        compare-and-set on the digest, so a plan that changed between the check and the write
        is refused too (cause ``transition_rejected``).

        Raises:
            PlanNotFoundError: no plan has that id.

        """
        state = await self._store.read_state(plan_id)
        view = (await self._store.fold(plan_id)).view
        stale = False
        if (
            record.plan_id == plan_id
            and state.state == "reviewable"
            and record.digest != view.digest
        ):
            stale = await self._is_earlier_digest(plan_id, record.digest, view.revision)
        refusal = check_approval(plan_id, state.state, view, record, stale=stale)
        if refusal is not None:
            return refusal
        result = await self._store.transition(
            plan_id,
            TransitionRequest(
                from_="reviewable",
                to="executable",
                expected_digest=view.digest,
                approval=canonical_record(record),
            ),
        )
        if isinstance(result, TransitionRefused):
            issue = _transition_rejected(result)
            return ApprovalRefused(
                reason="state_mismatch"
                if result.reason in ("state_mismatch", "illegal_transition")
                else "digest_mismatch",
                cause="transition_rejected",
                message=issue.message,
                actual=result.actual,
            )
        return ApprovalOk(
            plan_id=plan_id,
            digest=view.digest,
            revision=result.revision,
            approval=canonical_record(record),
        )

    async def _is_earlier_digest(self, plan_id: str, digest: str, revision: int) -> bool:
        lowest = max(0, revision - STALE_SEARCH_LIMIT)
        for earlier in range(revision - 1, lowest - 1, -1):
            if (await self._store.fold(plan_id, revision=earlier)).view.digest == digest:
                return True
        return False

    # -- templates and tools ---------------------------------------------------------------

    def templates(self) -> tuple[TemplateSummary, ...]:
        """The registered templates as a model sees them: id, summary, params to fill."""
        return tuple(template.summarize() for template in self._templates.values())

    def template(self, template_id: str) -> PlanTemplate | None:
        """The registered template with that id, or ``None``."""
        return self._templates.get(template_id)

    async def instantiate(
        self,
        template_id: str,
        args: Mapping[str, Any],
        *,
        actor_id: str = "orchestration",
        plan_id: str | None = None,
        label: str | None = None,
    ) -> InstantiateOk | InstantiateRefused:
        """Mint a new ``editable`` plan from a registered template, ``args`` in its holes.

        Failure is a value a model can read: ``unknown_template`` (naming the registered ids),
        ``invalid_args`` (every problem, each naming the fix) or ``duplicate_id`` (only when
        ``plan_id`` is given). On success ``issues`` are the new plan's freeze issues.

        Args:
            template_id: The template's id.
            args: One argument per declared param (no others).
            actor_id: Who the minted ops are attributed to.
            plan_id: The new plan's id (default: a fresh ``plan-<hex>``).
            label: Its listing label (default: the template's summary).

        """
        template = self._templates.get(template_id)
        if template is None:
            known = ", ".join(f'"{t}"' for t in self._templates) or "(none)"
            return InstantiateRefused(
                reason="unknown_template",
                detail=f'No template registered with id "{template_id}". Registered templates: '
                f"{known}.",
            )
        result = await instantiate_template(
            self._store,
            template,
            args,
            author=PlanAuthor(actor_id),
            plan_id=plan_id or new_plan_id(),
            label=label,
        )
        if isinstance(result, InstantiateRefused):
            return result
        issues = await self.check_plan(result.plan_id)
        return result.model_copy(update={"issues": tuple(issues)})

    def tools(self, tier: Tier, *, actor_id: str = "orchestration") -> dict[str, ForgeTool]:
        """The forge: the tools a model authors plans with, keyed by name.

        ``front`` withholds graph mechanics (templates, outlines, slices, submitting for
        review); ``authoring`` exposes them. Every refusal is a value carrying a code and a
        fix. No tool of either tier approves a plan.

        Args:
            tier: ``"front"`` or ``"authoring"``.
            actor_id: Who the ops the tools mint are attributed to.

        """
        from orchestration.forge import forge_tools

        return forge_tools(self, tier, actor_id=actor_id)

    # -- read --------------------------------------------------------------------------------

    async def render(
        self,
        plan_id: str,
        *,
        audience: Audience = "operator",
        revision: int | None = None,
        with_issues: bool = True,
        view: RenderView = "as_planned",
        run: RunProjection | None = None,
    ) -> str:
        """The plan as prose (see :func:`~orchestration.review.render.render_plan`).

        ``as_planned`` (the default) lists the freeze issues too (unless ``with_issues`` is
        false). ``as_executed`` shows what the plan's run did: from ``run`` when given, else
        from the log the ``runs`` reader returns; it lists no issues (the plan ran).

        Raises:
            PlanNotFoundError: no plan has that id.
            RunsUnavailableError: ``as_executed`` with neither ``run`` nor a reader.
            RunRefusedError: ``run_not_found`` from the reader when the plan never ran.

        """
        fold = await self._store.fold(plan_id, revision=revision)
        if view == "as_executed":
            projection = run if run is not None else await self.run_projection(plan_id)
            return render_plan(
                fold.view,
                audience,
                view="as_executed",
                run=projection,
                short_tools=self.short_tools(),
            )
        issues = await self._validate(fold, None) if with_issues else None
        return render_plan(fold.view, audience, issues, short_tools=self.short_tools())

    def short_tools(self) -> tuple[str, ...]:
        """The configured toolbox's ``short`` tools (none for a plain allowlist)."""
        invocable = self._inputs.invocable
        return invocable.short_tools() if isinstance(invocable, Toolbox) else ()

    async def render_diff(self, plan_id: str, a: Revision, b: Revision = "current") -> str:
        """What changed between two revisions, as prose for re-review."""
        return render_diff(await self.raw.diff(plan_id, a, b))

    async def outline(self, plan_id: str) -> PlanOutline:
        """One flat level: phases with verbatim node ids, tools and issue counts."""
        state = await self._store.read_state(plan_id)
        fold = await self._store.fold(plan_id)
        issues = await self._validate(fold, None)
        return plan_outline(fold.view, state.state, issues)

    async def slice(
        self, plan_id: str, *, phase: str | None = None, node: str | None = None
    ) -> PlanSlice:
        """One phase's nodes (or one node) in full, with boundary ids and their issues.

        Raises:
            UnknownSliceError: the phase or node does not exist (the message lists valid ones).

        """
        fold = await self._store.fold(plan_id)
        issues = await self._validate(fold, None)
        return plan_slice(fold.view, phase=phase, node=node, issues=issues)


_REJECTION_FIX: dict[str, str] = {
    "state_mismatch": "",
    "digest_mismatch": "the plan changed while it was being checked; re-read it and retry",
    "illegal_transition": "that lifecycle move is not allowed; plans only move forward",
    "approval_missing": "an approval record is required for this move",
}


def _transition_rejected(result: TransitionRefused) -> PlanIssue:
    actual = result.actual
    state: Literal["editable", "reviewable", "executable"] | None = (
        actual.state if actual is not None else None
    )
    if result.reason == "state_mismatch" and state is not None:
        fix = {
            "editable": "it is editable again or was never frozen; freeze it first",
            "reviewable": "it is already frozen (reviewable); render it and approve it, or "
            "clone it to edit",
            "executable": "it is already approved and runs at most once; clone it to change it",
        }[state]
    else:
        fix = _REJECTION_FIX.get(result.reason, "re-read the plan and retry")
    detail = f" ({result.detail})" if result.detail else ""
    return blocking(
        "transition_rejected",
        f"The store refused the lifecycle move: {result.reason}{detail}; {fix}.",
    )
