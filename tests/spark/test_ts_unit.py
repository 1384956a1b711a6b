"""Epoch numbers in another unit than ms (``[input] ts_unit``): a files job over CSV in
seconds (with a fraction or not) and over Parquet in nanoseconds (or in ms, as floats, or in
seconds as non-whole floats) equals, batch for batch, the in-process runtime fed the same
points in ms; a timestamp that is no number is a dead letter as before."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pandas as pd
import pytest

from tests.spark.test_inputs import QUERIES, check_against_reference, dead_reasons, run, write_job

pytestmark = [pytest.mark.spark, pytest.mark.slow]

T0_S = 1_704_067_200  # 2024-01-01T00:00:00Z
SCALE = {"s": 1, "ms": 1000, "ns": 1_000_000_000}


def walk(files: int, seed: int = 5, fraction: bool = False) -> list[list[tuple[str, int, float]]]:
    """``files`` lists of ``(series, ms, value)``: whole seconds (or any ms, with a
    ``fraction``), growing across files."""
    rng = random.Random(seed)
    out, ms = [], T0_S * 1000
    for _ in range(files):
        rows = []
        for _ in range(30):
            ms += rng.randrange(1000) if fraction else rng.choice([0, 1000])
            rows.append((rng.choice(["a.x", "b.x", "c.y"]), ms, rng.uniform(-3, 3)))
        out.append(rows)
    return out


def seconds_text(ms: int) -> str:
    """Epoch seconds with a fraction, as decimal text: a point or an exponent."""
    return f"{ms / 1000:.12e}" if ms % 2 else f"{ms // 1000}.{ms % 1000:03d}"


@pytest.mark.parametrize(
    ("fmt", "unit", "fraction"),
    [
        ("csv", "s", False),
        ("csv", "s", True),
        ("parquet", "ns", False),
        ("parquet", "ms", False),
        ("parquet", "s", True),
    ],
)
def test_a_files_job_in_another_unit_equals_the_runtime_fed_ms(
    spark, tmp_path: Path, fmt: str, unit: str, fraction: bool
) -> None:
    """Seconds with a fraction: CSV text (``1704067200.123``, ``1.704067200123e+09``) and a
    Parquet column of ``time.time()`` floats (were: every row a bad_timestamp)."""
    files = walk(2, fraction=fraction)
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    for n, rows in enumerate(files):
        if not fraction:
            ts: list = [r[1] // 1000 * SCALE[unit] for r in rows]
        elif fmt == "csv":
            ts = [seconds_text(r[1]) for r in rows]
        else:  # the float nearest each second and its ms: its shortest text is that decimal
            ts = [r[1] / 1000 for r in rows]
        frame = pd.DataFrame({"metric": [r[0] for r in rows], "t": ts, "v": [r[2] for r in rows]})
        path = incoming / f"{n}.{fmt}"
        if fmt == "csv":
            text = frame.to_csv(index=False)
            path.write_text(text + "a.x,1e30,1.0\n" if n == 0 else text, encoding="utf-8")
        elif unit == "ms":  # floats, as pandas writes integers with a gap: whole ones are read
            frame.astype({"t": float}).to_parquet(path)
        else:
            frame.to_parquet(path)
        os.utime(path, (1_000 + n, 1_000 + n))  # the file source reads the oldest first
    table = (
        f'kind = "files"\npath = "incoming"\nformat = "{fmt}"\nts_unit = "{unit}"\n'
        'columns = { series = "metric", ts = "t", value = "v" }'
    )
    job = write_job(tmp_path, QUERIES["lines"], table)
    seen = run(spark, job)
    batches = [[(s, s, ms, v) for s, ms, v in rows] for rows in files]
    check_against_reference(job, seen, batches)
    assert dead_reasons(job) == (["bad_timestamp"] if fmt == "csv" else [])
