"""Job files: a good one loads; every mistake names the key and what was expected."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import tsmon.spark.job as jobmod
from tsmon.spark.driver import JobQueries
from tsmon.spark.job import JobError, load_job

GOOD = """
query_file = "q.tsq"

[job]
name = "routers"
checkpoint = "state"
trigger = "2s"
master = "local[2]"

[job.spark_conf]
"spark.sql.shuffle.partitions" = 4

[input]
kind = "files"
path = "incoming"
format = "json"
columns = { series = "metric", source = "router", ts = "time" }

[sources]
"r7.*" = "r7"

[filters]
period = "30s"
shrink = 0.02
growth = "paper"

[[sinks]]
kind = "parquet"
path = "out"

[[sinks]]
kind = "console"
"""


def write(tmp_path: Path, text: str, queries: str = "QUERY s AS SUM(a, b) WITHIN 1") -> Path:
    (tmp_path / "q.tsq").write_text(queries, encoding="utf-8")
    (tmp_path / "incoming").mkdir(exist_ok=True)  # a files input's directory must exist
    path = tmp_path / "job.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_complete_job_loads_with_paths_relative_to_the_file(tmp_path: Path) -> None:
    job = load_job(write(tmp_path, GOOD))
    assert job.name == "routers" and job.trigger_ms == 2_000 and job.master == "local[2]"
    assert job.checkpoint == tmp_path / "state"
    assert job.input.path == tmp_path / "incoming" and job.input.format == "json"
    assert dict(job.input.columns) == {
        "series": "metric",
        "source": "router",
        "ts": "time",
        "value": "value",
    }
    assert job.spark_conf == {"spark.sql.shuffle.partitions": "4"}
    assert job.sources == {"r7.*": "r7"}
    assert (job.filters.period_ms, job.filters.shrink, job.filters.growth) == (
        30_000,
        0.02,
        "paper",
    )
    assert [s.kind for s in job.sinks] == ["parquet", "console"]
    assert job.queries.startswith("QUERY s")


def test_the_module_docstring_example_is_a_valid_job(tmp_path: Path) -> None:
    example = re.search(r"::\n\n(.*)\n\"\"\"", jobmod.__doc__ + '\n"""', re.S)
    assert example is not None
    text = "\n".join(line[4:] for line in example.group(1).splitlines())
    job = load_job(write(tmp_path, text))
    assert job.input.columns["source"] == "router" and job.filters.growth == "capped"
    assert job.buckets == 16


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (('checkpoint = "state"', ""), "needs checkpoint"),
        (('trigger = "2s"', 'trigger = "2 parsecs"'), "[job] trigger"),
        (('kind = "files"', 'kind = "ftp"'), "must be one of ['files', 'socket'"),
        (('format = "json"', 'format = "xml"'), "format must be one of"),
        (("shrink = 0.02", "shrink = 1.5"), "shrink must be in [0, 1)"),
        (('growth = "paper"', 'growth = "fast"'), "growth must be one of"),
        (('path = "out"', ""), "parquet sink needs path"),
        (('master = "local[2]"', 'mastr = "local"'), "unknown key 'mastr' in [job]"),
        (('query_file = "q.tsq"', 'query_file = "nope.tsq"'), "no such query_file: "),
        (('series = "metric"', 'serie = "metric"'), "unknown key 'serie'"),
        (('kind = "files"', 'kind = "socket"'), "needs port = <1..65535>"),
        (('master = "local[2]"', "buckets = 0"), "[job] buckets must be an integer 1..100000"),
        (("shrink = 0.02", "backlog = 1"), "[filters] backlog must be an integer >= 2, got 1"),
        (("shrink = 0.02", 'backlog = "32"'), "[filters] backlog must be an integer >= 2"),
        (("shrink = 0.02", "backlog = 8.0"), "[filters] backlog must be an integer >= 2"),
        (("shrink = 0.02", "backlog = true"), "[filters] backlog must be an integer >= 2"),
    ],
)
def test_mistakes_name_the_key_and_what_was_expected(
    tmp_path: Path, change: tuple[str, str], message: str
) -> None:
    old, new = change
    assert old in GOOD
    with pytest.raises(JobError, match=re.escape(message)):
        load_job(write(tmp_path, GOOD.replace(old, new, 1)))


def test_a_key_misplaced_after_a_table_gets_a_toml_hint(tmp_path: Path) -> None:
    text = GOOD.replace('query_file = "q.tsq"\n', "") + 'query_file = "q.tsq"\n'
    with pytest.raises(JobError, match="put top-level keys first"):
        load_job(write(tmp_path, text))


