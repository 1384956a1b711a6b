"""Host pure source nodes on Spark's Row-based ``transformWithState``.

A *pure node* is any object with ``step(control, data) -> outputs`` made by a factory
``new_node(source)``; it never imports pyspark. This module is the only glue:

- :class:`NodeProcessor` (a ``StatefulProcessor``) keeps each source's node as one pickled
  object in a single ``ValueState`` (RocksDB), and per micro-batch calls ``step`` once with the
  control rows (sorted by ``seq``) and the data rows (sorted by ``(ts, seq)``);
- :func:`node_stream` unions the data and control streams into one schema, groups by
  ``source`` and applies the processor;
- :class:`NodeTester` runs the same processor against an in-memory handle, without Spark, so
  the glue is unit-tested in milliseconds (the same idea as PySpark's ``TwsTester``).

Row shapes seen by a node (plain dicts of JSON-able values):

- data: ``{"series": str, "ts": int, "value": float, "seq": int}``;
- control: ``{"seq": int, "payload": <decoded JSON>}``;
- outputs: ``{"kind": str, "payload": <JSON-able>}``; the host adds the source and encodes
  the payload as JSON, giving rows of :data:`OUTPUT_DDL`.

Rows of kind :data:`PASS` (``payload`` JSON) are not for the node: the host yields them as
output rows unchanged, without loading the node. They let a job send rows that need no state
(unreadable input rows, say) to the driver in the same query, so the input is scanned once.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from pyspark.sql import Row
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import BinaryType, StructField, StructType

from tsmon.engine.guard import node_step
from tsmon.spark.session import ROCKSDB_PROVIDER

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.stateful_processor import TimerValues

__all__ = [
    "INPUT_DDL",
    "OUTPUT_DDL",
    "STATE_SCHEMA",
    "Node",
    "NodeFactory",
    "NodeProcessor",
    "NodeTester",
    "ctrl_row",
    "data_row",
    "node_stream",
    "run_step",
    "split_rows",
]

PASS = "pass"
"""Kind of rows the host passes through to the output unchanged."""

INPUT_DDL = (
    "source STRING, kind STRING, series STRING, ts BIGINT, value DOUBLE, seq BIGINT, payload STRING"
)
"""Common schema of the unioned stream; ``kind`` is ``'data'``, ``'ctrl'`` or :data:`PASS`."""

OUTPUT_DDL = "source STRING, kind STRING, payload STRING"
"""Schema of node output rows; ``payload`` is JSON."""

STATE_SCHEMA = StructType([StructField("node", BinaryType(), True)])
"""The one ValueState column: the pickled node (Python ``bytes`` round-trip as-is)."""

_INPUT_COLUMNS = ("source", "kind", "series", "ts", "value", "seq", "payload")
_OUTPUT_COLUMNS = ("source", "kind", "payload")


class Node(Protocol):
    """What the host needs from a pure node (picklable; no pyspark, no I/O, no clock)."""

    def step(self, control: list[dict], data: list[dict]) -> list[dict]:
        """Apply ``control`` (by seq), then ``data`` (by ts, seq); return output dicts."""
        ...


NodeFactory = Callable[[str], Node]
"""``new_node(source)``: must be picklable (a class or a module-level function)."""


def data_row(source: str, series: str, ts: int, value: float, seq: int) -> Row:
    """One data row of :data:`INPUT_DDL` (handy in tests)."""
    return Row(source=source, kind="data", series=series, ts=ts, value=value, seq=seq, payload=None)


def ctrl_row(source: str, seq: int, payload: Any) -> Row:
    """One control row of :data:`INPUT_DDL`; ``payload`` is JSON-encoded here."""
    return Row(
        source=source,
        kind="ctrl",
        series=None,
        ts=None,
        value=None,
        seq=seq,
        payload=json.dumps(payload, sort_keys=True),
    )


def split_rows(source: str, rows: Iterable[Any]) -> tuple[list[dict], list[dict], list[Row]]:
    """Split input rows into (control sorted by seq, data sorted by (ts, seq), output rows of
    the :data:`PASS` rows).

    ``rows`` are ``Row``s (or mappings) of :data:`INPUT_DDL`. Raises ``ValueError`` for an
    unknown kind or a data row without ts/seq, naming the source and the row.

    >>> c, d, p = split_rows("s", [data_row("s", "x", 5, 1.0, 2), data_row("s", "x", 5, 2.0, 1),
    ...                            ctrl_row("s", 9, {"add": 1}), data_row("s", "y", 3, 0.5, 7)])
    >>> c
    [{'seq': 9, 'payload': {'add': 1}}]
    >>> [(r["ts"], r["seq"]) for r in d]
    [(3, 7), (5, 1), (5, 2)]
    """
    control: list[dict] = []
    data: list[dict] = []
    passed: list[Row] = []
    for row in rows:
        kind = row["kind"]
        if kind == PASS:
            passed.append(Row(source=source, kind=PASS, payload=row["payload"]))
            continue
        if kind == "data":
            if row["ts"] is None or row["seq"] is None:
                raise ValueError(
                    f"source {source!r}: data row without ts or seq: {_show(row)}; "
                    "drop or repair such rows before the node stream"
                )
            data.append(
                {"series": row["series"], "ts": row["ts"], "value": row["value"], "seq": row["seq"]}
            )
        elif kind == "ctrl":
            payload = row["payload"]
            control.append(
                {"seq": row["seq"], "payload": None if payload is None else json.loads(payload)}
            )
        else:
            raise ValueError(
                f"source {source!r}: row kind must be 'data', 'ctrl' or {PASS!r}, "
                f"got {kind!r} in {_show(row)}"
            )
    control.sort(key=lambda r: r["seq"])
    data.sort(key=lambda r: (r["ts"], r["seq"]))
    return control, data, passed


def run_step(
    source: str, restore: Callable[[], Node], control: list[dict], data: list[dict]
) -> tuple[Node, list[Row]]:
    """Step the node ``restore()`` gives (the stored one) and turn its outputs into
    :data:`OUTPUT_DDL` rows; returns the node to store and the rows. A step that raises is
    quarantined (:func:`tsmon.engine.guard.node_step`): its rows become ``quarantined`` dead
    letters and the node stays as stored.

    Raises ``TypeError`` naming the source when an output is not ``{"kind": str, "payload":
    JSON-able}``.
    """
    rows = []
    node, outputs, _ = node_step(restore(), restore, control, data)
    for out in outputs:
        if not isinstance(out, Mapping) or not isinstance(out.get("kind"), str):
            raise TypeError(
                f"source {source!r}: {type(node).__name__}.step must return dicts with a str "
                f"'kind' and a JSON-able 'payload', got {out!r}"
            )
        try:
            payload = json.dumps(out.get("payload"), sort_keys=True)
        except (TypeError, ValueError) as e:
            raise TypeError(
                f"source {source!r}: output payload of kind {out['kind']!r} is not JSON-able "
                f"({e}); return plain dicts, lists, str, int, float, bool or None"
            ) from None
        rows.append(Row(source=source, kind=out["kind"], payload=payload))
    return node, rows


class NodeProcessor(StatefulProcessor):
    """The ``StatefulProcessor`` hosting one pure node per grouping key (source).

    Per key and micro-batch: split and sort the rows, load the node from the ValueState
    (or create it with ``new_node(source)``), call ``step`` once, store the node, and yield
    the output rows. Keys without input rows in a batch are not called (timeMode ``None``).
    """

    def __init__(self, new_node: NodeFactory, state_name: str = "node") -> None:
        self.new_node = new_node
        self.state_name = state_name

    def init(self, handle: StatefulProcessorHandle) -> None:
        """Declare the single ValueState holding the pickled node."""
        self._node_state = handle.getValueState(self.state_name, STATE_SCHEMA)

    def handleInputRows(
        self, key: Any, rows: Iterator[Row], timerValues: TimerValues
    ) -> Iterator[Row]:
        """Run one step of the node of ``key``; ``key`` arrives as a 1-tuple ``(source,)``."""
        source = key[0] if isinstance(key, tuple) else key
        control, data, passed = split_rows(source, rows)
        yield from passed
        if not (control or data):
            return
        stored = self._node_state.get()

        def restore() -> Node:
            return self.new_node(source) if stored is None else pickle.loads(stored[0])

        node, out = run_step(source, restore, control, data)
        self._node_state.update((pickle.dumps(node, protocol=pickle.HIGHEST_PROTOCOL),))
        yield from out

    def close(self) -> None:
        """Nothing to release."""


def node_stream(
    spark: SparkSession,
    data_df: DataFrame,
    control_df: DataFrame,
    new_node: NodeFactory,
    output_schema: StructType | str = OUTPUT_DDL,
) -> DataFrame:
    """Union data and control, group by ``source`` and host ``new_node`` nodes on them.

    ``data_df`` needs columns ``source, series, ts, value, seq``; with a ``kind`` column, rows
    of kind :data:`PASS` (with a JSON ``payload``) pass through to the output. ``control_df``
    needs ``source, seq, payload`` (see :mod:`tsmon.spark.control`). Columns are cast to
    :data:`INPUT_DDL`. The result has ``output_schema`` (default :data:`OUTPUT_DDL`) and is
    an append-mode stream.
    """
    from pyspark.sql import functions as F

    provider = spark.conf.get("spark.sql.streaming.stateStore.providerClass", None)
    if provider != ROCKSDB_PROVIDER:
        raise ValueError(
            f"transformWithState needs the RocksDB state store, but "
            f"spark.sql.streaming.stateStore.providerClass is {provider!r}; start the session "
            "with tsmon.spark.session.spark_session() or set it to " + ROCKSDB_PROVIDER
        )
    _require(data_df, ("source", "series", "ts", "value", "seq"), "data_df")
    _require(control_df, ("source", "seq", "payload"), "control_df")
    types = dict(
        source="string", series="string", ts="bigint", value="double", seq="bigint",
        payload="string",
    )  # fmt: skip

    def shape(df: DataFrame, kind: str) -> DataFrame:
        cols = []
        for name in _INPUT_COLUMNS:
            if name == "kind":
                given = kind == "data" and "kind" in df.columns
                cols.append((F.col("kind") if given else F.lit(kind)).alias("kind"))
            elif name in df.columns:
                cols.append(F.col(name).cast(types[name]).alias(name))
            else:
                cols.append(F.lit(None).cast(types[name]).alias(name))
        return df.select(*cols)

    union = shape(data_df, "data").unionByName(shape(control_df, "ctrl"))
    return union.groupBy("source").transformWithState(
        statefulProcessor=NodeProcessor(new_node),
        outputStructType=output_schema,
        outputMode="Append",
        timeMode="None",
    )


def _require(df: DataFrame, columns: tuple[str, ...], name: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{name} lacks columns {missing}; it has {df.columns}")


def _show(row: Any) -> str:
    return repr(row.asDict() if isinstance(row, Row) else dict(row))


class _MemoryValueState:
    """A ValueState over a dict keyed by the tester's current grouping key."""

    def __init__(self, handle: _MemoryHandle, name: str) -> None:
        self._handle = handle
        self._name = name

    def _store(self) -> dict[Any, tuple]:
        return self._handle.states.setdefault(self._name, {})

    def exists(self) -> bool:
        return self._handle.key in self._store()

    def get(self) -> tuple | None:
        return self._store().get(self._handle.key)

    def update(self, value: tuple) -> None:
        self._store()[self._handle.key] = tuple(value)

    def clear(self) -> None:
        self._store().pop(self._handle.key, None)


