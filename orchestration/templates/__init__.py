"""Plan templates: consumer-defined plan shapes with ``ParamRef`` holes a model fills.

Register templates with ``create_orchestration(templates=[...])``; each is checked once there
(a bad template fails construction with :class:`InvalidTemplateError` listing its issues), and
``Orchestration.instantiate(template_id, args)`` then mints a new editable plan from it.
"""

from orchestration.plan.encoding import ParamRef
from orchestration.templates.checks import validate_template
from orchestration.templates.holes import HOLE_PLACES
from orchestration.templates.instantiate import (
    args_problems,
    describe_param,
    instantiate_template,
)
from orchestration.templates.model import (
    InstantiateOk,
    InstantiateRefused,
    InstantiateResult,
    InvalidTemplateError,
    PlanTemplate,
    TemplateDefinition,
    TemplateNode,
    TemplateSummary,
)
from orchestration.templates.taint import check_hole_declassification

__all__ = [
    "HOLE_PLACES",
    "InstantiateOk",
    "InstantiateRefused",
    "InstantiateResult",
    "InvalidTemplateError",
    "ParamRef",
    "PlanTemplate",
    "TemplateDefinition",
    "TemplateNode",
    "TemplateSummary",
    "args_problems",
    "check_hole_declassification",
    "describe_param",
    "instantiate_template",
    "validate_template",
]
