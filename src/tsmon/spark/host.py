"""Host pure source nodes on Spark's ``applyInPandasWithState``, keyed by source buckets.

A *pure node* is any object with ``step(control, data) -> outputs`` made by a factory
``new_node(source)``; it never imports pyspark. A node with ``step_columns(control, series,
ts, value, seq, clock_ms=)`` (:class:`~tsmon.engine.node.SourceNode`) gets its points as numpy
columns, with no per-row dicts, and the batch's clock (Spark's batch timestamp, kept in the
offset log: a replayed batch sees the same), against which it checks ``max_future``.
This module is the only glue:

- :func:`node_stream` unions the data and control streams into one schema, adds the bucket
  of each row's source, ``pmod(xxhash64(source), B)`` (Spark SQL: stable across processes and
  restarts), groups by the bucket's key (:func:`~tsmon.spark.buckets.bucket_keys`: the
  shuffle partitions get equally many buckets) and applies :class:`BucketHost`;
- :class:`BucketHost` runs once per bucket and micro-batch on the bucket's rows as pandas
  frames: the bucket keeps each source's pickled node, so a source without rows is neither
  unpickled nor re-pickled; the pickled nodes and the older points of their registers are
  in history files (:mod:`tsmon.spark.history`), the Spark state only says which, so little
  crosses between the JVM and Python for it; per source with rows it calls the node once
  with the control rows (sorted by ``seq``) and the data (sorted by ``(ts, seq)``,
  vectorized);
- :func:`~tsmon.spark.buckets.freeze_buckets` keeps B and the keys in the checkpoint
  (``host.json``): a changed B would move sources to buckets that do not hold their nodes;
- :class:`~tsmon.spark.host_tester.HostTester` runs the same :class:`BucketHost` with
  pyspark's own ``GroupState``, without Spark, so the glue is unit-tested in milliseconds.

Why this API (measured, ``docs/architecture.md``): the Row-based ``transformWithState``
converts every value with an Arrow scalar ``as_py()`` and makes blocking JVM calls per key;
``applyInPandasWithState`` ships the state with the data and slices a batch per key
vectorized, and a few dozen keys (buckets) keep its per-key cost small.

Row shapes seen by a node (plain JSON-able values):

- data: columns, or ``{"series": str, "ts": int, "value": float, "seq": int}`` dicts;
- control: ``{"seq": int, "payload": <decoded JSON>}``;
- outputs: ``{"kind": str, "payload": <JSON-able>}``; the host adds the source and encodes
  the payload as JSON, giving rows of :data:`OUTPUT_DDL`.

Rows of kind :data:`PASS` (``payload`` JSON) are not for the node: the host outputs them
unchanged, without loading the node. They let a job send rows that need no state (unreadable
input rows, say) to the driver in the same query, so the input is scanned once.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import numpy as np
import pandas as pd
from pyspark.sql.types import BinaryType, StructField, StructType

from tsmon.engine.guard import node_step
from tsmon.spark.buckets import Buckets, default_buckets, shuffle_partitions
from tsmon.spark.cpu import Clock, settle_worker
from tsmon.spark.history import Blobs, BucketState, History

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.streaming.state import GroupState

__all__ = [
    "OUTPUT_DDL",
    "PASS",
    "STATE_SCHEMA",
    "BucketHost",
    "Node",
    "NodeFactory",
    "bucket_key",
    "ctrl_row",
    "data_row",
    "node_stream",
]

# applyInPandasWithState's worker concatenates frames in a way pandas deprecates: one
# FutureWarning per batch on stderr, nothing to act on (the worker imports this module)
warnings.filterwarnings("ignore", category=FutureWarning, module=r"pyspark\.")

PASS = "pass"
"""Kind of rows the host passes through to the output unchanged."""

KINDS = {"data": 0, "ctrl": 1, PASS: 2}
"""The input row kinds and their codes in the host's ``kind`` column (a TINYINT)."""
DATA, CTRL, PASS_CODE = KINDS["data"], KINDS["ctrl"], KINDS[PASS]

INPUT_COLUMNS = ("source", "kind", "text", "ts", "value", "seq")
"""The host's input columns (then :func:`node_stream`'s bucket key): ``kind`` is a code of
:data:`KINDS`; ``text`` is a data row's series, a control or pass row's JSON payload; ``ts``
and ``seq`` are 0 where a row has none (pandas has no null int64), ``value`` null. One text
column and a byte code instead of a series, a kind and a payload column: a data row crosses
to Python with two strings, not four (:func:`node_stream`)."""
KIND_ERROR = f"row kind must be 'data', 'ctrl' or {PASS!r}"
NO_TS_ERROR = "a data row of the node stream has no ts or seq"

