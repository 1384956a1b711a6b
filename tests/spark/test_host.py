"""The bucket host's glue, without Spark: HostTester drives BucketHost in memory."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tsmon.engine.node import SourceNode
from tsmon.engine.settings import DAY_MS, HostSettings, RegisterSettings
from tsmon.spark.buckets import (
    STATE_FORMAT,
    Buckets,
    BucketsChanged,
    bucket_keys,
    freeze_buckets,
    spark_partition,
)
from tsmon.spark.host import BucketHost, ctrl_row, data_row
from tsmon.spark.host_tester import HostTester
from tsmon.spark.toy import RunningSum


class Recorder:
    """A node that records what the host passed to ``step``."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.calls: list[tuple[list[dict], list[dict]]] = []

    def step(self, control: list[dict], data: list[dict]) -> list[dict]:
        self.calls.append((control, data))
        return [{"kind": "seen", "payload": {"n": len(self.calls)}}]


def test_control_first_then_data_in_ts_seq_order():
    t = HostTester(Recorder)
    rows = [
        data_row("s", "b", 7, 1.0, 3),
        ctrl_row("s", 5, {"k": 2}),
        data_row("s", "a", 7, 2.0, 1),
        data_row("s", "a", 2, 3.0, 9),
        ctrl_row("s", 4, {"k": 1}),
    ]
    assert t.test(rows) == [{"source": "s", "kind": "seen", "payload": '{"n": 1}'}]
    ((control, data),) = t.peek("s").calls
    assert control == [{"seq": 4, "payload": {"k": 1}}, {"seq": 5, "payload": {"k": 2}}]
    assert [(d["ts"], d["seq"], d["series"], d["value"]) for d in data] == [
        (2, 9, "a", 3.0),
        (7, 1, "a", 2.0),
        (7, 3, "b", 1.0),
    ]


def test_state_survives_across_batches_and_sources_in_one_bucket_are_separate():
    t = HostTester(RunningSum, buckets=1)  # every source shares one state value
    t.test([data_row("a", "x", 1, 1.0, 0), data_row("b", "x", 1, 5.0, 0)])
    t.test([ctrl_row("a", 0, {"add": 10.0})])
    out = t.test([data_row("a", "x", 2, 1.0, 1)])
    assert [json.loads(r["payload"]) for r in out] == [{"total": 12.0, "count": 2, "last_ts": 2}]
    assert (t.peek("a").total, t.peek("b").total, t.peek("c")) == (12.0, 5.0, None)


def test_a_source_without_rows_keeps_its_stored_bytes():
    t = HostTester(RunningSum, buckets=1)
    t.test([data_row("a", "x", 1, 1.0, 0), data_row("b", "x", 1, 5.0, 0)])
    before = t._stored("b").nodes["b"]
    t.test([data_row("a", "x", 2, 1.0, 1)])
    assert t._stored("b").nodes["b"] is not None and t._stored("b").nodes["b"] == before


def test_seed_then_continue():
    t = HostTester(RunningSum)
    node = RunningSum("a")
    node.total, node.count, node.last_ts = 100.0, 4, 50
    t.seed("a", node)
    (row,) = t.test([data_row("a", "x", 60, 1.0, 9)])
    assert json.loads(row["payload"]) == {"total": 101.0, "count": 5, "last_ts": 60}


def test_node_errors_name_the_source():
    class Bad:
        def __init__(self, source: str) -> None:
            pass

        def step(self, control, data):
            return [{"kind": "x", "payload": {1, 2}}]

    with pytest.raises(TypeError, match=r"source 's'.*not JSON-able"):
        HostTester(Bad).test([data_row("s", "x", 1, 1.0, 0)])
    with pytest.raises(ValueError, match=r"kind must be 'data', 'ctrl' or 'pass', got oops"):
        HostTester(RunningSum).test([{"source": "s", "kind": "oops"}])
    with pytest.raises(ValueError, match="no ts or seq"):
        HostTester(RunningSum).test([data_row("s", "x", None, 1.0, 0)])  # type: ignore[arg-type]
    rows = pd.DataFrame(
        {"source": ["s", "s"], "kind": np.array([0, 7], np.int8), "text": ["x", "{}"],
         "ts": [1, 0], "value": [1.0, np.nan], "seq": [0, 0]}
    )  # fmt: skip
    with pytest.raises(ValueError, match=r"got codes \[7\]"):  # a caller of step past Spark's check
        BucketHost(RunningSum).step(rows, {})