def test_bad_toml_and_bad_queries_are_reported_before_spark_starts(tmp_path: Path) -> None:
    with pytest.raises(JobError, match="not valid TOML"):
        load_job(write(tmp_path, GOOD + "\n[job\n"))
    with pytest.raises(JobError, match=r"q.tsq: queries: line 1:\d+"):
        load_job(write(tmp_path, GOOD, queries="QUERY s AS SUM(a, b)"))
    with pytest.raises(JobError, match="no such job file"):
        load_job(tmp_path / "missing.toml")


def test_declared_sources_follow_the_globs_and_leave_source_columns_to_the_rows(
    tmp_path: Path,
) -> None:
    from tsmon.spark.driver import known_sources

    with_column = load_job(write(tmp_path, GOOD))  # maps a source column, and "r7.*" = "r7"
    assert known_sources(with_column, ["r7.q", "r1.q"]) == {"r7.q": "r7"}  # r1.q: rows say
    without = load_job(write(tmp_path, GOOD.replace(', source = "router"', "")))
    assert known_sources(without, ["r7.q", "r1.q"]) == {"r7.q": "r7", "r1.q": "r1.q"}


# -- [input] of every kind -------------------------------------------------------------------


def with_input(tmp_path: Path, table: str) -> Path:
    """A job file whose [input] table is ``table`` (TOML lines)."""
    return write(tmp_path, f'[job]\ncheckpoint = "ck"\n[input]\n{table}\n')


def test_the_generator_has_defaults_and_its_rows_carry_their_host(tmp_path: Path) -> None:
    spec = load_job(with_input(tmp_path, 'kind = "generator"')).input
    assert (spec.sources, spec.metrics, spec.step_ms, spec.speedup) == (200, 15, 10_000, 360.0)
    assert (spec.max_ticks_per_batch, spec.ticks, spec.seed) == (100, None, 7)
    assert spec.start_ms == 1_704_067_200_000  # 2024-01-01T00:00:00Z
    assert dict(spec.columns) == {c: c for c in ("series", "source", "ts", "value")}
    table = (
        'kind = "generator"\nsources = 3\nmetrics = 2\nstep = "1m"\nspeedup = 60\n'
        "max_ticks_per_batch = 4\nticks = 30\nseed = 0\nstart = 2024-03-01T01:00:00+01:00"
    )
    spec = load_job(with_input(tmp_path, table)).input
    assert (spec.sources, spec.metrics, spec.step_ms, spec.speedup) == (3, 2, 60_000, 60.0)
    assert (spec.max_ticks_per_batch, spec.ticks, spec.seed) == (4, 30, 0)
    assert spec.start_ms == 1_709_251_200_000  # 2024-03-01T00:00:00Z
    assert load_job(with_input(tmp_path, 'kind = "generator"\nstart = 5')).input.start_ms == 5


