"""What a plan's calls and reason nodes reach: tools, their shapes, and model providers.

* :mod:`~orchestration.tools.toolbox`: ``Toolbox``, tools registered by name with their
  input and output shapes (the worker runs them; freeze checks calls against them);
* :mod:`~orchestration.tools.allowlist`: ``ToolAllowlist``, names and returns only;
* :mod:`~orchestration.tools.contracts`: the protocols an allowlist, a cell and a tool's
  return implement;
* :mod:`~orchestration.tools.shapes`: argument checks against a tool's input schema;
* :mod:`~orchestration.tools.reasoning`: the ``Reasoner`` protocol a reason node calls;
  :mod:`~orchestration.tools.scripted`: a scripted reasoner for tests and the demo.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orchestration._exports import lazy_exports

if TYPE_CHECKING:
    from orchestration.tools.allowlist import ToolAllowlist
    from orchestration.tools.contracts import InvocableTools, PredicateEvaluator
    from orchestration.tools.reasoning import Reasoner
    from orchestration.tools.scripted import ScriptedReasoner
    from orchestration.tools.toolbox import Toolbox, ToolContext

__all__ = [
    "InvocableTools",
    "PredicateEvaluator",
    "Reasoner",
    "ScriptedReasoner",
    "ToolAllowlist",
    "ToolContext",
    "Toolbox",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "InvocableTools": "contracts",
        "PredicateEvaluator": "contracts",
        "Reasoner": "reasoning",
        "ScriptedReasoner": "scripted",
        "ToolAllowlist": "allowlist",
        "ToolContext": "toolbox",
        "Toolbox": "toolbox",
    },
)
