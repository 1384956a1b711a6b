"""A summary reader's files (tsmon.spark.readers) without Spark: the driver's
:func:`write_replicas` writes them as the runtime does after each batch, a :class:`JobReader`
polls them; a reader that falls further behind than the kept batches is told so."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

import tsmon.spark.readers as readers
from tsmon.spark.readers import RETAIN_BATCHES, JobReader, ReaderBehindError, write_replicas


def written(checkpoint: Path, reader: JobReader, batches: range) -> None:
    """The driver's files for ``batches``: the reader's key at one arrival per batch."""
    for b in batches:
        part = SimpleNamespace(clock={reader.reader.key: (b, 1_000 * b)}, out=[])
        write_replicas(checkpoint, b, part)


def test_a_reader_that_polls_within_the_kept_batches_reads_them_all(tmp_path: Path) -> None:
    reader = JobReader(tmp_path, "dash", "temp.v", 8)
    written(tmp_path, reader, range(0, 5))
    reader.poll()
    assert (reader.batch, reader.count) == (4, 4)
    written(tmp_path, reader, range(5, 5 + RETAIN_BATCHES))  # batch 5 is the oldest kept
    reader.poll()
    assert (reader.batch, reader.count) == (4 + RETAIN_BATCHES, 4 + RETAIN_BATCHES)


def test_a_reader_behind_the_kept_batches_is_told_and_stays_told(tmp_path: Path) -> None:
    reader = JobReader(tmp_path, "dash", "temp.v", 8)
    written(tmp_path, reader, range(0, 5))
    reader.poll()
    written(tmp_path, reader, range(5, 6 + RETAIN_BATCHES))  # batch 5 dropped
    for _ in range(2):
        with pytest.raises(ReaderBehindError, match=r"'dash' fell behind: .* batch 5 on"):
            reader.poll()
    assert reader.batch == 4  # nothing after the gap was applied


def test_a_reader_joining_late_skips_what_was_dropped_before_it(tmp_path: Path) -> None:
    early = JobReader(tmp_path, "early", "temp.v", 8)
    written(tmp_path, early, range(0, 1_500))  # batches 500..1499 kept
    late = JobReader(tmp_path, "late", "temp.v", 8)
    written(tmp_path, late, range(1_500, 1_510))
    late.poll()
    assert late.batch == 1_509
    with pytest.raises(ReaderBehindError, match="'early' fell behind"):
        early.poll()


def test_a_file_dropped_between_listing_and_reading(tmp_path: Path, monkeypatch) -> None:
    reader = JobReader(tmp_path, "dash", "temp.v", 8)
    written(tmp_path, reader, range(0, 3))
    reader.poll()
    written(tmp_path, reader, range(3, 4 + RETAIN_BATCHES))  # batch 3 dropped
    listed = readers._files(tmp_path)
    stale = listed[0].with_name("batch-000000003.json")  # as a listing before the drop saw it
    monkeypatch.setattr(readers, "_files", lambda checkpoint: [stale, *listed[:-1]])
    with pytest.raises(ReaderBehindError, match="batch 3 on"):
        reader.poll()
