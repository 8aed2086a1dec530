r"""An example plan template over the example toolbox (:mod:`workers.example_tools`).

``folder_report`` lists the files of a workspace folder and, when there are at least
``min_files`` of them, writes their names to ``report.txt`` in that folder. Its one param is a
hole in the branch predicate, so a model (or ``orch template instantiate``) fills a number and
never touches the graph. The folder is fixed by the deployment that registers the template:
``ORCH_EXAMPLE_WORKSPACE``, default ``.data/example`` under the working directory.

Try it::

    orch template list --tools workers.example_tools:TOOLBOX \
        --templates workers.example_templates:TEMPLATES
"""

from __future__ import annotations

import os
from pathlib import Path

from orchestration.plan.authoring import claim, ref
from orchestration.plan.encoding import ParamRef
from orchestration.templates import PlanTemplate, TemplateNode
from orchestration.types import CallDefinition, NumberField, PlanEdge, StringField

__all__ = ["TEMPLATES", "WORKSPACE", "folder_report"]

WORKSPACE = str(Path(os.environ.get("ORCH_EXAMPLE_WORKSPACE", ".data/example")).resolve())


def folder_report(workspace: str = WORKSPACE) -> PlanTemplate:
    """The template for ``workspace`` (see the module docstring)."""
    report = f"{workspace}/report.txt"
    return PlanTemplate(
        id="folder_report",
        summary="List a folder's files and, if there are enough, write their names to a report",
        params=(NumberField(path="min_files"),),
        nodes=(
            TemplateNode(id="entry", kind="entry", phase="start"),
            TemplateNode(
                id="scan",
                kind="call",
                phase="gather",
                definition=CallDefinition(
                    tool="files.list",
                    args={"dir": workspace},
                    output=(NumberField(path="count"), StringField(path="names")),
                    authority=(claim("files", workspace, "list"),),
                    replay_safe=True,
                    on_indeterminate="retry",
                    on_missing_value="fail",
                    declassifies=("count", "names"),
                ),
            ),
            TemplateNode(
                id="enough",
                kind="branch",
                phase="decide",
                definition={
                    "evaluator": "structured",
                    "predicate": {
                        "path": "scan:e6:e_scan.count",
                        "op": "gte",
                        "value": ParamRef("min_files"),
                    },
                },
            ),
            TemplateNode(
                id="write_report",
                kind="call",
                phase="report",
                definition=CallDefinition(
                    tool="files.write",
                    args={"path": report, "text": ref("scan", path="names")},
                    output=(StringField(path="path"),),
                    authority=(claim("files", report, "create"),),
                    replay_safe=True,
                    on_indeterminate="retry",
                    on_missing_value="fail",
                ),
            ),
        ),
        edges=(
            PlanEdge.model_validate(
                {"id": "e_scan", "from": "entry", "to": "scan", "handle": "always"}
            ),
            PlanEdge.model_validate(
                {"id": "e_decide", "from": "scan", "to": "enough", "handle": "always"}
            ),
            PlanEdge.model_validate(
                {"id": "e_report", "from": "enough", "to": "write_report", "handle": "match"}
            ),
        ),
    )


TEMPLATES = [folder_report()]
"""What ``--templates workers.example_templates:TEMPLATES`` registers."""