OUTPUT_DDL = "source STRING, kind STRING, payload STRING"
"""Schema of node output rows; ``payload`` is JSON."""

STATE_SCHEMA = StructType([StructField("nodes", BinaryType(), True)])
"""A bucket's state (:class:`~tsmon.spark.history.BucketState`), as its codec commits it:
with history files, the files each source's node refers to and the batch count, a few bytes
per source (the pickled nodes are in a file of the batch); without, every pickled node."""


class Node(Protocol):
    """What the host needs from a pure node (picklable; no pyspark, no I/O, no clock)."""

    def step(self, control: list[dict], data: list[dict]) -> list[dict]:
        """Apply ``control`` (by seq), then ``data`` (by ts, seq); return output dicts."""
        ...


NodeFactory = Callable[[str], Node]
"""``new_node(source)``: must be picklable (a class or a module-level function)."""


def data_row(source: str, series: str, ts: int, value: float, seq: int) -> dict[str, Any]:
    """One data row of the node stream (handy in tests)."""
    return dict(source=source, kind="data", series=series, ts=ts, value=value, seq=seq)


def ctrl_row(source: str, seq: int, payload: Any) -> dict[str, Any]:
    """One control row of the node stream; ``payload`` is JSON-encoded here."""
    return dict(source=source, kind="ctrl", seq=seq, payload=json.dumps(payload, sort_keys=True))


class BucketHost:
    """The ``applyInPandasWithState`` function: every node of one bucket, one call per batch.

    ``new_node`` is cloudpickled into the plan: keep it small (a class, or a ``partial`` of a
    module-level function with small settings). ``history``: the directory of the register
    history files (:mod:`tsmon.spark.history`); None keeps whole nodes in the state.
    """

    def __init__(self, new_node: NodeFactory, cpu: Any = None, history: str | None = None) -> None:
        self.new_node = new_node
        self.cpu = cpu  # an accumulator of CPU time by part (tsmon.spark.cpu), or None
        self.history = history

    def open(self, key: int, value: bytes | None) -> tuple[Blobs, BucketState]:
        """The codec of the nodes of the bucket of ``key`` (with their history and the pickled
        nodes in files, or whole in the state) and its state, stored in Spark as ``value``
        (None: new)."""
        if self.history is None:
            return Blobs.open(value)
        return History.open(Path(self.history), key, value)

    def __call__(
        self, key: tuple, frames: Iterable[pd.DataFrame], state: GroupState
    ) -> Iterator[pd.DataFrame]:
        """Read the bucket's state once, step its sources with rows, write it once."""
        settle_worker()
        clock = Clock(self.cpu)
        chunks = list(frames)  # a bucket's rows may come in several Arrow batches
        rows = chunks[0] if len(chunks) == 1 else pd.concat(chunks, ignore_index=True)
        clock.lap("hostRows")  # pyspark makes the frames as they are pulled
        codec, stored = self.open(int(key[0]), state.get[0] if state.exists else None)
        clock.lap("hostState")
        batch_ms = state.getCurrentProcessingTimeMs()
        out, touched = self.step(rows, stored.nodes, clock, batch_ms, codec)
        if touched:
            state.update((codec.commit(stored),))
        clock.lap("hostState")
        clock.send()
        yield out

    def step(
        self,
        rows: pd.DataFrame,
        nodes: dict[str, bytes],
        clock: Clock | None = None,
        batch_ms: int | None = None,
        codec: Blobs | None = None,
    ) -> tuple[pd.DataFrame, bool]:
        """Step the nodes of ``rows`` (columns as :func:`node_stream` makes them), updating
        ``nodes`` in place; returns the output rows and whether any node was stepped.
        ``clock`` times the parts: ``hostConvert`` (rows to columns by source), ``hostState``
        (unpickling and pickling nodes), ``hostNode`` (the nodes' steps and outputs).
        ``batch_ms``: the batch's clock, given to columnar steps as ``clock_ms``. ``codec``
        pickles the nodes (:class:`~tsmon.spark.history.Blobs`: whole)."""
        clock = Clock(None) if clock is None else clock
        codec = Blobs() if codec is None else codec
        kind = rows["kind"].to_numpy()
        is_data = kind == DATA
        sources, kinds, payloads = [], [], []
        control: dict[str, list[dict]] = {}
        if not is_data.all():  # control rows and pass rows are few: pick them out
            if bad := sorted(set(kind.tolist()) - set(KINDS.values())):
                raise ValueError(f"{KIND_ERROR} (codes {KINDS}), got codes {bad}")
            passed = rows[kind == PASS_CODE]
            sources += passed["source"].tolist()
            kinds += [PASS] * len(passed)
            payloads += passed["text"].tolist()
            control = _control(rows[kind == CTRL])
        data = _data(rows, is_data)
        clock.lap("hostConvert")
        for source in sorted(control.keys() | data.keys()):
            blob = nodes.get(source)

            def restore(source: str = source, blob: bytes | None = blob) -> Any:
                return self.new_node(source) if blob is None else codec.loads(blob)

            restored = restore()
            clock.lap("hostState")
            # a step that raises is quarantined (tsmon.engine.guard): the node stays as stored
            node, outputs, _ = node_step(
                restored,
                restore,
                control.get(source, []),
                data.get(source),
                step=partial(_call, clock_ms=batch_ms),
                rows_of=Columns.rows,
            )
            for out in outputs:
                sources.append(source)
                kinds.append(_kind(source, node, out))
                payloads.append(_payload(source, out))
            clock.lap("hostNode")
            nodes[source] = codec.dumps(source, node)
            clock.lap("hostState")
        frame = pd.DataFrame({"source": sources, "kind": kinds, "payload": payloads})
        return frame, bool(control or data)


