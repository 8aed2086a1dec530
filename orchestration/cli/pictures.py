"""``orch plan graph`` / ``orch run graph``: write a plan's picture as Mermaid, DOT or SVG.

The drawing itself is pure (:mod:`orchestration.review.diagram`); this module only picks the format,
turns DOT into SVG, and writes the result. SVG comes from Graphviz's ``dot`` program (Debian's
``graphviz`` package, which ``make setup`` and ``.ci/run`` install where it is missing): its
layered layout keeps a DAG readable at any size, and it needs no browser. Without it,
``--format svg`` is refused with the install command, and Mermaid and DOT still work.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
from pathlib import Path

from orchestration.cli.common import CliError, emit
from orchestration.cli.failures import ExitCode
from orchestration.review.diagram import render_diagram
from orchestration.types import RawPlanView, RunProjection

__all__ = ["draw", "svg_from_dot"]

_DOT_SECONDS = 60


def svg_from_dot(dot_text: str) -> str:
    """Lay out ``dot_text`` with Graphviz and return the SVG.

    Raises:
        CliError: ``graphviz_missing`` without the ``dot`` program; ``graphviz_failed`` when
            it refuses the input or runs past its time.

    """
    program = shutil.which("dot")
    if program is None:
        raise CliError(
            "graphviz_missing",
            "--format svg needs Graphviz's `dot` program, which is not installed — install it "
            "(`apt-get install graphviz`; `make setup` does this where it can), or use "
            "--format mermaid or --format dot",
            exit_code=ExitCode.UNAVAILABLE,
        )
    try:
        done = subprocess.run(
            [program, "-Tsvg"],
            input=dot_text,
            capture_output=True,
            text=True,
            timeout=_DOT_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise CliError(
            "graphviz_failed",
            f"Graphviz took more than {_DOT_SECONDS} s to lay out the plan — draw it with "
            "--format mermaid instead",
        ) from exc
    if done.returncode != 0:
        raise CliError(
            "graphviz_failed",
            f"Graphviz refused the drawing ({done.stderr.strip()[:200]}) — report it with the "
            "output of --format dot",
            exit_code=ExitCode.INTERNAL,
        )
    return done.stdout


def draw(args: argparse.Namespace, view: RawPlanView, run: RunProjection | None) -> int:
    """Write the picture ``args.format`` asks for to ``args.output`` or stdout."""
    text = render_diagram(view, "mermaid" if args.format == "mermaid" else "dot", run)
    if args.format == "svg":
        text = svg_from_dot(text)
    if args.output:
        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise CliError(
                "file_unwritable",
                f"cannot write {args.output} ({exc.strerror or exc}) — check the path",
            ) from exc
        payload = {"planId": view.plan_id, "format": args.format, "output": args.output}
        emit(args, payload, lambda: f"wrote {args.format} to {args.output}")
        return 0
    payload = {"planId": view.plan_id, "format": args.format, "text": text}
    emit(args, payload, lambda: text.rstrip("\n"))
    return 0