def test_pass_rows_go_out_unchanged_without_touching_the_node():
    t = HostTester(RunningSum)
    passed = {"source": "a", "kind": "pass", "payload": '{"reason": "nan"}'}
    assert t.test([passed]) == [{"source": "a", "kind": "pass", "payload": '{"reason": "nan"}'}]
    assert t.peek("a") is None and t.states == {}  # no node, no state for pass rows only
    out = t.test([passed, data_row("a", "x", 5, 2.0, 0)])
    assert [r["kind"] for r in out] == ["pass", "sum"] and t.peek("a").total == 2.0


def test_unpicklable_node_fails_in_the_tester_like_on_spark():
    class Local:  # defined in a function: pickle cannot find it by name
        def __init__(self, source: str) -> None:
            pass

        def step(self, control, data):
            return []

    with pytest.raises(AttributeError, match="Can't pickle local object"):
        HostTester(Local).test([data_row("s", "x", 1, 1.0, 0)])


class Fragile(RunningSum):
    """A running sum with a bug: it fails, after changing its state, on a series 'poison'."""

    def step(self, control: list[dict], data: list[dict]) -> list[dict]:
        out = super().step(control, data)
        if any(d["series"] == "poison" for d in data):
            raise RuntimeError("a bug")
        return out


def test_a_node_step_that_raises_is_quarantined_and_the_stored_node_kept():
    t = HostTester(Fragile)
    t.test([data_row("a", "x", 1, 1.0, 0)])
    out = t.test([data_row("a", "x", 2, 5.0, 1), data_row("a", "poison", 3, 7.0, 2)])
    dead = [json.loads(r["payload"]) for r in out]
    assert [(d["series"], d["ts_ms"], d["value"], d["reason"], d["detail"]) for d in dead] == [
        ("x", 2, 5.0, "quarantined", "RuntimeError: a bug"),
        ("poison", 3, 7.0, "quarantined", "RuntimeError: a bug"),
    ]
    assert [r["kind"] for r in out] == ["dead", "dead"]
    assert t.peek("a").total == 1.0  # the node as stored before the failed step
    (row,) = t.test([data_row("a", "x", 4, 2.0, 3)])  # the job goes on
    assert json.loads(row["payload"]) == {"total": 3.0, "count": 2, "last_ts": 4}


def _settings() -> HostSettings:
    return HostSettings(period_ms=1_000, shrink=0.1)


def _source_node(key: str) -> SourceNode:
    return SourceNode(key, _settings())


points = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "c"]),  # source
        st.sampled_from(["x", "y"]),  # series
        st.integers(0, 20),  # ts
        st.floats(-5, 5, allow_nan=False),
    ),
    max_size=40,
)


def _watching_node(key: str) -> SourceNode:
    """A source node with registers and a watch query over a window."""
    queries = {"local": "QUERY up ON *.x WHEN avg(3 points) > 1"}
    registers = RegisterSettings()
    return SourceNode(key, HostSettings(1_000, 0.1, registers=registers, queries=queries))


