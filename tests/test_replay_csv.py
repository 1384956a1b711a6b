"""``tsmon.streams.csv_series``: CSV rows pass through as read; files merge by time in their own
order."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tsmon.engine.monitor import Monitor
from tsmon.spark.filerows import file_rows
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
    assert frame["reason"].isna().all() and (frame["detail"] == "").all()
    assert frame[["series", "ts", "value"]].values.tolist() == [
        ["b", "2024-01-01T00:00:05Z", "1"],
        ["b", "oops", ""],
        ["a", "1000", "n/a"],
    ]
    nab = tmp_path / "metrics" / "cpu.csv"
    nab.parent.mkdir()
    nab.write_text("timestamp,value\n2024-01-01 00:00:10,3\nnever,4\n", encoding="utf-8")
    assert csv_layout(nab) == "timestamp_value"
    assert read_series_csv(nab)[["series", "ts", "value"]].values.tolist() == [
        ["metrics.cpu", "2024-01-01 00:00:10", "3"],
        ["metrics.cpu", "never", "4"],
    ]
    assert read_series_csv(nab, "mine")["series"].tolist() == ["mine", "mine"]


# A data line of a series,ts,value file and what it is: a record, a malformed line, or blank.
_LINE = st.sampled_from(
    [
        (b"a,1000,1.5", "record"),
        (b'"b",2000,"2"', "record"),
        (b"a,oops,1", "record"),  # a record: its bad timestamp is the monitor's to reject
        (b"a,1,2,3", "malformed"),  # another number of fields than the header
        (b"a,1", "malformed"),
        (b'"a,1,2', "malformed"),  # an unclosed quote
        (b"a,\xff,1", "malformed"),  # not UTF-8
        (b"   ", "blank"),
        (b"", "blank"),
    ]
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_LINE, max_size=12), st.booleans(), st.booleans())
def test_every_line_of_a_file_is_accepted_or_a_dead_letter(
    tmp_path_factory, lines: list[tuple[bytes, str]], bom: bool, crlf: bool
) -> None:
    """Fed as ``tsmon replay`` feeds it (records to ``ingest``, the rest to ``refuse``), a
    file's every non-blank line after the header is received once: accepted, or rejected with
    its reason, malformed lines as ``malformed_line`` naming their line."""
    path = tmp_path_factory.mktemp("csv") / "f.csv"
    end = b"\r\n" if crlf else b"\n"
    header = (b"\xef\xbb\xbf" if bom else b"") + b"series,ts,value"
    path.write_bytes(end.join([header, *(line for line, _ in lines)]) + end)
    rows = read_series_csv(path)
    kinds = [kind for _, kind in lines if kind != "blank"]
    assert len(rows) == len(kinds)
    malformed = rows["reason"].notna().to_numpy()
    assert malformed.tolist() == [kind == "malformed" for kind in kinds]
    numbers = [n for n, (_, kind) in enumerate(lines, 2) if kind != "blank"]
    want = [f"{path.as_posix()}:{n}:" for n, bad in zip(numbers, malformed, strict=True) if bad]
    assert [d[: len(w)] for d, w in zip(rows["detail"][malformed], want, strict=True)] == want
    monitor = Monitor(["a", "b"], max_future=None)
    monitor.refuse("malformed_line", rows["detail"][malformed].tolist())
    records = rows[~malformed]
    monitor.ingest(records["series"], records["ts"], records["value"])
    stats = monitor.stats()
    assert stats["received"] == len(kinds) == stats["accepted"] + stats["rejected"]
    by_reason = stats["rejected_by_reason"]
    assert by_reason.get("malformed_line", 0) == kinds.count("malformed")
    oops = sum(line == b"a,oops,1" for line, _ in lines)
    assert by_reason.get("bad_timestamp", 0) == oops


def texts(column: pd.Series) -> list[str | None]:
    """A column of :func:`read_series_csv` (Arrow text) as Python strings, None for null."""
    return column.to_numpy(dtype=object, na_value=None).tolist()


@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r"], ids=["LF", "CRLF", "CR"])
def test_a_file_is_read_as_the_spark_job_reads_it_whatever_its_line_ends(
    tmp_path: Path, end: bytes
) -> None:
    """The header is found with the lines split as :func:`file_rows` splits them (LF, CRLF or
    a lone CR, as old Mac files end lines), so a file the Spark job reads is no "header line
    that is not CSV" to ``tsmon replay``."""
    path = tmp_path / "x.csv"
    content = end.join([b"", b"timestamp,value", b"1000,1", b"2000,2,3", b"3000,3"]) + end
    path.write_bytes(content)
    spark = [row[2:5] for row in file_rows(str(path), content, "csv", ["timestamp", "value"])]
    assert spark == [
        ("1000", "1", None),
        (None, None, "malformed_line"),
        ("3000", "3", None),
    ]
    assert csv_layout(path) == "timestamp_value"
    rows = read_series_csv(path)
    assert list(zip(*(texts(rows[c]) for c in ("ts", "value", "reason")), strict=True)) == spark


