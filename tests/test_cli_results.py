"""A job's results from the command line, on one real Spark run (``tsmon run --once`` in a
subprocess): queries that match nothing say so and say when they start matching, times in UTC
beside milliseconds, ``tsmon show``, ``tsmon plot`` and ``tsmon query list``."""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from tests.test_cli import NAB, REPO, tsmon
from tsmon import Monitor
from tsmon.core.timestamps import format_instant_ms

JOB = """
queries = '''
# the bounded sum of two series, a spike rule on the NAB series (second file), and a query
# over series that never come
QUERY s AS SUM(a.x, b.x) WITHIN 2
QUERY spikes ON nab.* WHEN abs(last - mean(1h before)) > 3 * stddev(1h before)
QUERY ghost ON host*.cpu WHEN last > 0
QUERY top AS TOP 2 OF aws.* BY cpu WITHIN 1
'''
[job]
checkpoint = "ckpt"
[input]
kind = "files"
path = "incoming"
format = "csv"
columns = { series = "metric", ts = "time", value = "v" }
[[sinks]]
kind = "parquet"
path = "out"
[[sinks]]
kind = "console"
"""


def nab_rows() -> pd.DataFrame:
    frame = pd.read_csv(NAB)
    ms = pd.to_datetime(frame["timestamp"], utc=True).astype("int64") // 1_000_000
    return pd.DataFrame({"metric": "nab.cpu", "time": ms, "v": frame["value"]})


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess]:
    if not NAB.is_file():
        pytest.skip(f"NAB data not found at {NAB.resolve()} (shared data checkout missing)")
    root = tmp_path_factory.mktemp("job")
    (root / "job.toml").write_text(JOB, encoding="utf-8")
    incoming = root / "incoming"
    incoming.mkdir()
    rows = "".join(
        f"{s},{t},{v}\n" for t in range(0, 4000, 500) for s, v in [("a.x", 1), ("b.x", 2)]
    )
    first = incoming / "p0.csv"
    first.write_text("metric,time,v\n" + rows + "b.x,oops,3\n", encoding="utf-8")
    second = incoming / "p1.csv"
    nab_rows().to_csv(second, index=False)
    os.utime(first, (1_000_000_000, 1_000_000_000))  # Spark reads the older file first
    os.utime(second, (1_000_000_100, 1_000_000_100))
    run = tsmon("run", str(root / "job.toml"), "--once", timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return root, run


def exact_pixels(png: Path) -> int:
    """Pixels of a PNG in the colour plots give exact values (EXACT_COLOR)."""
    from matplotlib.image import imread

    from tsmon.cli.results import EXACT_COLOR

    rgb = imread(png)[..., :3]
    want = [int(EXACT_COLOR[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    return int((abs(rgb - want) < 0.02).all(axis=-1).sum())


def flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.slow
@pytest.mark.spark
def test_a_query_matching_nothing_says_so_and_again_when_it_starts(job) -> None:
    root, run = job
    out = flat(run.stdout)
    assert "query 'spikes' waits: no series matches nab.* (series now: 'a.x', 'b.x')" in out
    assert "query 'spikes' now matches 'nab.cpu'" in out
    assert out.index("'spikes' waits") < out.index("'spikes' now matches")
    assert "query 'ghost' waits: no series matches host*.cpu" in out
    # every kind says it: a top-k query over objects that never come
    assert "query 'top' waits: no series matches aws.*.cpu (series now: 'a.x', 'b.x')" in out
    progress = [json.loads(line) for line in (root / "ckpt" / "progress.jsonl").open()]
    assert progress[0]["unmatchedQueries"].keys() == {"spikes", "ghost", "top"}
    assert progress[1]["startedMatching"] == {"spikes": "now matches 'nab.cpu'"}
    assert sorted(progress[-1]["unmatchedQueries"]) == ["ghost", "top"]  # every record
    # readable times: wall clock, and the watermark's instant beside its ms
    last = progress[-1]
    assert last["wallClockUtc"].endswith("Z") and "T" in last["wallClockUtc"]
    watermark = pd.Timestamp(last["watermark"], unit="ms", tz="UTC")
    assert pd.Timestamp(last["watermarkUtc"]) == watermark


@pytest.mark.slow
@pytest.mark.spark
def test_parquet_events_have_utc_times_and_equal_the_monitor(job) -> None:
    root, _ = job
    events = pd.concat(pd.read_parquet(p) for p in sorted((root / "out" / "events").iterdir()))
    spikes = events[events["query"] == "spikes"]
    mon = Monitor(["nab.*"])
    mon.add_query("QUERY spikes ON nab.* WHEN abs(last - mean(1h before)) > 3 * stddev(1h before)")
    rows = nab_rows()
    mon.ingest(rows["metric"].to_numpy(), rows["time"].to_numpy(), rows["v"].to_numpy())
    assert spikes["ts_ms"].tolist() == [e.ts_ms for e in mon.events()]
    assert (spikes["ts_utc"] == pd.to_datetime(spikes["ts_ms"], unit="ms", utc=True)).all()


@pytest.mark.slow
@pytest.mark.spark
def test_show_prints_events_answers_and_dead_letters_as_tables(job) -> None:
    root, _ = job
    events = pd.concat(pd.read_parquet(p) for p in sorted((root / "out" / "events").iterdir()))
    shown = tsmon("show", "events", "--job", str(root / "job.toml"), "--query", "SPIKES")
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert f"events ({len(events)} rows)" in shown.stdout
    first = events.iloc[0]
    payload = json.loads(first["payload"])
    assert f"value={payload['value']:.4g}"[:10] in shown.stdout  # decoded, not JSON
    assert pd.Timestamp(first["ts_ms"], unit="ms", tz="UTC").isoformat()[:19] in shown.stdout
    newest = int(events["ts_ms"].max())
    recent = tsmon("show", "events", "--job", str(root / "out"), "--since=-1d")
    expected = int((events["ts_ms"] >= newest - 86_400_000).sum())
    assert f"events ({expected} rows)" in recent.stdout and expected < len(events)
    answers = tsmon("show", "answers", "--job", str(root / "job.toml"), "--query", "s")
    frame = pd.concat(pd.read_parquet(p) for p in sorted((root / "out" / "answers").iterdir()))
    assert answers.returncode == 0 and f"answers ({len(frame)} rows)" in answers.stdout
    as_of = int(frame["as_of_ms"].iloc[-1])
    assert format_instant_ms(as_of) in answers.stdout and str(as_of) in answers.stdout
    dead = tsmon("show", "dead-letters", "--job", str(root / "job.toml"))
    assert "dead_letters (1 rows)" in dead.stdout and "bad_timestamp" in dead.stdout
    none = tsmon("show", "events", "--job", str(root / "job.toml"), "--query", "ghost")
    assert "no events of query 'ghost'" in none.stdout


@pytest.mark.slow
@pytest.mark.spark
def test_show_follow_prints_new_batches(job, tmp_path: Path) -> None:
    root, _ = job
    out = tmp_path / "out"
    shutil.copytree(root / "out", out)
    command = ["show", "events", "--job", str(out), "--follow", "--interval", "0.2"]
    follow = subprocess.Popen(
        [sys.executable, "-m", "tsmon.cli", *command, "--query", "spikes"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=dict(os.environ, COLUMNS="200"),
    )
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(x) for x in follow.stdout], daemon=True)
    reader.start()

    def next_table(timeout: float = 120.0) -> str:
        """The next table title the follower prints (a loaded machine starts it slowly)."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = lines.get(timeout=left)
            except queue.Empty:
                break
            if line.startswith("events ("):
                return line
        raise AssertionError(f"show --follow printed no table in {timeout} s")

    try:
        next_table()  # the old batches
        first = sorted((out / "events").iterdir())[-1]
        shutil.copy(first, out / "events" / "batch-999999999.parquet")
        next_table()  # then the new one
    finally:
        follow.terminate()
        follow.wait(timeout=30)


@pytest.mark.slow
@pytest.mark.spark
def test_plot_writes_a_png_of_an_answer_over_time(job, tmp_path: Path) -> None:
    root, _ = job
    png = tmp_path / "s.png"
    run = tsmon("plot", "--job", str(root / "job.toml"), "--query", "s", "--out", str(png))
    assert run.returncode == 0, run.stdout + run.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5_000
    # the exact SUM(a.x, b.x) from the input files (1 + 2 from the first points on) beside
    # the bounds, inside them whenever both series have a point
    frame = pd.concat(pd.read_parquet(p) for p in sorted((root / "out" / "answers").iterdir()))
    answers = frame[frame["query"] == "s"]
    bounded = (answers["lo"] > -float("inf")) & (answers["hi"] < float("inf"))
    known, unknown = int(bounded.sum()), int((~bounded).sum())
    assert known > 0
    said = f"inside the bounds in {known} of {known} known answers"
    if unknown:  # [-inf, inf] holds anything: counted apart, not as inside
        said += f" ({unknown} answer{'s' if unknown > 1 else ''} not known yet)"
    assert said in flat(run.stdout), run.stdout
    band_only = tmp_path / "band.png"
    out_dir = tsmon("plot", "--job", str(root / "out"), "--query", "s", "--out", str(band_only))
    assert out_dir.returncode == 0 and "exact values" not in out_dir.stdout
    # a marker at each answer the job recorded as exact (no width), the line only with inputs
    mine = frame[frame["query"] == "s"]
    assert (exact_pixels(band_only) > 0) == bool((mine["lo"] == mine["hi"]).any())
    assert exact_pixels(png) - exact_pixels(band_only) > 500  # a line across the plot
    missing = tsmon("plot", "--job", str(root / "job.toml"), "--query", "nope")
    assert missing.returncode == 2 and "no answers of query 'nope'" in missing.stdout


@pytest.mark.slow
@pytest.mark.spark
def test_query_list_shows_the_queries_running_with_their_state(job) -> None:
    root, _ = job
    listed = tsmon("query", "list", "--job", str(root / "ckpt"))
    assert listed.returncode == 0, listed.stdout + listed.stderr
    rows = {line.split("│")[1].strip(): line for line in listed.stdout.splitlines() if "│" in line}
    assert "running" in rows["s"] and "running" in rows["spikes"]
    assert "waits: no series matches host*.cpu" in flat(listed.stdout)
    assert "waits: no series matches aws.*.cpu" in flat(listed.stdout)


@pytest.mark.slow
@pytest.mark.spark
def test_query_add_says_at_once_that_a_query_will_wait(job, tmp_path: Path) -> None:
    root, _ = job
    checkpoint = tmp_path / "ckpt"
    shutil.copytree(root / "ckpt", checkpoint)
    added = tsmon("query", "add", "--job", str(checkpoint), "QUERY cold ON host*.mem")
    assert added.returncode == 0, added.stdout + added.stderr
    assert "note: it will wait: no series matches host*.mem (series now: 'a.x', 'b.x', " in flat(
        added.stdout
    )
    fine = tsmon("query", "add", "--job", str(checkpoint), "QUERY warm ON nab.*")
    assert fine.returncode == 0 and "note:" not in fine.stdout
    busy = "QUERY busy AS TOP 1 OF db* BY io WITHIN 1"
    top = tsmon("query", "add", "--job", str(checkpoint), busy)
    assert "note: it will wait: no series matches db*.io" in flat(top.stdout)
    taken = tsmon("query", "add", "--job", str(checkpoint), "QUERY Warm ON nab.*")
    assert taken.returncode == 0  # submitted: only the job decides, but it says what it will
    assert "note: the job would reject it as things stand: query 'Warm' exists" in flat(
        taken.stdout
    )
    listed = flat(tsmon("query", "list", "--job", str(checkpoint)).stdout)
    assert "QUERY cold ON host*.mem │ pending" in listed


def test_show_dead_letters_since_selects_by_when_their_batch_was_written(tmp_path: Path) -> None:
    """A dead letter's own timestamp may be missing (a malformed line) or far ahead (a
    ``future_timestamp`` in 2999): ``--since`` selects dead letters by their batch file's
    write time, so neither hides nor drops the others."""
    out = tmp_path / "out" / "dead_letters"
    out.mkdir(parents=True)
    far = 32_503_680_000_000  # 3000-01-01
    batches = {  # batch: (rows' ts, reasons), written hours ago
        0: ([1_000, None], ["too_late", "malformed_line"], 5),
        1: ([far, None], ["future_timestamp", "bad_timestamp"], 0.5),
        2: ([None], ["malformed_line"], 0.1),
    }
    now = time.time()
    for batch, (ts, reasons, hours_ago) in batches.items():
        path = out / f"batch-{batch}.parquet"
        frame = pd.DataFrame({"batch_id": batch, "ts": pd.array(ts, dtype="Int64")})
        frame["reason"] = reasons
        frame.to_parquet(path)
        os.utime(path, (now - hours_ago * 3600, now - hours_ago * 3600))
    recent = tsmon("show", "dead-letters", "--job", str(tmp_path / "out"), "--since=-1h")
    text = recent.stdout + recent.stderr
    assert recent.returncode == 0, text
    shown = [
        r for r in ("too_late", "future_timestamp", "bad_timestamp", "malformed_line") if r in text
    ]
    assert shown == ["future_timestamp", "bad_timestamp", "malformed_line"], text
    assert "__written" not in text, text
    since = format_instant_ms(int((now - 2 * 3600) * 1000))
    absolute = tsmon("show", "dead-letters", "--job", str(tmp_path / "out"), "--since", since)
    assert "too_late" not in absolute.stdout and absolute.stdout.count("malformed_line") == 1
    everything = tsmon("show", "dead-letters", "--job", str(tmp_path / "out"))
    assert everything.stdout.count("malformed_line") == 2 and "too_late" in everything.stdout


def test_plot_counts_an_answer_not_known_yet_apart_from_those_inside_their_bounds(
    tmp_path: Path,
) -> None:
    """An answer not known yet, [-inf, inf], holds any value: `tsmon plot` said 'inside the
    bounds in 3 of 3 answers' for a query that had never been known."""
    from tsmon.cli.results import _exact_line
    from tsmon.engine.batched import BatchedRuntime

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "p.csv").write_text(
        "series,ts,value\na.x,1000,1\nb.x,1000,3\na.x,2000,2\n", encoding="utf-8"
    )
    job = tmp_path / "job.toml"
    job.write_text(
        'queries = "QUERY q AS AVG(a.x, b.x) WITHIN 1"\n[job]\ncheckpoint = "ckpt"\n'
        '[input]\nkind = "files"\npath = "in"\nformat = "csv"\n',
        encoding="utf-8",
    )
    rt = BatchedRuntime(None, 0.05, 0, queries="QUERY q AS AVG(a.x, b.x) WITHIN 1")
    (tmp_path / "ckpt" / "coordinator").mkdir(parents=True)
    (tmp_path / "ckpt" / "coordinator" / "coord-000000000.pkl").write_bytes(
        rt.coordinator.snapshot()
    )
    inf = float("inf")
    lo, hi = pd.Series([-inf, 1.5, 0.0]), pd.Series([inf, 2.5, 1.0])  # exact: 2, 2.5, 2.5
    line = _exact_line(job, "q", [1000, 2000, 2500], lo, hi)
    assert line is not None
    assert list(line[0]) == [2.0, 2.5, 2.5]
    assert line[2].endswith("inside the bounds in 1 of 2 known answers (1 answer not known yet)"), (
        line[2]
    )
