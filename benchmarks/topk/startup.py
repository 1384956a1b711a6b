"""Top-k start-up in the batch runtime: control-only micro-batches until the answer settles.

``N`` sources each see one distinct new object in the first batch (values all distinct, so
the exact top ``k`` is unique); with ``--load B`` they go on for ``B`` more batches, each
source seeing a new object in every batch (continuous load: every source asks in every
batch). Then empty batches run, one hop each, until the answer says ``settled``. Prints, per
``N``: the control-only batches to settle, the protocol's messages, the largest message
(entries), the resolutions of each phase and whether the settled answer is the exact top
``k`` (it must be, at ε = 0). In-process (:class:`tsmon.engine.batched.BatchedRuntime`), no
Spark.

    PYTHONPATH=src .venv/bin/python benchmarks/topk/startup.py [--sources 10,100,1000] [--k 10]
                                                              [--load 0]
"""

from __future__ import annotations

import argparse
import sys
import time

from tsmon.engine.batched import BatchedRuntime

PERIOD_MS = 10**12  # no bounded query runs: keep the filters out of the way


def settle(n: int, k: int, load: int, limit: int) -> tuple[int, dict, bool, float]:
    """Batches after the last loaded one until settled, the answer's figures, exact, seconds."""
    rt = BatchedRuntime(PERIOD_MS, 0.1, 0, queries=f"QUERY q AS TOP {k} OF o* BY v WITHIN 0")
    t0 = time.perf_counter()
    for b in range(load + 1):  # object o<b·n + j> at source s<j>, value b·n + j
        rt.run_batch([(f"s{j:04d}", f"o{b * n + j}.v", 1 + b, float(b * n + j)) for j in range(n)])
    control = 0
    while not rt.answers("topk")["q"].settled and control < limit:
        rt.run_batch([])
        control += 1
    answer = rt.answers("topk")["q"]
    running = next(iter(rt.coordinator.part("topk").topk.running.values()))
    figures = {
        "messages": answer.messages,
        "max entries": running.counts.max_entries,
        **running.resolver.coordinator.phases,
    }
    last = (load + 1) * n - 1
    want = tuple(sorted(f"o{i}" for i in range(max(0, last - k + 1), last + 1)))
    exact = answer.settled and answer.members == want
    return control, figures, exact, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sources", default="10,100,1000", help="comma-separated N")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--load", type=int, default=0, help="batches of new objects after the first")
    ap.add_argument("--limit", type=int, default=5000, help="give up after this many batches")
    args = ap.parse_args(argv)
    bad = 0
    cols = ("messages", "max entries", "phase2", "probe", "phase3", "refresh")
    print(f"k = {args.k}, ε = 0, {args.load} batches of load after the first")
    print("sources  control batches  " + "  ".join(cols) + "  exact  seconds")
    for n in (int(x) for x in args.sources.split(",")):
        control, figures, exact, secs = settle(n, args.k, args.load, args.limit)
        bad += not exact
        cells = "  ".join(f"{figures[c]:>{len(c)}}" for c in cols)
        print(f"{n:7d}  {control:15d}  {cells}  {exact!s:>5}  {secs:7.1f}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
