"""``tsmon.streams.csv_series``: CSV rows pass through as read; files merge by time in their own
order."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from tsmon.streams.csv_series import csv_layout, merge_by_time, read_series_csv

# A timestamp is epoch ms, or None for an unreadable one (written as text in the file).
_FILE = st.lists(st.one_of(st.none(), st.integers(0, 50)), max_size=12)


def _oracle_merge(files: list[list[int | None]]) -> list[tuple[int, int]]:
    """(file, row) in the merged order, by taking heads in turn; never reorders a file.

    A head competes with the largest readable timestamp its file has reached including itself;
    a head with an unreadable timestamp competes with what its file reached before, or (at the
    start of a file) with the file's first readable timestamp. Ties go to the file given first.
    """
    floor = -(2**63)
    reached = []
    for rows in files:
        readable = [t for t in rows if t is not None]
        reached.append(readable[0] if readable else floor)
    pos = [0] * len(files)
    merged = []
    while any(p < len(f) for p, f in zip(pos, files, strict=True)):
        candidates = []
        for i, rows in enumerate(files):
            if pos[i] < len(rows):
                t = rows[pos[i]]
                candidates.append((reached[i] if t is None else max(reached[i], t), i))
        key, i = min(candidates)
        merged.append((i, pos[i]))
        reached[i] = key
        pos[i] += 1
    return merged


@settings(max_examples=300, deadline=None)
@given(st.lists(_FILE, min_size=1, max_size=4))
def test_merge_by_time_matches_a_head_by_head_merge(files: list[list[int | None]]) -> None:
    frames = [
        pd.DataFrame(
            {
                "series": f"f{i}",
                "ts": ["bad" if t is None else str(t) for t in rows],
                "value": [str(r) for r in range(len(rows))],
            },
            columns=["series", "ts", "value"],
        )
        for i, rows in enumerate(files)
    ]
    merged = merge_by_time(frames)
    got = list(zip(merged["series"], merged["value"].astype(int), strict=True))
    want = [(f"f{i}", row) for i, row in _oracle_merge(files)]
    assert got == want


def test_read_series_csv_keeps_rows_and_raw_text(tmp_path: Path) -> None:
    long = tmp_path / "long.csv"
    long.write_text(
        "series,ts,value,extra\nb,2024-01-01T00:00:05Z,1,x\nb,oops,,y\na,1000,n/a,z\n",
        encoding="utf-8",
    )
    assert csv_layout(long) == "long"
    frame = read_series_csv(long)
    assert frame.values.tolist() == [
        ["b", "2024-01-01T00:00:05Z", "1"],
        ["b", "oops", ""],
        ["a", "1000", "n/a"],
    ]
    nab = tmp_path / "metrics" / "cpu.csv"
    nab.parent.mkdir()
    nab.write_text("timestamp,value\n2024-01-01 00:00:10,3\nnever,4\n", encoding="utf-8")
    assert csv_layout(nab) == "timestamp_value"
    assert read_series_csv(nab).values.tolist() == [
        ["metrics.cpu", "2024-01-01 00:00:10", "3"],
        ["metrics.cpu", "never", "4"],
    ]
    assert read_series_csv(nab, "mine")["series"].tolist() == ["mine", "mine"]
