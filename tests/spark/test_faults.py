"""Fault injection (issue 16): bad files, job-file drift on restart, clean exits.

Real Spark, real files, real ``tsmon run`` processes where the exit is the point. Each case
asserts that the job goes on, that every input row is accounted for (rows in = accepted + dead
letters) and that answers equal the in-process batch runtime fed the good rows only (nothing
lost, nothing doubled). No sleeps: a job is driven file by file with ``processAllAvailable``
or runs ``--once``.
"""

from __future__ import annotations

import io
import json
import math
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tsmon.engine.batched
import tsmon.spark.driver
import tsmon.spark.runtime
from tests.spark.poison import POISON, PoisonedHub, poisoned_node
from tests.spark.test_dead_letter_details import in_process
from tests.spark.test_runtime import batch_reference, run_file
from tsmon.spark.job import JobError, load_job
from tsmon.spark.runtime import JobRunner
from tsmon.spark.sinks import BatchOutput

pytestmark = [pytest.mark.spark, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
JOB = """
queries = '''
QUERY s AS SUM(a, b) WITHIN 2
QUERY jump ON * WHEN last - mean(3 points) > 1 EMIT series, last
'''

[job]
checkpoint = "ckpt"
trigger = "100ms"

[input]
kind = "files"
path = "incoming"
format = "csv"

[registers]
retention = "1h"

[filters]
period = "1s"

[[sinks]]
kind = "parquet"
path = "out"
"""


class Walk:
    """Good rows of series a and b, time always moving on (no point is late)."""

    def __init__(self, seed: int = 5) -> None:
        self.rng = random.Random(seed)
        self.value = {"a": 0.0, "b": 10.0}
        self.ts = 1_000

    def rows(self, n: int) -> list[tuple[str, int, float]]:
        out = []
        for _ in range(n):
            series = self.rng.choice("ab")
            self.value[series] += self.rng.gauss(0, 0.8)
            self.ts += 37
            out.append((series, self.ts, round(self.value[series], 6)))
        return out


def csv_text(header: list[str], rows: list[dict[str, object]]) -> bytes:
    lines = [",".join(header)] + [",".join(str(r.get(h, "")) for h in header) for r in rows]
    return ("\n".join(lines) + "\n").encode()


def drop(directory: Path, name: str, content: bytes) -> None:
    temp = directory / f".{name}.tmp"
    temp.write_bytes(content)
    os.replace(temp, directory / name)


def bad_files(walk: Walk) -> list[tuple[str, bytes, list[tuple], dict[str, int], int]]:
    """``(name, content, good rows, dead letters by reason, input rows)`` per file."""
    good = walk.rows(20)
    as_dicts = [{"series": s, "ts": t, "value": v, "extra": "x"} for s, t, v in good]
    out = [("good.csv", csv_text(["series", "ts", "value"], as_dicts), good, {}, 20)]
    good = walk.rows(20)  # columns in another order, one more column
    as_dicts = [{"series": s, "ts": t, "value": v, "extra": "x"} for s, t, v in good]
    header = ["value", "extra", "ts", "series"]
    out.append(("reordered.csv", csv_text(header, as_dicts), good, {}, 20))
    garbage = bytes(random.Random(1).randrange(256) for _ in range(3000)) + b"\x00"
    out.append(("garbage.csv", garbage, [], {"unreadable_file": 1}, 1))
    good = walk.rows(10)
    lines = [b"series,ts,value"] + [f"{s},{t},{v}".encode() for s, t, v in good[:5]]
    lines += [
        b"a,1",  # too few fields
        b"a,5,6,7",  # too many
        b"\xff\xfe,1,2",  # not UTF-8
        b'"a,5,6',  # an unterminated quote
        b"",  # blank: no row
        b"a,yesterday,1.0",  # a row, with a bad timestamp
        b"b,99999999,abc",  # a row, with a bad value
    ]
    lines += [f"{s},{t},{v}".encode() for s, t, v in good[5:]]
    dead = {"malformed_line": 4, "bad_timestamp": 1, "not_numeric": 1}
    out.append(("malformed.csv", b"\n".join(lines) + b"\n", good, dead, 16))
    missing = [{"series": "a", "ts": 999_999_999 + i} for i in range(3)]  # no value column
    out.append(("missing.csv", csv_text(["series", "ts"], missing), [], {"missing": 3}, 3))
    good = walk.rows(10)  # and the job goes on
    as_dicts = [{"series": s, "ts": t, "value": v} for s, t, v in good]
    out.append(("after.csv", csv_text(["ts", "series", "value"], as_dicts), good, {}, 10))
    return out


def run_files(spark, tmp_path: Path, job_text: str, files: list) -> tuple[set[str], list[int]]:
    """Drop ``files`` (as :func:`bad_files` gives them) one by one into a running job; each
    file's rows are accounted for and the answers equal the batch runtime fed its good rows.
    Returns the details of every dead letter written and the batches that wrote control."""
    job_path = tmp_path / "job.toml"
    job_path.write_text(job_text, encoding="utf-8")
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    job = load_job(job_path)
    reference = batch_reference(job)
    outputs: list[BatchOutput] = []
    runner = JobRunner(job, spark=spark, callback=outputs.append)
    runner.start()
    written: list[int] = []  # batches that wrote control
    try:
        for name, content, good, dead, rows_in in files:
            drop(incoming, name, content)
            outputs.clear()
            runner.process_all_available()
            events = run_file(reference, [(s, s, t, v) for s, t, v in good])
            progress = [o.progress for o in outputs]
            assert sum(p["inputRows"] for p in progress) == rows_in, name
            assert sum(p["numInputRows"] for p in progress) == len(good), name  # accepted
            rejected = [r for o in outputs for r in o.rejected]
            assert sum(p["deadLetters"] for p in progress) == len(rejected)
            assert len(good) + len(rejected) == rows_in, name  # in = accepted + rejected
            assert pd.Series([r["reason"] for r in rejected]).value_counts().to_dict() == dead
            assert all(r["detail"].split(":")[0].endswith(f"/incoming/{name}") for r in rejected)
            assert runner.answers() == reference.answers(), name  # nothing lost or doubled
            assert [e for o in outputs for e in o.events] == events, name
            written += [p["batchId"] for p in progress if p["controlRows"]]
    finally:
        runner.stop()
    files_out = sorted((tmp_path / "out" / "dead_letters").iterdir())
    return {d for p in files_out for d in pd.read_parquet(p)["detail"]}, written


def test_bad_files_are_dead_letters_and_the_job_goes_on(spark, tmp_path: Path) -> None:
    details, written = run_files(spark, tmp_path, JOB, bad_files(Walk()))
    # control read by committed batches is deleted: only the last batch's may be left
    left = {p.name for p in (tmp_path / "ckpt" / "control").glob("ctrl-*.json")}
    assert len(written) >= 2 and left <= {f"ctrl-{written[-1]}.json"}, (left, written)
    path = str(tmp_path / "incoming")
    assert f"{path}/malformed.csv:7: 2 fields, the header has 3" in details
    assert f"{path}/malformed.csv:9: not UTF-8 text" in details
    assert f"{path}/malformed.csv:10: not CSV (unexpected end of data: an unclosed" in " ".join(
        details
    )
    for line, row in ((12, ("a", "yesterday", "1.0")), (13, ("b", "99999999", "abc"))):
        # rows read with a bad timestamp or value (blank line 11 skipped): as in-process
        assert f"{path}/malformed.csv:{line}: {in_process(row)[1]}" in details
    assert any(d.startswith(f"{path}/garbage.csv: binary content") for d in details)
    no_value = f"{path}/missing.csv:2: the header has no column 'value' (it has ['series', 'ts'])"
    assert f"{no_value}: {in_process(('a', '999999999', None))[1]}" in details


# -- real processes: exits, restarts -----------------------------------------------------------


def tsmon_run(job: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tsmon.cli", "run", str(job), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO / "src"), "COLUMNS": "300"},
    )


def clean(stderr: str) -> None:
    for word in ("py4j", "Traceback", "Exception"):
        assert word not in stderr, stderr[-3000:]


def test_once_ends_with_a_summary_and_restart_refuses_edited_queries(tmp_path: Path) -> None:
    job = tmp_path / "job.toml"
    job.write_text(JOB.replace('kind = "parquet"\npath = "out"', 'kind = "console"'))
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    walk = Walk(seed=8)
    rows = [{"series": s, "ts": t, "value": v} for s, t, v in walk.rows(30)]
    drop(incoming, "one.csv", csv_text(["series", "ts", "value"], rows))

    first = tsmon_run(job, "--once")
    assert first.returncode == 0, first.stdout + first.stderr
    clean(first.stderr)
    assert first.stdout.strip().splitlines()[-1].startswith("done: ")

    # the job file's queries changed: refused, naming the difference; nothing started
    edited = JOB.replace("WITHIN 2", "WITHIN 1").replace("QUERY jump", "QUERY leap")
    job.write_text(edited.replace('kind = "parquet"\npath = "out"', 'kind = "console"'))
    before = sorted(p.relative_to(tmp_path) for p in (tmp_path / "ckpt").rglob("*"))
    refused = tsmon_run(job, "--once")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert refused.stderr == ""
    out = " ".join(refused.stdout.split())
    assert out.startswith("error: the job file")  # checked before "starting Spark"
    for part in ("added: leap", "removed: jump", "changed: s"):
        assert part in out, out
    assert sorted(p.relative_to(tmp_path) for p in (tmp_path / "ckpt").rglob("*")) == before

    # the old queries back, more input: the job resumes on its checkpoint; SIGTERM ends it
    job.write_text(JOB.replace('kind = "parquet"\npath = "out"', 'kind = "console"'))
    more = [{"series": s, "ts": t, "value": v} for s, t, v in walk.rows(30)]
    drop(incoming, "two.csv", csv_text(["series", "ts", "value"], more))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tsmon.cli", "run", str(job)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "src"), "COLUMNS": "300"},
    )
    try:
        wait_for_rows(tmp_path / "ckpt", 60, proc)
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=180)
    finally:
        proc.kill()
    assert proc.returncode == 0, stdout + stderr
    clean(stderr)
    assert stdout.strip().splitlines()[-1].startswith("done: "), stdout
    assert "interrupted: stopped" in stdout
    lines = progress(tmp_path / "ckpt")
    assert sum(p["inputRows"] for p in lines) == 60  # each file once
    assert [p["batchId"] for p in lines] == list(range(len(lines)))


