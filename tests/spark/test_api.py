"""The PySpark API (``tsmon.spark.Monitor``) on user-built streaming DataFrames.

A directory of Parquet files (typed columns: a Spark TIMESTAMP, a double, nulls and NaN)
monitored through the API equals, batch for batch, the job file of the same input run as
``tsmon run`` runs it (:meth:`Monitor.from_job`) and the in-process ``BatchedRuntime``, across
a restart of the API run from its checkpoint; every input row is accepted or dead-lettered with
its reason. Text columns with a source column (the path of a Kafka input, on a JSON file
source) equal the batch runtime too. A rate source is the smoke test, with a query added live.
Bad mappings, types, outputs and settings are refused with one line before anything starts.
Each input file is followed by ``processAllAvailable()``.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.spark.test_dead_letter_details import in_process
from tests.spark.test_runtime import SERIES, reference_runtime, run_file, walk_files
from tsmon.spark import Monitor
from tsmon.spark.driver import JobQueries
from tsmon.spark.job import JobError, load_job
from tsmon.spark.sinks import BatchOutput

pytestmark = [pytest.mark.spark, pytest.mark.slow]

QUERIES = """
QUERY s AS SUM(a.x, b.x) WITHIN 2
QUERY w AS AVG(2*a.y - c.y, b.x) WITHIN 1.5
QUERY g AS AVG(*.x) WITHIN 1
QUERY rise ON a.* WHEN last > mean(4 points) + 0.3 EMIT series, last, mean(4 points)
"""
SOURCES = {"a.*": "A", "b.*": "B", "c.*": "C"}
SETTINGS = {"registers": {"retention": "10s"}, "filters": {"period": "1s", "shrink": 0.1}}
JOB = f"""
queries = '''{QUERIES}'''

[job]
checkpoint = "job-ckpt"

[input]
kind = "files"
path = "job-in"
format = "parquet"
columns = {{ series = "name", ts = "event_time", value = "v" }}

[sources]
{chr(10).join(f'"{g}" = "{s}"' for g, s in SOURCES.items())}

[registers]
retention = "10s"

[filters]
period = "1s"
shrink = 0.1

