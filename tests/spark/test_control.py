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
