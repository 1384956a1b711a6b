"""Checkpoint growth per batch in ``bench_spark.py``.

The job's callback sink walks the checkpoint directory at the end of every batch's
``foreachBatch`` (the batch's state store versions are committed by then, its offsets written,
its commit-log entry not yet) and keeps every file's size. From two walks in a row:

- **net growth**: the change of the directory's total size (negative when Spark's maintenance
  deleted old state versions, or tsmon old control files, in between);
- **written**: the bytes of files that are new since the last walk, plus what files that were
  there grew by (checkpoint files are written once, except RocksDB's logs).

Each is also shown as a multiple of the batch's input bytes (its Parquet file). The walk's
own time is inside the batch's duration; it is printed.
"""

from __future__ import annotations

import os
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter

from rich.console import Console
from rich.table import Table

from tsmon.core.units import parse_duration_ms

TARGET_GROWTH = 2.0  # × the batch's input bytes (issue 15)


def walk(root: Path) -> dict[str, int]:
    """Size of every file under ``root``, by path (files deleted while walking are skipped)."""
    out: dict[str, int] = {}
    todo = [str(root)]
    while todo:
        try:
            entries = list(os.scandir(todo.pop()))
        except FileNotFoundError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    todo.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    out[entry.path] = entry.stat(follow_symlinks=False).st_size
            except FileNotFoundError:
                continue
    return out


@dataclass
class DiskCurve:
    """The checkpoint's files after each batch, by batch id."""

    root: Path
    walks: dict[int, dict[str, int]] = field(default_factory=dict)
    seconds: float = 0.0  # spent walking

    def measure(self, batch_id: int) -> None:
        start = perf_counter()
        self.walks[batch_id] = walk(self.root)
        self.seconds += perf_counter() - start

    def total(self, batch_id: int) -> int:
        return sum(self.walks[batch_id].values())

    def growth(self, batch_id: int) -> tuple[int, int]:
        """``(net growth, bytes written)`` since the walk before ``batch_id`` (since an empty
        directory for the first)."""
        now, before = self.walks[batch_id], self.walks.get(batch_id - 1, {})
        written = sum(max(0, size - before.get(path, 0)) for path, size in now.items())
        return sum(now.values()) - sum(before.values()), written


def report(
    console: Console,
    curve: DiskCurve,
    batch_ids: list[int],
    inputs: dict[int, int],
    retention: str,
    ticks_per_file: int,
) -> float:
    """Print the growth per batch (``inputs``: batch id → its Parquet file's bytes, for the
    batches that read one), the medians after batch 0 and whether growth is flat; returns the
    median net growth multiple (nan with fewer than two data batches)."""
    table = Table(title="tsmon's checkpoint after each batch (walked in the callback sink)")
    for column in ("batch", "input MB", "checkpoint MB", "net growth MB", "× input",
                   "written MB", "× input "):  # fmt: skip
        table.add_column(column, justify="right")
    net_x: dict[int, float] = {}
    written_x: dict[int, float] = {}
    for b in batch_ids:
        if b not in curve.walks:
            continue
        net, written = curve.growth(b)
        size = inputs.get(b, 0)
        if size:
            net_x[b], written_x[b] = net / size, written / size
        table.add_row(
            str(b),
            f"{size / 1e6:.2f}" if size else "-",
            f"{curve.total(b) / 1e6:.1f}",
            f"{net / 1e6:+.2f}",
            f"{net_x[b]:+.2f}" if size else "",
            f"{written / 1e6:.2f}",
            f"{written_x[b]:.2f}" if size else "",
        )
    console.print(table)
    data = sorted(net_x)[1:]  # the batches after batch 0 that read a file
    if not data:
        return float("nan")
    med_net = statistics.median(net_x[b] for b in data)
    med_written = statistics.median(written_x[b] for b in data)
    ok = med_net <= TARGET_GROWTH
    console.print(
        f"checkpoint growth per batch after batch 0, median: net {med_net:.2f}x the batch's "
        f"input bytes, written {med_written:.2f}x; target net <= {TARGET_GROWTH:g}x: "
        + ("[green]met[/]" if ok else "[red]MISSED[/]")
        + f" (walking the directory took {curve.seconds:.2f} s in all)"
    )
    # the first batch whose registers evict: they then hold the whole retention
    full = -(-parse_duration_ms(retention) // (ticks_per_file * 1_000))  # ceil
    after = [b for b in data if b >= full]
    span = after if len(after) >= 2 else data
    if len(span) < 2:
        return med_net
    n = max(1, len(span) // 3)
    early = statistics.median(written_x[b] for b in span[:n])
    late = statistics.median(written_x[b] for b in span[-n:])
    where = (
        f"from batch {full} on, where the registers hold the whole retention ({retention})"
        if span is after
        else f"after batch 0; the registers reach their retention ({retention}) only at batch "
        f"{full} (e.g. --sources 50 --ticks-per-file 300 --files 16: 150,000 points and 5 "
        "minutes per batch, 1h at batch 12)"
    )
    console.print(
        f"flat? bytes written per batch, median of the first {n} vs the last {n} batches "
        f"{where}: {early:.2f}x vs {late:.2f}x the input "
        + ("([green]flat[/]: within 25%)" if late <= 1.25 * early else "([red]growing[/])")
    )
    if span is after:
        console.print(
            f"over those {len(after)} batches: net growth median "
            f"{statistics.median(net_x[b] for b in after):+.2f}x, written median "
            f"{statistics.median(written_x[b] for b in after):.2f}x the input"
        )
    return med_net