def test_replay_socket_and_kafka_inputs_load(tmp_path: Path) -> None:
    (tmp_path / "rec").mkdir()
    (tmp_path / "rec" / "nab.csv").write_text("timestamp,value\n", encoding="utf-8")
    replay = load_job(
        with_input(
            tmp_path,
            'kind = "replay"\npath = "rec/nab.csv"\nseries = "nab.cpu"\nspeedup = 600\n'
            'columns = { ts = "timestamp" }\nts_unit = "s"',
        )
    ).input
    assert replay.path == tmp_path / "rec" / "nab.csv" and replay.series == "nab.cpu"
    assert replay.speedup == 600.0 and replay.columns["ts"] == "timestamp"
    assert replay.ts_unit == "s"
    socket = load_job(with_input(tmp_path, 'kind = "socket"\nhost = "collector"\nport = 9999'))
    assert (socket.input.host, socket.input.port, socket.input.ts_unit) == ("collector", 9999, "ms")
    kafka = load_job(
        with_input(tmp_path, 'kind = "kafka"\nbootstrap = "b1:9092,b2:9092"\ntopic = "metrics"')
    ).input
    assert (kafka.bootstrap, kafka.topic, kafka.starting_offsets) == (
        "b1:9092,b2:9092",
        "metrics",
        "latest",
    )


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('kind = "generator"\nmetrics = 16', "[input] metrics must be an integer 1..15, got 16"),
        ('kind = "generator"\nsources = 0', "[input] sources must be an integer >= 1, got 0"),
        ('kind = "generator"\nticks = 2.5', "[input] ticks must be an integer >= 1, got 2.5"),
        ('kind = "generator"\nseed = -1', "[input] seed must be an integer >= 0, got -1"),
        ('kind = "generator"\nmax_ticks_per_batch = true', "max_ticks_per_batch must be an"),
        ('kind = "generator"\nstep = "often"', "[input] step: cannot read duration 'often'"),
        ('kind = "generator"\nspeedup = 0', "[input] speedup must be a number > 0"),
        ('kind = "generator"\nspeedup = true', "[input] speedup must be a number > 0"),
        ('kind = "generator"\nstart = "monday"', "[input] start must be epoch milliseconds"),
        ('kind = "generator"\nstart = 2024-01-01T00:00:00', "a date-time with an offset"),
        ('kind = "generator"\ncolumns = { ts = "t" }', "unknown key 'columns' in [input] of"),
        ('kind = "files"\npath = "in"\nspeedup = 2', "unknown key 'speedup' in [input] of"),
        (
            'kind = "files"\npath = "in"\nts_unit = "sec"',
            "[input] ts_unit must be one of ['s', 'ms', 'us', 'ns'], got 'sec'",
        ),
        ('kind = "generator"\nts_unit = "s"', "unknown key 'ts_unit' in [input] of"),
        (
            'kind = "socket"\nport = 9\npath = "in"',
            "unknown key 'path' in [input] of kind = \"socket\"",
        ),
        ('kind = "socket"\nport = true', 'kind = "socket" needs port = <1..65535>, got True'),
        ('kind = "kafka"\ntopic = "m"', 'kind = "kafka" needs bootstrap = "broker1:9092'),
        ('kind = "kafka"\nbootstrap = "b:9092"', 'kind = "kafka" needs topic = "metrics"'),
        ('kind = "kafka"\nbootstrap = "b:9092"\ntopic = ""', "[input] topic must be a non-empty"),
        ('kind = "replay"\npath = "r.csv"\nseries = ""', "[input] series must be a non-empty"),
        (
            'kind = "replay"\npath = "r.csv"\nseries = "x"\ncolumns = { series = "s" }',
            "give either series (one series for the whole file) or [input.columns] series",
        ),
    ],
)
def test_input_mistakes_name_the_key_and_what_was_expected(
    tmp_path: Path, table: str, message: str
) -> None:
    (tmp_path / "r.csv").write_text("ts,value\n", encoding="utf-8")
    (tmp_path / "in").mkdir()
    with pytest.raises(JobError, match=re.escape(message)):
        load_job(with_input(tmp_path, table))


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('[standing]\ntick = "0s"', "[standing] tick: duration must be > 0"),
        ("[standing]\npartitions = 0", "partitions must be an int >= 1"),
        ("[standing]\nk = 2", "k must be an int >= 3"),
        ('[standing]\ndrift_test = "yes"', "drift_test must be a z-score >= 0 or false"),
        ("[standing]\nticks = 3", "unknown key 'ticks' in [standing]"),
        ('[replication]\nphase = "0s"', "[replication] phase: duration must be > 0"),
        ('[replication]\nperiod = "1s"', "unknown key 'period' in [replication]"),
    ],
)
def test_standing_and_replication_mistakes_are_named(
    tmp_path: Path, table: str, message: str
) -> None:
    with pytest.raises(JobError, match=re.escape(message)):
        load_job(write(tmp_path, GOOD + "\n" + table + "\n"))


def test_standing_and_replication_settings_load(tmp_path: Path) -> None:
    text = GOOD + '\n[standing]\ntick = "5s"\npartitions = 4\nk = 50\ndrift_test = false\n'
    job = load_job(write(tmp_path, text + '[replication]\nphase = "30s"\n'))
    s = job.standing
    assert (s.tick_ms, s.partitions, s.k, s.drift_z) == (5_000, 4, 50, None)
    assert job.replica_phase_ms == 30_000
    assert load_job(write(tmp_path, GOOD)).standing.drift_z == 2.0


def test_the_filter_period_auto_is_chosen_online(tmp_path: Path) -> None:
    """``[filters] period = "auto"``: no fixed ``T``; the coordinator chooses it
    (:mod:`tsmon.protocols.filters.tuning`) and tells the sources."""
    job = load_job(write(tmp_path, GOOD.replace('period = "30s"', 'period = "auto"')))
    assert job.filters.period_ms is None
    assert JobQueries.of(job).settings(job).period_ms is None
    text = GOOD.replace('period = "30s"\n', "")
    assert load_job(write(tmp_path, text)).filters.period_ms is None  # the default: auto


