"""Restarting the PySpark API and ``tsmon run`` on a checkpoint, and starts that fail.

A restart under other ``sources``, ``filters``, ``registers`` (or any other setting the nodes
and the coordinator are built with) is refused in one line naming the change, old and new,
and nothing is written; the same value spelled otherwise, and settings the nodes do not keep
(the trigger), are no change. ``tsmon run`` refuses the same way, before Spark starts. A start
that Spark fails with a Java error leaves no progress listener on the session. A run on the
checkpoint in another session of the SparkContext (``spark.newSession()``) is seen, and a
start is refused.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tsmon.spark import Monitor
from tsmon.spark.job import JobError, load_job

pytestmark = [pytest.mark.spark]

REPO = Path(__file__).resolve().parents[2]
QUERIES = "QUERY s AS SUM(a.x, b.x) WITHIN 1"
SETTINGS = {
    "sources": {"a.*": "A", "b.*": "B"},
    "filters": {"period": "1s", "shrink": 0.1},
    "registers": {"retention": "10s"},
}
REFUSED = (
    "the job's settings differ from those checkpoint {checkpoint} was started with ({named}): "
    "its source nodes and coordinator keep the settings they started with, so put these "
    "settings back, or start from a new checkpoint directory"
)


def points(spark):
    """A streaming DataFrame of the roles' columns (never started here)."""
    rate = spark.readStream.format("rate").load()
    return rate.selectExpr("'a.x' AS series", "timestamp AS ts", "value")


def files(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in directory.rglob("*.json")}


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"sources": {"a.*": "A", "b.*": "B2"}}, "[sources] 'b.*': 'B' -> 'B2'"),
        ({"sources": {"a.*": "A", "b.*": "B", "c.x": "C"}}, "[sources] 'c.x': unset -> 'C'"),
        (
            {"sources": {"b.*": "B", "a.*": "A"}},
            "[sources] order of the globs: 'a.*', 'b.*' -> 'b.*', 'a.*'",
        ),
        (
            {"sources": None},
            "[sources] 'a.*': 'A' -> unset; [sources] 'b.*': 'B' -> unset; "
            "[sources] order of the globs: 'a.*', 'b.*' -> unset",
        ),
        ({"filters": {"period": "1s", "shrink": 0.2}}, "[filters] shrink: 0.1 -> 0.2"),
        ({"filters": {"shrink": 0.1}}, "[filters] period: 1s -> None"),
        ({"registers": {"retention": "1h"}}, "[registers] retention: 10s -> 1h"),
        (
            {"registers": {"retention": "10s", "duplicates": "keep_first"}},
            "[registers] duplicates: 'keep_last' -> 'keep_first'",
        ),
        ({"standing": {"partitions": 3}}, "[standing] partitions: 2 -> 3"),
        ({"max_future": "off"}, "[job] max_future: 1d -> None"),
    ],
)
def test_a_restart_under_other_settings_is_refused_naming_them(spark, tmp_path, change, named):
    checkpoint = tmp_path / "ckpt"
    Monitor(spark, checkpoint, QUERIES, **SETTINGS).run(points(spark))  # the first start
    before = files(checkpoint)
    with pytest.raises(JobError) as e:
        Monitor(spark, checkpoint, QUERIES, **{**SETTINGS, **change}).run(points(spark))
    assert str(e.value) == REFUSED.format(checkpoint=checkpoint, named=named)
    assert files(checkpoint) == before  # nothing written
    # the same values spelled otherwise, and another trigger: the same settings
    same = {
        **SETTINGS,
        "filters": {"shrink": 0.1, "period": "1000ms"},
        "registers": {"retention": "10000ms", "duplicates": "keep_last"},
    }
    Monitor(spark, checkpoint, QUERIES, **same, trigger="5s").run(points(spark))
    assert files(checkpoint) == before