[[sinks]]
kind = "callback"
"""
#: Bad rows of file 2: each a dead letter with this reason.
BAD = [
    ("a.x", 1_000_000, None, "missing"),
    ("b.x", 1_000_001, math.nan, "nan"),
    ("a.y", None, 1.0, "bad_timestamp"),
    (None, 1_000_002, 1.0, "bad_series"),
]


def make_files(n: int, seed: int = 3) -> list[list[tuple]]:
    """``n`` files of random-walk points ``(name, event_time ms, v)``
    (:func:`~tests.spark.test_runtime.walk_files`); file 2 has :data:`BAD`."""
    files = walk_files(n, seed)
    if n > 2:
        files[2] += [(s, ts, v) for s, ts, v, _ in BAD]
    return files


def drop(directory: Path, index: int, rows: list[tuple]) -> None:
    """Write rows as Parquet (a UTC TIMESTAMP, a double with NaN and nulls) under a hidden
    name, then rename the file in (atomic for the stream)."""
    names, ts, values = zip(*rows, strict=True)
    table = pa.table(
        {
            "name": pa.array(names, pa.string()),
            "event_time": pa.array(ts, pa.timestamp("ms", tz="UTC")),
            "v": pa.array(values, pa.float64()),  # a Python list: NaN stays NaN, None is null
        }
    )
    temp = directory / f".part-{index:03d}.tmp"
    pq.write_table(table, temp)
    os.replace(temp, directory / f"part-{index:03d}.parquet")


def reference(files: list[list[tuple]], job) -> tuple[list[dict], list[list[dict]]]:
    """Answers and events after each file from the in-process batch runtime."""
    runtime = reference_runtime(job)
    answers, events = [], []
    for rows in files:
        good = [
            (SERIES[name], name, ts, v)
            for name, ts, v in rows
            if name is not None and ts is not None and v is not None and math.isfinite(v)
        ]
        events.append(run_file(runtime, good))
        answers.append(runtime.answers())
    return answers, events


def event(row) -> dict:
    """An ``events`` output row as the event it was (the runtimes' ``event`` payloads)."""
    names = ("query", "series", "ts_ms", "value", "payload", "coverage", "replayed")
    return {n: json.loads(row[n]) if n == "payload" else row[n] for n in names}


def test_the_api_equals_tsmon_run_and_the_batch_runtime_and_restarts(spark, tmp_path):
    files = make_files(5)
    api_in, job_in = tmp_path / "api-in", tmp_path / "job-in"
    for d in (api_in, job_in):
        d.mkdir()
    (tmp_path / "job.toml").write_text(JOB, encoding="utf-8")
    drop(job_in, 0, files[0])  # a Parquet job takes its schema from the files there
    job = load_job(tmp_path / "job.toml")
    expected, expected_events = reference(files, job)
    assert sum(map(len, expected_events)) > 3  # the watch query fires

    # the job file, as `tsmon run` runs it
    job_answers, job_events = [], []
    outputs: list[BatchOutput] = []
    run = Monitor.from_job(job, spark).run(callback=outputs.append)
    run.start()
    for i, rows in enumerate(files):
        if i:
            drop(job_in, i, rows)
        outputs.clear()
        run.process_all_available()
        job_answers.append(run.answers("bounded"))
        job_events.append([e for out in outputs for e in out.events])
    run.stop()

    # the API on the user's own streaming DataFrame, restarted from its checkpoint after file 2
    schema = spark.read.parquet(str(job_in)).schema
    api_answers, api_events, dead, progress, got = [], [], [], [], []
    answer_dir = tmp_path / "out" / "answers"
    for part in (range(3), range(3, 5)):
        mon = Monitor(spark, tmp_path / "api-ckpt", QUERIES, SOURCES, **SETTINGS)
        reader = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1)
        points = reader.parquet(str(api_in))
        run = mon.start(
            points,
            {"series": "name", "ts": "event_time", "value": "v"},
            answers=f"parquet:{answer_dir}",
            events=lambda df, batch_id: got.extend(df.collect()),
            dead_letters=lambda df, batch_id: dead.extend(df.collect()),
        )
        for i in part:
            drop(api_in, i, files[i])
            got.clear()  # events of this file
            run.process_all_available()
            api_answers.append(run.answers("bounded"))
            api_events.append([event(e) for e in got])
            progress.append(run.last_progress)
        run.stop()

    for api, job_run, want in zip(api_answers, job_answers, expected, strict=True):
        assert api == job_run == want
    assert api_events == job_events == expected_events
    # every row accepted or a dead letter with its reason; the bad rows' reasons exact
    assert sorted(d.reason for d in dead) == sorted(r for *_, r in BAD)
    assert all(d.batch_id is not None for d in dead)
    # no file, no line: what was wrong alone, in the in-process words (a double in Spark's text)
    assert sorted((d.reason, d.detail) for d in dead) == sorted(
        (r, in_process(row)[1].replace("value nan ", "value NaN ")) for *row, r in BAD
    )
    read = pd.read_parquet(answer_dir)
    assert set(read.columns) >= {"part", "query", "value", "lo", "hi", "as_of_utc", "batch_id"}
    last = read[read["batch_id"].astype(int) == read["batch_id"].astype(int).max()]
    assert {r.query: (r.lo, r.hi) for r in last.itertuples()} == {
        q: (a.lo, a.hi) for q, a in api_answers[-1].items()
    }
    assert all(p["batchId"] >= 0 and "acceptedRows" in p and "durationMs" in p for p in progress)
    lines = (tmp_path / "api-ckpt" / "progress.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert sum(r["inputRows"] for r in records) == sum(len(f) for f in files)
    assert sum(r["deadLetters"] for r in records) == len(BAD)


@pytest.mark.parametrize(("unit", "per_ms"), [("ms", 1), ("us", 1000)])
def test_text_columns_with_a_source_column_equal_the_batch_runtime(spark, tmp_path, unit, per_ms):
    """The path of a Kafka or socket input, tested on a JSON file source: text columns (bad
    text among them), the source from a column; answers and events equal the batch runtime's
    after each file, each bad row a dead letter with its reason; with the times in µs and
    ``ts_unit="us"``, the same."""
    from tests.spark import test_runtime as rt

    (tmp_path / "job.toml").write_text(rt.JOB, encoding="utf-8")
    (tmp_path / "incoming").mkdir()
    job = load_job(tmp_path / "job.toml")
    files = rt.make_files(4, seed=11)
    files[1] = files[1] + rt.BAD
    files = [[{**r, "host": SERIES[r["metric"]]} if "metric" in r else r for r in f] for f in files]
    expected, expected_events = rt.reference(files, tmp_path / "job.toml")
    settings = {"registers": {"retention": "10s"}, "filters": {"period": "1s", "shrink": 0.1}}
    mon = Monitor(spark, tmp_path / "ckpt", job.queries, **settings)
    schema = "metric STRING, time STRING, v STRING, host STRING"
    (tmp_path / "in").mkdir()
    reader = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1)
    lines = reader.json(str(tmp_path / "in"))
    got, dead = [], []
    run = mon.start(
        lines,
        {"series": "metric", "ts": "time", "value": "v", "source": "host"},
        events=lambda df, batch_id: got.extend(event(e) for e in df.collect()),
        dead_letters=lambda df, batch_id: dead.extend(df.collect()),
        ts_unit=unit,
    )
    answers, events = [], []
    try:
        for i, rows in enumerate(files):
            rows = [
                {**r, "time": str(int(r["time"]) * per_ms)} if r.get("time", "").isdigit() else r
                for r in rows
            ]
            rt.drop(tmp_path / "in", f"part-{i:03d}.json", rows)
            got.clear()
            run.process_all_available()
            answers.append(run.answers("bounded"))
            events.append(list(got))
    finally:
        run.stop()
    assert answers == expected and events == expected_events
    assert sorted(d.reason for d in dead) == sorted(rt.REASONS)
    assert sorted(d.raw_value for d in dead if d.reason != "bad_timestamp") == sorted(
        r["v"] for r in rt.BAD if r["time"] != "yesterday"
    )


