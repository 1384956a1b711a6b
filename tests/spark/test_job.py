"""Job files: a good one loads; every mistake names the key and what was expected."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import tsmon.spark.job as jobmod
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


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (('checkpoint = "state"', ""), "needs checkpoint"),
        (('trigger = "2s"', 'trigger = "2 parsecs"'), "[job] trigger"),
        (('kind = "files"', 'kind = "kafka"'), "must be one of ['files', 'socket'"),
        (('format = "json"', 'format = "xml"'), "format must be one of"),
        (("shrink = 0.02", "shrink = 1.5"), "shrink must be in [0, 1)"),
        (('growth = "paper"', 'growth = "fast"'), "growth must be one of"),
        (('path = "out"', ""), "parquet sink needs path"),
        (('master = "local[2]"', 'mastr = "local"'), "unknown key 'mastr' in [job]"),
        (('query_file = "q.tsq"', 'query_file = "nope.tsq"'), "does not exist"),
        (('series = "metric"', 'serie = "metric"'), "unknown key 'serie'"),
        (('kind = "files"', 'kind = "socket"'), "needs port = <1..65535>"),
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
    from tsmon.spark.runtime import _known_sources

    with_column = load_job(write(tmp_path, GOOD))  # maps a source column, and "r7.*" = "r7"
    assert _known_sources(with_column, ["r7.q", "r1.q"]) == {"r7.q": "r7"}  # r1.q: rows say
    without = load_job(write(tmp_path, GOOD.replace(', source = "router"', "")))
    assert _known_sources(without, ["r7.q", "r1.q"]) == {"r7.q": "r7", "r1.q": "r1.q"}
