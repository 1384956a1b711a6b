"""What quarantine costs in-process: the copy of each node taken before its step.

``BatchedRuntime`` pickles every node it steps before the step (:mod:`tsmon.engine.guard`: a
step that raises is retried from that copy). This times, on the workload of
``bench_time_jump.py`` (1,000 series, 50 sources, every query kind), a whole ``run_batch`` and
the pickling of the nodes it stepped, and prints their ratio. On Spark the host reloads the
stored node instead, so the guard costs nothing there unless a step fails.

    PYTHONPATH=src python benchmarks/robustness/bench_guard_cost.py
"""

from __future__ import annotations

import pickle
import statistics
import sys
from pathlib import Path
from time import perf_counter

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench_time_jump import START_MS, queries

from tsmon.engine.batched import BatchedRuntime
from tsmon.engine.settings import RegisterSettings


def main() -> None:
    names = [f"h{i:04d}.m0" for i in range(1_000)]
    source = {n: f"src{i % 50:03d}" for i, n in enumerate(names)}
    rt = BatchedRuntime(
        10_000,
        0.05,
        0,
        source_of=source,
        registers=RegisterSettings(retention="1h"),
        queries=queries(names),
    )
    rng = np.random.default_rng(0)
    level = rng.uniform(10, 100, len(names))
    batch_s, copy_s = [], []
    for b in range(30):
        level += rng.normal(0, 1, len(names))
        t = START_MS + b * 10_000
        points = [(source[n], n, t, float(v)) for n, v in zip(names, level, strict=True)]
        started = perf_counter()
        rt.run_batch(points)
        batch_s.append(perf_counter() - started)
        started = perf_counter()
        for node in rt.nodes.values():
            pickle.dumps(node)
        copy_s.append(perf_counter() - started)
    batch, copy = statistics.median(batch_s[5:]), statistics.median(copy_s[5:])
    print(f"run_batch (guard included): {batch * 1000:.1f} ms; node copies: {copy * 1000:.1f} ms")
    print(f"guard share of a batch: {copy / batch:.1%}")


if __name__ == "__main__":
    main()
