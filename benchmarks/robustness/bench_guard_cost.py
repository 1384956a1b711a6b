"""What quarantine costs in-process: the journal against a copy of every node and of the
coordinator before each step.

``BatchedRuntime`` keeps each node's and the coordinator's restore point in a journal (a pickle
every 64 steps or 256 input rows, and the clean steps' inputs since: ``engine/journal.py``);
once its ``nodes`` and ``coordinator`` are handed out it pickles them before every step
instead, as every step did before the journal. This runs both, in the same process, on the
same batches, alternating batch by batch: the workload of ``bench_time_jump.py`` (1,000 series
at 50 sources, every query kind, a point per series per batch) and, with ``--points``, batches
of that many points of its series at one source (a Monitor's ingests). It prints the median CPU
time of a ``run_batch`` of each and their ratio. On Spark the host reloads the stored node
instead, so the guard costs nothing there unless a step fails.

    PYTHONPATH=src python benchmarks/robustness/bench_guard_cost.py [--points 1]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from time import process_time

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench_time_jump import START_MS, queries

from tsmon.engine.batched import BatchedRuntime
from tsmon.engine.settings import RegisterSettings


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--points", type=int, default=0, help="points per batch at one source")
    ap.add_argument("--batches", type=int, default=30)
    args = ap.parse_args(argv)
    n = 1_000 if args.points == 0 else 20
    names = [f"h{i:04d}.m0" for i in range(n)]
    source = {s: f"src{i % 50:03d}" if args.points == 0 else "one" for i, s in enumerate(names)}
    runtimes = []
    for _ in range(2):
        rt = BatchedRuntime(
            10_000, 0.05, 0, source_of=source, registers=RegisterSettings(retention="1h"),
            queries=queries(names),
        )  # fmt: skip
        runtimes.append(rt)
    copying = runtimes[1]
    assert copying.nodes == {} and copying.coordinator is not None  # handed out: copies
    rng = np.random.default_rng(0)
    level = rng.uniform(10, 100, n)
    spent: list[list[float]] = [[], []]
    batches = args.batches if args.points == 0 else args.batches * 50
    for b in range(batches):
        level += rng.normal(0, 1, n)
        t = START_MS + b * 10_000
        if args.points == 0:
            points = [(source[s], s, t, float(v)) for s, v in zip(names, level, strict=True)]
        else:
            pick = rng.choice(n, args.points)
            points = [("one", names[i], t + j, float(level[i])) for j, i in enumerate(pick)]
        for rt, times in zip(runtimes, spent, strict=True):
            started = process_time()
            rt.run_batch(points, clock_ms=START_MS)
            times.append(process_time() - started)
    journal, copy = (statistics.median(times[5:]) for times in spent)
    what = "1,000 series at 50 sources" if args.points == 0 else f"{args.points} point(s) a batch"
    print(f"{what}, {batches} batches: median run_batch CPU")
    print(f"  journal:                {journal * 1e6:9.0f} µs")
    print(f"  copy before every step: {copy * 1e6:9.0f} µs  ({copy / journal:.2f}x the journal)")


if __name__ == "__main__":
    main()
