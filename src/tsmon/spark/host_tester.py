"""Drive the Spark host's :class:`~tsmon.spark.host.BucketHost` without Spark, as pyspark's
``TwsTester`` drives a stateful processor: unit tests of the glue in milliseconds."""

from __future__ import annotations

import pickle
import time
import zlib
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from tsmon.spark.history import Blobs, BucketState
from tsmon.spark.host import (
    INPUT_COLUMNS,
    KIND_ERROR,
    KINDS,
    NO_TS_ERROR,
    STATE_SCHEMA,
    BucketHost,
    Node,
    NodeFactory,
)

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pyspark.sql.streaming.state import GroupState

__all__ = ["HostTester"]


class HostTester:
    """Drive a :class:`BucketHost` bucket by bucket without Spark.

    Each call groups the rows by bucket (``crc32(source) % buckets``: stable, but not Spark's
    xxhash64, which only decides which sources share a state value), builds the frames
    ``node_stream`` would (:data:`~tsmon.spark.host.INPUT_COLUMNS`), and calls the host with
    pyspark's own ``GroupState``, the state round-tripped through pickle as on Spark. ``peek``
    and ``seed`` read and write one source's node. ``history``: the directory of register
    history files (:mod:`tsmon.spark.history`), as the Spark runtime gives it; None keeps nodes
    whole.

    Examples
    --------
    >>> from tsmon.spark.host import ctrl_row, data_row
    >>> from tsmon.spark.toy import RunningSum
    >>> t = HostTester(RunningSum)
    >>> t.test([data_row("s1", "x", 2, 1.5, 0), ctrl_row("s1", 0, {"add": 1.0})])
    [{'source': 's1', 'kind': 'sum', 'payload': '{"count": 1, "last_ts": 2, "total": 2.5}'}]
    >>> t.peek("s1").total, t.peek("nobody")
    (2.5, None)
    """

    def __init__(self, new_node: NodeFactory, buckets: int = 4, history: str | None = None) -> None:
        self.host = BucketHost(new_node, history=history)
        self.buckets = buckets
        self.states: dict[int, bytes] = {}  # bucket -> the state value as Spark stores it

    def bucket(self, source: str) -> int:
        return zlib.crc32(source.encode()) % self.buckets

    def test(
        self, rows: Iterable[Mapping[str, Any]], clock_ms: int | None = None
    ) -> list[dict[str, Any]]:
        """Process one micro-batch of input rows; return the output rows, bucket by bucket.
        ``clock_ms``: the batch's timestamp (the wall clock by default), as Spark's
        ``GroupState`` gives it."""
        clock = int(time.time() * 1000) if clock_ms is None else clock_ms
        by_bucket: dict[int, list[tuple]] = {}
        for row in rows:
            by_bucket.setdefault(self.bucket(row["source"]), []).append(_input_row(row))
        out: list[dict[str, Any]] = []
        for b in sorted(by_bucket):
            frame = pd.DataFrame(by_bucket[b], columns=list(INPUT_COLUMNS))
            frame = frame.astype(_DTYPES)
            state = self._state(b, clock)
            for result in self.host((b,), iter([frame]), state):
                out += result.to_dict("records")
            if state.exists:  # as pyspark's worker sends it to the JVM
                self.states[b] = pickle.dumps(state._value_schema.toInternal(state._value))
        return out

    def _state(self, b: int, clock_ms: int) -> GroupState:
        from pyspark.sql.streaming.state import GroupState, GroupStateTimeout

        stored = self.states.get(b)
        return GroupState(
            optionalValue=None if stored is None else pickle.loads(stored),
            batchProcessingTimeMs=clock_ms,
            eventTimeWatermarkMs=-1,
            timeoutConf=GroupStateTimeout.NoTimeout,
            hasTimedOut=False,
            watermarkPresent=False,
            defined=stored is not None,
            updated=False,
            removed=False,
            timeoutTimestamp=-1,
            keyAsUnsafe=b"",
            valueSchema=STATE_SCHEMA,
        )

    def _open(self, source: str) -> tuple[Blobs, BucketState]:
        """The codec and the committed state of ``source``'s bucket."""
        stored = self.states.get(self.bucket(source))
        return self.host.open(
            self.bucket(source), None if stored is None else pickle.loads(stored)[0]
        )

    def _stored(self, source: str) -> BucketState:
        return self._open(source)[1]

    def peek(self, source: str) -> Any:
        """The node of ``source`` as stored (unpickled copy), or None if it has none yet. The
        copy holds its registers' points (pickled plainly once more): a node the codec loads
        reads its runs from the bucket's files, which later batches delete."""
        codec, stored = self._open(source)
        blob = stored.nodes.get(source)
        return None if blob is None else pickle.loads(pickle.dumps(codec.loads(blob)))

    def seed(self, source: str, node: Node) -> None:
        """Store ``node`` as the node of ``source``, as if an earlier batch had built it
        (committed as one)."""
        codec, stored = self._open(source)
        stored.nodes[source] = codec.dumps(source, node)
        self.states[self.bucket(source)] = pickle.dumps((codec.commit(stored),))


_DTYPES = {"kind": np.int8, "ts": np.int64, "value": np.float64, "seq": np.int64}


def _input_row(row: Mapping[str, Any]) -> tuple:
    """A row of :func:`~tsmon.spark.host.data_row`'s, :func:`~tsmon.spark.host.ctrl_row`'s or
    a pass row's shape as ``node_stream`` gives it to the host (its errors as ValueError)."""
    kind = row.get("kind")
    if kind not in KINDS:
        raise ValueError(f"{KIND_ERROR}, got {kind}")
    data = kind == "data"
    ts, seq = row.get("ts"), row.get("seq")
    if data and (ts is None or seq is None):
        raise ValueError(NO_TS_ERROR)
    text = row.get("series") if data else row.get("payload")
    return (row["source"], KINDS[kind], text, ts or 0, row.get("value"), seq or 0)