@settings(max_examples=40, deadline=None)
@given(
    st.lists(points, min_size=1, max_size=3),
    st.integers(1, 3),
    st.sampled_from([_source_node, _watching_node]),
)
def test_columnar_host_equals_the_dict_step_of_source_nodes(batches, buckets, new_node):
    """The host's columnar step (nodes pickled between batches) and ``SourceNode.step`` over
    dict rows (nodes never pickled) give the same rows."""
    t = HostTester(new_node, buckets=buckets)
    reference: dict[str, SourceNode] = {}
    seq = 0
    for batch in batches:
        rows = []
        for source, series, ts, value in batch:
            rows.append(data_row(source, f"{source}.{series}", ts, value, seq))
            seq += 1
        got: dict[str, list] = {}
        for r in t.test(rows[::-1]):  # arrival order must not matter
            got.setdefault(r["source"], []).append((r["kind"], json.loads(r["payload"])))
        want: dict[str, list] = {}
        for source in sorted({r["source"] for r in rows}):
            node = reference.setdefault(source, new_node(source))
            mine = [
                {k: r[k] for k in ("series", "ts", "value", "seq")}
                for r in rows
                if r["source"] == source
            ]
            out = node.step([], mine)
            want[source] = [(o["kind"], json.loads(json.dumps(o["payload"]))) for o in out]
        assert got == want


def test_step_columns_checks_order_and_finiteness():
    node = _source_node("n")
    with pytest.raises(ValueError, match=r"\(ts, seq\) order"):
        node.step_columns([], ["a", "a"], np.array([5, 4]), np.array([1.0, 1.0]), np.array([0, 1]))
    with pytest.raises(ValueError, match="finite"):
        node.step_columns([], ["a"], np.array([5]), np.array([np.inf]), np.array([0]))
    assert node.now_ms is None  # nothing changed


def test_step_columns_rejects_what_step_rejects():
    """Points beyond the supported instants or values, or too far ahead of the clock, are dead
    rows of the columnar step exactly as of the dict step."""
    ts = np.array([5, 6, 7, 10**12])  # the last in 2001: a day after the clock (0) and more
    value = np.array([1.0, 1e300, 2.0, 3.0])
    seq = np.arange(4)
    columnar = _source_node("n").step_columns([], ["a"] * 4, ts, value, seq, clock_ms=0)
    points = zip(ts.tolist(), value.tolist(), seq.tolist(), strict=True)
    rows = [{"series": "a", "ts": t, "value": v, "seq": q} for t, v, q in points]
    by_rows = _source_node("n").step([], rows, clock_ms=0)
    assert columnar == by_rows
    assert [r["payload"]["reason"] for r in columnar if r["kind"] == "dead"] == [
        "value_out_of_range",
        "future_timestamp",
    ]