def test_tsmon_run_refuses_other_sources_before_spark_starts(spark, tmp_path):
    """The same check, through ``tsmon run``: one ``error:`` line, status 2, nothing written.
    A checkpoint without ``job-settings.json`` (made before it existed) adopts the job's."""
    text = f"""
queries = "{QUERIES}"
[job]
checkpoint = "ckpt"
[input]
kind = "files"
path = "in"
format = "csv"
[sources]
"a.*" = "A"
"""
    (tmp_path / "in").mkdir()
    job = tmp_path / "job.toml"
    job.write_text(text, encoding="utf-8")
    Monitor.from_job(load_job(job), spark).run()  # the first start records the settings
    before = files(tmp_path / "ckpt")
    job.write_text(text.replace('"A"', '"A2"'), encoding="utf-8")
    refused = subprocess.run(
        [sys.executable, "-m", "tsmon.cli", "run", str(job), "--once"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO / "src"), "COLUMNS": "400"},
    )
    assert refused.returncode == 2, refused.stdout + refused.stderr
    named = "[sources] 'a.*': 'A' -> 'A2'"
    error = REFUSED.format(checkpoint=tmp_path / "ckpt", named=named)
    # the only line: no "starting Spark ..." before it, as Spark is not started
    assert refused.stdout.strip().splitlines() == [f"error: {error}"]
    assert files(tmp_path / "ckpt") == before
    (tmp_path / "ckpt" / "job-settings.json").unlink()  # a checkpoint from before the file
    Monitor.from_job(load_job(job), spark).run()
    assert files(tmp_path / "ckpt") != before  # adopted: A2 is recorded
    job.write_text(text, encoding="utf-8")
    with pytest.raises(JobError, match=r"\[sources\] 'a\.\*': 'A2' -> 'A'\)"):
        Monitor.from_job(load_job(job), spark).run()


def test_a_start_that_spark_fails_leaves_no_progress_listener(spark, tmp_path):
    """Spark's start fails with a Java error: one line names it (not a Py4J stack), the
    progress listener attached for the run is removed from the session, and nothing runs."""
    checkpoint = tmp_path / "ckpt"
    checkpoint.mkdir()
    (checkpoint / "nodes").write_text("")  # where Spark's checkpoint goes: a file
    streams = spark._jsparkSession.streams()
    before = len(streams.listListeners())
    with pytest.raises(JobError) as refused:
        Monitor(spark, checkpoint, QUERIES).start(points(spark))
    message = str(refused.value)
    assert message.startswith("the streaming query cannot start: org.apache.hadoop.fs.FileAlre")
    assert "Destination exists and is not a directory" in message and "\n" not in message
    assert len(streams.listListeners()) == before
    assert not spark.streams.active


def test_a_run_in_another_session_of_the_context_is_seen_and_left_running(spark, tmp_path):
    """Spark would stop the other session's query on the checkpoint (mid-batch) to start this
    one: it is refused in one line instead, as a run of the same session is."""
    checkpoint = tmp_path / "ckpt"
    other = spark.newSession()
    run = Monitor(other, checkpoint, QUERIES, trigger="200ms").start(points(other))
    try:
        query = run.node_query
        with pytest.raises(JobError, match=r"^the run is started already; .* another Run or"):
            Monitor(spark, checkpoint, QUERIES).start(points(spark))
        assert query.isActive and not spark.streams.active
    finally:
        run.stop()
        for started in spark.streams.active:  # not refused: started in this session
            started.stop()
    assert not query.isActive


@pytest.mark.parametrize("name", ["job-queries.json", "job-settings.json"])
def test_a_damaged_record_of_the_checkpoint_is_named_in_one_line(spark, tmp_path, name):
    checkpoint = tmp_path / "ckpt"
    Monitor(spark, checkpoint, QUERIES).run(points(spark))
    (checkpoint / name).write_text('{"statements": ', encoding="utf-8")  # cut short
    with pytest.raises(JobError) as e:
        Monitor(spark, checkpoint, QUERIES).run(points(spark))
    assert str(e.value) == (
        f"{checkpoint / name} is damaged (JSONDecodeError: Expecting value: line 1 column 16 "
        "(char 15)); restore it or start from a new checkpoint directory"
    )
