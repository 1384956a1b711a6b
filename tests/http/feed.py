"""A job's batches made in-process: BatchedRuntime runs the real source nodes and coordinator
(the Spark job's reference, batch for batch) and each batch becomes the BatchOutput the Spark
runtime would give its sinks."""

from __future__ import annotations

import math
import random

from tsmon.engine.batched import BatchedRuntime
from tsmon.engine.settings import RegisterSettings
from tsmon.kinds import PARTS
from tsmon.spark.sinks import BatchOutput

QUERIES = """
QUERY total AS SUM(a.x, b.x) WITHIN 1
QUERY top AS TOP 1 OF * BY x WITHIN 0
QUERY hot ON *.x WHEN last > 2 EMIT series, last
QUERY ghost ON zz*.x WHEN last > 0
"""
SOURCE_OF = {"a.x": "a", "b.x": "b"}


def runtime() -> BatchedRuntime:
    return BatchedRuntime(1_000, 0.1, 0, SOURCE_OF, registers=RegisterSettings(), queries=QUERIES)


def batches(n: int, seed: int = 1) -> list[BatchOutput]:
    """``n`` batches of a random walk of ``a.x`` and ``b.x``, 4 points each per batch, with
    one NaN dead letter in batch 1 (as the Spark runtime reports an unreadable row)."""
    rng = random.Random(seed)
    rt = runtime()
    value = {"a.x": 0.0, "b.x": 1.0}
    out = []
    for b in range(n):
        points = []
        for k in range(4):
            for series in value:
                value[series] += rng.gauss(0, 0.8)
                points.append((SOURCE_OF[series], series, b * 1_000 + k * 200, value[series]))
        rt.run_batch(points)
        rejected = []
        if b == 1:
            rejected = [
                {"source": "a", "series": "a.x", "ts": 1_999, "value": math.nan, "raw_ts": "1999",
                 "raw_value": "NaN", "reason": "nan", "detail": ""}
            ]  # fmt: skip
        answers = {p.name: dict(rt.coordinator.part(p.name).answers()) for p in PARTS
                   if p.coordinator is not None and p.name in rt.coordinator.parts}  # fmt: skip
        progress = {
            "batchId": b,
            "numInputRows": len(points),
            "rowsToCoordinator": len(rt.last_outputs),
            "watermark": b * 1_000,
            "driverMs": 1.5,
            "messages": {"streamed": rt.counts.messages.streamed, "batches": b + 1},
            "queries": {n: p.names() for n, p in rt.coordinator.parts.items() if p.names()},
            "unmatchedQueries": rt.coordinator.progress()["unmatchedQueries"],
        }
        events = [e["payload"] for e in rt.events()]
        out.append(BatchOutput(b, events, rejected, progress, answers))
    return out
