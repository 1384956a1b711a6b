"""How many source buckets a job's node state is split into, and their keys, frozen in its
checkpoint.

Sources are hashed to buckets in Spark SQL (``pmod(xxhash64(source), B)``,
:func:`tsmon.spark.host.node_stream`); a changed B would move sources to buckets that do not
hold their nodes, so the checkpoint keeps B, and the version of the pickled nodes, in
``host.json``, and a job that asks for another is refused with one line.

Spark hash-partitions the grouping key (``pmod(murmur3(key, 42), P)`` over P shuffle
partitions, one task each), so bucket numbers as keys spread unevenly: 16 buckets over 2
partitions fall 7 and 9, and the task with 9 decides the batch. Each bucket ``b`` is keyed
instead by :func:`bucket_keys`: the first ``b + B·j`` that Spark puts in partition ``b mod P``,
so every partition gets B/P buckets. The keys are frozen with B (a restart keeps the
checkpoint's P, whatever the session says); a checkpoint from before keeps its bucket numbers.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from tsmon.spark.files import atomic_write

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pyspark.sql import SparkSession

__all__ = [
    "BUCKETS_PER_PARTITION",
    "STATE_FORMAT",
    "Buckets",
    "BucketsChanged",
    "bucket_keys",
    "default_buckets",
    "freeze_buckets",
    "shuffle_partitions",
    "spark_partition",
]

BUCKETS_PER_PARTITION = 8
"""Default buckets per shuffle partition: enough that the sources hashed to a partition's
buckets even out, few enough that the per-bucket pandas overhead (~1 ms) stays small."""

STATE_FORMAT = 10
"""Version of the pickled nodes, kept in ``host.json``: 2 has compact registers
(:mod:`tsmon.core.register`), 3 their sealed runs in history files
(:mod:`tsmon.spark.history`), 4 registers, filters and stream models pickled as tuples of
their fields and the runs stored as binary records, not pickles (faster and smaller), 5 the
references to runs pickled as calls of ``run_at``, not persistent ids (faster to pickle) and
each bucket's pickled nodes in a file of the batch, not in the Spark state, 6 sliding windows
without monotonic queues (their extremes come from the points they hold), 7 the same pickles
with the buckets' keys in ``host.json`` (:func:`bucket_keys`), 8 a register's runs pickled as
one :class:`~tsmon.core.sealed.Runs`, in history files one call of
:func:`tsmon.spark.history.runs_at` on all their references, read only when needed (no
object per run when loaded), 9 a register config as one call of its fields (loaded as one
shared object) and stream models without streams as their settings alone, 10 a source
filter with the time of its last update (``sent_ms``); a checkpoint of another version
cannot be resumed."""


class Buckets(NamedTuple):
    """B, and the grouping key of each bucket (``keys[b]``, :func:`bucket_keys`)."""

    count: int
    keys: tuple[int, ...]

    @classmethod
    def spread(cls, count: int, partitions: int) -> Buckets:
        """``count`` buckets keyed to spread evenly over ``partitions`` (:func:`bucket_keys`)."""
        return cls(count, bucket_keys(count, partitions))


def spark_partition(key: int, partitions: int) -> int:
    """The shuffle partition of a BIGINT grouping key: Spark's ``HashPartitioning``,
    ``pmod(murmur3_x86_32(key, seed 42), partitions)`` (SQL ``pmod(hash(key), P)``)."""
    import mmh3  # the driver's only: host workers import this module too

    return mmh3.hash(struct.pack("<q", key), 42) % partitions


def bucket_keys(buckets: int, partitions: int) -> tuple[int, ...]:
    """The key of each bucket ``b``: the least ``b + buckets·j`` (j ≥ 0) in partition
    ``b mod partitions``, so the partitions get the buckets in turn.

    >>> keys = bucket_keys(16, 2)
    >>> [k % 16 for k in keys] == list(range(16))
    True
    >>> [spark_partition(k, 2) for k in keys] == [b % 2 for b in range(16)]
    True
    """
    keys = []
    for b in range(buckets):
        key = b
        while spark_partition(key, partitions) != b % partitions:
            key += buckets
        keys.append(key)
    return tuple(keys)


class BucketsChanged(ValueError):
    """The job asks for another bucket count than its checkpoint was started with."""


def shuffle_partitions(spark: SparkSession) -> int:
    """The session's ``spark.sql.shuffle.partitions``."""
    return int(spark.conf.get("spark.sql.shuffle.partitions", "2"))


def default_buckets(spark: SparkSession) -> int:
    """:data:`BUCKETS_PER_PARTITION` × the session's shuffle partitions."""
    return BUCKETS_PER_PARTITION * shuffle_partitions(spark)


def freeze_buckets(checkpoint: Path, wanted: int | None, default: int, partitions: int) -> Buckets:
    """The buckets of the checkpoint in directory ``checkpoint`` (``host.json``).

    A new checkpoint takes ``wanted`` (or ``default``) buckets keyed for ``partitions``
    shuffle partitions (:func:`bucket_keys`) and records them; a checkpoint that has them
    keeps them, and raises
    :class:`BucketsChanged` if ``wanted`` differs, or if its nodes were pickled in another
    :data:`STATE_FORMAT`. A checkpoint of a node query without ``host.json`` was written by
    the older host and cannot be resumed.
    """
    meta = checkpoint / "host.json"
    if meta.exists():
        found = json.loads(meta.read_text(encoding="utf-8"))
        state = found.get("state", 1)
        if state != STATE_FORMAT:
            raise BucketsChanged(
                f"the checkpoint {checkpoint} holds node state of another tsmon (state format "
                f"{state}, this one reads {STATE_FORMAT}) and cannot be resumed: use a new "
                "checkpoint directory"
            )
        frozen = int(found["buckets"])
        if wanted is not None and wanted != frozen:
            raise BucketsChanged(
                f"buckets = {wanted}, but the checkpoint {checkpoint} was started with "
                f"{frozen} (sources are hashed to buckets): set buckets = {frozen} or use a "
                "new checkpoint directory"
            )
        keys = tuple(found["keys"])
        if len(keys) != frozen or any(k < 0 or k % frozen != b for b, k in enumerate(keys)):
            raise BucketsChanged(
                f"{meta} is damaged: its keys are not one per bucket with key mod {frozen} = "
                "bucket; restore it or use a new checkpoint directory"
            )
        return Buckets(frozen, keys)
    if (checkpoint / "nodes" / "offsets").exists():
        raise BucketsChanged(
            f"the checkpoint {checkpoint} was written by an older tsmon (transformWithState "
            "host) and cannot be resumed: use a new checkpoint directory"
        )
    count = default if wanted is None else wanted
    buckets = Buckets.spread(count, partitions)
    checkpoint.mkdir(parents=True, exist_ok=True)
    record = {
        "buckets": count,
        "bucket": "pmod(xxhash64(source), buckets)",
        "keys": list(buckets.keys),
        "state": STATE_FORMAT,
    }
    atomic_write(meta, json.dumps(record, sort_keys=True) + "\n")
    return buckets