class _MemoryHandle:
    """In-memory stand-in for ``StatefulProcessorHandle``: value state only."""

    def __init__(self) -> None:
        self.key: Any = None
        self.states: dict[str, dict[Any, tuple]] = {}

    def getValueState(self, stateName: str, schema: Any, ttlDurationMs: int | None = None) -> Any:
        if ttlDurationMs is not None:
            raise NotImplementedError("NodeTester does not support state TTL")
        return _MemoryValueState(self, stateName)


class NodeTester:
    """Drive a :class:`NodeProcessor` key by key without Spark.

    Supported: value state (the pickled node, round-tripped through ``pickle`` on every call
    exactly as on Spark), control/data splitting and ordering, output encoding, peeking and
    seeding a key's node. Not supported: timers, TTL, watermarks, list/map state, initial
    state; keys are processed one call at a time, never concurrently.

    Examples
    --------
    >>> from tsmon.spark.toy import RunningSum
    >>> t = NodeTester(RunningSum)
    >>> t.test("s1", [data_row("s1", "x", 2, 1.5, 0), ctrl_row("s1", 0, {"add": 1.0})])
    [Row(source='s1', kind='sum', payload='{"count": 1, "last_ts": 2, "total": 2.5}')]
    >>> t.peek("s1").total, t.peek("nobody")
    (2.5, None)
    """

    def __init__(self, new_node: NodeFactory) -> None:
        self.processor = NodeProcessor(new_node)
        self._handle = _MemoryHandle()
        self.processor.init(self._handle)  # type: ignore[arg-type]

    def test(self, source: str, rows: Iterable[Row]) -> list[Row]:
        """Process one micro-batch of ``rows`` for ``source``; return the output rows."""
        from pyspark.sql.streaming.stateful_processor import TimerValues

        self._handle.key = (source,)
        try:
            return list(self.processor.handleInputRows((source,), iter(rows), TimerValues()))
        finally:
            self._handle.key = None

    def _state(self) -> dict[Any, tuple]:
        return self._handle.states.setdefault(self.processor.state_name, {})

    def peek(self, source: str) -> Any:
        """The node of ``source`` as stored (unpickled copy), or None if it has none yet."""
        stored = self._state().get((source,))
        return None if stored is None else pickle.loads(stored[0])

    def seed(self, source: str, node: Node) -> None:
        """Store ``node`` as the state of ``source``, as if earlier batches had built it."""
        self._state()[(source,)] = (pickle.dumps(node, protocol=pickle.HIGHEST_PROTOCOL),)