# -- no silent coercion: types as written, durations with units ------------------------------


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (('ts = "time"', "ts = 3"), "[input.columns] ts must be a non-empty string (quote it)"),
        (('"r7.*" = "r7"', '"r7.*" = 7'), "[sources] r7.* must be a non-empty string"),
        (('path = "incoming"', "path = 1"), "[input] path must be a non-empty string"),
        (('path = "out"', "path = true"), "[[sinks]] path must be a non-empty string"),
        (('trigger = "2s"', "trigger = 2"), "[job] trigger must be a duration with a unit"),
        (('period = "30s"', "period = 30"), "[filters] period must be a duration with a unit"),
        (("shrink = 0.02", "shrink = false"), "shrink must be in [0, 1), got False"),
        (
            ('"spark.sql.shuffle.partitions" = 4', '"spark.sql.shuffle.partitions" = 4.5'),
            "'spark.sql.shuffle.partitions' must be a string, an integer or a boolean",
        ),
        (('path = "incoming"', 'path = "incomin"'), "incomin': no such directory"),
        (('path = "incoming"', 'path = "q.tsq"'), "q.tsq': a file, not a directory"),
    ],
)
def test_types_are_never_coerced(tmp_path: Path, change: tuple[str, str], message: str) -> None:
    old, new = change
    assert old in GOOD
    with pytest.raises(JobError, match=re.escape(message)):
        load_job(write(tmp_path, GOOD.replace(old, new, 1)))


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("[registers]\nretention = 3600", "[registers] retention must be a duration with a unit"),
        ("[registers]\nallowed_lateness = 0", "[registers] allowed_lateness must be a duration"),
        ("[registers]\ncapacity_points = 1.5", "capacity_points must be an integer >= 1"),
        ("[standing]\ntick = 1000", '[standing] tick must be a duration with a unit, e.g. "5s"'),
        ("[standing]\ninterrupt_retry = 5", "[standing] interrupt_retry must be a duration"),
        ("[standing]\nmax_wait = 10", 'max_wait must be a duration with a unit, e.g. "5s" (or inf'),
        ("[replication]\nphase = 10", "[replication] phase must be a duration with a unit"),
    ],
)
def test_bare_numbers_are_not_durations(tmp_path: Path, table: str, message: str) -> None:
    with pytest.raises(JobError, match=re.escape(message)):
        load_job(write(tmp_path, GOOD + "\n" + table + "\n"))


def test_spark_settings_keep_booleans_as_spark_spells_them(tmp_path: Path) -> None:
    text = GOOD.replace("= 4\n", '= 4\n"spark.ui.enabled" = false\n', 1)
    conf = load_job(write(tmp_path, text)).spark_conf
    assert conf == {"spark.sql.shuffle.partitions": "4", "spark.ui.enabled": "false"}
    ok = GOOD + '\n[registers]\nretention = "1h"\n[standing]\nmax_wait = inf\n'
    assert load_job(write(tmp_path, ok)).registers.retention == "1h"


def test_a_missing_input_directory_fails_before_a_checkpoint_exists(tmp_path: Path) -> None:
    """The CLI: one ``error:`` line, status 2, no checkpoint directory made."""
    path = write(tmp_path, GOOD.replace('path = "incoming"', 'path = "nowhere"', 1))
    done = subprocess.run(
        [sys.executable, "-m", "tsmon.cli", "run", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src"), "COLUMNS": "500"},
    )
    assert done.returncode == 2
    lines = done.stdout.strip().splitlines()  # the CLI's console prints errors on stdout
    assert len(lines) == 1 and lines[0].startswith("error: ") and "nowhere" in lines[0]
    assert done.stderr == ""
    assert not (tmp_path / "state").exists()


def test_the_filter_backlog_reaches_the_coordinators_queue(tmp_path: Path) -> None:
    """``[filters] backlog`` (default 32), from a job file or ``tsmon.spark.Monitor``'s
    ``filters``, is the bound of the bounded coordinator's queue per series."""
    from tsmon.engine.hub import CoordinatorNode
    from tsmon.engine.settings import BACKLOG
    from tsmon.spark.api import Monitor
    from tsmon.spark.driver import JobQueries

    def queue_bound(job: jobmod.Job) -> int | None:
        node = CoordinatorNode(JobQueries.of(job).settings(job))
        return node.part("bounded").coordinator.queue.backlog

    assert queue_bound(load_job(write(tmp_path, GOOD))) == BACKLOG == 32
    job = load_job(write(tmp_path, GOOD.replace("shrink = 0.02", "shrink = 0.02\nbacklog = 5")))
    assert job.filters.backlog == 5 and queue_bound(job) == 5
    mon = Monitor(None, tmp_path / "ckpt", "QUERY s AS SUM(a, b) WITHIN 1", filters={"backlog": 7})
    assert queue_bound(mon.job) == 7
    with pytest.raises(JobError) as e:
        Monitor(None, tmp_path / "ckpt", filters={"backlog": 0})
    assert str(e.value) == ("tsmon.spark.Monitor: [filters] backlog must be an integer >= 2, got 0")
    assert not (tmp_path / "ckpt").exists()
