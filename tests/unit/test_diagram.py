"""Pictures of a plan: Mermaid and DOT text with kinds, handles, joins and a run's colours."""

from __future__ import annotations

import pytest

from orchestration.plan.encoding import NodeRef
from orchestration.review.diagram import plan_dot, plan_mermaid
from orchestration.testing import PlanSketch, run_in_process
from orchestration.types import RawPlanView, StringField


def fork_and_join() -> RawPlanView:
    """entry forks to a and b, joined at both; a has an error edge to alert; then a branch."""
    return (
        PlanSketch("p")
        .entry(StringField(path="q"))
        .call("a", "text.upper", args={"s": NodeRef("entry", path="q")})
        .call("b", 'say "hi"')
        .join("both")
        .branch("gate", {"path": "x", "op": "exists"})
        .call("done_it")
        .call("alert")
        .edge("entry", "a", edge_id="e_a")
        .edge("entry", "b", edge_id="e_b")
        .edge("a", "both", edge_id="e_aj")
        .edge("b", "both", edge_id="e_bj")
        .edge("both", "gate", edge_id="e_g")
        .edge("gate", "done_it", "match", edge_id="e_m")
        .edge("a", "alert", "error", edge_id="e_err")
        .view()
    )


def test_mermaid_shows_kinds_handles_and_the_join_barrier() -> None:
    """Shapes by kind, handle labels (always unlabelled), error edges dashed."""
    text = plan_mermaid(fork_and_join())
    lines = text.splitlines()
    assert lines[0] == "flowchart TD"
    assert '  n0(["entry<br/>entry"])' in lines
    assert '  n1["a<br/>call · text.upper"]' in lines
    assert '  n2["b<br/>call · say #quot;hi#quot;"]' in lines
    assert '  n3(("both<br/>join · waits for 2"))' in lines
    assert '  n4{"gate<br/>branch"}' in lines
    assert "  n0 --> n1" in lines and "  n4 -->|match| n5" in lines
    assert "  n1 -.->|error| n6" in lines
    assert "classDef" not in text
    assert plan_mermaid(fork_and_join()) == text
    odd = PlanSketch("q").entry().select("pick", {"path": "x"}, ["a|b"]).call("c").edge(
        "entry", "pick").edge("pick", "c", "case_a|b").view()
    assert "  n1 -->|case_a#124;b| n2" in plan_mermaid(odd)


def test_dot_is_a_digraph_with_the_same_facts() -> None:
    """DOT: one statement per node and edge, quotes escaped, error edges dashed."""
    text = plan_dot(fork_and_join())
    assert text.startswith("digraph plan {") and text.rstrip().endswith("}")
    assert 'n2 [label="b\\ncall · say \\"hi\\"", shape=box' in text
    assert 'n3 [label="both\\njoin · waits for 2", shape=circle' in text
    assert 'n1 -> n6 [label="error", style=dashed' in text
    assert "  n0 -> n1;" in text


@pytest.mark.asyncio
async def test_a_run_colours_nodes_by_status_and_thickens_taken_edges() -> None:
    """With a run: each node's status in its label and class; taken edges drawn thick."""
    view = fork_and_join()
    _, projection = await run_in_process(view, {"q": "x"})
    mermaid = plan_mermaid(view, projection)
    assert "  n0 ==> n1" in mermaid and "  n3 ==> n4" in mermaid
    assert "  n1 -.->|error| n6" in mermaid
    assert '  n6["alert<br/>call · tool.alert<br/>[not reached]"]' in mermaid
    assert "  class n0,n1,n2,n3,n4 done" in mermaid
    assert "  classDef not_reached " in mermaid
    dot = plan_dot(view, projection)
    assert 'n0 -> n1 [penwidth=2.5, color="#2e7d32"];' in dot
    assert 'fillcolor="#c8e6c9"' in dot


def test_a_join_that_closes_early_draws_how_many_it_waits_for() -> None:
    """An ``any`` join is drawn ``first 1 of 2``; the default barrier ``waits for 2``."""
    view = fork_and_join()
    both = next(n for n in view.nodes if n.id == "both")
    from orchestration.types import JoinDefinition

    anyone = both.model_copy(update={"definition": JoinDefinition(strategy="any")})
    nodes = tuple(anyone if n.id == "both" else n for n in view.nodes)
    text = plan_mermaid(view.model_copy(update={"nodes": nodes}))
    assert '  n3(("both<br/>join · first 1 of 2"))' in text.splitlines()