def test_a_long_file_is_read_whole_and_in_order(tmp_path: Path) -> None:
    """A file of more lines than one chunk of rows (65,536) keeps every line in its place,
    a malformed one on each side of the chunk's edge."""
    lines = [f"a,{t},{t % 7}".encode() for t in range(70_000)]
    for i in (65_535, 65_536):
        lines[i] = b"a,1,2,3"
    path = tmp_path / "long.csv"
    path.write_bytes(b"\n".join([b"series,ts,value", *lines]) + b"\n")
    rows = read_series_csv(path)
    assert rows.index.tolist() == list(range(70_000))
    bad = rows.index[rows["reason"].notna()].tolist()
    assert bad == [65_535, 65_536]
    assert rows["detail"][bad].tolist() == [
        f"{path.as_posix()}:{i + 2}: 4 fields, the header has 3" for i in bad
    ]
    good = rows.drop(index=bad)
    assert good["ts"].tolist() == [str(t) for t in range(70_000) if t not in bad]


def test_a_long_file_may_name_its_time_column_timestamp(tmp_path: Path) -> None:
    path = tmp_path / "m.csv"
    path.write_text("value,timestamp,series\n1,1000,a\n2,2000,b\n", encoding="utf-8")
    assert csv_layout(path) == "long"
    rows = read_series_csv(path)
    assert rows[["series", "ts", "value"]].values.tolist() == [
        ["a", "1000", "1"],
        ["b", "2000", "2"],
    ]
    both = tmp_path / "both.csv"
    both.write_text("series,timestamp,ts,value\na,x,1000,1\n", encoding="utf-8")
    assert read_series_csv(both)["ts"].tolist() == ["1000"]  # ts first, as documented


def test_a_quoted_field_broken_over_two_lines_makes_no_record(tmp_path: Path) -> None:
    """Lines are records one by one (as on Spark): the two halves of a quoted field with a
    line break are two malformed lines, not a dead letter and a record of a series 'b"'."""
    path = tmp_path / "m.csv"
    path.write_bytes(b'series,ts,value\n"a\nb",1000,1\nc,2000,3\n')
    rows = read_series_csv(path)
    assert texts(rows["reason"]) == ["malformed_line", "malformed_line", None]
    assert texts(rows["series"]) == [None, None, "c"]
    assert "a quote inside a field that does not start with one" in rows["detail"][1]


def _seconds(ms: int) -> str:
    """Epoch ms as seconds with a fraction: a point, or an exponent for odd ms."""
    return f"{ms / 1000:.12e}" if ms % 2 else f"{ms // 1000}.{ms % 1000:03d}"


@pytest.mark.parametrize(
    ("unit", "write", "step_ms"),
    [
        ("s", lambda ms: str(ms // 1000), 13_000),
        ("us", lambda ms: str(ms * 1000), 13_000),
        ("ns", lambda ms: str(ms * 10**6), 13_000),
        ("s", _seconds, 12_345),  # fractional seconds: a dead letter each before
    ],
    ids=["s", "us", "ns", "s-fraction"],
)
def test_replay_in_another_unit_equals_the_replay_in_ms(
    tmp_path: Path, unit, write, step_ms
) -> None:
    """``--ts-unit``: files in seconds (whole or with a fraction; or µs, ns) merged by time
    give the events and dead letters of the same files in ms, an ISO instant and an
    unreadable timestamp among them."""
    import numpy as np

    from tests.test_cli import tsmon

    rng = np.random.default_rng(3)
    values = {"a": rng.normal(0, 1, 40), "b": rng.normal(0, 1, 40)}
    start = {"a": 1_704_067_200_000, "b": 1_704_067_207_000}
    millis = {k: t0 + step_ms * np.arange(40) for k, t0 in start.items()}
    queries = tmp_path / "q.tsq"
    queries.write_text("QUERY up ON a, b WHEN last > mean(3m) + 1 EMIT last\n", encoding="utf-8")
    outs = {}
    for name, text in (("ms", str), (unit, write)):
        paths = []
        for series in ("a", "b"):
            lines = [
                f"{series},{text(t)},{v:.3f}"
                for t, v in zip(millis[series].tolist(), values[series], strict=True)
            ]
            lines[5] = f"{series},2024-01-01T00:01:00Z,3"  # an instant: no unit applies
            lines[9] = f"{series},oops,1"
            path = tmp_path / f"{name}-{series}.csv"
            path.write_text("series,ts,value\n" + "\n".join(lines) + "\n", encoding="utf-8")
            paths.append(str(path))
        events, dead = tmp_path / f"{name}-events.csv", tmp_path / f"{name}-dead.csv"
        run = tsmon(
            "replay", *paths, "--queries", str(queries), "--ts-unit", name,
            "--events-out", str(events), "--dead-letters-out", str(dead), "--max-future", "off",
        )  # fmt: skip
        assert run.returncode == 0, run.stdout + run.stderr
        outs[name] = (events.read_text(), pd.read_csv(dead)[["seq", "reason"]].values.tolist())
    assert outs[unit] == outs["ms"]
    assert len(outs["ms"][0].splitlines()) > 1 and len(outs["ms"][1]) == 2
