"""A 10-year forward jump in event time costs one batch, not one step per elapsed period.

Workload: ``--series`` series (``h000.m0`` …) over ``--sources`` sources, one point per series
per batch, ``--step`` seconds of event time apart, in-process (:class:`BatchedRuntime`, the
steps Spark hosts). Queries of every kind that keeps time: bounded aggregates (adaptive filters,
period ``--period``) over every series, a top-k over all of them, a watch query with a 1 h
window on every series (registers with 1 h retention), a standing query and a summary query.
After ``--warmup`` batches, every series jumps 10 years ahead in one batch, then runs on
``--after`` batches; ``--rounds`` such jumps.

Prints the median normal batch (before any jump), each jump batch and the batches after it as
ratios to it (issue 16 target: a jump batch ≤ 2× a normal batch), and the median jump ratio
(the machine is shared: one batch's time is noisy). ``max_future`` is off (the data's clock is
the past: the jump stays within the wall clock in real replays of old data).

    PYTHONPATH=src python benchmarks/robustness/bench_time_jump.py
"""

from __future__ import annotations

import argparse
import statistics
from time import perf_counter

import numpy as np

from tsmon.engine.batched import BatchedRuntime
from tsmon.engine.settings import RegisterSettings

START_MS = 1_400_000_000_000  # 2014, like the NAB data
TEN_YEARS_MS = 3_652 * 86_400_000


def queries(names: list[str]) -> str:
    bounded = "\n".join(
        f"QUERY b{i} AS AVG({', '.join(names[i : i + 10])}) WITHIN 2"
        for i in range(0, len(names), 10)
    )
    return f"""{bounded}
QUERY top AS TOP 10 OF h* BY m0 WITHIN 0
QUERY hot ON h*.m0 WHEN mean(1h) > 1000 EMIT series
QUERY st AS AVG({", ".join(names[:5])}) WITHIN 5% CONFIDENCE 0.95
QUERY sm AS APPROX COUNT({names[0]} > 50) OVER 100 points WITHIN 10%
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--series", type=int, default=1_000)
    ap.add_argument("--sources", type=int, default=50)
    ap.add_argument("--step", type=float, default=10.0, help="event seconds per batch")
    ap.add_argument("--period", type=int, default=10_000, help="filter period, ms")
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--after", type=int, default=10, help="normal batches after each jump")
    ap.add_argument("--rounds", type=int, default=3, help="jumps, each 10 years")
    args = ap.parse_args()
    names = [f"h{i:04d}.m0" for i in range(args.series)]
    source = {n: f"src{i % args.sources:03d}" for i, n in enumerate(names)}
    rt = BatchedRuntime(
        args.period,
        0.05,
        0,
        source_of=source,
        registers=RegisterSettings(retention="1h"),
        queries=queries(names),
        max_future_ms=None,
    )
    rng = np.random.default_rng(0)
    level = rng.uniform(10, 100, len(names))
    step_ms = int(args.step * 1000)
    jumps = {args.warmup + r * (args.after + 1) for r in range(args.rounds)}
    times: list[float] = []
    t = START_MS
    for b in range(args.warmup + args.rounds * (args.after + 1)):
        t += TEN_YEARS_MS if b in jumps else step_ms
        level += rng.normal(0, 1, len(names))
        points = [(source[n], n, t, float(v)) for n, v in zip(names, level, strict=True)]
        started = perf_counter()
        rt.run_batch(points)
        times.append(perf_counter() - started)
        assert not rt.errors, rt.errors
    normal = statistics.median(times[5 : args.warmup])
    print(f"{len(names)} series, {args.sources} sources, {args.step:g} s per batch")
    print(f"normal batch (median of {args.warmup - 5} before any jump): {normal * 1000:.1f} ms")
    for j in sorted(jumps):
        after = times[j + 1 : j + 1 + args.after]
        print(
            f"10-year jump batch: {times[j] * 1000:.1f} ms, ratio {times[j] / normal:.2f}; "
            f"the {args.after} after it: median ratio {statistics.median(after) / normal:.2f}, "
            f"max {max(after) / normal:.2f}"
        )
    ratio = statistics.median(times[j] / normal for j in jumps)
    print(f"median jump ratio over {args.rounds} jumps: {ratio:.2f} (target <= 2)")


if __name__ == "__main__":
    main()
