"""What the Spark host's node state writes per batch, in-process, by the size of sealed runs.

``bench_node.py``'s workload (``--sources`` × 10 series, 1 s points, ``--ticks-per-batch`` per
batch, 100 bounded ``AVG`` queries, registers of ``--retention``) run by
:class:`~tsmon.engine.batched.BatchedRuntime`, every node unpickled from a bucket's state and
pickled back through the host's codec (:class:`~tsmon.spark.history.History`: sealed runs and
the pickled nodes in history files) each batch, as ``spark/host.py`` does. Per batch it
prints, per series, the bytes of the bucket's state (the pickled nodes' file and the Spark
state value) and of the batch's new runs, raw and compressed with ``zstd -1``
(the ``zstd`` command; Spark's state store compresses its files with zstd), and the input's
Parquet bytes per series for the same points (``bench_spark.py``'s files: 3.57 MB per 300,000
points). ``--seal-points`` sets :data:`tsmon.core.sealed.SEAL_POINTS` for the run.
``--warmup N`` first runs N batches in-process, not through the codec (e.g. 120 batches of
30 ticks: an hour retained when the measured batches start). Per batch it also prints the CPU
time per point of the host's part: unpickling the nodes, the batch (with the in-process
runtime's journal of steps, which the Spark host has not: its state is the snapshot), pickling
them back.
"""

from __future__ import annotations

import argparse
import itertools
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path
from time import process_time

import bench_node
import tsmon.core.register
from tsmon.spark.history import BucketState, History

PARQUET_BYTES_PER_POINT = 3_570_000 / 300_000  # bench_spark.py's input files


def zstd(data: bytes) -> int:
    """Bytes of ``data`` compressed by ``zstd -1``."""
    return len(subprocess.run(["zstd", "-1", "-c"], input=data, capture_output=True).stdout)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sources", type=int, default=60)
    ap.add_argument("--batches", type=int, default=8)
    ap.add_argument("--ticks-per-batch", type=int, default=30, help="1 s ticks of every series")
    ap.add_argument("--retention", default="1h")
    ap.add_argument("--warmup", type=int, default=0, help="batches run first, not measured")
    ap.add_argument("--seal-points", type=int, default=tsmon.core.register.SEAL_POINTS)
    ours = ap.parse_args(argv)
    if shutil.which("zstd") is None:
        raise SystemExit("this benchmark needs the zstd command (e.g. apt-get install zstd)")
    tsmon.core.register.SEAL_POINTS = ours.seal_points  # what Register.__getstate__ reads
    args = argparse.Namespace(
        sources=ours.sources, series_per_source=10, batches=ours.warmup + ours.batches,
        ticks_per_batch=ours.ticks_per_batch, queries=100, terms=10, step=1.0, delta=5.0,
        period_ms=10_000, seed=42, only_topk=False, retention=ours.retention,
    )  # fmt: skip
    series = args.sources * args.series_per_source
    parquet = PARQUET_BYTES_PER_POINT * args.ticks_per_batch
    print(
        f"{args.sources} sources x 10 series, {args.batches} batches of {args.ticks_per_batch} "
        f"points per series, registers {args.retention}, runs of {ours.seal_points} points; "
        f"bytes per series and batch (input: {parquet:.0f} bytes of Parquet)"
    )
    rt = bench_node.runtime(args)
    state = BucketState()
    ratios, cpu = [], []
    with tempfile.TemporaryDirectory() as tmp:
        batches = bench_node.make_batches(args)
        for batch in batches[: ours.warmup]:
            rt.run_batch(batch)
        for b, batch in enumerate(batches[ours.warmup :]):
            clock = [process_time()]
            codec = History(Path(tmp), 0, state)
            for source in list(rt.nodes):  # as the host: from the state, each batch
                if source in state.nodes:  # not after the warm-up
                    rt.nodes[source] = codec.loads(state.nodes[source])
            clock.append(process_time())
            rt.run_batch(batch)
            clock.append(process_time())
            for source, node in rt.nodes.items():
                state.nodes[source] = codec.dumps(source, node)
            clock.append(process_time())
            spent = [1e6 * (b - a) / len(batch) for a, b in itertools.pairwise(clock)]
            runs = codec.new.getvalue()
            value = codec.commit(state)  # the Spark state, and the pickled nodes' file
            blob = value + (Path(tmp) / "b0" / f"{state.batches - 1}.nodes").read_bytes()
            packed = zstd(blob) + (zstd(runs) if runs else 0)
            if b > 0:
                ratios.append(packed / series / parquet)
                cpu.append(spent)
            print(
                f"batch {b}: state {len(blob) / series:6.0f} raw {zstd(blob) / series:6.0f} zstd; "
                f"new runs {len(runs) / series:6.0f} raw; both zstd {packed / series:6.0f} = "
                f"{packed / series / parquet:.2f}x the input; "
                "CPU µs per point: unpickle {:.2f}, batch {:.2f}, pickle {:.2f}".format(*spent)
            )
    print(
        f"median after batch 0: {statistics.median(ratios):.2f}x the input, "
        "CPU µs per point: unpickle {:.2f}, batch {:.2f}, pickle {:.2f}".format(
            *map(statistics.median, zip(*cpu, strict=True))
        )
    )


if __name__ == "__main__":
    main()