def test_a_rate_source_smoke(spark, tmp_path):
    from pyspark.sql import functions as F

    rate = spark.readStream.format("rate").option("rowsPerSecond", 30).load()
    points = rate.select(
        F.concat(F.lit("r"), (F.col("value") % 3).cast("string")).alias("name"),
        "timestamp",
        (F.col("value") % 7).alias("v"),
    )
    batches: list[int] = []
    mon = Monitor(spark, tmp_path / "ckpt", "QUERY s AS SUM(r0, r1, r2) WITHIN 3", trigger="200ms")
    run = mon.start(
        points,
        {"series": "name", "ts": "timestamp", "value": "v"},
        answers=lambda df, batch_id: batches.append(df.count()),
    )

    def answered() -> bool:
        answers = run.answers()
        return len(answers) == 1 and math.isfinite(answers["hi"][0] - answers["lo"][0])

    def applied() -> bool:
        return run.query_log()["state"].tolist() == ["applied"]

    try:
        for done in (answered, applied):
            deadline = time.monotonic() + 120
            while not done() and time.monotonic() < deadline:
                assert run.await_termination(0.5) is False  # still running
            if done is answered:  # a watch query added live, as `tsmon query add` does
                run.add_query("QUERY odd ON r* WHEN last > 5 EMIT series, last")
    finally:
        run.stop()
    assert applied()
    assert batches[-1] == 1 and set(batches) <= {0, 1}  # the answer of the batch, once known
    answers = run.answers()
    assert answers["query"].tolist() == ["s"] and answers["part"].tolist() == ["bounded"]
    row = answers.iloc[0]
    assert row.lo <= row.value <= row.hi and row.hi - row.lo <= 3 * (1 + 1e-9)
    assert {"batchId", "numInputRows", "acceptedRows", "answers"} <= set(run.last_progress)


