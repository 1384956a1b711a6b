"""NAB replay: bad rows skipped and counted, files merged by time, real files by path."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tsmon.protocols.filters.queries import Aggregate
from tsmon.sim.filters import nab_files, nab_workload

NAB_ROOT = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "nab"


def write(path: Path, rows: list[str]) -> Path:
    path.write_text("timestamp,value\n" + "".join(r + "\n" for r in rows))
    return path


def test_bad_rows_are_skipped_and_counted(tmp_path: Path) -> None:
    a = write(
        tmp_path / "a.csv",
        [
            "2020-01-01 00:00:00,1",
            "2020-01-01 00:05:00,x",  # bad value
            "not a time,3",  # bad timestamp
            "2020-01-01 00:10:00,",  # empty value
            "2020-01-01 00:10:00,inf",  # not finite
            "2020-01-01 00:15:00,4",
            "2020-01-01 00:15:00,5",  # same instant: kept
            "2020-01-01 00:12:00,6",  # late: skipped
            "2020-01-01 00:20:00,7",
        ],
    )
    b = write(tmp_path / "b.csv", ["2020-01-01 00:05:00,10", "2020-01-01 00:15:00,20"])
    r = nab_workload([a, b], delta=2.0)
    name_a, name_b = r.workload.objects
    assert name_a == f"{tmp_path.name}.a" and name_b == f"{tmp_path.name}.b"
    assert dict(r.skipped[name_a]) == {"bad_timestamp": 1, "bad_value": 3, "out_of_order": 1}
    assert dict(r.skipped[name_b]) == {"bad_timestamp": 0, "bad_value": 0, "out_of_order": 0}
    assert r.n_skipped == 5 and "5 rows skipped" in r.summary()
    w = r.workload
    minute = 60_000
    base = int(np.datetime64("2020-01-01T00:00", "ms").astype(np.int64))
    assert (w.ts_ms - base).tolist() == [
        0,
        5 * minute,
        15 * minute,
        15 * minute,
        15 * minute,
        20 * minute,
    ]
    assert w.values.tolist() == [1.0, 10.0, 4.0, 5.0, 20.0, 7.0]  # ties: a before b
    assert [w.objects[i] for i in w.obj] == [name_a, name_b, name_a, name_a, name_b, name_a]
    assert dict(w.source_of) == {name_a: name_a, name_b: name_b}
    assert w.time_unit_ms == 10 * minute  # median of the kept steps 15, 5 (a) and 10 (b) min
    (q,) = w.queries
    assert q.aggregate is Aggregate.AVG and q.delta == 2.0 and list(q.weights) == [name_a, name_b]


def test_align_start_overlaps_files_recorded_at_different_dates(tmp_path: Path) -> None:
    a = write(tmp_path / "a.csv", ["2020-01-01 00:00:00,1", "2020-01-01 00:05:00,2"])
    b = write(tmp_path / "b.csv", ["2021-06-01 12:00:00,3", "2021-06-01 12:10:00,4"])
    w = nab_workload([a, b], names=["a", "b"], align="start", time_unit_ms=60_000).workload
    t0 = w.ts_ms[0]
    assert (w.ts_ms - t0).tolist() == [0, 0, 300_000, 600_000]
    assert w.values.tolist() == [1.0, 3.0, 2.0, 4.0] and w.queries == ()
    assert w.time_unit_ms == 60_000


def test_argument_errors(tmp_path: Path) -> None:
    a = write(tmp_path / "a.csv", ["2020-01-01 00:00:00,1"])
    with pytest.raises(ValueError, match="no NAB files"):
        nab_workload([])
    with pytest.raises(ValueError, match="one name per file"):
        nab_workload([a], names=["x", "y"])
    with pytest.raises(ValueError, match="align"):
        nab_workload([a], align="end")  # type: ignore[arg-type]
    with pytest.raises(FileNotFoundError, match="no such CSV"):
        nab_workload([tmp_path / "missing.csv"])
    with pytest.raises(FileNotFoundError, match="no NAB folder"):
        nab_files(tmp_path, "realTweets")


needs_nab = pytest.mark.skipif(not NAB_ROOT.is_dir(), reason=f"NAB data not at {NAB_ROOT}")


@pytest.mark.slow
@needs_nab
def test_real_tweets_replay() -> None:
    files = nab_files(NAB_ROOT, "realTweets")
    assert len(files) == 10
    r = nab_workload(files, delta=5.0)
    w = r.workload
    assert r.n_skipped == 0
    rows = [sum(1 for _ in f.open()) - 1 for f in files]
    assert w.update_counts().tolist() == rows
    assert w.time_unit_ms == 300_000 and np.all(np.diff(w.ts_ms) >= 0)
    assert w.objects[0] == "realTweets.Twitter_volume_AAPL"
    assert len(w.queries[0].weights) == 10


@pytest.mark.slow
@needs_nab
def test_real_files_with_repeated_timestamps_keep_every_row() -> None:
    files = [
        NAB_ROOT / "realAWSCloudwatch" / "ec2_disk_write_bytes_1ef3de.csv",
        NAB_ROOT / "realAdExchange" / "exchange-2_cpc_results.csv",
    ]
    r = nab_workload(files, align="start")
    assert r.n_skipped == 0
    assert r.workload.update_counts().tolist() == [4730, 1624]
