"""Core throughput: the op-log fold and the plan digest.

Prints, in one run:
* ops folded per second for a 50,000-op log (target >= 100,000 ops/s), digest included;
* the digest time of a 5,000-node plan against two baselines taken in alternation with it:
  ``model_dump`` + ``msgpack.packb`` of the same content (what any digest of the models must at
  least do), and ``msgpack.packb`` alone of the already-dumped content (the encoder's floor).
  Target: the digest costs <= 3x the first. Ratios are the median (and range) of alternating
  pairs; every digest is taken on a freshly decoded view, so nothing is served from a cache.
"""

from __future__ import annotations

import itertools
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack
from pydantic import TypeAdapter

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from orchestration.plan.authoring import PlanAuthor, claim, ref  # noqa: E402
from orchestration.plan.encoding import NodeRef  # noqa: E402
from orchestration.plan.ops import fold_ops, plan_digest  # noqa: E402
from orchestration.types import PlanOp, RawPlanView, StringField  # noqa: E402

OPS: TypeAdapter[list[PlanOp]] = TypeAdapter(list[PlanOp])


def author(actor: str) -> PlanAuthor:
    counter = itertools.count()
    return PlanAuthor(
        actor, now=lambda: "2026-01-01T00:00:00Z", new_id=lambda: f"{actor}{next(counter)}"
    )


def op_log(total: int) -> list[PlanOp]:
    """A realistic log: nodes and edges, then many argument edits from two authors."""
    a, b = author("alice"), author("bob")
    ops: list[PlanOp] = [a.entry(input=[StringField(path="q")])]
    i = 0
    while len(ops) < total:
        node = f"n_{i}"
        ops.append(
            a.call(
                node,
                tool="http.get",
                args={"url": f"https://example.org/{i}", "q": ref("entry", path="q")},
                output=[StringField(path="body")],
                authority=[claim("http", "example.org", "read")],
                replay_safe=True,
                on_indeterminate="retry",
            )
        )
        ops.append(a.edge("entry" if i == 0 else f"n_{i - 1}", node))
        for k in range(6):
            who = a if k % 2 else b
            ops.append(who.set_field(node, f"args.k{k}", ref(f"n_{max(i - 1, 0)}", path="body")))
        ops.append(b.set_phase(node, f"phase_{i % 7}"))
        i += 1
    return ops[:total]


def best(fn: Callable[[], Any], runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def raw_pack(view: RawPlanView) -> bytes:
    content = view.model_dump(by_alias=True, exclude_none=True)

    def default(obj: Any) -> Any:
        if isinstance(obj, NodeRef):
            return msgpack.ExtType(1, msgpack.packb(obj.to_wire()))
        raise TypeError(type(obj))

    return msgpack.packb(content, default=default)  # type: ignore[no-any-return]


def main() -> None:
    ops = op_log(50_000)
    log_json = OPS.dump_json(ops)
    fold_times = []
    for _ in range(5):
        fresh = OPS.validate_json(log_json)  # cold: no encodings cached from an earlier round
        start = time.perf_counter()
        fold_ops("bench", fresh)
        fold_times.append(time.perf_counter() - start)
    fold_s = min(fold_times)
    print(
        f"fold: {len(ops):,} ops in {fold_s * 1000:.0f} ms (best of 5; median "
        f"{statistics.median(fold_times) * 1000:.0f} ms) -> {len(ops) / fold_s:,.0f} ops/s "
        f"(target >= 100,000)"
    )

    view = fold_ops("bench", op_log(5_000 * 9 + 1)).view  # 9 ops per node: 5,000 call nodes
    nodes = len(view.nodes)
    as_json = view.model_dump_json()
    dumped = view.model_dump(by_alias=True, exclude_none=True)
    digest_vs_dump: list[float] = []
    digest_vs_pack: list[float] = []
    digests: list[float] = []
    for _ in range(7):
        fresh_view = RawPlanView.model_validate_json(as_json)  # cold: no cached encodings
        start = time.perf_counter()
        plan_digest(fresh_view)
        digest_s = time.perf_counter() - start
        start = time.perf_counter()
        raw_pack(view)
        dump_pack_s = time.perf_counter() - start
        start = time.perf_counter()
        pack_only(dumped)
        pack_s = time.perf_counter() - start
        digests.append(digest_s)
        digest_vs_dump.append(digest_s / dump_pack_s)
        digest_vs_pack.append(digest_s / pack_s)
    print(
        f"digest: {nodes:,}-node plan in {statistics.median(digests) * 1000:.1f} ms (median of 7)"
    )
    print(
        f"  / (model_dump + msgpack.packb) of the same content: {_spread(digest_vs_dump)} "
        "(target <= 3x)"
    )
    print(f"  / msgpack.packb alone of the dumped content:        {_spread(digest_vs_pack)}")


def _spread(ratios: list[float]) -> str:
    return f"{statistics.median(ratios):.2f}x (range {min(ratios):.2f}-{max(ratios):.2f})"


def pack_only(content: Any) -> bytes:
    def default(obj: Any) -> Any:
        if isinstance(obj, NodeRef):
            return msgpack.ExtType(1, msgpack.packb(obj.to_wire()))
        raise TypeError(type(obj))

    return msgpack.packb(content, default=default)  # type: ignore[no-any-return]


if __name__ == "__main__":
    main()
