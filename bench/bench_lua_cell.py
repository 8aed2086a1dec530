"""The Lua cell: what a killable evaluator process costs, and what it buys.

Prints, in one run:
* latency per evaluation, median and 95th percentile over 2,000 runs, of (a) the sandbox run in
  this process (a fresh Lua state with the charging library wrappers, no process) and (b) the
  cell as shipped (the same sandbox in a pooled evaluator process), for a trivial predicate and
  for one reading a 50-node table; the difference is what isolation costs;
* for each bomb, what each way does: in process (run in a throwaway child so a stuck run can be
  killed here, given 10 s), and through the cell (its own deadline, 2 s): the outcome and the
  time it took. A bomb the charging wrappers catch ends in both ways; one whose work hides
  inside single VM instructions (`..` and `==` over long strings) runs on in process.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from orchestration.predicates import LuaCell  # noqa: E402
from orchestration.predicates.errors import CellEvaluationError  # noqa: E402
from orchestration.predicates.lua_sandbox import evaluate  # noqa: E402
from orchestration.run.routes import BranchId, EdgeSegment  # noqa: E402
from orchestration.tools.contracts import PredicateContext  # noqa: E402
from orchestration.types import (  # noqa: E402
    BranchDefinition,
    BranchNode,
    FrameRef,
    NodeOutput,
    OutputItem,
)

RUNS = 2_000
FRAME = FrameRef(node_id="gate", kind="branch", branch_id=BranchId())
BOMBS = {
    "string.rep('', 1 << 62)": "return #string.rep('', 1 << 62)",
    "table.move({}, 1, 1 << 40, 2)": "return table.move({}, 1, 1 << 40, 2)",
    "tight loop": "while true do end",
    "memory bomb": "local s = string.rep(string.rep('y', 1000), 1000) local t = {} "
    "for i = 1, 1000 do t[i] = s .. i end",
    "`..`/`==` on a 4 MB string": "local s = string.rep(string.rep('x', 1000), 4000) "
    "local n = 0 for i = 1, 1e9 do if (s .. 'a') == s then n = n + 1 end end return n",
}


def table(nodes: int) -> dict[str, NodeOutput]:
    out = {}
    for i in range(nodes):
        route = BranchId(segments=(EdgeSegment(edge=f"e{i}"),))
        out[f"n{i}:{route.key}"] = NodeOutput(
            items=(OutputItem(json_={"count": i, "name": f"node {i}", "tags": ["a", "b"]}),),
            branch_id=route,
        )
    return out


def node(source: str) -> BranchNode:
    return BranchNode(id="gate", definition=BranchDefinition(evaluator="lua", predicate=source))


def percentiles(samples: list[float]) -> str:
    samples.sort()
    p95 = samples[int(len(samples) * 0.95)]
    return f"median {statistics.median(samples) * 1e3:6.3f} ms, p95 {p95 * 1e3:6.3f} ms"


def latency(cell: LuaCell, source: str, outputs: dict[str, NodeOutput]) -> None:
    ctx = PredicateContext(outputs=outputs, frame=FRAME)
    request = cell.request(source, outputs)
    inline: list[float] = []
    pooled: list[float] = []
    for _ in range(RUNS // 10):  # warm both paths
        evaluate(request)
        cell.decide(node(source), ctx)
    for _ in range(RUNS):
        started = time.perf_counter()
        evaluate(cell.request(source, outputs))
        inline.append(time.perf_counter() - started)
        started = time.perf_counter()
        cell.decide(node(source), ctx)
        pooled.append(time.perf_counter() - started)
    print(f"  in process : {percentiles(inline)}")
    print(f"  in a pooled process (shipped): {percentiles(pooled)}")


PROBE = """
import sys, time
from orchestration.predicates.lua_sandbox import evaluate
started = time.monotonic()
reply = evaluate({"source": sys.argv[1], "ctx": {}, "outputs": {}, "instructions": 1_000_000,
                  "interval": 1000, "memory": 16 * 1024 * 1024})
print(repr((reply, time.monotonic() - started)))
"""


def in_process(source: str) -> str:
    try:
        done = subprocess.run(
            [sys.executable, "-c", PROBE, source],
            capture_output=True,
            text=True,
            timeout=10,
            cwd=Path(__file__).resolve().parent.parent,
        )
    except subprocess.TimeoutExpired:
        return "STILL RUNNING after 10 s (a thread stuck here could not be stopped)"
    reply, took = eval(done.stdout.strip())  # noqa: S307 - our own repr of a tuple
    return f"{reply.get('kind', 'ok')} after {took:.2f} s"


def through_cell(cell: LuaCell, source: str) -> str:
    ctx = PredicateContext(outputs={}, frame=FRAME)
    started = time.monotonic()
    try:
        cell.decide(node(source), ctx)
        outcome = "a verdict"
    except CellEvaluationError as exc:
        outcome = f"{exc.code} ({getattr(exc, 'limit', '?')})"
    return f"{outcome} after {time.monotonic() - started:.2f} s"


def main() -> None:
    cell = LuaCell(timeout_seconds=2.0)
    print(f"latency per evaluation ({RUNS} runs):")
    print(" trivial predicate `return 1 < 2`, empty table")
    latency(cell, "return 1 < 2", {})
    print(" `return outputs.n7.count > 3 and outputs.n42.name ~= ''` over a 50-node table")
    latency(cell, "return outputs.n7.count > 3 and outputs.n42.name ~= ''", table(50))
    print("bombs: in process (wrappers only) | through the cell (wrappers + killable process)")
    for name, source in BOMBS.items():
        print(f" {name}")
        print(f"  in process : {in_process(source)}")
        print(f"  the cell   : {through_cell(cell, source)}")
    cell.close()


if __name__ == "__main__":
    main()
