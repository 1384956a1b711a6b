"""In-process throughput of the source nodes on the Spark benchmark's workload, split by part.

Workload (``benchmarks/bench_spark.py``'s, built in memory): seeded random walks (Gaussian steps
of ``--step``) for ``--sources`` sources × ``--series-per-source`` series, one point per series
per 1 s tick, ``--ticks-per-batch`` ticks per micro-batch; ``--queries`` bounded aggregates, each
the ``AVG`` of ``--terms`` series of distinct sources ``WITHIN --delta``; filters with period
``--period-ms``, ``S = 0.05`` and capped growth. :class:`~tsmon.engine.batched.BatchedRuntime`
runs the batches ``--repeat`` times (a fresh runtime each run); the figure is the median points/s
over the batches after the first (warm-up) one, in CPU time of the process (steadier than
wall time on a shared machine). The time of each node part's hooks is then
measured on one more run (a wrapper around each part's ``begin``/``observe``/``advance``) and
printed as µs per point, next to the rest (row parsing, the node's loop, the coordinator).

``--only-topk`` replaces the bounded queries by one top-k query (no series read by a bounded
query: the filters must cost nothing). ``--retention`` gives every node registers with that
retention (what a Spark job's ``[registers]`` does) and prints the nodes' pickled size and their
pickling and unpickling time per node (what the Spark host pays per touched node and batch;
the fastest of five passes); ``--history`` pickles them as the Spark host does, their sealed
runs apart, in a history file (``--ticks-per-batch 900``: an hour of 1 s points in 4 batches).
``--profile`` prints the top of a cProfile run. ``--no-gc`` freezes what is loaded and turns
the cyclic garbage collector off first, as a Spark host's worker holds one bucket's nodes at a
time (in process all 1,000 nodes stay alive, and the collector's pauses are charged to whatever
allocates).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import statistics
import tempfile
from collections import defaultdict
from pathlib import Path
from time import process_time
from typing import Any

import numpy as np

from tsmon.engine.batched import BatchedRuntime
from tsmon.engine.settings import RegisterSettings
from tsmon.spark.history import Blobs, BucketState, History

Batch = list[tuple[str, str, int, float]]
T0_MS = 1_704_067_200_000  # 2024-01-01T00:00:00Z


def make_batches(args: argparse.Namespace) -> list[Batch]:
    """``--batches`` batches of ``(source, series, ts, value)`` points, in time order."""
    rng = np.random.default_rng(args.seed)
    n_src, per = args.sources, args.series_per_source
    n = n_src * per
    source = [f"s{i:04d}" for i in range(n_src) for _ in range(per)]
    series = [f"s{i:04d}.m{j}" for i in range(n_src) for j in range(per)]
    offset = (np.arange(n_src).repeat(per) % 90) * 10 + np.tile(np.arange(per), n_src)
    value = rng.normal(0.0, 10.0, n)
    batches = []
    for b in range(args.batches):
        k = args.ticks_per_batch
        values = value + np.cumsum(rng.normal(0.0, args.step, (k, n)), axis=0)
        value = values[-1]
        ticks = np.arange(b * k, (b + 1) * k, dtype=np.int64)
        ts = (T0_MS + ticks[:, None] * 1_000 + offset[None, :]).ravel().tolist()
        batches.append(list(zip(source * k, series * k, ts, values.ravel().tolist(), strict=True)))
    return batches


def make_queries(args: argparse.Namespace) -> tuple[str, dict[str, str]]:
    """The job's queries and the source of every series a bounded query reads."""
    if args.only_topk:
        return "QUERY hot AS TOP 5 OF s* BY m0 WITHIN 1", {}
    rng = np.random.default_rng(args.seed + 1)
    lines, source_of = [], {}
    for q in range(args.queries):
        sources = rng.choice(args.sources, size=min(args.terms, args.sources), replace=False)
        names = [f"s{i:04d}.m{rng.integers(args.series_per_source)}" for i in sorted(sources)]
        source_of.update({name: name.split(".")[0] for name in names})
        lines.append(f"QUERY q{q:03d} AS AVG({', '.join(names)}) WITHIN {args.delta:g}")
    return "\n".join(lines), source_of


def runtime(args: argparse.Namespace) -> BatchedRuntime:
    text, source_of = make_queries(args)
    registers = None if args.retention is None else RegisterSettings(retention=args.retention)
    return BatchedRuntime(
        args.period_ms, 0.05, args.seed, source_of=source_of, growth="capped", queries=text,
        registers=registers,
    )  # fmt: skip


def run(args: argparse.Namespace, batches: list[Batch]) -> tuple[float, BatchedRuntime]:
    """Points/s over the batches after the first, and the runtime."""
    rt = runtime(args)
    seconds = 0.0
    for i, batch in enumerate(batches):
        start = process_time()
        rt.run_batch(batch)
        if i > 0:
            seconds += process_time() - start
    return sum(len(b) for b in batches[1:]) / seconds, rt


class Timed:
    """A part's hook that adds its CPU time to ``spent[name]`` while ``timing[0]``; a class,
    not a closure, since the runtime pickles every node each batch."""

    def __init__(self, name: str, hook: Any, spent: dict[str, float], timing: list[bool]) -> None:
        self.name, self.hook, self.spent, self.timing = name, hook, spent, timing

    def __call__(self, *a: Any) -> Any:
        start = process_time()
        out = self.hook(*a)
        if self.timing[0]:
            self.spent[self.name] += process_time() - start
        return out