@pytest.mark.parametrize(
    ("make", "columns", "outputs", "settings", "expected"),
    [
        ("batch", None, {}, {}, "give a streaming DataFrame"),
        ("rate", {"series": "name"}, {}, {}, "series is column 'name', which the DataFrame"),
        ("rate", {"series": "value", "ts": "timestamp"}, {}, {}, "series column 'value' is bigint"),
        ("named", {"tss": "timestamp"}, {}, {}, "unknown role 'tss'"),
        ("named", {"ts": "dbl"}, {}, {}, "columns: ts column 'dbl' is double"),
        ("named", {"value": "ts"}, {}, {}, "value column 'ts' is timestamp"),
        ("named", None, {"events": "nowhere"}, {}, "events: give a function"),
        ("named", None, {"answers": lambda df: None}, {}, "answers: <lambda> must take (df, b"),
        ("named", ["series", "ts"], {}, {}, "columns: give a dict of role -> column"),
        ("named", "series", {}, {}, "columns: give a dict of role -> column"),
        ("named", None, {}, {"filters": {"shrink": 2}}, "[filters] shrink must be in [0, 1)"),
        ("named", None, {}, {"trigger": 5}, "[job] trigger must be a duration"),
        ("named", None, {}, {"sources": ["r*"]}, "sources must be a dict, e.g. {"),
        ("named", None, {}, {"filters": "1s"}, "filters must be a dict, e.g. {"),
        ("named", {"ts": "ntz"}, {}, {}, "is timestamp_ntz; it must be a timestamp, integer"),
        ("named", {"ts": "day"}, {}, {}, "cast it where it is read, e.g. df.withColumn('day', "),
        ("named", None, {"ts_unit": "sec"}, {}, "ts_unit must be one of ['s', 'ms', 'us', 'ns']"),
    ],
)
def test_bad_mappings_and_settings_are_refused_in_one_line(
    spark, tmp_path, make, columns, outputs, settings, expected
):
    from pyspark.sql import functions as F

    rate = spark.readStream.format("rate").load()
    df = {
        "batch": spark.range(3),
        "rate": rate,
        "named": rate.select(
            F.lit("r0").alias("series"),
            F.col("timestamp").alias("ts"),
            "value",
            (F.col("value") * 0.5).alias("dbl"),
            F.col("timestamp").cast("timestamp_ntz").alias("ntz"),
            F.col("timestamp").cast("date").alias("day"),
        ),
    }[make]
    with pytest.raises(JobError) as e:
        Monitor(spark, tmp_path / "ckpt", "QUERY s AS SUM(r0) WITHIN 1", **settings).start(
            df, columns, **outputs
        )
    assert expected in str(e.value) and "\n" not in str(e.value)
    assert not (tmp_path / "ckpt").exists() and not spark.streams.active  # nothing started


def test_a_checkpoint_that_is_no_path_is_refused(tmp_path):
    """``str(None)`` would have made a checkpoint directory named 'None'."""
    with pytest.raises(JobError, match=r"\[job\] checkpoint must be a non-empty string, got None"):
        Monitor(None, None, "QUERY s AS SUM(r0) WITHIN 1")
    mon = Monitor(None, tmp_path / "ckpt", "QUERY s AS SUM(r0) WITHIN 1")
    assert mon.job.checkpoint == tmp_path / "ckpt"


def test_queries_of_a_monitor_are_checked_like_a_job_files(spark, tmp_path):
    with pytest.raises(JobError, match=r"tsmon\.spark\.Monitor: queries: "):
        Monitor(spark, tmp_path / "ckpt", "QUERY s AS SUM(a WITHIN")
    mon = Monitor(spark, tmp_path / "ckpt", "QUERY s AS SUM(a.x) WITHIN 1")
    assert JobQueries.of(mon.job).statements.registered[0].name == "s"


