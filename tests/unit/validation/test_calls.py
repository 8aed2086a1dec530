"""Call checks: tier C, required decisions, authority, and what a tool returns."""

from __future__ import annotations

from orchestration.types import PlanBounds, StringField

from .helpers import author, call, check, only


def _one_call(**overrides):  # type: ignore[no-untyped-def]
    a = author()
    return [a.entry(), call(a, "work", **overrides), a.edge("entry", "work", edge_id="e1")]


def test_unknown_tool_lists_the_available_ones() -> None:
    """A tool outside the allowlist is refused, and the message lists what IS available."""
    issue = only(check(_one_call(tool="shell.exec")), "unknown_tool")
    assert issue.node_id == "work" and '"shell.exec"' in issue.message
    assert '"web.fetch"' in issue.message and '"mail.send"' in issue.message


def test_missing_on_missing_value() -> None:
    """onMissingValue has no default and must be set."""
    issue = only(check(_one_call(on_missing_value=None)), "missing_on_missing_value")
    assert issue.node_id == "work" and '"omit"' in issue.message


def test_missing_replay_safe() -> None:
    """replaySafe has no default and must be set."""
    issue = only(check(_one_call(replay_safe=None, on_indeterminate="halt")), "missing_replay_safe")
    assert issue.node_id == "work" and "set true only if" in issue.message


def test_missing_on_indeterminate() -> None:
    """onIndeterminate has no default and must be set."""
    issue = only(check(_one_call(on_indeterminate=None)), "missing_on_indeterminate")
    assert issue.node_id == "work" and '"halt"' in issue.message


def test_retry_of_a_call_that_is_unsafe_to_repeat() -> None:
    """retry with replaySafe false is a contradiction and is refused."""
    ops = _one_call(replay_safe=False, on_indeterminate="retry")
    issue = only(check(ops), "retry_unsafe_repeat")
    assert issue.node_id == "work" and '"halt" or "skip"' in issue.message


def test_missing_authority_is_advisory_by_default() -> None:
    """A call claiming no authority freezes: one advisory names the node and the claims to add."""
    issue = only(check(_one_call(authority=[])), "missing_authority")
    assert issue.severity == "advisory" and issue.node_id == "work"
    assert "potentially mutating" in issue.message and "add the claims" in issue.message


def test_missing_authority_blocks_under_strict_authority() -> None:
    """With the deployment's strict setting the same issue refuses the freeze, naming why."""
    issue = only(check(_one_call(authority=[]), strict_authority=True), "missing_authority")
    assert issue.severity == "blocking" and issue.node_id == "work"
    assert "strict_authority" in issue.message and "add the claims" in issue.message
    assert check(_one_call(), strict_authority=True) == []


def test_media_cannot_feed_declared_fields() -> None:
    """A tool returning media cannot declare output fields."""
    issue = only(check(_one_call(tool="image.render")), "media_feeds_fields")
    assert issue.node_id == "work" and "returns media" in issue.message
    issue = only(check(_one_call(tool="blob.get")), "media_feeds_fields")
    assert "returns bytes" in issue.message


def test_media_tool_without_fields_is_valid() -> None:
    """A media-returning call that declares no fields is fine."""
    assert check(_one_call(tool="image.render", output=[])) == []


def _bounds(**changes: int) -> PlanBounds:
    spec = dict(max_nodes=10, max_edges=10, max_steps=10, max_concurrent_frames=1,
                max_encoded_bytes=10**6)
    spec.update(changes)
    return PlanBounds(**spec)


def test_max_nodes_exceeded() -> None:
    """More nodes than maxNodes is refused, suggesting set_bounds."""
    a = author()
    ops = [*_one_call(), a.set_bounds(_bounds(max_nodes=1))]
    issue = only(check(ops), "max_nodes_exceeded")
    assert "maxNodes 1" in issue.message and "set_bounds" in issue.message


def test_max_edges_exceeded() -> None:
    """More edges than maxEdges is refused."""
    a = author()
    ops = [*_one_call(), a.set_bounds(_bounds(max_edges=0))]
    assert "maxEdges 0" in only(check(ops), "max_edges_exceeded").message


def test_max_encoded_bytes_exceeded() -> None:
    """A plan whose canonical encoding is over maxEncodedBytes is refused."""
    a = author()
    ops = [*_one_call(args={"blob": "x" * 5000}), a.set_bounds(_bounds(max_encoded_bytes=4096))]
    issue = only(check(ops), "max_encoded_bytes_exceeded")
    assert "maxEncodedBytes 4096" in issue.message


def test_scaffold_placeholder() -> None:
    """The unedited scaffold text is refused wherever it sits in a definition."""
    a = author()
    ops = [a.entry(), call(a, "work", args={"body": {"text": ["Lorem ipsum"]}},
                          output=[StringField(path="body")]), a.edge("entry", "work", edge_id="e1")]
    issue = only(check(ops), "scaffold_placeholder")
    assert issue.node_id == "work" and "replace it" in issue.message
