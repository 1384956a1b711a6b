"""The ``tsmon`` command end to end, in a subprocess; events compared with a pandas oracle."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.oracle import observed_coverage
from tsmon.core.window_spec import WindowSpec

REPO = Path(__file__).resolve().parents[1]
NAB = REPO / "../shared/data/nab/realAWSCloudwatch/ec2_cpu_utilization_5f5533.csv"


def tsmon(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="200")
    return subprocess.run(
        [sys.executable, "-m", "tsmon.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=timeout,
    )


def test_check_valid_file(tmp_path: Path) -> None:
    path = tmp_path / "q.tsq"
    path.write_text(
        "QUERY hot_cpu ON host*.cpu WHEN mean(15m) > 0.85 EMIT series, max(1h) AS peak\n"
        "QUERY spikes ON nab.* WHEN abs(last - mean(1h)) > 3 * stddev(1h) SINCE -6h\n"
        "QUERY diff AS SUM(2*a.x - b.x) WITHIN 0.5\n"
        "ALTER QUERY diff WITHIN 0.25 IMMEDIATELY\n",
        encoding="utf-8",
    )
    run = tsmon("check", str(path))
    assert run.returncode == 0, run.stdout + run.stderr
    out = " ".join(run.stdout.split())  # the title may wrap
    assert "4 statements OK" in out
    assert "hot_cpu" in out and "spikes" in out
    assert "SUM(2 * a.x - b.x)" in out and "WITHIN 0.25 IMMEDIATELY" in out


def test_check_malformed_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.tsq"
    path.write_text(
        "QUERY ok ON a WHEN mean(5m) > 1\nQUERY bad ON a WHEN mean(5m) >> 1\n", encoding="utf-8"
    )
    run = tsmon("check", str(path))
    out = run.stdout + run.stderr
    assert run.returncode == 2, out
    assert re.search(r"line 2:\d+", out), out
    assert "error" in out
    assert "Traceback" not in out


@pytest.mark.parametrize(
    "args",
    [
        ("check", "does/not/exist.tsq"),
        ("replay", "does/not/exist.csv", "--queries", "also/missing.tsq"),
    ],
)
def test_missing_file_is_a_clear_error(args: tuple[str, ...]) -> None:
    run = tsmon(*args)
    out = run.stdout + run.stderr
    assert run.returncode == 2, out
    assert "exist" in out
    assert "Traceback" not in out


@pytest.mark.slow
def test_make_demo_runs_the_main_job_on_spark() -> None:
    """`make demo` as a user runs it: the Spark job on the generator's 200 hosts x 15 metrics
    over 288 steps; every point seen once, every live change applied, every bounded answer
    inside its bounds around the exact value the demo recomputes from the generator; each data
    batch says how far the run has got, and Spark's own output goes to a log file, not the
    console (``--verbose`` shows it: the next test)."""
    from tsmon.demos.spark import LIVE_CHANGES, DemoSettings

    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    run = subprocess.run(
        ["make", "-s", "demo"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=dict(env, COLUMNS="200"),
        timeout=900,
    )
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    assert "Traceback" not in out
    seen = int(re.search(r"points seen ([\d,]+)", out).group(1).replace(",", ""))
    assert seen == DemoSettings().points
    assert len(re.findall(r"live change \w+ in batch \d+: applied", out)) == len(LIVE_CHANGES)
    table = out[out.index("bounded answers vs exact") :]
    verdicts = re.findall(r"│\s+(yes|NO)\s+│", table)
    assert verdicts and set(verdicts) == {"yes"}, table
    deferred = out[out.index("standing and summary answers vs exact") :]
    assert len(re.findall(r"│\s+yes\s+│", deferred)) == 2, deferred  # evaluated and summarised
    to_coordinator = int(
        re.search(r"rows to the coordinator ([\d,]+)", out).group(1).replace(",", "")
    )
    assert to_coordinator * 10 <= seen  # the data-movement target
    said = " ".join(out.split())
    progress = re.findall(r"progress: data batch (\d+) of (\d+), ([\d,]+) of ([\d,]+) points", said)
    batches = int(progress[-1][1])
    numbers = [int(p[0]) for p in progress]  # a control-only batch repeats its data batch's
    assert numbers == sorted(numbers) and set(numbers) == set(range(1, batches + 1)), progress
    assert {int(p[3].replace(",", "")) for p in progress} == {seen}
    assert int(progress[-1][2].replace(",", "")) == seen
    assert run.stderr == "", run.stderr[-3000:]
    assert "Setting default log level" not in out
    log = re.search(r"Spark's own messages go to (\S+) \(--verbose", said)[1]
    assert "Setting default log level" in Path(log).read_text()


@pytest.mark.slow
def test_in_process_demo_counts_every_point() -> None:
    """The in-process demo: the fleet of 100 hosts x 3 metrics over 24 h of 1-minute steps,
    plus the 7 points it injects at hour 3 (NaN, text, inf, unknown series, late within the
    lateness, too late, duplicate)."""
    run = tsmon("demo", "--in-process")
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    assert "Traceback" not in out
    received, accepted, rejected = map(
        int, re.search(r"points received (\d+) = accepted (\d+) \+ rejected (\d+)", out).groups()
    )
    fleet_points = 100 * 3 * 24 * 60
    assert received == fleet_points + 7
    assert (accepted, rejected) == (fleet_points + 2, 5)
    assert "late inserted 1, duplicates replaced 1" in out
    for reason in ("nan", "not_numeric", "infinite", "unknown_series", "too_late"):
        assert f": {reason} - " in out
    assert re.search(r"cpu_jump .* \[replayed\]", out), "the SINCE query replays history first"


@pytest.mark.slow
def test_demo_small() -> None:
    run = tsmon("demo", "--in-process", "--hosts", "5", "--hours", "3")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "received" in run.stdout
    assert "Traceback" not in run.stdout + run.stderr


def _nab_oracle(path: Path) -> pd.DataFrame:
    frame = pd.read_csv(path)
    idx = pd.DatetimeIndex(pd.to_datetime(frame["timestamp"], utc=True))
    values = pd.Series(frame["value"].to_numpy(dtype=float), index=idx).sort_index(kind="stable")
    assert values.index.is_unique, "the oracle assumes one point per timestamp"
    roll = values.rolling("1h", closed="right")
    out = pd.DataFrame({"value": values, "mean": roll.mean(), "std": roll.std(ddof=1)})
    out["hi12"] = values.rolling(12, min_periods=1).max()
    out["lo12"] = values.rolling(12, min_periods=1).min()
    out["ts_ms"] = (idx.sort_values().asi8 // 1_000_000).astype(np.int64)
    return out.reset_index(drop=True)


@pytest.mark.slow
@pytest.mark.parametrize("lateness", [None, "5m"], ids=["default-lateness", "lateness-5m"])
def test_replay_nab_matches_pandas(tmp_path: Path, lateness: str | None) -> None:
    if not NAB.is_file():
        pytest.skip(f"NAB data not found at {NAB.resolve()} (shared data checkout missing)")
    queries = tmp_path / "q.tsq"
    queries.write_text(
        "QUERY spike ON * WHEN last > mean(1h) + 2 * stddev(1h) "
        "EMIT mean(1h) AS m, stddev(1h) AS sd\n"
        "QUERY flat ON realAWSCloudwatch.* WHEN max(12 points) - min(12 points) < 2 "
        "EMIT max(12 points) AS hi\n",
        encoding="utf-8",
    )
    out_csv = tmp_path / "events.csv"
    run = tsmon(
        "replay",
        str(NAB),
        "--queries",
        str(queries),
        "--events-out",
        str(out_csv),
        "--show",
        "3",
        "--batch",
        "700",
        *(["--allowed-lateness", lateness] if lateness else []),
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Traceback" not in run.stdout + run.stderr
    events = pd.read_csv(out_csv)
    oracle = _nab_oracle(NAB)
    scale = float(oracle["value"].abs().max())

    thr = oracle["mean"] + 2 * oracle["std"]
    gap = (oracle["value"] - thr).to_numpy()
    clear = ~(np.abs(gap) <= 1e-9 * scale)  # NaN gaps (one point) are clearly False
    want = set(oracle["ts_ms"][clear & (gap > 0)])
    spike = events[events["query"] == "spike"]
    got = set(spike["ts_ms"])
    assert want, "the oracle finds no spike; the test would be vacuous"
    assert got & set(oracle["ts_ms"][clear]) == want
    assert set(spike["series"]) == {"realAWSCloudwatch.ec2_cpu_utilization_5f5533"}
    merged = spike.merge(oracle, on="ts_ms")
    np.testing.assert_allclose(merged["payload.m"], merged["mean"], rtol=1e-9)
    np.testing.assert_allclose(merged["payload.sd"], merged["std"], rtol=1e-6)
    np.testing.assert_allclose(merged["value_x"], merged["value_y"], rtol=0)

    flat_want = set(oracle["ts_ms"][(oracle["hi12"] - oracle["lo12"]) < 2])
    flat = events[events["query"] == "flat"]
    assert set(flat["ts_ms"]) == flat_want
    merged = flat.merge(oracle, on="ts_ms")
    np.testing.assert_array_equal(merged["payload.hi"], merged["hi12"])
    ts_all = oracle["ts_ms"].to_numpy()  # coverage: the share of the span since the first point
    position = {int(t): j for j, t in enumerate(ts_all)}
    spec = {"spike": WindowSpec.time(3_600_000), "flat": WindowSpec.count(12)}
    expected = [
        observed_coverage(ts_all, position[t], spec[q])
        for q, t in zip(events["query"], events["ts_ms"], strict=True)
    ]
    np.testing.assert_allclose(events["coverage"], expected, rtol=1e-12)
    assert not events["replayed"].any()
    assert f"points received {len(oracle)}" in run.stdout.replace("\n", " ")


def _queries(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "q.tsq"
    path.write_text(text, encoding="utf-8")
    return path


_EVERY_POINT = "QUERY every ON * WHEN last > -1e300 EMIT count(1h) AS n, sum(1h) AS s\n"
_SUMMARY = re.compile(
    r"points received (\d+) = accepted (\d+) \+ rejected (\d+)(?: \(([^)]*)\))?; "
    r"late inserted (\d+), duplicates replaced (\d+)"
)


def _summary(out: str) -> dict[str, object]:
    """The counts of the closing summary line, read back from the output."""
    match = _SUMMARY.search(out)
    assert match, out
    received, accepted, rejected, reasons, late, dups = match.groups()
    by_reason = (
        dict((k, int(v)) for k, v in (item.split(": ") for item in reasons.split(", ")))
        if reasons
        else {}
    )
    return {
        "received": int(received),
        "accepted": int(accepted),
        "rejected": int(rejected),
        "by_reason": by_reason,
        "late_inserted": int(late),
        "duplicates_replaced": int(dups),
    }


def _points_csv(tmp_path: Path) -> Path:
    path = tmp_path / "points.csv"
    path.write_text("series,ts,value\nx.cpu,1000,1\nx.cpu,2000,2\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("where", ["folder", "missing-parent", "no-permission"])
def test_bad_events_out_path_fails_before_replaying(tmp_path: Path, where: str) -> None:
    if where == "folder":
        target = tmp_path / "out"
        target.mkdir()
        expected = "is a folder"
    elif where == "missing-parent":
        target = tmp_path / "no" / "such" / "events.csv"
        expected = "does not exist"
    else:
        if os.geteuid() == 0:
            pytest.skip("a superuser may write anywhere")
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        target = locked / "events.csv"
        expected = "no permission"
    run = tsmon(
        "replay",
        str(_points_csv(tmp_path)),
        "--queries",
        str(_queries(tmp_path, _EVERY_POINT)),
        "--events-out",
        str(target),
    )
    out = run.stdout + run.stderr
    assert run.returncode == 2, out
    assert "error:" in out and "--events-out" in out and expected in out, out
    assert "Traceback" not in out
    assert "points received" not in out and "every" not in out, out  # nothing was replayed
    assert not (target.is_file() if where != "folder" else any(target.iterdir()))


@pytest.mark.parametrize(
    ("args", "option", "value"),
    [
        (("replay", "x.csv", "--queries", "q.tsq", "--batch", "0"), "--batch", "'0'"),
        (("replay", "x.csv", "--queries", "q.tsq", "--batch", "-5"), "--batch", "'-5'"),
        (("replay", "x.csv", "--queries", "q.tsq", "--batch", "2.5"), "--batch", "'2.5'"),
        (("replay", "x.csv", "--queries", "q.tsq", "--show", "-1"), "--show", "'-1'"),
        (("replay", "x.csv", "--queries", "q.tsq", "--allowed-lateness", "5x"), "lateness", "5x"),
        (("demo", "--hosts", "0"), "--hosts", "'0'"),
        (("demo", "--hours", "inf"), "--hours", "'inf'"),
        (("demo", "--hours", "nan"), "--hours", "'nan'"),
        (("demo", "--hours", "-1"), "--hours", "'-1'"),
    ],
)
def test_bad_numeric_options_are_clear_errors(
    args: tuple[str, ...], option: str, value: str
) -> None:
    run = tsmon(*args, timeout=30)
    out = run.stdout + run.stderr
    assert run.returncode == 2, out
    assert "Traceback" not in out
    assert "range()" not in out and "Overflow" not in out
    error = next(line for line in out.splitlines() if "error:" in line)
    assert option in error and value in error, error
    assert "e.g." in error, error  # says what to pass instead


def _oracle_feed(rows: pd.DataFrame, lateness_ms: int) -> tuple[pd.DataFrame, dict[str, int]]:
    """Per-point semantics by brute force, rows taken in the given order (no sorting).

    A row is rejected for an unreadable timestamp or when older than its series' newest
    accepted point by more than ``lateness_ms``; each accepted row emits count and sum of its
    series' accepted rows with ``t - 1h < ts <= t`` as of that row.
    """
    parsed = pd.to_datetime(rows["ts"], utc=True, errors="coerce", format="ISO8601")
    accepted: list[tuple[str, int, float]] = []
    events = []
    counts = {"received": 0, "bad_timestamp": 0, "too_late": 0, "late_inserted": 0}
    newest: dict[str, int] = {}
    for series, stamp, value in zip(rows["series"], parsed, rows["value"], strict=True):
        counts["received"] += 1
        if pd.isna(stamp):
            counts["bad_timestamp"] += 1
            continue
        ts = int(stamp.value // 1_000_000)
        top = newest.get(series)
        if top is not None and ts < top - lateness_ms:
            counts["too_late"] += 1
            continue
        if top is not None and ts < top:
            counts["late_inserted"] += 1
        newest[series] = max(ts, top if top is not None else ts)
        accepted.append((series, ts, float(value)))
        inside = [v for s, t, v in accepted if s == series and ts - 3_600_000 < t <= ts]
        events.append({"series": series, "ts_ms": ts, "n": len(inside), "s": sum(inside)})
    return pd.DataFrame(events), counts


@pytest.mark.parametrize("lateness", [None, "10m"], ids=["no-lateness", "lateness-10m"])
@pytest.mark.parametrize("batch", ["1", "4", "2000"])
def test_replay_keeps_row_order_late_and_bad_rows(
    tmp_path: Path, lateness: str | None, batch: str
) -> None:
    rows = pd.DataFrame(
        {
            "series": ["h1.cpu", "h1.cpu", "h2.cpu", "h1.cpu", "h1.cpu", "h2.cpu", "h1.cpu"],
            "ts": [
                "2024-01-01T00:00:00Z",
                "2024-01-01T00:10:00Z",
                "2024-01-01T00:10:00Z",
                "2024-01-01T00:05:00Z",  # out of order: 5 min behind h1's newest
                "not a time",  # unreadable: this row only goes to the dead letters
                "2024-01-01T00:20:00Z",
                "2024-01-01T00:20:00Z",
            ],
            "value": [1.0, 2.0, 10.0, 4.0, 8.0, 20.0, 16.0],
        }
    )
    path = tmp_path / "long.csv"
    rows.to_csv(path, index=False)
    out_csv = tmp_path / "events.csv"
    run = tsmon(
        "replay",
        str(path),
        "--queries",
        str(_queries(tmp_path, _EVERY_POINT)),
        "--events-out",
        str(out_csv),
        "--batch",
        batch,
        *(["--allowed-lateness", lateness] if lateness else []),
    )
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    assert "Traceback" not in out
    want, counts = _oracle_feed(rows, 600_000 if lateness else 0)
    assert counts["late_inserted"] == (1 if lateness else 0)  # the data exercise what we test
    assert counts["too_late"] == (0 if lateness else 1) and counts["bad_timestamp"] == 1

    summary = _summary(run.stdout)
    rejected = {k: v for k, v in counts.items() if k in ("bad_timestamp", "too_late") and v}
    assert summary == {
        "received": counts["received"],
        "accepted": counts["received"] - sum(rejected.values()),
        "rejected": sum(rejected.values()),
        "by_reason": rejected,
        "late_inserted": counts["late_inserted"],
        "duplicates_replaced": 0,
    }
    assert summary["received"] == summary["accepted"] + summary["rejected"]

    got = pd.read_csv(out_csv)
    assert got["series"].tolist() == want["series"].tolist()
    assert got["ts_ms"].tolist() == want["ts_ms"].tolist()
    assert got["payload.n"].tolist() == want["n"].tolist()
    np.testing.assert_allclose(got["payload.s"], want["s"], rtol=1e-12)


def _stable_merge(files: list[list[tuple[str, int]]]) -> list[tuple[str, int]]:
    """Merge files by time, taking heads in turn; a file's row order is never changed.

    The head of each file competes with the largest timestamp its file has reached (a late row
    waits behind the newer row before it); ties go to the file given first.
    """
    pos = [0] * len(files)
    reached = [-(2**63)] * len(files)
    merged: list[tuple[str, int]] = []
    while any(p < len(f) for p, f in zip(pos, files, strict=True)):
        best = None
        for i, rows in enumerate(files):
            if pos[i] < len(rows):
                key = max(reached[i], rows[pos[i]][1])
                if best is None or key < best[0]:
                    best = (key, i)
        assert best is not None
        key, i = best
        merged.append(files[i][pos[i]])
        reached[i] = key
        pos[i] += 1
    return merged


def test_replay_merges_files_by_time_keeping_each_files_order(tmp_path: Path) -> None:
    minute = 60_000
    a = [("a.cpu", t * minute) for t in (0, 3, 6, 4, 9, 12)]  # one late row (4 after 6)
    b_minutes = [1, 2, 7, 5, 8, 13]  # one late row (5 after 7)
    folder = tmp_path / "nab"
    folder.mkdir()
    pd.DataFrame({"series": [s for s, _ in a], "ts": [t for _, t in a], "value": 1.0}).to_csv(
        folder / "a.csv", index=False
    )
    pd.DataFrame(
        {
            "timestamp": pd.to_datetime([m * minute for m in b_minutes], unit="ms").strftime(
                "%Y-%m-%d %H:%M:%S"
            ),
            "value": 2.0,
        }
    ).to_csv(folder / "b.csv", index=False)
    b = [("nab.b", m * minute) for m in b_minutes]
    out_csv = tmp_path / "events.csv"
    run = tsmon(
        "replay",
        str(folder / "a.csv"),
        str(folder / "b.csv"),
        "--queries",
        str(_queries(tmp_path, _EVERY_POINT)),
        "--events-out",
        str(out_csv),
        "--allowed-lateness",
        "5m",
        "--batch",
        "5",
    )
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    want = _stable_merge([a, b])
    assert [t for s, t in want if s == "a.cpu"] == [t for _, t in a]
    assert want != sorted(want, key=lambda row: row[1])  # the files' own order matters here
    got = pd.read_csv(out_csv)
    assert list(zip(got["series"], got["ts_ms"], strict=True)) == want
    summary = _summary(run.stdout)
    assert (summary["received"], summary["accepted"], summary["late_inserted"]) == (12, 12, 2)


def test_series_option_with_several_timestamp_value_files_is_refused(tmp_path: Path) -> None:
    paths = []
    for name in ("one.csv", "two.csv"):
        path = tmp_path / name
        path.write_text("timestamp,value\n2024-01-01 00:00:00,1\n", encoding="utf-8")
        paths.append(str(path))
    run = tsmon(
        "replay", *paths, "--series", "x", "--queries", str(_queries(tmp_path, _EVERY_POINT))
    )
    out = run.stdout + run.stderr
    assert run.returncode == 2, out
    assert "--series" in out and "one series" in out and "Traceback" not in out
    assert "points received" not in out


RUN_JOB = """
queries = '''
QUERY s AS SUM(a.x, b.x) WITHIN 2
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
"""


@pytest.mark.slow
@pytest.mark.spark
def test_run_once_processes_a_csv_job_on_spark(tmp_path: Path) -> None:
    (tmp_path / "job.toml").write_text(RUN_JOB, encoding="utf-8")
    (tmp_path / "incoming").mkdir()
    rows = "".join(
        f"{s},{t},{v}\n" for t in range(0, 4000, 500) for s, v in [("a.x", 1), ("b.x", 2)]
    )
    (tmp_path / "incoming" / "p0.csv").write_text("metric,time,v\n" + rows + "b.x,oops,3\n")
    run = tsmon("run", str(tmp_path / "job.toml"), "--once", timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "17 rows in (16 accepted, 1 dead letters), 1 answers" in run.stdout
    progress = (tmp_path / "ckpt" / "progress.jsonl").read_text().splitlines()
    assert sum(json.loads(p)["numInputRows"] for p in progress) == 16


def test_run_refuses_a_bad_job_file_before_starting_spark(tmp_path: Path) -> None:
    (tmp_path / "job.toml").write_text(RUN_JOB.replace('kind = "files"', 'kind = "ftp"'))
    run = tsmon("run", str(tmp_path / "job.toml"))
    assert run.returncode == 2
    assert "error:" in run.stdout and "[input] kind must be one of" in run.stdout
    assert "Traceback" not in run.stdout + run.stderr


@pytest.mark.slow
@pytest.mark.spark
def test_spark_demo_verbose_shows_spark_and_its_progress(tmp_path: Path) -> None:
    """2 hosts x 15 metrics over 96 steps: 2 data batches of 48 steps; each says how far the
    run has got. With --verbose Spark's own start-up lines come to the console, and no
    <dir>/spark.log is written (without it: the `make demo` test)."""
    args = ["demo", "--hosts", "2", "--ticks", "96", "--dir", str(tmp_path), "--verbose"]
    run = tsmon(*args, timeout=900)
    assert run.returncode == 0, run.stdout + run.stderr
    out = " ".join(run.stdout.split())
    for n, points, at in ((1, 1440, "03:55:00Z"), (2, 2880, "07:55:00Z")):
        line = (
            f"progress: data batch {n} of 2, {points:,} of 2,880 points "
            f"({points * 100 // 2880}%), event time reached 2024-01-01T{at} (tick {48 * n} of 96)"
        )
        assert line in out, out[-3000:]
    assert "points seen 2,880" in out
    assert "Setting default log level" in run.stderr
    assert not (tmp_path / "spark.log").exists()


def test_replay_prints_the_aggregates_answers_at_the_end(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    n = 200
    rows = pd.DataFrame(
        {
            "series": np.tile(["a.x", "b.x", "c.x"], n),
            "ts": np.repeat(np.arange(n) * 60_000, 3),
            "value": np.round(rng.uniform(0, 10, 3 * n), 3),
        }
    )
    rows.to_csv(tmp_path / "points.csv", index=False)
    queries = _queries(
        tmp_path,
        "QUERY avg AS AVG(a.x, b.x) WITHIN 1\nQUERY best AS TOP 1 OF * BY x WITHIN 0\n",
    )
    run = tsmon("replay", str(tmp_path / "points.csv"), "--queries", str(queries), "--show", "0")
    assert run.returncode == 0, run.stdout + run.stderr
    newest = rows.groupby("series")["value"].last()
    exact = (newest["a.x"] + newest["b.x"]) / 2
    match = re.search(r"^  avg: (\S+) in \[(\S+), (\S+)\] as of .*\((\d+) ms\)$", run.stdout, re.M)
    assert match, run.stdout
    lo, hi, as_of = float(match[2]), float(match[3]), int(match[4])
    assert lo <= exact <= hi and hi - lo <= 1 and as_of == (n - 1) * 60_000
    top = rows.groupby(rows["series"].str[0])["value"].sum().idxmax()
    assert re.search(rf"^  best: TOP 1 within 0: {top} \(", run.stdout, re.M), run.stdout