def test_starting_a_started_run_again_is_refused_and_leaves_it_running(spark, tmp_path):
    """Spark would stop the running query (half-way through a batch) to start a new one on
    the same checkpoint: a second ``start`` is refused in one line instead."""
    rate = spark.readStream.format("rate").option("rowsPerSecond", 20).load()
    points = rate.selectExpr("'r0' AS series", "timestamp AS ts", "value")
    run = Monitor(spark, tmp_path / "ckpt", "QUERY s AS SUM(r0) WITHIN 1", trigger="200ms").start(
        points
    )
    try:
        query = run.node_query
        with pytest.raises(JobError, match=r"^the run is started already; stop\(\) it") as e:
            run.start()
        assert "\n" not in str(e.value)
        assert run.node_query is query and query.isActive
        assert [q.runId for q in spark.streams.active] == [query.runId]
        again = Monitor(spark, tmp_path / "ckpt", "QUERY s AS SUM(r0) WITHIN 1")  # a cell re-run
        with pytest.raises(JobError, match=r"^the run is started already; .* maybe of another"):
            again.start(points)
        assert query.isActive and [q.runId for q in spark.streams.active] == [query.runId]
    finally:
        run.stop()
    assert not query.isActive


CTRL_C_IN_A_BATCH = """
import json, os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # as at a terminal (nohup ignores it)
from tsmon.spark import Monitor
from tsmon.spark.session import spark_session

spark = spark_session(app_name="tsmon-ctrl-c")
rate = spark.readStream.format("rate").option("rowsPerSecond", 50).load()
points = rate.selectExpr("'r0' AS series", "timestamp AS ts", "value")

def answers(df, batch_id):  # Ctrl-C while batch 2 is in foreachBatch
    if batch_id == 2:
        os.kill(os.getpid(), signal.SIGINT)

ckpt = sys.argv[1]
run = Monitor(spark, ckpt, "QUERY s AS SUM(r0) WITHIN 1", trigger="200ms").start(
    points, answers=answers
)
try:
    run.{wait}
except KeyboardInterrupt as e:
    print("interrupted:", e)
print("active:", run.node_query.isActive)
print("batches:", [json.loads(line)["batchId"] for line in open(ckpt + "/progress.jsonl")])
print("committed:", sorted(int(n) for n in os.listdir(ckpt + "/nodes/commits") if n.isdigit()))
spark.stop()
"""