def timed_parts(args: argparse.Namespace, batches: list[Batch]) -> tuple[dict[str, float], float]:
    """Seconds in each part's hooks, and in all, over the batches after the first."""
    rt = runtime(args)
    spent: dict[str, float] = defaultdict(float)
    timing = [False]
    original = rt.new_node

    def new_node(key: str) -> Any:
        node = original(key)
        for name, part in getattr(node, "parts", {}).items():
            for hook in ("begin", "observe", "advance"):
                setattr(part, hook, Timed(name, getattr(part, hook), spent, timing))
        return node

    rt.new_node = new_node
    total = 0.0
    for i, batch in enumerate(batches):
        timing[0] = i > 0
        start = process_time()
        rt.run_batch(batch)
        if i > 0:
            total += process_time() - start
    return dict(spent), total


def state_size(rt: BatchedRuntime, history: bool = False, passes: int = 5) -> None:
    """Mean pickled size of a node after the run, and the CPU time to pickle and unpickle it
    (the fastest of ``passes`` passes over all nodes: the machine may be shared). With
    ``history``, through the Spark host's codec (:class:`~tsmon.spark.history.History`): the
    registers' sealed runs in a history file, each pass unpickling every node with a new codec
    (its runs read back) and pickling it again (its runs known), as the host does each batch."""
    nodes = list(rt.nodes.values())
    dumped = loaded = float("inf")
    with tempfile.TemporaryDirectory() as tmp:
        state = BucketState()
        codec = History(Path(tmp), 0, state) if history else Blobs()
        blobs = [codec.dumps(str(i), node) for i, node in enumerate(nodes)]
        codec.commit(state)
        for _ in range(passes):
            codec = History(Path(tmp), 0, state) if history else Blobs()
            start = process_time()
            nodes = [codec.loads(blob) for blob in blobs]
            loaded = min(loaded, process_time() - start)
            start = process_time()
            blobs = [codec.dumps(str(i), node) for i, node in enumerate(nodes)]
            dumped = min(dumped, process_time() - start)
    n = len(nodes)
    how = "with their runs apart (spark/history.py)" if history else "whole"
    print(
        f"nodes after the run: {n:,}, pickled {how} {sum(map(len, blobs)) / n / 1e3:.1f} KB "
        f"each; pickle {1e6 * dumped / n:.0f} µs, unpickle {1e6 * loaded / n:.0f} µs per node "
        f"(fastest of {passes} passes)"
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sources", type=int, default=1_000)
    ap.add_argument("--series-per-source", type=int, default=10)
    ap.add_argument("--batches", type=int, default=4)
    ap.add_argument("--ticks-per-batch", type=int, default=30, help="1 s ticks of every series")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--terms", type=int, default=10, help="series per AVG query")
    ap.add_argument("--step", type=float, default=1.0, help="stddev of a walk step")
    ap.add_argument("--delta", type=float, default=5.0, help="δ of every query")
    ap.add_argument("--period-ms", type=int, default=10_000, help="filter period T")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--repeat", type=int, default=3, help="runs; the median is printed")
    ap.add_argument("--only-topk", action="store_true", help="one top-k query, no bounded ones")
    ap.add_argument("--retention", help="give nodes registers with this retention, e.g. 1h")
    ap.add_argument(
        "--history", action="store_true", help="with --retention: pickle as the Spark host does"
    )
    ap.add_argument("--profile", action="store_true", help="print the top of a cProfile run")
    ap.add_argument("--no-gc", action="store_true", help="freeze, then turn the collector off")
    ap.add_argument("--quick", action="store_true", help="100 sources, 3 batches (smoke run)")
    args = ap.parse_args(argv)
    if args.quick:
        args.sources, args.batches, args.repeat = 100, 3, 1
    batches = make_batches(args)
    if args.no_gc:
        gc.collect()
        gc.freeze()
        gc.disable()
    timed = sum(len(b) for b in batches[1:])
    kind = "1 top-k query" if args.only_topk else f"{args.queries} AVG queries"
    print(
        f"workload: {args.sources:,} sources x {args.series_per_source} series, {len(batches)} "
        f"batches x {len(batches[0]):,} points, {kind}; timed: {timed:,} points (batches 1..)"
    )
    runs = [run(args, batches) for _ in range(args.repeat)]
    rates = [rate for rate, _ in runs]
    median = statistics.median(rates)
    print(
        f"BatchedRuntime: {median:,.0f} points/s = {1e6 / median:.2f} µs/point "
        f"(median of {len(rates)}: {', '.join(f'{r:,.0f}' for r in rates)})"
    )
    if args.retention is not None:
        state_size(runs[-1][1], args.history)
    spent, total = timed_parts(args, batches)
    for name, seconds in sorted(spent.items(), key=lambda x: -x[1]):
        print(f"  part {name:<10} {1e6 * seconds / timed:6.2f} µs/point")
    rest = total - sum(spent.values())
    print(f"  {'the rest':<15} {1e6 * rest / timed:6.2f} µs/point (rows, node loop, coordinator)")
    if args.profile:
        profiler = cProfile.Profile()
        profiler.runcall(run, args, batches)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