def progress(ckpt: Path) -> list[dict]:
    path = ckpt / "progress.jsonl"
    return [json.loads(x) for x in path.read_text().split("\n") if x] if path.exists() else []


def wait_for_rows(ckpt: Path, rows: int, proc: subprocess.Popen[str]) -> None:
    """Poll the job's progress until ``rows`` input rows are in (the job's own clock)."""
    deadline = time.monotonic() + 240
    while sum(p["inputRows"] for p in progress(ckpt)) < rows:
        assert proc.poll() is None and time.monotonic() < deadline, progress(ckpt)[-3:]
        time.sleep(0.1)


def parquet_bytes(frame: pd.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()


def parquet_table(table: pa.Table) -> bytes:
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


def bad_parquet_files(walk: Walk) -> list[tuple[str, bytes, list[tuple], dict[str, int], int]]:
    """Parquet files, good and bad, as :func:`bad_files` gives CSV files."""
    good = walk.rows(20)
    frame = pd.DataFrame(good, columns=["series", "ts", "value"])
    whole = parquet_bytes(frame)
    out = [("good.parquet", whole, good, {}, 20)]
    good = walk.rows(15)  # columns in another order, one more, instants as timestamps
    frame = pd.DataFrame(good, columns=["series", "ts", "value"]).assign(extra="x")
    frame["ts"] = pd.to_datetime(frame["ts"], unit="ms", utc=True)
    out.append(
        ("typed.parquet", parquet_bytes(frame[["value", "extra", "ts", "series"]]), good, {}, 15)
    )
    out.append(("truncated.parquet", whole[: len(whole) // 2], [], {"unreadable_file": 1}, 1))
    text = b"series,ts,value\na,1,2\n"  # a CSV file named .parquet
    out.append(("text.parquet", text, [], {"unreadable_file": 1}, 1))
    missing = pd.DataFrame({"series": ["a", "b", "a"], "ts": [999_999_999 + i for i in range(3)]})
    out.append(("missing.parquet", parquet_bytes(missing), [], {"missing": 3}, 3))
    # numbers reach Spark typed: each bad one still a dead letter with its reason
    good = walk.rows(6)
    bad = [math.nan, math.inf, -math.inf, 1e141, -1e141, None]
    ts = [t for _, t, _ in good] + [good[-1][1] + 1 + i for i in range(len(bad))]
    values = [v for *_, v in good] + bad
    typed = pa.table(
        {
            "series": [s for s, *_ in good] + ["a"] * len(bad),
            "ts": pa.array(ts, pa.int32()),
            "value": pa.array(values, pa.float64()),  # a list: NaN stays NaN, None is null
        }
    )
    dead = {"nan": 1, "infinite": 2, "value_out_of_range": 2, "missing": 1}
    out.append(("values.parquet", parquet_table(typed), good, dead, 12))
    good = walk.rows(4)  # values as text in one file: read as text, as in CSV
    text = pa.table(
        {
            "series": [s for s, *_ in good] + ["b", "b", None],
            "ts": [str(t) for _, t, _ in good] + ["yesterday", str(good[-1][1] + 1), "5"],
            "value": [repr(v) for *_, v in good] + ["1.5", "abc", "2"],
        }
    )
    dead = {"bad_timestamp": 1, "not_numeric": 1, "bad_series": 1}
    out.append(("text.values.parquet", parquet_table(text), good, dead, 7))
    good = walk.rows(10)  # and the job goes on
    out.append(
        (
            "after.parquet",
            parquet_bytes(pd.DataFrame(good, columns=["series", "ts", "value"])),
            good,
            {},
            10,
        )
    )
    return out


def test_corrupt_parquet_files_are_dead_letters_and_the_job_goes_on(spark, tmp_path: Path) -> None:
    job = JOB.replace('format = "csv"', 'format = "parquet"')
    details, _ = run_files(spark, tmp_path, job, bad_parquet_files(Walk(seed=11)))
    path = str(tmp_path / "incoming")
    for name in ("truncated", "text"):
        unreadable = f"{path}/{name}.parquet: not a readable Parquet file (ArrowInvalid: "
        assert any(d.startswith(unreadable) for d in details), (name, details)
    no_value = f"{path}/missing.parquet:2: the file has no column 'value' (it has ['series', 'ts'])"
    assert f"{no_value}: {in_process(('a', '999999999', None))[1]}" in details


def test_stale_points_are_accepted_late_or_dead_letters_and_counts_add_up(spark, tmp_path) -> None:
    job_path = tmp_path / "job.toml"
    job_path.write_text(
        JOB.replace('retention = "1h"', 'retention = "1h"\nallowed_lateness = "1s"')
    )
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    job = load_job(job_path)
    reference = batch_reference(job)
    # a file is one batch, its points applied in (ts, seq) order: points are stale only
    # across batches; (file, accepted, the dead letters' (reason, series))
    files = [
        ([("a", 10_000, 1.0), ("a", 12_000, 2.0), ("b", 5_000, 5.0)], 3, []),
        (
            [
                ("a", 11_500, 3.0),  # 500 ms older than a's newest: stored late, accepted
                ("a", 9_000, 4.0),  # 3 s older: too late
                ("b", 5_000, 6.0),  # b's newest time again: replaces its value (keep_last)
                ("b", 4_000, 7.0),  # 1 s older: stored late
                ("b", 3_999, 8.0),  # 1.001 s older: too late
            ],
            3,
            [("too_late", "a"), ("too_late", "b")],
        ),
    ]
    outputs: list[BatchOutput] = []
    runner = JobRunner(job, spark=spark, callback=outputs.append)
    runner.start()
    try:
        for n, (batch, accepted, dead) in enumerate(files):
            as_dicts = [{"series": s, "ts": t, "value": v} for s, t, v in batch]
            drop(incoming, f"{n}.csv", csv_text(["series", "ts", "value"], as_dicts))
            outputs.clear()
            runner.process_all_available()
            run_file(reference, [(s, s, t, v) for s, t, v in batch])
            assert runner.answers() == reference.answers()
            progress = [o.progress for o in outputs]
            rejected = [r for o in outputs for r in o.rejected]
            assert sum(p["inputRows"] for p in progress) == len(batch)
            assert sum(p["numInputRows"] for p in progress) == accepted
            assert sum(p["deadLetters"] for p in progress) == len(rejected) == len(dead)
            assert sorted((r["reason"], r["series"]) for r in rejected) == dead
            for r in rejected:
                assert r["detail"].endswith(
                    f"ms older than the newest point of {r['series']!r}; allowed lateness is "
                    "1000 ms"
                )
    finally:
        runner.stop()


def _poisoned_input(tmp_path: Path, sizes: tuple[int, ...]) -> tuple:
    """The job, its input directory, the in-process reference, the files' rows (one per size,
    a random walk) with POISON as the 11th point of the second file, and that point's series
    (far out of its bound: its node streams it to the coordinator)."""
    job_path = tmp_path / "job.toml"
    job_path.write_text(JOB, encoding="utf-8")
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    job = load_job(job_path)
    walk = Walk(seed=3)
    files = [walk.rows(n) for n in sizes]
    series, ts, _ = files[1][10]
    files[1][10] = (series, ts, POISON)
    return job, incoming, batch_reference(job), files, series


def _drop_rows(incoming: Path, n: int, rows: list) -> None:
    """Input file ``n``: the ``(series, ts, value)`` rows as CSV."""
    as_dicts = [{"series": s, "ts": t, "value": v} for s, t, v in rows]
    drop(incoming, f"{n}.csv", csv_text(["series", "ts", "value"], as_dicts))


def test_a_node_step_that_raises_is_quarantined_and_the_job_goes_on(
    spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(tsmon.spark.runtime, "new_node", poisoned_node)  # what nodes run
    job, incoming, reference, files, series = _poisoned_input(tmp_path, (20, 30, 20))
    outputs: list[BatchOutput] = []
    runner = JobRunner(job, spark=spark, callback=outputs.append)
    runner.start()
    try:
        for n, rows in enumerate(files):
            _drop_rows(incoming, n, rows)
            outputs.clear()
            runner.process_all_available()
            lost = [r for r in rows if n == 1 and r[0] == series]  # every row of its batch
            good = [r for r in rows if r not in lost]
            events = run_file(reference, [(s, s, t, v) for s, t, v in good])
            progress = [o.progress for o in outputs]
            rejected = [r for o in outputs for r in o.rejected]
            assert sum(p["inputRows"] for p in progress) == len(rows)
            assert sum(p["numInputRows"] for p in progress) == len(good)
            assert sum(p["deadLetters"] for p in progress) == len(rejected) == len(lost)
            quarantined = [p["quarantined"] for p in progress if p["quarantined"]]
            assert quarantined == ([{series: len(lost)}] if lost else [])
            assert sorted((r["series"], r["ts"], r["value"]) for r in rejected) == sorted(lost)
            assert {(r["reason"], r["detail"]) for r in rejected} <= {
                ("quarantined", f"RuntimeError: a bug on the value {POISON}")
            }
            assert runner.answers() == reference.answers(), n  # the job went on, exactly
            assert [e for o in outputs for e in o.events] == events, n
    finally:
        runner.stop()
    told = [line for line in capsys.readouterr().out.splitlines() if "quarantined" in line]
    n = sum(r[0] == series for r in files[1])
    assert told == [
        f"tsmon: quarantined {n} row(s) of source {series!r} (its node step failed): "
        f"RuntimeError: a bug on the value {POISON}"
    ]


def test_a_coordinator_step_that_raises_is_quarantined_and_a_restart_replays_it_cleanly(
    spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The coordinator's bounded part has a bug on the filter update of one value (it raises
    after changing its state): the batch's rows of that update's source are left out of the
    coordinator's step, as dead letters, and the job goes on, equal to the in-process runtime
    running the same coordinator. The driver then dies before that batch commits: the restart
    replays it, quarantines the same rows again and goes on (no crash loop)."""
    monkeypatch.setattr(tsmon.spark.driver, "CoordinatorNode", PoisonedHub)  # the driver's
    monkeypatch.setattr(tsmon.engine.batched, "CoordinatorNode", PoisonedHub)  # the reference's
    job, incoming, reference, files, series = _poisoned_input(tmp_path, (20, 30, 20, 20))
    error = f"RuntimeError: a bug on the update {POISON}"
    crashed: list[int] = []
    left_out = 0  # the node rows the coordinator left out
    newest: dict[str, list[tuple[int, float]]] = {"a": [], "b": []}  # every point, in order
    outputs: list[BatchOutput] = []

    def callback(out: BatchOutput) -> None:
        if out.progress["coordinatorQuarantined"] and not crashed:
            crashed.append(out.batch_id)  # after the coordinator's step, before the commit
            raise RuntimeError("the driver dies")
        outputs.append(out)

    runner = JobRunner(job, spark=spark, callback=callback)
    runner.start()
    try:
        for n, rows in enumerate(files):
            _drop_rows(incoming, n, rows)
            outputs.clear()
            if n == 1:
                with pytest.raises(JobError, match=r"Message: RuntimeError: the driver dies$"):
                    runner.process_all_available()
                runner.stop()
                runner = JobRunner(job, spark=spark, callback=callback)  # same checkpoint
                runner.start()
            runner.process_all_available()
            reference.run_batch([(s, s, t, v) for s, t, v in rows])
            quarantined = list(reference.quarantined)  # what the reference left out
            assert reference.errors == ([f"coordinator, sources [{series!r}]: {error}"] * (n == 1))
            events = [e["payload"] for e in reference.events()]
            while reference.control:  # control-only batches, as in run_file
                reference.run_batch([])
                assert reference.errors == []
                events += [e["payload"] for e in reference.events()]
            batches = [o.progress for o in outputs]
            rejected = [r for o in outputs for r in o.rejected]
            # every input row accepted at its node (the poison too); the coordinator's
            # left-out node rows are dead letters, counted apart
            assert sum(p["inputRows"] for p in batches) == len(rows)
            assert sum(p["numInputRows"] for p in batches) == len(rows)
            assert sum(p["deadLetters"] for p in batches) == 0
            assert sum(p["coordinatorQuarantined"] for p in batches) == len(rejected)
            assert len(rejected) == len(quarantined) and (len(rejected) > 0) == (n == 1)
            left_out += len(rejected)
            told = [p["quarantined"] for p in batches if p["quarantined"]]
            assert told == ([{series: len(rejected)}] if n == 1 else [])
            assert {r["source"] for r in rejected} <= {series}
            assert all(r["reason"] == "quarantined" for r in rejected)
            assert all(r["detail"].startswith(f"{error} (row ") for r in rejected)
            assert runner.answers() == reference.answers(), n  # the job went on, exactly
            for s, t, v in rows:
                newest[s].append((t, v))
            answer = runner.answers()["s"]  # and holds the exact SUM as of its time
            known = [[v for t, v in newest[s] if t <= answer.as_of_ms][-1:] for s in "ab"]
            assert not all(known) or answer.lo <= known[0][0] + known[1][0] <= answer.hi, n
            assert [e for o in outputs for e in o.events] == events, n
    finally:
        runner.stop()
    assert len(crashed) == 1 and answer.hi - answer.lo <= 2  # known, within δ, at the end
    lines = progress(tmp_path / "ckpt")
    assert [p["batchId"] for p in lines] == list(range(len(lines)))  # the replay wrote once
    (poisoned,) = [p for p in lines if p["coordinatorQuarantined"]]
    assert poisoned["batchId"] == crashed[0]
    assert poisoned["coordinatorQuarantined"] == left_out
    assert poisoned["quarantined"] == {series: left_out}
    assert sum(p["inputRows"] for p in lines) == sum(map(len, files))
    # the operator is told on the console, in the failed attempt and in its replay
    told = [text for text in capsys.readouterr().out.splitlines() if "quarantined" in text]
    expected = (
        f"tsmon: quarantined {left_out} row(s) of source {series!r} "
        f"(the coordinator's step failed): {error}"
    )
    assert told == [expected] * 2, told
