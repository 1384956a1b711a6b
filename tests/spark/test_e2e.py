"""End to end on Spark: data ∪ control → groupBy(source bucket) →
applyInPandasWithState(RunningSum), a foreachBatch coordinator writing control for the next
batch, and a restart from the checkpoint. Every micro-batch is checked against a pure in-process
replay with the same one-batch control delay. No sleeps: each input file is followed by
``processAllAvailable()``.
"""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path

import pytest

from tsmon.spark.control import ControlChannel
from tsmon.spark.host import node_stream
from tsmon.spark.toy import RunningSum, coordinate

pytestmark = pytest.mark.spark

DATA_DDL = "source STRING, series STRING, ts BIGINT, value DOUBLE, seq BIGINT"
SOURCES = ("s0", "s1", "s2")

Batch = list[dict]  # messages of one micro-batch: {"source", "kind", "payload"}, by source


def make_files(n: int, rows_per_file: int = 6, seed: int = 7) -> list[list[tuple]]:
    """``n`` files of rows ``(source, series, ts, value, seq)``, shuffled inside each file;
    ts grows across files so each source's data never goes back in time."""
    rng = random.Random(seed)
    files, seq = [], 0
    for f in range(n):
        rows = []
        for i in range(rows_per_file):
            source = SOURCES[rng.randrange(len(SOURCES) - (f == 0))]  # s2 first seen later
            ts = f * 1000 + rng.randrange(0, 3) * 10  # ties on ts: seq decides
            rows.append((source, f"{source}.x{i % 2}", ts, round(rng.uniform(0, 5), 2), seq))
            seq += 1
        rng.shuffle(rows)
        files.append(rows)
    return files


def replay(files: list[list[tuple]]) -> list[Batch]:
    """Pure oracle: the micro-batches Spark must run when each file is followed by
    ``processAllAvailable()``: one batch for the file (plus pending control), then
    control-only batches until the coordinator writes nothing."""
    nodes: dict[str, RunningSum] = {}
    batches: list[Batch] = []
    pending: dict[str, list[dict]] = {}

    def run(data_rows: list[tuple]) -> None:
        nonlocal pending
        messages = []
        sources = {r[0] for r in data_rows} | set(pending)
        for source in sorted(sources):
            control = [{"seq": i, "payload": p} for i, p in enumerate(pending.get(source, []))]
            data = [
                {"series": r[1], "ts": r[2], "value": r[3], "seq": r[4]}
                for r in sorted(data_rows, key=lambda r: (r[2], r[4]))
                if r[0] == source
            ]
            node = nodes.setdefault(source, RunningSum(source))
            for out in node.step(control, data):
                messages.append({"source": source, **out})
        batches.append(messages)
        pending = coordinate(messages)

    for rows in files:
        run(rows)
        while pending:
            run([])
    return batches


def drop_file(staging: Path, input_dir: Path, index: int, rows: list[tuple]) -> None:
    """Write a CSV file outside the watched dir, then rename it in (atomic for the stream)."""
    temp = staging / f"part-{index:04d}.csv"
    temp.write_text("".join(",".join(str(v) for v in r) + "\n" for r in rows))
    os.replace(temp, input_dir / temp.name)


def test_node_stream_matches_pure_replay_and_survives_restart(spark, tmp_path):
    input_dir, staging, ckpt = tmp_path / "in", tmp_path / "staging", tmp_path / "ckpt"
    for d in (input_dir, staging):
        d.mkdir()
    channel = ControlChannel(tmp_path / "ctrl")
    seen: list[tuple[int, Batch]] = []  # (batch_id, messages) in call order, replays included

    def on_batch(batch_df, batch_id: int) -> None:
        rows = batch_df.collect()
        messages = sorted(
            ({"source": r.source, "kind": r.kind, "payload": json.loads(r.payload)} for r in rows),
            key=lambda m: m["source"],
        )
        channel.write(batch_id, coordinate(messages))  # before returning: replay-safe
        seen.append((batch_id, messages))

    def start():
        data = spark.readStream.schema(DATA_DDL).option("maxFilesPerTrigger", 1).csv(str(input_dir))
        out = node_stream(spark, data, channel.read_stream(spark), RunningSum)
        return (
            out.writeStream.foreachBatch(on_batch)
            .option("checkpointLocation", str(ckpt))
            .outputMode("append")
            .start()
        )

    files = make_files(6)
    timings: list[float] = []

    def feed(first: int, last: int, query) -> None:
        for i in range(first, last):
            drop_file(staging, input_dir, i, files[i])
            t0 = time.perf_counter()
            query.processAllAvailable()
            timings.append(time.perf_counter() - t0)

    query = start()
    try:
        feed(0, 4, query)
    finally:
        query.stop()
    batches_before = len(seen)
    expected_before = replay(files[:4])
    assert [m for _, m in seen] == expected_before
    assert any(m["kind"] == "ack" for b in expected_before for m in b), "control never applied"

    query = start()  # same checkpoint: RocksDB state and file-source logs are reloaded
    try:
        feed(4, 6, query)
    finally:
        query.stop()

    ids = [b for b, _ in seen]
    assert ids == list(range(len(ids))), f"batches replayed or skipped: {ids}"
    assert len(seen) > batches_before
    assert [m for _, m in seen] == replay(files)  # totals continue: state survived the restart
    print(
        f"\n{len(seen)} micro-batches; processAllAvailable per file (s): "
        + ", ".join(f"{t:.2f}" for t in timings)
    )


def test_node_stream_names_missing_columns(spark):
    control = spark.createDataFrame([("a", 0, "{}")], "source string, seq long, payload string")
    with pytest.raises(ValueError, match=r"data_df lacks columns \['source', 'series'"):
        node_stream(spark, spark.range(1), control, RunningSum)