def test_buckets_are_frozen_in_the_checkpoint():
    ckpt = Path(tempfile.mkdtemp())
    first = freeze_buckets(ckpt, None, 16, 2)
    assert first == Buckets.spread(16, 2)
    assert first.keys != tuple(range(16))  # bucket numbers would put 7 and 9 in the partitions
    assert freeze_buckets(ckpt, None, 32, 2) == first  # the default moved: the checkpoint's stays
    assert freeze_buckets(ckpt, 16, 32, 4) == first  # a restart keeps the checkpoint's keys
    with pytest.raises(BucketsChanged, match=r"^buckets = 8, but the checkpoint .* with 16"):
        freeze_buckets(ckpt, 8, 16, 2)
    recorded = json.loads((ckpt / "host.json").read_text())
    assert recorded["state"] == STATE_FORMAT == 10 and recorded["keys"] == list(first.keys)
    for keys in (first.keys[:-1], (*first.keys[:-1], 16), (*first.keys[:-1], -1)):
        damaged = Path(tempfile.mkdtemp())
        (damaged / "host.json").write_text(json.dumps({**recorded, "keys": list(keys)}))
        with pytest.raises(BucketsChanged, match="is damaged: its keys"):
            freeze_buckets(damaged, None, 16, 2)
    older = Path(tempfile.mkdtemp())  # nodes pickled with the registers' arrays (format 1)
    (older / "host.json").write_text('{"buckets": 16}')
    with pytest.raises(BucketsChanged, match="state format 1, this one reads 10"):
        freeze_buckets(older, None, 16, 2)
    whole = Path(tempfile.mkdtemp())  # registers pickled whole in the state (format 2)
    (whole / "host.json").write_text('{"buckets": 16, "state": 2}')
    with pytest.raises(BucketsChanged, match="state format 2, this one reads 10"):
        freeze_buckets(whole, None, 16, 2)
    runs = Path(tempfile.mkdtemp())  # registers, filters and models pickled as dicts (format 3)
    (runs / "host.json").write_text('{"buckets": 16, "state": 3}')
    with pytest.raises(BucketsChanged, match="state format 3, this one reads 10"):
        freeze_buckets(runs, None, 16, 2)
    queues = Path(tempfile.mkdtemp())  # runs referenced by persistent ids (format 4)
    (queues / "host.json").write_text('{"buckets": 16, "state": 4}')
    with pytest.raises(BucketsChanged, match="state format 4, this one reads 10"):
        freeze_buckets(queues, None, 16, 2)
    in_state = Path(tempfile.mkdtemp())  # windows with monotonic queues (format 5)
    (in_state / "host.json").write_text('{"buckets": 16, "state": 5}')
    with pytest.raises(BucketsChanged, match="state format 5, this one reads 10"):
        freeze_buckets(in_state, None, 16, 2)
    for state, keys in ((6, ""), (7, f', "keys": {list(first.keys)}')):  # a reference per run
        per_run = Path(tempfile.mkdtemp())
        (per_run / "host.json").write_text(f'{{"buckets": 16, "state": {state}{keys}}}')
        with pytest.raises(BucketsChanged, match=f"state format {state}, this one reads 10"):
            freeze_buckets(per_run, None, 16, 2)
    one_runs = Path(tempfile.mkdtemp())  # configs and models without streams pickled whole (8)
    (one_runs / "host.json").write_text(
        f'{{"buckets": 16, "state": 8, "keys": {list(first.keys)}}}'
    )
    with pytest.raises(BucketsChanged, match="state format 8, this one reads 10"):
        freeze_buckets(one_runs, None, 16, 2)
    filters = Path(tempfile.mkdtemp())  # source filters without their last update's time (9)
    (filters / "host.json").write_text(f'{{"buckets": 16, "state": 9, "keys": {list(first.keys)}}}')
    with pytest.raises(BucketsChanged, match="state format 9, this one reads 10"):
        freeze_buckets(filters, None, 16, 2)
    old = Path(tempfile.mkdtemp())
    (old / "nodes" / "offsets").mkdir(parents=True)
    with pytest.raises(BucketsChanged, match="older tsmon"):
        freeze_buckets(old, None, 16, 2)


@pytest.mark.spark
@pytest.mark.parametrize("spread", [False, True])
def test_a_rows_grouping_key_is_its_sources_buckets_key(spark, spread):
    """bucket_key is keys[pmod(xxhash64(source), B)] as a BIGINT, for keys that are the
    bucket numbers (a checkpoint from before the keys) and for spread keys."""
    from pyspark.sql import functions as F

    from tsmon.spark.host import bucket_key

    buckets = Buckets.spread(16, 2) if spread else Buckets(16, tuple(range(16)))
    frame = spark.createDataFrame([(f"s{i}",) for i in range(200)], "source STRING")
    rows = frame.select(
        bucket_key(buckets).alias("key"), F.pmod(F.xxhash64("source"), F.lit(16)).alias("b")
    )
    assert dict(rows.dtypes)["key"] == "bigint"
    got = rows.collect()
    assert [r.key for r in got] == [buckets.keys[r.b] for r in got]
    assert len({r.b for r in got}) == 16


