"""How many source buckets a job's node state is split into, frozen in its checkpoint.

Sources are hashed to buckets in Spark SQL (``pmod(xxhash64(source), B)``,
:func:`tsmon.spark.host.node_stream`); a changed B would move sources to buckets that do not
hold their nodes, so the checkpoint keeps B, and the version of the pickled nodes, in
``host.json``, and a job that asks for another is refused with one line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from tsmon.spark.files import atomic_write

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pyspark.sql import SparkSession

__all__ = [
    "BUCKETS_PER_PARTITION",
    "STATE_FORMAT",
    "BucketsChanged",
    "default_buckets",
    "freeze_buckets",
]

BUCKETS_PER_PARTITION = 8
"""Default buckets per shuffle partition: enough that hashing spreads them evenly over the
partitions, few enough that the per-bucket pandas overhead (~1 ms) stays small."""

STATE_FORMAT = 6
"""Version of the pickled nodes, kept in ``host.json``: 2 has compact registers
(:mod:`tsmon.core.register`), 3 their sealed runs in history files
(:mod:`tsmon.spark.history`), 4 registers, filters and stream models pickled as tuples of
their fields and the runs stored as binary records, not pickles (faster and smaller), 5 the
references to runs pickled as calls of :func:`tsmon.spark.history.run_at`, not persistent
ids (faster to pickle) and each bucket's pickled nodes in a file of the batch, not in the
Spark state, 6 sliding windows without monotonic queues (their extremes come from
the points they hold); a checkpoint of another version cannot be resumed."""


class BucketsChanged(ValueError):
    """The job asks for another bucket count than its checkpoint was started with."""


def default_buckets(spark: SparkSession) -> int:
    """:data:`BUCKETS_PER_PARTITION` × the session's shuffle partitions."""
    return BUCKETS_PER_PARTITION * int(spark.conf.get("spark.sql.shuffle.partitions", "2"))


def freeze_buckets(checkpoint: Path, wanted: int | None, default: int) -> int:
    """The bucket count of the checkpoint in directory ``checkpoint`` (``host.json``).

    A new checkpoint takes ``wanted`` (or ``default``) and records it; a checkpoint that has
    one keeps it, and raises :class:`BucketsChanged` if ``wanted`` differs, or if its nodes
    were pickled in another :data:`STATE_FORMAT`. A checkpoint of a node query without
    ``host.json`` was written by the older host and cannot be resumed.
    """
    meta = checkpoint / "host.json"
    if meta.exists():
        found = json.loads(meta.read_text(encoding="utf-8"))
        if found.get("state", 1) != STATE_FORMAT:
            raise BucketsChanged(
                f"the checkpoint {checkpoint} holds node state of an older tsmon (state format "
                f"{found.get('state', 1)}, this one reads {STATE_FORMAT}) and cannot be "
                "resumed: use a new checkpoint directory"
            )
        frozen = int(found["buckets"])
        if wanted is not None and wanted != frozen:
            raise BucketsChanged(
                f"buckets = {wanted}, but the checkpoint {checkpoint} was started with "
                f"{frozen} (sources are hashed to buckets): set buckets = {frozen} or use a "
                "new checkpoint directory"
            )
        return frozen
    if (checkpoint / "nodes" / "offsets").exists():
        raise BucketsChanged(
            f"the checkpoint {checkpoint} was written by an older tsmon (transformWithState "
            "host) and cannot be resumed: use a new checkpoint directory"
        )
    buckets = default if wanted is None else wanted
    checkpoint.mkdir(parents=True, exist_ok=True)
    record = {
        "buckets": buckets,
        "bucket": "pmod(xxhash64(source), buckets)",
        "state": STATE_FORMAT,
    }
    atomic_write(meta, json.dumps(record, sort_keys=True) + "\n")
    return buckets
