"""Drop NAB series into a job's input directory as CSV files, as a collector would.

    python examples/nab_csv_dir/drop.py --rows 300 --hours 6 \\
        ../shared/data/nab/realAWSCloudwatch/ec2_cpu_utilization_24ae8d.csv ...

A NAB file has the columns ``timestamp,value`` and holds one series; a ``files`` input finds
each row's series in a column, so each row gets a first column ``series`` = ``aws.<file
stem>`` (``--rows N``: the first N rows of each file only). The rows of all files are then cut
by time into files of ``--hours`` hours each (``nab-000.csv``, ``nab-001.csv``, ...): every
file holds a slice of every series, as a collector that writes what it received every few
hours. Each is written under a hidden name and renamed into the directory, so the job never
reads a half-written file, and their modification times are one second apart in time order:
the job reads one file per micro-batch, oldest first.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import os
import time
from pathlib import Path


def read(path: Path, rows: int | None) -> list[tuple[datetime.datetime, list[str]]]:
    """The first ``rows`` rows of a NAB file as (time, [series, timestamp, value])."""
    with path.open(newline="") as f:
        reader = csv.reader(f)
        if next(reader) != ["timestamp", "value"]:
            raise SystemExit(f"{path}: not a NAB file (header timestamp,value)")
        out = []
        for n, (stamp, value) in enumerate(reader):
            if n == rows:
                break
            out.append((datetime.datetime.fromisoformat(stamp), [f"aws.{path.stem}", stamp, value]))
        return out


def drop(files: list[Path], to: Path, rows: int | None, hours: float) -> list[Path]:
    """Write the files' rows into ``to`` in slices of ``hours``; return the files written."""
    points = sorted((p for f in files for p in read(f, rows)), key=lambda p: p[0])  # stable
    start, width = points[0][0], datetime.timedelta(hours=hours)
    slices: dict[int, list[list[str]]] = {}
    for stamp, row in points:
        slices.setdefault((stamp - start) // width, []).append(row)
    first = time.time() - len(slices)  # distinct, increasing, none in the future
    written = []
    for i, (_, part) in enumerate(sorted(slices.items())):
        name = f"nab-{i:03d}.csv"
        hidden = to / f".{name}.part"
        with hidden.open("w", newline="") as out:
            writer = csv.writer(out)
            writer.writerow(["series", "timestamp", "value"])
            writer.writerows(part)
        os.utime(hidden, (first + i, first + i))
        hidden.rename(to / name)
        written.append(to / name)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path, help="NAB CSV files (timestamp,value)")
    parser.add_argument("--rows", type=int, help="only the first ROWS rows of each file")
    parser.add_argument("--hours", type=float, default=6.0, help="hours of data per file")
    parser.add_argument(
        "--to",
        type=Path,
        default=Path(__file__).parent / "incoming",
        help="the job's input directory (default: incoming/ beside this script)",
    )
    args = parser.parse_args()
    for path in drop(args.files, args.to, args.rows, args.hours):
        print(f"dropped {path}")


if __name__ == "__main__":
    main()