@pytest.mark.spark
@pytest.mark.parametrize("partitions", [2, 3, 16, 200])
def test_bucket_keys_spread_buckets_evenly_over_spark_partitions(spark, partitions):
    """Spark's own partitioning (``repartition`` by a BIGINT column hashes it as the grouping
    of applyInPandasWithState does) puts each bucket key where spark_partition says, and the
    keys of B buckets give every partition B/P of them (bucket numbers do not)."""
    from pyspark.sql import functions as F

    buckets = 8 * partitions
    keys = bucket_keys(buckets, partitions)
    probe = [*keys, *range(-50, 50), 2**31, -(2**31) - 1, 2**62, -(2**63)]
    frame = spark.createDataFrame([(k,) for k in probe], "key BIGINT")
    placed = frame.repartition(partitions, "key").select("key", F.spark_partition_id().alias("p"))
    assert {r.key: r.p for r in placed.collect()} == {
        k: spark_partition(k, partitions) for k in probe
    }
    counts = np.bincount([spark_partition(k, partitions) for k in keys], minlength=partitions)
    assert counts.tolist() == [8] * partitions
    assert sorted(k % buckets for k in keys) == list(range(buckets))


def test_the_host_gives_source_nodes_the_batch_clock_for_max_future():
    """A point stamped beyond the batch's clock + max_future is a dead letter of its node, as
    of the node's dict step at that clock; the heartbeat counts it received, not accepted."""
    clock = 1_700_000_000_000
    limit = clock + DAY_MS  # the default max_future; inclusive
    rows = [data_row("a", "a.x", limit, 1.0, 0), data_row("a", "a.x", limit + 1, 2.0, 1)]
    hosted = HostTester(_source_node).test(rows, clock)
    got = [(r["kind"], json.loads(r["payload"])) for r in hosted]
    mine = [{k: r[k] for k in ("series", "ts", "value", "seq")} for r in rows]
    out = _source_node("a").step([], mine, clock_ms=clock)
    assert got == [(o["kind"], json.loads(json.dumps(o["payload"]))) for o in out]
    dead = [p for kind, p in got if kind == "dead"]
    assert [(d["ts_ms"], d["reason"]) for d in dead] == [(limit + 1, "future_timestamp")]
    (beat,) = [p for kind, p in got if kind == "heartbeat"]
    assert (beat["received"], beat["accepted"]) == (2, 1)


