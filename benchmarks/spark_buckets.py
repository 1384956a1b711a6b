"""Sources per shuffle partition with bucket numbers as grouping keys and with
:func:`tsmon.spark.buckets.bucket_keys` (``benchmarks/README.md``, "Buckets spread evenly").

``PYTHONPATH=src .venv/bin/python benchmarks/spark_buckets.py [--sources N]``: for three
namings of N sources and P = 2, 4, 8 shuffle partitions (B = 8·P buckets), each source's bucket
by Spark's ``pmod(xxhash64(source), B)`` in a local session, and each key's partition by
:func:`~tsmon.spark.buckets.spark_partition` (Spark's hash partitioning, checked against Spark
in ``tests/spark/test_host.py``); prints the sources per partition and the largest ÷ the mean.
"""

from __future__ import annotations

import argparse

from tsmon.spark.buckets import BUCKETS_PER_PARTITION, Buckets, spark_partition
from tsmon.spark.session import spark_session

NAMINGS = ("s{i}", "s{i:04d}", "host-{i:03d}")


def per_partition(buckets: list[int], keys: tuple[int, ...], partitions: int) -> list[int]:
    """Sources per partition when bucket ``b`` is grouped by ``keys[b]``."""
    counts = [0] * partitions
    for b in buckets:
        counts[spark_partition(keys[b], partitions)] += 1
    return counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sources", type=int, default=1_000)
    args = ap.parse_args()
    from pyspark.sql import functions as F

    spark = spark_session()
    for naming in NAMINGS:
        names = [(naming.format(i=i),) for i in range(args.sources)]
        frame = spark.createDataFrame(names, "source STRING")
        for p in (2, 4, 8):
            count = BUCKETS_PER_PARTITION * p
            bucket = F.pmod(F.xxhash64("source"), F.lit(count))
            buckets = [r[0] for r in frame.select(bucket).collect()]
            mean = args.sources / p
            for label, keys in (
                ("numbers", tuple(range(count))),
                ("bucket_keys", Buckets.spread(count, p).keys),
            ):
                counts = per_partition(buckets, keys, p)
                print(
                    f"{naming:<13} P={p} {label:<12} {counts} largest/mean {max(counts) / mean:.2f}"
                )


if __name__ == "__main__":
    main()
