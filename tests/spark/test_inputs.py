"""Input kinds of a Spark job: the generator, replay of a recorded file, a socket of JSON lines
and Kafka (only its missing-connector error: there is no broker offline).

The readers are tested without Spark first (fake clocks, any batching). End to end, a job on
each input is compared batch for batch with the in-process ``BatchedRuntime`` fed the same
points: the points of each batch are recomputed from ``FleetStream`` or the file, cut where
Spark's offset log (its write-ahead log) says each batch ended. No hard-coded results.
"""

from __future__ import annotations

import itertools
import json
import math
import pickle
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.spark.test_runtime import batch_reference
from tsmon import Monitor
from tsmon.spark.job import Job, JobError, load_job
from tsmon.spark.pysources import PARTITIONS, GeneratorReader, ReplayReader, read_recording
from tsmon.spark.runtime import REASONS, JobRunner
from tsmon.streams.fleet import FleetStream

NAB_ROOT = Path(__file__).parents[2] / "../shared/data/nab"
NAB = NAB_ROOT / "realAWSCloudwatch/ec2_cpu_utilization_5f5533.csv"

Point = tuple[str, str, int, float]


# -- FleetStream: one continuous walk, whatever the batches ---------------------------------


@settings(max_examples=30, deadline=None)
@given(
    cuts=st.lists(st.integers(0, 40), max_size=6),
    seed=st.integers(0, 2**31),
    later=st.integers(0, 40),
)
def test_any_split_of_a_tick_range_gives_bit_identical_values(
    cuts: list[int], seed: int, later: int
) -> None:
    whole = FleetStream(hosts=3, metrics=4, seed=seed).values(0, 40)
    stream = FleetStream(hosts=3, metrics=4, seed=seed)
    edges = [0, *sorted(cuts), 40]
    pieces = [stream.values(a, b) for a, b in itertools.pairwise(edges)]
    assert np.array_equal(np.vstack(pieces), whole)
    # an earlier range after a later one (a replay), and a later start on a fresh stream
    assert np.array_equal(stream.values(later // 2, later), whole[later // 2 : later])
    fresh = FleetStream(hosts=3, metrics=4, seed=seed)
    assert np.array_equal(fresh.values(later, 40), whole[later:])
    # resumed in another process from the position a stream reached (a planned partition)
    resumed = FleetStream(hosts=3, metrics=4, seed=seed)
    resumed.resume(later, *pickle.loads(pickle.dumps(stream.position(later))))
    assert np.array_equal(resumed.values(later, 40), whole[later:])


def test_fleet_stream_values_look_like_metrics() -> None:
    fleet = FleetStream(hosts=5, step_ms=60_000)
    frame = fleet.points(0, 24 * 60)  # one day of minutes
    assert len(frame) == 24 * 60 * len(fleet.series()) and frame["value"].notna().all()
    by_metric = frame.groupby(frame["series"].str.split(".").str[1])["value"]
    assert (
        by_metric.min()[["cpu", "mem"]].ge(0).all() and by_metric.max()[["cpu", "mem"]].le(1).all()
    )
    assert by_metric.min()["latency_ms"] >= 20
    cpu = frame[frame["series"] == "host000.cpu"]["value"].to_numpy()
    assert 0 < np.abs(np.diff(cpu)).max() < 0.5  # it moves, continuously
    assert set(frame["source"]) == {f"host{h:03d}" for h in range(5)}
    with pytest.raises(ValueError, match=r"metrics must be in 1\.\.15"):
        FleetStream(metrics=16)


# -- the generator reader: the clock decides how far, never what ---------------------------


class FakeClock:
    """A clock (seconds) that moves only when told to."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def generator_options(**changes: Any) -> dict[str, str]:
    options = {
        "hosts": 2,
        "metrics": 3,
        "step_ms": 10_000,
        "start_ms": 0,
        "seed": 4,
        "speedup": 100.0,  # a tick every 0.1 s
        "max_ticks_per_batch": 5,
        "ticks": 12,
    }
    options.update(changes)
    return {k: str(v) for k, v in options.items()}


class Driver:
    """Calls a simple reader's ``read`` as Spark does: from the initial offset, then from each
    batch's end."""

    def __init__(self, reader: Any, key: str) -> None:
        self.reader, self.key = reader, key
        self.offset = reader.initialOffset()

    def read(self, start: dict) -> tuple[list[tuple], dict]:
        """One trigger's rows and end offset."""
        rows, end = self.reader.read(start)
        return list(rows), end

    def read_once(self) -> list[tuple[int, int, list[tuple]]]:
        """One trigger: ``[(start, end, rows)]``, or ``[]`` when nothing is due."""
        rows, end = self.read(self.offset)
        if end == self.offset:
            assert rows == []
            return []
        start, self.offset = self.offset, end
        return [(start[self.key], end[self.key], rows)]

    def batches(self) -> list[tuple[int, int, list[tuple]]]:
        """Triggers until nothing more is due now."""
        out = []
        while batch := self.read_once():
            out += batch
        return out


class GeneratorDriver(Driver):
    """Drives the generator as Spark drives a stream reader: ``latestOffset`` in the driver's
    reader, ``partitions`` there too, then each partition read by a reader of its own, both
    pickled as Spark ships them to an executor's Python worker."""

    def read(self, start: dict) -> tuple[list[tuple], dict]:
        end = self.reader.latestOffset(start, None)  # the generator has no read limit
        return generated_rows(self.reader, start, end), end


def generated_rows(planner: GeneratorReader, start: dict, end: dict) -> list[tuple]:
    """The rows of ``[start, end)`` as Spark gets them: planned by ``planner``, each
    partition read by a new reader (unpickled, as in an executor) as Arrow record batches."""
    rows = []
    for partition in planner.partitions(start, end):
        executor = pickle.loads(pickle.dumps(GeneratorReader(planner.options)))
        for batch in executor.read(pickle.loads(pickle.dumps(partition))):
            assert isinstance(batch, pa.RecordBatch)
            assert batch.schema.names == ["source", "series", "ts", "value"]
            rows += [tuple(r.values()) for r in batch.to_pylist()]
    return rows


def test_the_generator_offers_due_ticks_capped_and_ends_after_ticks() -> None:
    clock = FakeClock()
    reader = GeneratorReader(generator_options(), clock=clock)
    spark = GeneratorDriver(reader, "tick")
    first = generated_rows(GeneratorReader(generator_options()), {"tick": 0}, {"tick": 1})
    assert spark.batches() == [(0, 1, first)]  # the first tick is due at once
    clock.now += 0.25  # two more ticks are due
    assert [(a, b) for a, b, _ in spark.batches()] == [(1, 3)]
    clock.now += 10  # everything is due: batches of at most 5 ticks, ending at tick 12
    assert [(a, b) for a, b, _ in spark.batches()] == [(3, 8), (8, 12)]
    clock.now += 10
    assert spark.batches() == []


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(st.floats(0, 0.8), min_size=1, max_size=30))
def test_generated_rows_do_not_depend_on_the_clock(steps: list[float]) -> None:
    """However the wall clock moves, the rows are the fleet's, and a batch read again (in a
    new reader, as after a crash) is the same."""
    clock = FakeClock()
    spark = GeneratorDriver(GeneratorReader(generator_options(), clock=clock), "tick")
    batches: list[tuple[int, int, list[tuple]]] = []
    for step in steps:
        clock.now += step
        batches += spark.read_once()
    clock.now += 100
    batches += spark.batches()
    assert batches[-1][1] == 12
    fleet = FleetStream(hosts=2, metrics=3, step_ms=10_000, start_ms=0, seed=4)
    expected = fleet.points(0, 12).itertuples(index=False, name=None)
    assert [r for _, _, rows in batches for r in rows] == list(expected)
    other = GeneratorReader(generator_options())
    for a, b, rows in reversed(batches):
        assert generated_rows(other, {"tick": a}, {"tick": b}) == rows


@settings(max_examples=25, deadline=None)
@given(a=st.integers(0, 30), n=st.integers(0, 9))
def test_a_generated_batch_is_planned_as_tick_ranges_that_cover_it(a: int, n: int) -> None:
    """At most PARTITIONS ranges, in order, none empty, covering the batch's ticks exactly,
    each carrying the fleet's position before its first tick: resumed there, a fleet gives the
    values of one walk from tick 0."""
    reader = GeneratorReader(generator_options(ticks=-1))
    parts = reader.partitions({"tick": a}, {"tick": a + n})
    assert len(parts) == min(n, PARTITIONS) and all(p.a < p.b for p in parts)
    assert [t for p in parts for t in range(p.a, p.b)] == list(range(a, a + n))
    for p in parts:
        resumed = GeneratorReader(generator_options(ticks=-1)).fleet
        resumed.resume(p.a, p.walk, p.burst)
        whole = GeneratorReader(generator_options(ticks=-1)).fleet.values(0, p.b)
        assert np.array_equal(resumed.values(p.a, p.b), whole[p.a :])


def test_before_pyspark_4_2_the_generator_falls_back_to_the_simple_reader(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A pyspark whose stream readers get no start offset takes the simple reader (pyspark's
    own fallback when streamReader is not implemented)."""
    from pyspark.sql.datasource_internal import _streamReader

    from tsmon.spark import pysources

    source = pysources.GeneratorSource(generator_options())
    assert isinstance(_streamReader(source, None), GeneratorReader)
    monkeypatch.setattr(pysources, "_ADMISSION_CONTROL", False)
    assert isinstance(_streamReader(source, None).simple_reader, pysources.SimpleGeneratorReader)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(st.floats(0, 0.8), min_size=1, max_size=20))
def test_the_simple_generator_reader_gives_the_same_batches(steps: list[float]) -> None:
    """The fallback paces the same ticks and gives the same rows, under any clock."""
    from tsmon.spark.pysources import SimpleGeneratorReader

    clock, old_clock = FakeClock(), FakeClock()
    new = GeneratorDriver(GeneratorReader(generator_options(), clock=clock), "tick")
    old = Driver(
        SimpleGeneratorReader(GeneratorReader(generator_options(), clock=old_clock)), "tick"
    )
    for step in [*steps, 100.0]:
        clock.now += step
        old_clock.now += step
        assert old.batches() == new.batches()


# -- recordings: read as text, sorted by time, bad timestamps kept in place ----------------

RECORDED = [  # in file order: out of order in time, with unreadable rows
    {"metric": "a", "t": "3000", "v": "1.5"},
    {"metric": "b", "t": "1000", "v": "2"},
    {"metric": "a", "t": "yesterday", "v": "7"},  # stays after the row before it (1000 ms)
    {"metric": "b", "t": "2000", "v": "n/a"},
    {"metric": "a", "t": "1970-01-01T00:00:02.500Z", "v": "-1e3"},  # ISO: 2500 ms
    {"metric": "a", "t": "1000", "v": "4"},  # a tie with row 1: file order kept
]
EXPECTED_ORDER = [1, 2, 5, 3, 4, 0]
COLUMNS = {"series": "metric", "ts": "t", "value": "v"}


def write_recording(path: Path, records: list[dict], fmt: str) -> Path:
    frame = pd.DataFrame(records)
    if fmt == "csv":
        frame.to_csv(path, index=False)
    elif fmt == "json":
        path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    else:
        frame.to_parquet(path, index=False)
    return path


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_a_recording_is_sorted_by_time_and_keeps_unreadable_rows_in_place(
    tmp_path: Path, fmt: str
) -> None:
    path = write_recording(tmp_path / f"rec.{fmt}", RECORDED, fmt)
    rows = read_recording(path, fmt, COLUMNS)
    expected = [tuple(RECORDED[i].values()) for i in EXPECTED_ORDER]
    assert rows == expected
    one = read_recording(path, fmt, {"ts": "t", "value": "v", "series": "series"}, "nab.x")
    assert [r[0] for r in one] == ["nab.x"] * len(RECORDED)  # the job names the one series


def test_a_recording_sorts_timestamp_text_as_the_runtime_reads_it() -> None:
    """Digits between the characters Spark trims are epoch ms (the runtime reads them so);
    digits between Unicode spaces are no timestamp: the key of the row before."""
    from tsmon.core.timestamps import read_epoch_ms
    from tsmon.spark.pysources import _time_keys

    ts = ["5000", "\x012000", "1000\x7f", "\u00a03000", " +4000 "]
    millis, ok = read_epoch_ms(np.array(ts, dtype=object))
    assert np.where(ok, millis, -1).tolist() == [5000, 2000, 1000, -1, 4000]
    assert _time_keys(ts).tolist() == [5000.0, 2000.0, 1000.0, 1000.0, 4000.0]


def test_a_recording_sorts_digits_at_the_ms_the_runtime_reads() -> None:
    """Digits are keyed at the exact ms the runtime reads (not through a double, which put
    nanoseconds ...123999999 at ms ...124, after an instant at ...124 given before it); digits
    the runtime cannot read (beyond int64, or once in ms) take the key of the row before."""
    from tsmon.core.timestamps import read_epoch_ms
    from tsmon.spark.pysources import _time_keys

    ts = ["2024-01-01T00:00:00.124Z", "1704067200123999999"]
    assert read_epoch_ms(np.array(ts, dtype=object), "ns")[0].tolist() == [
        1_704_067_200_124,
        1_704_067_200_123,
    ]
    assert _time_keys(ts, "ns").tolist() == [1_704_067_200_124.0, 1_704_067_200_123.0]
    assert _time_keys(["10000000000000000", "1"], "s").tolist() == [1000.0, 1000.0]
    assert _time_keys(["5", "99999999999999999999"]).tolist() == [5.0, 5.0]


def test_a_recording_sorts_decimal_seconds_at_the_ms_the_runtime_reads() -> None:
    """Seconds with a fraction or an exponent are keyed at the ms the runtime floors them to,
    between instants (were: no timestamp, keyed as the row before them)."""
    from tsmon.core.timestamps import read_epoch_ms
    from tsmon.spark.pysources import _time_keys

    ts = ["1704067200.5", "2024-01-01T00:00:00.400Z", "1.70406720045e9", "-0.0005", "1e30"]
    expected = [1_704_067_200_500, 1_704_067_200_400, 1_704_067_200_450, -1, -1]
    assert read_epoch_ms(np.array(ts, dtype=object), "s")[0].tolist()[:4] == expected[:4]
    assert _time_keys(ts, "s").tolist() == [float(k) for k in expected]


def test_a_recording_in_another_unit_sorts_digits_as_the_runtime_reads_them(
    tmp_path: Path,
) -> None:
    """With ``ts_unit = "s"`` digits are seconds: they sort after an instant a second earlier
    (as milliseconds they would be in 1970, first); a Parquet instant stays that instant."""
    path = tmp_path / "rec.csv"
    path.write_text("metric,t,v\na,1704067201,1\na,2024-01-01T00:00:00Z,2\n", encoding="utf-8")
    assert [r[2] for r in read_recording(path, "csv", COLUMNS)] == ["1", "2"]
    assert [r[2] for r in read_recording(path, "csv", COLUMNS, ts_unit="s")] == ["2", "1"]
    path = tmp_path / "rec.parquet"
    pd.DataFrame(
        {"metric": ["a", "a"], "t": pd.to_datetime([2_000, 1_000], unit="ms"), "v": [1.0, 2.0]}
    ).to_parquet(path)
    rows = read_recording(path, "parquet", COLUMNS, ts_unit="s")
    instants = ["1970-01-01 00:00:01.000Z", "1970-01-01 00:00:02.000Z"]
    assert [r[1:] for r in rows] == [(instants[0], "2"), (instants[1], "1")]


def test_json_recordings_keep_number_text_and_bad_lines_become_empty_rows(tmp_path: Path) -> None:
    path = tmp_path / "rec.json"
    path.write_text(
        '{"metric": "a", "t": 5, "v": 0.10}\nnot json\n[1, 2]\n\n{"metric": "b", "t": 6}\n',
        encoding="utf-8",
    )
    rows = read_recording(path, "json", COLUMNS)
    assert rows == [("a", "5", "0.10"), (None, None, None), (None, None, None), ("b", "6", None)]


def test_parquet_timestamps_replay_as_epoch_ms(tmp_path: Path) -> None:
    path = tmp_path / "rec.parquet"
    pd.DataFrame(
        {"metric": ["a", "a"], "t": pd.to_datetime([2_000, 1_000], unit="ms"), "v": [1.0, None]}
    ).to_parquet(path)
    assert read_recording(path, "parquet", COLUMNS) == [("a", "1000", None), ("a", "2000", "1")]


def test_recording_mistakes_are_job_errors(tmp_path: Path) -> None:
    with pytest.raises(JobError, match="no such file"):
        read_recording(tmp_path / "missing.csv", "csv", COLUMNS)
    path = write_recording(tmp_path / "rec.csv", RECORDED, "csv")
    with pytest.raises(JobError, match=r"no column 'series'; it has \['metric', 't', 'v'\]"):
        read_recording(path, "csv", {"series": "series", "ts": "t", "value": "v"})
    with pytest.raises(JobError, match="cannot read it as parquet"):
        read_recording(path, "parquet", COLUMNS)
    path = write_recording(tmp_path / "rec.json", RECORDED, "json")
    with pytest.raises(JobError, match=r"no column 'time'; it has \['metric', 't', 'v'\]"):
        read_recording(path, "json", {**COLUMNS, "ts": "time"})


def test_replay_offers_rows_as_their_time_comes(tmp_path: Path) -> None:
    path = write_recording(tmp_path / "rec.json", RECORDED, "json")
    options = {"path": str(path), "format": "json", "columns": json.dumps(COLUMNS)}
    clock = FakeClock()
    reader = ReplayReader({**options, "series": "", "speedup": "1000"}, clock=clock)
    spark = Driver(reader, "row")
    sorted_rows = read_recording(path, "json", COLUMNS)
    assert spark.batches() == [(0, 3, sorted_rows[:3])]  # the rows at 1000 ms (one unreadable)
    clock.now += 0.00175  # 1.75 ms × 1000: up to 2750 ms of event time
    assert spark.batches() == [(3, 5, sorted_rows[3:5])]
    clock.now += 1.2
    assert spark.batches() == [(5, 6, sorted_rows[5:])]
    assert list(reader.readBetweenOffsets({"row": 1}, {"row": 4})) == sorted_rows[1:4]


# -- end to end on Spark ---------------------------------------------------------------------

QUERIES = {
    "generator": """
QUERY s AS SUM(host000.cpu, host001.mem, 0.01*host002.latency_ms) WITHIN 0.5
QUERY m AS MAX(host000.latency_ms, host002.latency_ms) WITHIN 2
""",
    "nab": """
QUERY a AS AVG(nab.cpu) WITHIN 1
QUERY spikes ON nab.* WHEN abs(last - mean(1h before)) > 3 * stddev(1h before)
""",
    "lines": """
QUERY s AS SUM(a.x, b.x) WITHIN 1
QUERY m AS MIN(a.x, c.y) WITHIN 0.5
""",
}


def write_job(tmp_path: Path, queries: str, input_table: str, trigger: str = "200ms") -> Job:
    path = tmp_path / "job.toml"
    path.write_text(
        f"queries = '''{queries}'''\n"
        f'[job]\ncheckpoint = "ckpt"\ntrigger = "{trigger}"\n'
        f"[input]\n{input_table}\n"
        '[filters]\nperiod = "5s"\nshrink = 0.1\n'
        '[[sinks]]\nkind = "parquet"\npath = "out"\n',
        encoding="utf-8",
    )
    return load_job(path)


def logged_offsets(job: Job) -> list[Any]:
    """The input's end offset of every batch the node query ran, from Spark's offset log
    (two header lines, then one line per source: the input first, then the control files)."""
    directory = job.checkpoint / "nodes" / "offsets"
    ids = sorted(int(p.name) for p in directory.iterdir() if p.name.isdigit())
    assert ids == list(range(len(ids)))
    return [json.loads((directory / str(i)).read_text().splitlines()[2]) for i in ids]


def run(spark: Any, job: Job, done: Callable[[JobRunner], bool] = lambda r: True) -> dict:
    """Run the job until all input is processed and ``done``; answers per batch id."""
    seen: dict[int, dict] = {}
    runner = JobRunner(
        job, spark=spark, callback=lambda o: seen.update({o.batch_id: o.answers.get("bounded", {})})
    )
    runner.start()
    try:
        deadline = time.monotonic() + 120
        runner.process_all_available()
        while not done(runner):  # input that arrives on its own (a socket) may come later
            assert time.monotonic() < deadline, "the job did not see all its input in time"
            time.sleep(0.2)
            runner.process_all_available()
    finally:
        runner.stop()
    return seen


def check_against_reference(job: Job, seen: dict, batches: list[list[Point]]) -> None:
    """Spark's answers after each batch equal BatchedRuntime's on the same points."""
    reference = batch_reference(job)
    assert sorted(seen) == list(range(len(batches)))
    for batch_id, points in enumerate(batches):
        reference.run_batch(points)
        assert same(seen[batch_id], reference.answers()), batch_id


def same(a: dict, b: dict) -> bool:
    """Answers equal field by field (NaN, before any data, equals NaN)."""
    return {k: repr(v) for k, v in a.items()} == {k: repr(v) for k, v in b.items()}


def dead_reasons(job: Job) -> list[str]:
    files = (job.checkpoint.parent / "out" / "dead_letters").glob("*.parquet")
    return sorted(r for p in files for r in pd.read_parquet(p)["reason"])


@pytest.mark.spark
@pytest.mark.slow
def test_a_generator_job_equals_the_batch_runtime_on_the_same_ticks(spark, tmp_path) -> None:
    table = (
        'kind = "generator"\nsources = 3\nmetrics = 3\nstep = "1s"\nseed = 11\n'
        "ticks = 12\nmax_ticks_per_batch = 5\nspeedup = 1e6\nstart = 2024-03-01T00:00:00Z"
    )
    job = write_job(tmp_path, QUERIES["generator"], table)
    seen = run(spark, job)
    fleet = FleetStream(hosts=3, metrics=3, step_ms=1_000, start_ms=job.input.start_ms, seed=11)
    ends = [offset["tick"] for offset in logged_offsets(job)]
    assert ends[-1] == 12 and max(np.diff([0, *ends])) <= 5
    batches = [
        list(fleet.points(a, b).itertuples(index=False, name=None))
        for a, b in itertools.pairwise([0, *ends])
    ]
    check_against_reference(job, seen, batches)
    assert dead_reasons(job) == []


def nab_reference(path: Path) -> list[Point]:
    """NAB's rows as points of series nab.cpu, in time order (pandas, not the reader)."""
    frame = pd.read_csv(path)
    ms = pd.to_datetime(frame["timestamp"], utc=True).astype("int64") // 1_000_000
    frame = frame.assign(ts=ms).sort_values("ts", kind="stable")
    return [
        ("nab.cpu", "nab.cpu", int(t), float(v)) for t, v in zip(frame.ts, frame.value, strict=True)
    ]


@pytest.mark.spark
@pytest.mark.slow
def test_replaying_a_nab_file_equals_the_batch_runtime(spark, tmp_path) -> None:
    if not NAB.is_file():
        pytest.skip(f"NAB data not found at {NAB.resolve()} (shared data checkout missing)")
    table = (
        f'kind = "replay"\npath = "{NAB.resolve()}"\nformat = "csv"\nseries = "nab.cpu"\n'
        'columns = { ts = "timestamp", value = "value" }\nspeedup = 1e9'  # 14 days in ~1.2 s
    )
    job = write_job(tmp_path, QUERIES["nab"], table, trigger="500ms")
    seen = run(spark, job)
    points = nab_reference(NAB)
    ends = [offset["row"] for offset in logged_offsets(job)]
    assert ends[-1] == len(points) and len(ends) >= 2
    batches = [points[a:b] for a, b in itertools.pairwise([0, *ends])]
    check_against_reference(job, seen, batches)
    # the spike rule's windows leave the point out, on Spark as in process (25 spikes)
    files = sorted((tmp_path / "out" / "events").glob("*.parquet"))
    fired = pd.concat(pd.read_parquet(p) for p in files).sort_values("ts_ms")
    mon = Monitor(["nab.*"])
    mon.add_query(QUERIES["nab"].strip().splitlines()[1])
    mon.ingest([p[1] for p in points], [p[2] for p in points], [p[3] for p in points])
    assert fired["ts_ms"].tolist() == [e.ts_ms for e in mon.events()]
    assert len(fired) == 25


LINES = [  # (series, ts, value) of a few series on sources a, b, c
    {"series": f"{s}", "ts": 1_000 * k + i, "value": round(math.sin(k + i) * 3, 3)}
    for k in range(6)
    for i, s in enumerate(["a.x", "b.x", "c.y"])
]
BAD_LINES = [
    "this is not JSON",
    '{"series": "a.x", "ts": "yesterday", "value": 1}',
    '{"series": "a.x", "ts": 99999, "value": "n/a"}',
    '{"series": "b.x", "ts": 99999, "value": "NaN"}',
    '{"series": "b.x", "ts": 99999, "value": "-Infinity"}',
]


@pytest.mark.spark
@pytest.mark.slow
def test_a_replayed_recording_with_bad_rows_equals_the_batch_runtime(spark, tmp_path) -> None:
    records = [*reversed(LINES), *[json.loads(b) for b in BAD_LINES[1:]]]
    path = tmp_path / "recorded.json"
    path.write_text(
        "".join(json.dumps(r) + "\n" for r in records) + BAD_LINES[0] + "\n", encoding="utf-8"
    )
    table = f'kind = "replay"\npath = "{path.name}"\nformat = "json"\nspeedup = 1e4'
    job = write_job(tmp_path, QUERIES["lines"], table)
    seen = run(spark, job)
    ends = [offset["row"] for offset in logged_offsets(job)]
    assert ends[-1] == len(records) + 1
    # the reader's order (tested above); the reference reads the values itself
    good = [good_point(r) for r in read_recording(path, "json", job.input.columns)]
    batches = [[p for p in good[a:b] if p] for a, b in itertools.pairwise([0, *ends])]
    check_against_reference(job, seen, batches)
    assert sum(map(len, batches)) == len(LINES)
    assert dead_reasons(job) == sorted(REASONS)


def good_point(row: tuple) -> Point | None:
    """A (series, ts, value) text row as a point (its own source), None if bad."""
    series, ts, value = row
    try:
        v = float(value)
        return (series, series, int(ts), v) if series and math.isfinite(v) else None
    except (TypeError, ValueError):
        return None


class LineServer:
    """A TCP server sending every connection the same lines, then holding it open (each
    query of a job opens its own connection)."""

    def __init__(self, lines: list[str]) -> None:
        self.payload = "".join(line + "\n" for line in lines).encode()
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.clients: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:  # closed
                return
            client.sendall(self.payload)
            self.clients.append(client)

    def close(self) -> None:
        self.server.close()
        for client in self.clients:
            client.close()


@pytest.fixture
def line_server() -> Iterator[LineServer]:
    lines = [json.dumps(r) for r in LINES[:9]] + BAD_LINES + [json.dumps(r) for r in LINES[9:]]
    server = LineServer(lines)
    yield server
    server.close()


@pytest.mark.spark
@pytest.mark.slow
def test_a_socket_job_equals_the_batch_runtime(spark, tmp_path, line_server) -> None:
    table = f'kind = "socket"\nhost = "127.0.0.1"\nport = {line_server.port}'
    job = write_job(tmp_path, QUERIES["lines"], table)
    lines = line_server.payload.decode().splitlines()

    def all_lines_processed(runner: JobRunner) -> bool:
        commits = job.checkpoint / "nodes" / "commits"
        done = [int(p.name) for p in commits.iterdir() if p.name.isdigit()]
        last = int(logged_offsets(job)[max(done)]) if done else -1
        return last == len(lines) - 1 and runner.dead_letters == len(BAD_LINES)

    seen = run(spark, job, done=all_lines_processed)
    ends = [int(offset) for offset in logged_offsets(job)]  # the index of a batch's last line
    batches = [
        [good_point(text_row(line)) for line in lines[a + 1 : b + 1]]
        for a, b in itertools.pairwise([-1, *ends])
    ]
    check_against_reference(job, seen, [[p for p in b if p] for b in batches])
    assert dead_reasons(job) == sorted(REASONS)  # the line that is not JSON: no series


def text_row(line: str) -> tuple:
    """A JSON line as Spark's from_json gives it in text columns (numbers as their text)."""
    try:
        record = json.loads(line)
    except ValueError:
        return (None, None, None)
    return tuple(
        None if record.get(k) is None else str(record[k]) for k in ("series", "ts", "value")
    )


@pytest.mark.spark
@pytest.mark.parametrize(
    ("table", "message"),
    [
        (
            'kind = "kafka"\nbootstrap = "localhost:9092"\ntopic = "metrics"',
            'spark.jars.packages = "org.apache.spark:spark-sql-kafka-0-10_2.13:{version}" to '
            "[job.spark_conf]",
        ),
        ('kind = "replay"\npath = "job.toml"\nformat = "parquet"', "cannot read it as parquet"),
    ],
    ids=["kafka-without-connector", "replay-unreadable-file"],
)
def test_an_input_that_cannot_start_says_why(spark, tmp_path, table: str, message: str) -> None:
    runner = JobRunner(write_job(tmp_path, QUERIES["lines"], table), spark=spark)
    with pytest.raises(JobError, match=re.escape(message.format(version=spark.version))):
        runner.start()


def test_a_replay_of_a_missing_file_is_refused_when_the_job_is_read(tmp_path) -> None:
    with pytest.raises(JobError, match=r"nowhere\.csv': no such file to replay"):
        write_job(tmp_path, QUERIES["lines"], 'kind = "replay"\npath = "nowhere.csv"')


@pytest.mark.spark
def test_a_socket_nobody_listens_on_stops_the_job_with_a_job_error(spark, tmp_path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]  # free now, closed below: nothing listens there
    table = f'kind = "socket"\nhost = "127.0.0.1"\nport = {port}'
    runner = JobRunner(write_job(tmp_path, QUERIES["lines"], table), spark=spark)
    runner.start()
    try:
        with pytest.raises(JobError, match=r"the streaming query failed: .*Connection refused"):
            runner.process_all_available()
    finally:
        runner.stop()