@pytest.mark.parametrize("wait", ["await_termination()", "process_all_available()"])
def test_ctrl_c_while_a_batch_runs_stops_the_run_after_it_quietly(tmp_path, wait):
    """Ctrl-C while a script waits in the run: the batch running ends, the query stops, and
    ``KeyboardInterrupt`` says so; no Py4J or Java traceback (pyspark's own handler would
    interrupt the JVM call, breaking Py4J's connection, and kill the batch)."""
    ckpt = tmp_path / "ckpt"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2] / "src"))
    done = subprocess.run(
        [sys.executable, "-c", CTRL_C_IN_A_BATCH.replace("{wait}", wait), str(ckpt)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    lines = dict(line.split(": ", 1) for line in done.stdout.splitlines() if ": " in line)
    assert lines["interrupted"] == "tsmon: stopped between batches; the state is in the checkpoint"
    assert lines["active"] == "False"
    batches, committed = json.loads(lines["batches"]), json.loads(lines["committed"])
    # batch 2 ended whole (Spark may not have committed it yet: a restart replays it, with the
    # same outputs, from the snapshot of batch 1), and the ones before it are committed
    assert batches == list(range(len(batches))) and batches[-1] >= 2
    assert committed[: len(batches) - 1] == batches[:-1]
    assert not re.search(r"Traceback|Py4J|Exception|ERROR", done.stderr), done.stderr


def test_a_signal_before_the_wait_thread_runs_still_stops_the_run(monkeypatch):
    """run_until_signalled calls ``stop`` once a signal comes, whether or not its thread has
    begun ``work`` yet: the run is stopped, and the wait (then at once) is not left running."""
    from types import SimpleNamespace

    from tsmon.spark import api

    def signal_first(work, stop):  # the order a Ctrl-C right after the call can give
        flag = threading.Event()
        flag.set()
        stop()
        work(flag)
        return True

    monkeypatch.setattr(api, "run_until_signalled", signal_first)
    stopped: list[str] = []
    run = SimpleNamespace(stop=lambda: stopped.append("stop"))
    with pytest.raises(KeyboardInterrupt, match="stopped between batches"):
        api.Run._until_interrupted(run, lambda: stopped.append("wait"))
    assert stopped == ["stop", "wait"]


@pytest.mark.parametrize("in_main_thread", [True, False])
def test_a_wait_without_a_signal_returns_or_raises_as_it_would_and_leaves_the_run(
    in_main_thread,
):
    """In the main thread the wait runs in a thread under SIGINT/SIGTERM handlers (then the
    previous handlers are back); elsewhere, where no handler can be set, it just runs. Either
    way its value or its exception is the caller's, and the run is not stopped."""
    import signal
    from types import SimpleNamespace

    from tsmon.spark import api

    def fail():
        raise JobError("the streaming query failed: x")

    stopped: list[str] = []
    run = SimpleNamespace(stop=lambda: stopped.append("stop"))
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    outcomes: list[object] = []

    def waits() -> None:
        outcomes.append(api.Run._until_interrupted(run, lambda: 42))
        try:
            api.Run._until_interrupted(run, fail)
        except JobError as e:
            outcomes.append(str(e))

    if in_main_thread:
        waits()
    else:
        thread = threading.Thread(target=waits)
        thread.start()
        thread.join(30)
    assert outcomes == [42, "the streaming query failed: x"] and stopped == []
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_an_input_spark_cannot_read_fails_with_the_reason_naming_the_file(spark, tmp_path):
    """pandas writes nanosecond timestamps, which Spark cannot read as a TIMESTAMP: the input
    is read as the batch is collected in foreachBatch, where Py4J's exception line says only
    "Exception thrown in awaitResult"; the error names the Spark error class and the file."""
    (tmp_path / "in").mkdir()
    frame = pd.DataFrame({"name": ["r0"], "event_time": pd.to_datetime([0], utc=True), "v": [1.0]})
    frame.to_parquet(tmp_path / "in" / "part-0.parquet")
    schema = "name STRING, event_time TIMESTAMP, v DOUBLE"
    points = spark.readStream.schema(schema).parquet(str(tmp_path / "in"))
    run = Monitor(spark, tmp_path / "ckpt", "QUERY s AS SUM(r0) WITHIN 1").start(
        points, {"series": "name", "ts": "event_time", "value": "v"}
    )
    try:
        with pytest.raises(JobError) as e:
            run.process_all_available()
    finally:
        run.stop()
    message = str(e.value)
    assert "\n" not in message
    assert "[FAILED_READ_FILE.PARQUET_COLUMN_DATA_TYPE_MISMATCH]" in message, message
    assert "part-0.parquet" in message and "column [event_time]" in message


def test_an_output_that_raises_is_named_and_its_batch_is_replayed_on_restart(
    spark, tmp_path, capfd
):
    """The query fails with the output's exception; the console names the output and the
    batch; a run started again on the checkpoint hands that batch to the outputs again."""
    (tmp_path / "in").mkdir()
    drop(tmp_path / "in", 0, [("r0", 1_000, 1.0), ("r0", 2_000, 2.0)])
    schema = "name STRING, event_time TIMESTAMP, v DOUBLE"
    columns = {"series": "name", "ts": "event_time", "value": "v"}

    def broken(df, batch_id):
        raise ValueError("no table 'answers'")

    seen: list[int] = []
    for answers in (broken, lambda df, batch_id: seen.append(batch_id)):
        points = spark.readStream.schema(schema).parquet(str(tmp_path / "in"))
        mon = Monitor(spark, tmp_path / "ckpt", "QUERY s AS SUM(r0) WITHIN 1")
        run = mon.start(points, columns, answers=answers)
        try:
            if answers is broken:
                with pytest.raises(JobError, match=r"ValueError: no table 'answers'$"):
                    run.process_all_available()
            else:
                run.process_all_available()
        finally:
            run.stop()
    assert seen[0] == 0  # batch 0 again, after the failure
    err = capfd.readouterr().err
    assert "tsmon: the answers output test_an_output_that_raises_is_named_and_its_batch_is" in err
    assert "broken failed on batch 0; the query stops: fix it and start again" in err


INTERPRETER = (
    "; Spark's Python workers run another interpreter than this one: start the SparkSession "
    f"with PYSPARK_PYTHON={sys.executable} in the environment "
    "(tsmon.spark.session.spark_session() does)"
)


@pytest.mark.parametrize(
    ("module", "hint"),
    [
        ("pandas", INTERPRETER),
        ("tsmon", INTERPRETER),
        ("scipy.special", INTERPRETER),
        ("pyarrow", INTERPRETER),
        (
            "shapely.geometry",
            "; 'shapely' is no module tsmon needs (a function of the input DataFrame's may): "
            "install it where Spark's Python workers run",
        ),
    ],
)
def test_workers_that_cannot_import_tsmon_are_told_how_to_start_the_session(module, hint):
    """A session of the user's own whose Python workers run another interpreter (the
    default ``python3``): the host's ``import pandas`` fails in the worker. The message is
    the one such a run fails with (Spark 4.3, a plain ``SparkSession.builder`` on local[2]).
    A module tsmon does not need (a UDF's in the input) is named plainly, without the hint."""
    from pyspark.errors import StreamingQueryException

    from tsmon.spark.failures import query_failures

    message = (
        "[STREAM_FAILED] Query [id = 7, runId = 1] terminated with exception: "
        "[FOREACH_BATCH_USER_FUNCTION_ERROR] An error occurred in the user provided function "
        "in foreach batch sink. Reason: An exception was raised by the Python Proxy. Return "
        "Message: Traceback (most recent call last):\n"
        '  File "tsmon/spark/runtime.py", line 247, in _on_batch\n'
        "pyspark.errors.exceptions.captured.PythonException: An exception was thrown from the "
        "Python worker:\nTraceback (most recent call last):\n"
        '  File "tsmon/spark/host.py", line 53, in <module>\n'
        f"    import {module}\n"
        f"ModuleNotFoundError: No module named '{module}'\n SQLSTATE: 39000\n"
        "=== Streaming Query ===\n"
    )
    with pytest.raises(JobError) as e, query_failures():
        raise StreamingQueryException(message=message)
    assert str(e.value).endswith(f"ModuleNotFoundError: No module named '{module}'{hint}")


def test_an_aggregated_stream_is_refused_with_the_fix(spark, tmp_path):
    """Spark cannot run the source nodes' state after a streaming aggregation: one line with
    the fix, not an AnalysisException with the query plan; nothing left running."""
    from pyspark.sql import functions as F

    rate = spark.readStream.format("rate").load().withWatermark("timestamp", "10 seconds")
    means = rate.groupBy(F.window("timestamp", "5 seconds")).agg(F.avg("value").alias("value"))
    points = means.selectExpr("'r0' AS series", "window.end AS ts", "value")
    with pytest.raises(JobError) as e:
        Monitor(spark, tmp_path / "ckpt", "QUERY s AS SUM(r0) WITHIN 1").start(points)
    assert str(e.value) == (
        "the streaming query cannot start: applyInPandasWithState in append mode is not "
        "supported after aggregation on a streaming DataFrame/Dataset: give the rows before "
        "the aggregation (tsmon's queries aggregate), or write the aggregate out and monitor "
        "that as a stream"
    )
    assert not spark.streams.active