def _control(rows: pd.DataFrame) -> dict[str, list[dict]]:
    """Control rows by source, each sorted by ``seq``, payloads decoded."""
    control: dict[str, list[dict]] = {}
    for source, seq, payload in zip(rows["source"], rows["seq"], rows["text"], strict=True):
        decoded = None if payload is None else json.loads(payload)
        control.setdefault(source, []).append({"seq": int(seq), "payload": decoded})
    for items in control.values():
        items.sort(key=lambda r: r["seq"])
    return control


class Columns(NamedTuple):
    """One source's data points of a batch as columns, in ``(ts, seq)`` order."""

    series: np.ndarray
    ts: np.ndarray
    value: np.ndarray
    seq: np.ndarray

    def rows(self) -> list[dict[str, Any]]:
        """The points as data-row dicts (nodes without ``step_columns``, quarantine)."""
        return [
            {"series": s, "ts": t, "value": v, "seq": q}
            for s, t, v, q in zip(
                self.series, self.ts.tolist(), self.value.tolist(), self.seq.tolist(), strict=True
            )
        ]


def _data(rows: pd.DataFrame, is_data: np.ndarray) -> dict[str, Columns]:
    """The columns of the data rows (``is_data``) by source, each in ``(ts, seq)`` order (one
    vectorized sort; each column gathered once)."""
    if not is_data.any():
        return {}
    pick = None if is_data.all() else np.flatnonzero(is_data)

    def column(name: str, dtype: Any) -> np.ndarray:
        values = rows[name].to_numpy(dtype)
        return values if pick is None else values[pick]

    codes, names = pd.factorize(column("source", object), sort=True)
    ts, seq = column("ts", np.int64), column("seq", np.int64)
    order = np.lexsort((seq, ts, codes))
    codes, ts, seq = codes[order], ts[order], seq[order]
    take = order if pick is None else pick[order]
    series = rows["text"].to_numpy(object)[take]
    value = rows["value"].to_numpy(np.float64)[take]
    cuts = np.flatnonzero(np.diff(codes)) + 1
    starts = np.concatenate(([0], cuts))
    ends = np.concatenate((cuts, [len(codes)]))
    return {
        names[codes[a]]: Columns(series[a:b], ts[a:b], value[a:b], seq[a:b])
        for a, b in zip(starts.tolist(), ends.tolist(), strict=True)
    }


def _call(node: Any, control: Sequence[Mapping[str, Any]], data: Any, clock_ms: int | None) -> list:
    """One step of ``node``: over columns and the batch's clock when it takes them, else
    over dict rows."""
    columns = _NO_DATA if data is None else data
    columnar = getattr(node, "step_columns", None)
    if columnar is not None:
        return columnar(control, *columns, clock_ms=clock_ms)
    return node.step(control, columns.rows())


_NO_DATA = Columns(
    np.zeros(0, dtype=object), np.zeros(0, np.int64), np.zeros(0, np.float64), np.zeros(0, np.int64)
)


def _kind(source: str, node: Any, out: Any) -> str:
    if not isinstance(out, Mapping) or not isinstance(out.get("kind"), str):
        raise TypeError(
            f"source {source!r}: {type(node).__name__}.step must return dicts with a str "
            f"'kind' and a JSON-able 'payload', got {out!r}"
        )
    return out["kind"]


def _payload(source: str, out: Mapping[str, Any]) -> str:
    try:
        return json.dumps(out.get("payload"), sort_keys=True)
    except (TypeError, ValueError) as e:
        raise TypeError(
            f"source {source!r}: output payload of kind {out['kind']!r} is not JSON-able "
            f"({e}); return plain dicts, lists, str, int, float, bool or None"
        ) from None