@pytest.mark.spark
def test_node_stream_gives_the_host_the_rows_the_tester_does(spark, tmp_path):
    """node_stream's rows (a kind code, the series or the payload as text, 0 for no ts or seq)
    make the outputs HostTester's make, for data, control and pass rows; a data row without
    ts or seq, or of an unknown kind, fails the query."""
    from tsmon.spark.host import node_stream

    ddl = "source STRING, kind STRING, series STRING, ts BIGINT, value DOUBLE, seq BIGINT, "
    ddl += "payload STRING"
    control_ddl = "source STRING, seq BIGINT, payload STRING"
    data = [
        ("a", "data", "a.x", 3, 1.0, 1, None),
        ("a", "data", "a.y", 2, 2.0, 4, None),
        ("a", "data", "a.x", 2, 5.0, 0, None),
        ("b", "data", "b.x", 5, 4.0, 2, None),
        ("c", "pass", None, None, None, None, '{"reason": "nan"}'),
        ("a", "pass", "a.z", 9, None, 3, '{"reason": "late"}'),
    ]
    control = [("a", 7, '{"add": 1.0}'), ("b", None, '{"add": 2.0}'), ("d", 1, '{"add": 3.0}')]

    def run(name: str, rows: list[tuple]) -> list[tuple]:
        """One streaming batch of ``rows`` and ``control`` through node_stream."""
        spark.createDataFrame(rows, ddl).write.parquet(str(tmp_path / name / "data"))
        spark.createDataFrame(control, control_ddl).write.parquet(str(tmp_path / name / "ctrl"))
        streams = [
            spark.readStream.schema(schema).parquet(str(tmp_path / name / part))
            for schema, part in ((ddl, "data"), (control_ddl, "ctrl"))
        ]
        got: list[tuple] = []
        query = (
            node_stream(spark, *streams, RunningSum, Buckets(4, (0, 1, 2, 3)))
            .writeStream.foreachBatch(lambda df, _: got.extend(tuple(r) for r in df.collect()))
            .option("checkpointLocation", str(tmp_path / name / "ckpt"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        return sorted(got)

    columns = ("source", "kind", "series", "ts", "value", "seq", "payload")
    rows = [dict(zip(columns, r, strict=True)) for r in data]
    rows += [{"source": s, "kind": "ctrl", "seq": q, "payload": p} for s, q, p in control]
    want = sorted(tuple(r.values()) for r in HostTester(RunningSum).test(rows))
    assert len(want) == 5 and run("good", data) == want
    with pytest.raises(Exception, match="no ts or seq"):
        run("no_ts", [("a", "data", "a.x", None, 1.0, 0, None)])
    with pytest.raises(Exception, match="kind must be 'data', 'ctrl' or 'pass', got oops"):
        run("oops", [("a", "oops", "a.x", 1, 1.0, 0, None)])


@pytest.mark.spark
def test_a_bucket_in_several_arrow_batches_gives_what_it_gives_in_one(spark, tmp_path):
    """pyspark hands a bucket's rows to the host in pieces of at most
    ``spark.sql.execution.arrow.maxRecordsPerBatch`` rows (tsmon sets 100,000): the host
    reads them all, whatever the pieces, and steps each node once on all of its rows."""
    from pyspark.sql import functions as F
    from pyspark.sql.streaming.state import GroupStateTimeout

    from tsmon.spark.host import node_stream

    ddl = "source STRING, series STRING, ts BIGINT, value DOUBLE, seq BIGINT"
    control_ddl = "source STRING, seq BIGINT, payload STRING"
    data = [(f"s{i % 3}", f"s{i % 3}.x", i, float(i), i) for i in range(23)]
    spark.createDataFrame(data, ddl).write.parquet(str(tmp_path / "data"))
    spark.createDataFrame([], control_ddl).write.parquet(str(tmp_path / "ctrl"))

    def run(name: str, records: str) -> list[tuple]:
        streams = [
            spark.readStream.schema(schema).parquet(str(tmp_path / part))
            for schema, part in ((ddl, "data"), (control_ddl, "ctrl"))
        ]
        got: list[tuple] = []
        before = spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch")
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", records)
        try:
            query = (
                node_stream(spark, *streams, RunningSum, Buckets(1, (0,)))
                .writeStream.foreachBatch(lambda df, _: got.extend(tuple(r) for r in df.collect()))
                .option("checkpointLocation", str(tmp_path / name))
                .trigger(availableNow=True)
                .start()
            )
            query.awaitTermination()
        finally:
            spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", before)
        return sorted(got)

    def pieces(records: str) -> list[int]:
        """How many frames pyspark gives the one group of all 23 rows, at ``records`` rows
        per Arrow batch."""
        rows = spark.readStream.schema(ddl).parquet(str(tmp_path / "data"))
        counted = (
            rows.withColumn("k", F.lit(0))
            .groupBy("k")
            .applyInPandasWithState(
                _count_frames, "frames INT", "n INT", "Append", GroupStateTimeout.NoTimeout
            )
        )
        got: list[int] = []
        before = spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch")
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", records)
        try:
            query = (
                counted.writeStream.foreachBatch(
                    lambda df, _: got.extend(r["frames"] for r in df.collect())
                )
                .option("checkpointLocation", str(tmp_path / f"count{records}"))
                .trigger(availableNow=True)
                .start()
            )
            query.awaitTermination()
        finally:
            spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", before)
        return got

    outputs = HostTester(RunningSum).test(data_row(*r) for r in data)
    want = sorted(tuple(r.values()) for r in outputs)
    assert pieces("4") == [6] and pieces("100000") == [1]  # the pieces the two runs get
    assert len(want) == 3 and run("pieces", "4") == want and run("whole", "100000") == want


def _count_frames(key, frames, state):
    yield pd.DataFrame({"frames": [sum(1 for _ in frames)]})
