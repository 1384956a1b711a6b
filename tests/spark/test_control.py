"""Control files: atomic, ordered by seq across batches, idempotent on replay."""

from __future__ import annotations

import json

import pytest

from tsmon.spark.control import SEQ_STRIDE, ControlChannel, ControlConflictError


def test_write_is_json_lines_ordered_by_seq(tmp_path):
    ch = ControlChannel(tmp_path / "ctrl")
    assert ch.write(2, {"b": [{"add": 1}], "a": [{"add": 2}, {"q": "x"}]})
    rows = [json.loads(line) for line in ch.path(2).read_text().splitlines()]
    assert [(r["source"], r["seq"], json.loads(r["payload"])) for r in rows] == [
        ("a", 2 * SEQ_STRIDE, {"add": 2}),
        ("a", 2 * SEQ_STRIDE + 1, {"q": "x"}),
        ("b", 2 * SEQ_STRIDE + 2, {"add": 1}),
    ]
    assert [p.name for p in (tmp_path / "ctrl").iterdir()] == ["ctrl-2.json"]  # no temp left


def test_replay_same_content_is_a_noop_and_different_content_is_an_error(tmp_path):
    ch = ControlChannel(tmp_path)
    assert ch.write(0, {"a": [{"add": 1}]})
    before = ch.path(0).stat().st_mtime_ns
    assert not ch.write(0, {"a": [{"add": 1}]})
    assert ch.path(0).stat().st_mtime_ns == before
    with pytest.raises(ControlConflictError, match="batch 0"):
        ch.write(0, {"a": [{"add": 2}]})


def test_no_control_no_file_and_files_in_batch_order(tmp_path):
    ch = ControlChannel(tmp_path)
    assert not ch.write(1, {"a": []})
    for b in (10, 9, 2):
        ch.write(b, {"a": [{"add": b}]})
    assert [p.name for p in ch.files()] == ["ctrl-2.json", "ctrl-9.json", "ctrl-10.json"]
    with pytest.raises(ValueError, match="batch_id must be >= 0"):
        ch.write(-1, {"a": [{}]})


def test_the_control_source_offers_new_files_once_replays_them_and_deletes_on_commit(tmp_path):
    """The stream's reader (no Spark): each read offers the control written since its start
    offset and a new wake file once; a replay between two offsets reads the same rows; a
    commit deletes what its batch read, and only that."""
    from tsmon.spark.control import wake
    from tsmon.spark.pysources import ControlReader

    ch = ControlChannel(tmp_path)
    reader = ControlReader(str(tmp_path), delete=True)
    start = reader.initialOffset()
    assert reader.read(start)[1] == start  # nothing yet: the offset stays
    ch.write(0, {"b": [{"q": 1}], "a": [{"q": 2}]})
    ch.write(1, {"a": [{"q": 3}]})
    rows, end = reader.read(start)
    assert end == {"ctrl": 1, "wake": 0}
    expected = [
        ("a", 0, '{"q": 2}'),
        ("b", 1, '{"q": 1}'),
        ("a", SEQ_STRIDE, '{"q": 3}'),
    ]
    assert list(rows) == expected
    assert list(reader.readBetweenOffsets(start, end)) == expected  # a replay: the same rows
    assert list(reader.read(end)[0]) == [] and reader.read(end)[1] == end
    wake(tmp_path, "cmd-1")
    rows, woken = reader.read(end)
    assert (list(rows), woken) == ([], {"ctrl": 1, "wake": 1})
    assert reader.read(woken)[1] == woken  # the same wake file wakes one batch only
    ch.write(2, {"c": [{"q": 4}]})
    rows, last = reader.read(woken)
    assert list(rows) == [("c", 2 * SEQ_STRIDE, '{"q": 4}')]
    reader.commit(end)  # the batch that read ctrl-0 and ctrl-1 is committed
    assert [p.name for p in ch.files()] == ["ctrl-2.json"]
    assert not (tmp_path / "wake-cmd-1.json").exists()
    assert list(reader.readBetweenOffsets(woken, last)) == [("c", 2 * SEQ_STRIDE, '{"q": 4}')]
    ControlReader(str(tmp_path), delete=False).commit(last)  # cleanSource "off": kept
    assert [p.name for p in ch.files()] == ["ctrl-2.json"]