def node_stream(
    spark: SparkSession,
    data_df: DataFrame,
    control_df: DataFrame,
    new_node: NodeFactory,
    buckets: Buckets | None = None,
    cpu: Any = None,
    history: str | None = None,
) -> DataFrame:
    """Union data and control, group by source bucket and host ``new_node`` nodes on them.

    ``data_df`` needs columns ``source, series, ts, value, seq`` (a data row with a null ``ts``
    or ``seq`` fails the query); with a ``kind`` column, rows of kind :data:`PASS` (with a JSON
    ``payload``) pass through to the output (a kind not in :data:`KINDS` fails the query).
    The host gets :data:`INPUT_COLUMNS`. ``control_df`` needs ``source, seq, payload``
    (see :mod:`tsmon.spark.control`). ``buckets``: B and the buckets' keys (default
    :data:`~tsmon.spark.buckets.BUCKETS_PER_PARTITION` × the shuffle partitions, keyed for
    them); keep them fixed for a checkpoint (:func:`~tsmon.spark.buckets.freeze_buckets`).
    ``cpu``: an accumulator the host adds its CPU time to
    (:class:`tsmon.spark.cpu.CpuTimes`). ``history``: where the nodes' register history is
    stored (:mod:`tsmon.spark.history`; None: in the state). The result has
    :data:`OUTPUT_DDL` and is an append-mode stream.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.streaming.state import GroupStateTimeout

    _require(data_df, ("source", "series", "ts", "value", "seq"), "data_df")
    _require(control_df, ("source", "seq", "payload"), "control_df")
    if buckets is None:
        buckets = Buckets.spread(default_buckets(spark), shuffle_partitions(spark))
    # pandas has no null int64: ts and seq are 0 where a row has none (control, pass rows)
    missing = F.raise_error(F.lit(NO_TS_ERROR)).cast("bigint")
    kind, text, fill = F.lit(DATA), F.col("series").cast("string"), missing
    if "kind" in data_df.columns:  # text: the series of data rows, else the payload
        given = F.col("kind")
        named = F.coalesce(given, F.lit("null"))
        kind = (
            F.when(given == "data", DATA).when(given == "ctrl", CTRL).when(given == PASS, PASS_CODE)
        )
        kind = kind.otherwise(F.raise_error(F.concat(F.lit(f"{KIND_ERROR}, got "), named)))
        payload = F.col("payload") if "payload" in data_df.columns else F.lit(None)
        text = F.when(given == "data", text).otherwise(payload.cast("string"))
        fill = F.when(given == "data", missing).otherwise(F.lit(0).cast("bigint"))
    data = data_df.select(
        F.col("source").cast("string").alias("source"),
        kind.cast("tinyint").alias("kind"),
        text.alias("text"),
        F.coalesce(F.col("ts").cast("bigint"), fill).alias("ts"),
        F.col("value").cast("double").alias("value"),
        F.coalesce(F.col("seq").cast("bigint"), fill).alias("seq"),
    )
    control = control_df.select(
        F.col("source").cast("string").alias("source"),
        F.lit(CTRL).cast("tinyint").alias("kind"),
        F.col("payload").cast("string").alias("text"),
        F.lit(0).cast("bigint").alias("ts"),
        F.lit(None).cast("double").alias("value"),
        F.coalesce(F.col("seq").cast("bigint"), F.lit(0).cast("bigint")).alias("seq"),
    )
    union = data.unionByName(control)
    bucketed = union.withColumn("bucket", bucket_key(buckets))
    return bucketed.groupBy("bucket").applyInPandasWithState(
        BucketHost(new_node, cpu, history),
        outputStructType=OUTPUT_DDL,
        stateStructType=STATE_SCHEMA,
        outputMode="append",
        timeoutConf=GroupStateTimeout.NoTimeout,
    )


def bucket_key(buckets: Buckets) -> Column:
    """The grouping key of a row: its source's bucket ``pmod(xxhash64(source), B)``'s key, a
    BIGINT (what Spark hashes to place it: :func:`~tsmon.spark.buckets.spark_partition`)."""
    from pyspark.sql import functions as F

    bucket = F.pmod(F.xxhash64("source"), F.lit(buckets.count))
    keys = F.array(*(F.lit(k) for k in buckets.keys)).cast("array<bigint>")
    return F.element_at(keys, (bucket + 1).cast("int"))


def _require(df: DataFrame, columns: tuple[str, ...], name: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{name} lacks columns {missing}; it has {df.columns}")
