"""The ``tsmon`` command end to end, in a subprocess; events compared with a pandas oracle."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

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
        "QUERY spikes ON nab.* WHEN abs(last - mean(1h)) > 3 * stddev(1h) SINCE -6h\n",
        encoding="utf-8",
    )
    run = tsmon("check", str(path))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "2 queries OK" in run.stdout
    assert "hot_cpu" in run.stdout and "spikes" in run.stdout


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
def test_demo_small() -> None:
    run = tsmon("demo", "--hosts", "5", "--hours", "3")
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
    assert (events["coverage"] == 1.0).all()
    assert not events["replayed"].any()
    assert f"points received {len(oracle)}" in run.stdout.replace("\n", " ")
