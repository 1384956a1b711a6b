"""Where the Spark host's state part goes, in-process: ``bench_spark.py``'s shape through the
real :class:`~tsmon.spark.host.BucketHost`, without Spark.

``bench_node.py``'s workload (``--sources`` × 10 series, 1 s points, 30 per series per batch,
100 bounded ``AVG`` queries, registers of 1 h) runs in a
:class:`~tsmon.engine.batched.BatchedRuntime` first, only to record the control rows its
coordinator sends each batch; then :class:`~tsmon.spark.host_tester.HostTester` drives the
host over the same batches (data and control rows, ``--buckets`` buckets, history files in a
temporary directory), as a Spark worker would after :func:`~tsmon.spark.cpu.settle_worker`
(everything alive before the first batch collected and frozen). Per batch it prints the CPU
µs per point of the host's laps (``tsmon.spark.cpu``: ``hostConvert``, ``hostNode``,
``hostState``) and of the state's parts: ``open`` (reading the bucket's ``.nodes`` file and
unpickling its dict), ``loads`` (unpickling each node), ``dumps`` (pickling each node, sealing
new runs), ``commit`` (pickling the dict, writing the files), and ``gc`` (the cyclic
collector's passes during the batch, from ``gc.callbacks``); then the medians over batches
1 on. ``--profile N``: cProfile from batch N on.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import statistics
import tempfile
from time import process_time
from typing import Any

import bench_node
import tsmon.spark.host
from tsmon.spark.history import History
from tsmon.spark.host import ctrl_row, data_row
from tsmon.spark.host_tester import HostTester

PARTS: dict[str, float] = {}


def _timed(name: str, method: Any) -> Any:
    def timed(*args: Any) -> Any:
        start = process_time()
        try:
            return method(*args)
        finally:
            PARTS[name] = PARTS.get(name, 0.0) + process_time() - start

    return timed


class TimedHistory(History):
    """The host's codec, its parts timed into :data:`PARTS`."""

    open = classmethod(_timed("open", History.open.__func__))  # type: ignore[assignment]
    loads = _timed("loads", History.loads)
    dumps = _timed("dumps", History.dumps)
    commit = _timed("commit", History.commit)


class _Sums:
    """What the host's :class:`~tsmon.spark.cpu.Clock` adds its laps to."""

    def add(self, laps: dict[str, float]) -> None:
        for part, seconds in laps.items():
            PARTS[part] = PARTS.get(part, 0.0) + seconds


def _gc_timer() -> None:
    started = [0.0]

    def on_gc(phase: str, info: dict) -> None:
        if phase == "start":
            started[0] = process_time()
        else:
            PARTS["gc"] = PARTS.get("gc", 0.0) + process_time() - started[0]

    gc.callbacks.append(on_gc)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sources", type=int, default=1_000)
    ap.add_argument("--batches", type=int, default=8)
    ap.add_argument("--buckets", type=int, default=32, help="bench_spark.py: 16 on local[2]")
    ap.add_argument("--retention", default="1h")
    ap.add_argument("--profile", type=int, default=-1, help="cProfile from this batch on")
    ours = ap.parse_args(argv)
    args = argparse.Namespace(
        sources=ours.sources, series_per_source=10, batches=ours.batches, ticks_per_batch=30,
        queries=100, terms=10, step=1.0, delta=5.0, period_ms=10_000, seed=42, only_topk=False,
        retention=ours.retention,
    )  # fmt: skip
    clock_ms = bench_node.T0_MS + 10**7
    batches = bench_node.make_batches(args)
    rt = bench_node.runtime(args)
    due, controls = rt.transport.due, []

    def recorded(batch_id: int) -> dict:
        sent = due(batch_id)
        controls.append([ctrl_row(s, r["seq"], r["payload"]) for s, rs in sent.items() for r in rs])
        return sent

    rt.transport.due = recorded  # type: ignore[method-assign]
    for batch in batches:
        rt.step_batch(batch, clock_ms=clock_ms)
    new_node = rt.new_node
    del rt  # its nodes: the recorded control rows are all the host needs
    tsmon.spark.host.History = TimedHistory  # type: ignore[misc]
    tester = HostTester(new_node, ours.buckets, tempfile.mkdtemp())
    tester.host.cpu = _Sums()
    gc.collect()
    gc.freeze()  # as settle_worker in a Spark worker
    _gc_timer()
    profile, seq, medians = cProfile.Profile(), 0, []
    print(f"{ours.sources} sources x 10 series, {ours.buckets} buckets, 30 points per series "
          f"per batch, registers {ours.retention}; CPU µs per point")  # fmt: skip
    for b, batch in enumerate(batches):
        rows = list(controls[b])
        for source, series, ts, value in batch:
            rows.append(data_row(source, series, ts, value, seq))
            seq += 1
        PARTS.clear()
        if b == ours.profile:
            profile.enable()
        tester.test(rows, clock_ms=clock_ms)
        per_point = {k: 1e6 * v / len(batch) for k, v in sorted(PARTS.items())}
        print(f"batch {b}: " + "  ".join(f"{k} {v:.3f}" for k, v in per_point.items()))
        if b:
            medians.append(per_point)
    parts = sorted(set().union(*medians))
    print("median of batches 1+: " + "  ".join(
        f"{k} {statistics.median(m.get(k, 0.0) for m in medians):.3f}" for k in parts
    ))  # fmt: skip
    if ours.profile >= 0:
        profile.disable()
        pstats.Stats(profile).sort_stats("tottime").print_stats(30)


if __name__ == "__main__":
    main()
