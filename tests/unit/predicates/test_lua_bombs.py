"""Lua that cannot escape (ruling 31, issue 13.7): every bomb ends with the cell's named error
within the configured time, nothing it started keeps running, and the process stays usable."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.frames import FrameActivities
from orchestration.predicates import LuaCell, LuaMemoryExceeded, PredicateLimitExceeded
from orchestration.run.messages import EvaluateRequest
from orchestration.run.routes import BranchId
from orchestration.run.work import FrameWork
from orchestration.types import BranchDefinition, BranchNode, FrameRef

from .helpers import branch, context

TIMEOUT = 1.5
CELL = LuaCell(timeout_seconds=TIMEOUT, memory_ceiling_bytes=8 * 1024 * 1024)
CTX = context(entry={"n": 1})

# A 4 MB string built within the budget, then compared and concatenated: each `..` and `==` is
# ONE VM instruction that copies or scans 4 MB, so no instruction count can see the work.
UNCOUNTABLE = (
    "local s = string.rep(string.rep('x', 1000), 4000) local n = 0 "
    "for i = 1, 1e9 do if (s .. 'a') == s then n = n + 1 end end return n"
)
BOMBS = {
    "string.rep": ("return #string.rep('', 1 << 62)", PredicateLimitExceeded, "instructions"),
    "table.move": ("return table.move({}, 1, 1 << 40, 2)", PredicateLimitExceeded, "instructions"),
    "tight loop": ("while true do end", PredicateLimitExceeded, "instructions"),
    "memory": (
        "local s = string.rep(string.rep('y', 1000), 1000) local t = {} "
        "for i = 1, 1000 do t[i] = s .. i end",
        LuaMemoryExceeded,
        "memory",
    ),
    "one instruction, long work": (UNCOUNTABLE, PredicateLimitExceeded, "time"),
}


def _children() -> set[int]:
    """This process's child process ids, from /proc."""
    me = str(os.getpid())
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if stat.rsplit(")", 1)[1].split()[1] == me:
                found.add(int(entry.name))
    return found


def _state(pid: int) -> str:
    return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]


def _sync_tool() -> str:
    return "ran"


def _environment(start_to_close: float) -> ActivityEnvironment:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(
        env.info, start_to_close_timeout=timedelta(seconds=start_to_close)
    )
    return env


@pytest.mark.parametrize("name", sorted(BOMBS))
def test_each_bomb_ends_with_the_named_error_in_time_and_leaves_nothing(name: str) -> None:
    """The named error within the configured time; the same threads and child processes (all
    idle) afterwards; the killed evaluator is gone; a synchronous tool runs right after."""
    source, error, limit = BOMBS[name]
    CELL.decide(branch("return true", "lua"), CTX)  # the pool is up before counting
    threads, children = threading.active_count(), _children()
    started = time.monotonic()
    with pytest.raises(error) as raised:
        CELL.decide(branch(source, "lua"), CTX)
    elapsed = time.monotonic() - started
    assert raised.value.limit == limit
    assert elapsed < TIMEOUT + 1.0, elapsed
    assert threading.active_count() == threads
    time.sleep(0.2)  # a replacement evaluator, if any, has been forked
    after = _children()
    assert len(after) == len(children), (children, after)
    assert all(_state(pid) in "SD" for pid in after), [(p, _state(p)) for p in after]
    ran = asyncio.run(asyncio.wait_for(asyncio.to_thread(_sync_tool), 0.5))
    assert ran == "ran"
    assert CELL.decide(branch("return outputs.entry.n == 1", "lua"), CTX).verdict.matched


def test_the_evaluate_activity_fails_a_bomb_at_once_and_non_retryably() -> None:
    """Through plan.evaluate the bomb is a non-retryable failure, well inside the activity's
    timeout, so the workflow never waits out retried timeouts."""
    node = BranchNode(
        id="gate", definition=BranchDefinition(evaluator="lua", predicate=UNCOUNTABLE)
    )
    request = EvaluateRequest(
        node=node, frame=FrameRef(node_id="gate", kind="branch", branch_id=BranchId())
    )
    started = time.monotonic()
    with pytest.raises(ApplicationError) as raised:
        asyncio.run(
            _environment(30).run(FrameActivities(FrameWork(cells=[CELL])).evaluate, request)
        )
    assert raised.value.type == "predicate_limit_exceeded" and raised.value.non_retryable
    assert "wall-clock deadline exceeded" in raised.value.message
    assert time.monotonic() - started < TIMEOUT + 1.0


def test_a_cell_with_no_time_limit_of_its_own_is_not_waited_for_past_the_deadline() -> None:
    """A consumer's cell that never answers fails non-retryably before the activity's timeout."""
    from orchestration.tools.contracts import BranchVerdict

    class Stuck:
        id = "stuck"
        deterministic = True

        async def load(self) -> None:
            return None

        async def validate(self, node: object) -> None:
            return None

        async def evaluate(self, node: object, ctx: object) -> BranchVerdict:
            await asyncio.sleep(3600)
            return BranchVerdict(matched=True)

    node = BranchNode(id="gate", definition=BranchDefinition(evaluator="stuck", predicate="x"))
    request = EvaluateRequest(
        node=node, frame=FrameRef(node_id="gate", kind="branch", branch_id=BranchId())
    )
    started = time.monotonic()
    with pytest.raises(ApplicationError) as raised:
        asyncio.run(
            _environment(1).run(
                FrameActivities(FrameWork(cells=[Stuck()])).evaluate,  # type: ignore[list-item]
                request,
            )
        )
    assert raised.value.type == "predicate_unevaluatable" and raised.value.non_retryable
    assert time.monotonic() - started < 1.5


def test_close_stops_the_evaluators_and_a_later_evaluation_starts_new_ones() -> None:
    """close() leaves no child process behind; the cell still works afterwards."""
    cell = LuaCell(timeout_seconds=TIMEOUT)
    asyncio.run(cell.load())
    before = _children()
    pids = set(cell._pool.pids())  # noqa: SLF001 - the test inspects the pool it started
    assert pids and pids <= before
    cell.close()
    assert not (pids & _children())
    assert cell.decide(branch("return 1", "lua"), CTX).verdict.matched
    cell.close()
