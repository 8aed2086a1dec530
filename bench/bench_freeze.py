"""Freeze validation throughput on generated plans of 1,000 and 5,000 nodes.

Three shapes, each a valid plan (no blocking issue), so every check runs to completion:

* chain     entry → c1 → c2 → …, each call reading the previous call's declared field;
* fan-out   entry → hub → (every other call), each reading the hub's field;
* diamonds  a sequence of diamonds: fork → (left, right) → join → next fork …

For each shape and size it prints the best-of-N ``validate`` time, nodes per second, the fold
time (what a store's ``fold`` costs before validation) and the two together; then the
5,000/1,000 time ratio per shape (about 5 when the cost is near-linear in the plan's size;
quadratic work would show about 25). Times are this process's CPU time, so other work on the
machine inflates them less than it would wall-clock time.

Run: ``.venv/bin/python bench/bench_freeze.py`` (or ``make bench``).
"""

from __future__ import annotations

import asyncio
import itertools
import sys
import time
from collections.abc import Callable

from orchestration.plan.authoring import PlanAuthor, claim, ref
from orchestration.plan.ops import fold_ops
from orchestration.review.validation import FreezeInputs, has_blocking, validate
from orchestration.tools.allowlist import ToolAllowlist
from orchestration.types import PlanBounds, PlanOp, RawPlanView, StringField

TOOLS = ToolAllowlist.of(text=["work.step"])
INPUTS = FreezeInputs(invocable=TOOLS)
REPEATS = 7


def _author() -> PlanAuthor:
    counter = itertools.count()
    return PlanAuthor(
        "bench", now=lambda: "2026-01-01T00:00:00Z", new_id=lambda: f"op{next(counter):08d}"
    )


def _call(a: PlanAuthor, node_id: str, args: dict[str, object]) -> PlanOp:
    return a.call(
        node_id,
        tool="work.step",
        args=args,
        output=[StringField(path="out")],
        authority=[claim("work", node_id, "read")],
        replay_safe=True,
        on_indeterminate="retry",
        on_missing_value="fail",
    )


def _bounds(a: PlanAuthor, n: int) -> PlanOp:
    return a.set_bounds(
        PlanBounds(
            max_nodes=n + 10,
            max_edges=3 * n,
            max_steps=10 * n,
            max_concurrent_frames=32,
            max_encoded_bytes=1 << 30,
        )
    )


def chain(n: int) -> list[PlanOp]:
    """entry → c1 → … → c(n-1), each reading its predecessor's field."""
    a = _author()
    ops: list[PlanOp] = [_bounds(a, n), a.entry()]
    previous = "entry"
    for i in range(1, n):
        node = f"c{i}"
        args = {"x": ref(previous, path="out")} if previous != "entry" else {"x": 1}
        ops += [_call(a, node, args), a.edge(previous, node, edge_id=f"e{i}")]
        previous = node
    return ops


def fan_out(n: int) -> list[PlanOp]:
    """entry → hub → (n-2 leaves), each leaf reading the hub."""
    a = _author()
    ops: list[PlanOp] = [
        _bounds(a, n),
        a.entry(),
        _call(a, "hub", {"x": 1}),
        a.edge("entry", "hub", edge_id="e0"),
    ]
    for i in range(n - 2):
        node = f"leaf{i}"
        ops += [
            _call(a, node, {"x": ref("hub", path="out")}),
            a.edge("hub", node, edge_id=f"e{i + 1}"),
        ]
    return ops


def diamonds(n: int) -> list[PlanOp]:
    """Diamonds in sequence: each join is the next diamond's fork (4 nodes per diamond)."""
    a = _author()
    ops: list[PlanOp] = [_bounds(a, n), a.entry()]
    fork = "entry"
    edge = itertools.count()
    for k in range((n - 1) // 3):
        left, right, join = f"l{k}", f"r{k}", f"j{k}"
        ops += [_call(a, left, {"x": k}), _call(a, right, {"x": k}), a.join(join)]
        for source, target in ((fork, left), (fork, right), (left, join), (right, join)):
            ops.append(a.edge(source, target, edge_id=f"e{next(edge)}"))
        fork = join
    return ops


SHAPES: dict[str, Callable[[int], list[PlanOp]]] = {
    "chain": chain,
    "fan-out": fan_out,
    "diamonds": diamonds,
}


def _time(fn: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def measure(shape: str, n: int) -> tuple[RawPlanView, float, float]:
    ops = SHAPES[shape](n)
    fold_seconds = _time(lambda: fold_ops("bench", ops))
    view, _ = fold_ops("bench", ops)
    issues = asyncio.run(validate(view, INPUTS))
    if has_blocking(issues):
        sys.exit(f"{shape}/{n}: the generated plan is not valid: {issues[:3]}")
    seconds = _time(lambda: asyncio.run(validate(view, INPUTS)))
    return view, seconds, fold_seconds


def main() -> int:
    print(f"validate, CPU time (best of {REPEATS}), per shape and size")
    print(
        f"{'shape':<10}{'nodes':>7}{'edges':>7}{'validate ms':>13}{'nodes/s':>11}"
        f"{'fold ms':>10}{'fold+validate ms':>18}"
    )
    ratios: dict[str, float] = {}
    slowest = 0.0
    for shape in SHAPES:
        times: dict[int, float] = {}
        for n in (1_000, 5_000):
            view, seconds, fold_seconds = measure(shape, n)
            times[n] = seconds
            slowest = max(slowest, seconds) if n == 5_000 else slowest
            print(
                f"{shape:<10}{len(view.nodes):>7}{len(view.edges):>7}{seconds * 1e3:>13.1f}"
                f"{len(view.nodes) / seconds:>11,.0f}{fold_seconds * 1e3:>10.1f}"
                f"{(seconds + fold_seconds) * 1e3:>18.1f}"
            )
        ratios[shape] = times[5_000] / times[1_000]
    print()
    for shape, ratio in ratios.items():
        print(f"5,000/1,000 validate time ratio, {shape}: {ratio:.2f} (linear = 5)")
    print(f"slowest 5,000-node validate: {slowest * 1e3:.0f} ms (target < 500 ms)")
    return 0 if slowest < 0.5 else 1


if __name__ == "__main__":
    sys.exit(main())
