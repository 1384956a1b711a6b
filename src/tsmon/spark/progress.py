"""Progress records of a job: Spark's own per batch (``spark_progress.jsonl``, from a
listener) and tsmon's (``progress.jsonl``, one line per batch, replaced on a replay)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tsmon.core.timestamps import format_instant_ms
from tsmon.spark.files import atomic_write

__all__ = ["SparkProgress", "append_progress", "utc_times"]

#: Event-time fields of a progress record (epoch ms), each written beside as ``<name>Utc``.
EVENT_TIME_FIELDS = ("watermark",)


def utc_times(record: Mapping[str, Any], now: datetime | None = None) -> dict[str, str | None]:
    """The readable times of a progress record: ``wallClockUtc`` (when the batch was written,
    to the millisecond) and ``<name>Utc`` beside each event-time field (None while it is).

    Examples
    --------
    >>> utc_times({"watermark": 1704067200000}, datetime(2026, 1, 2, 3, 4, 5, 600000, timezone.utc))
    {'wallClockUtc': '2026-01-02T03:04:05.600Z', 'watermarkUtc': '2024-01-01T00:00:00Z'}
    """
    now = now or datetime.now(timezone.utc)
    out: dict[str, str | None] = {"wallClockUtc": now.isoformat(timespec="milliseconds")[:-6] + "Z"}
    for name in EVENT_TIME_FIELDS:
        if name in record:
            millis = record[name]
            out[f"{name}Utc"] = None if millis is None else format_instant_ms(int(millis))
    return out


class SparkProgress:
    """Spark's own progress of every batch (``StreamingQueryProgress`` as JSON: ``batchId``,
    ``durationMs``, ``numInputRows``, ``processedRowsPerSecond``, ...), appended to a JSON-lines
    file by a streaming query listener on the driver. It complements ``progress.jsonl``, which
    is written inside the batch and so cannot know the batch's own duration.

    The listener asks the JVM for each progress's JSON only (:class:`_JsonListener`): pyspark's
    ``StreamingQueryListener`` builds a Python ``StreamingQueryProgress`` field by field first,
    hundreds of py4j calls per batch that the JVM's listener thread serves (~0.15 s of CPU per
    ``bench_spark.py`` batch, its RocksDB state store reporting ~40 metrics)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.last_duration_ms: int | None = None
        self.query_id: str | None = None  # set once the job's query has started
        self._listener: Any = None
        self._spark: Any = None

    def attach(self, spark: Any) -> None:
        """Start listening to ``spark``'s streaming queries."""
        from pyspark.java_gateway import ensure_callback_server_started

        ensure_callback_server_started(spark.sparkContext._gateway)
        streaming = spark.sparkContext._jvm.org.apache.spark.sql.streaming
        self._listener = streaming.PythonStreamingQueryListenerWrapper(_JsonListener(self))
        self._spark = spark
        spark._jsparkSession.streams().addListener(self._listener)

    def offer(self, progress_json: str) -> None:
        """Record a progress if it is of the job's query."""
        progress = json.loads(progress_json)
        if progress.get("id") == self.query_id:
            self.record(progress)

    def record(self, progress: Mapping[str, Any]) -> None:
        """Append one progress record and keep its total duration."""
        duration = progress.get("durationMs", {}).get("triggerExecution")
        self.last_duration_ms = None if duration is None else int(duration)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(progress, sort_keys=True) + "\n")

    def detach(self) -> None:
        """Stop listening."""
        if self._listener is not None:
            self._spark._jsparkSession.streams().removeListener(self._listener)
            self._listener = None


class _JsonListener:
    """The Python side of Spark's ``PythonStreamingQueryListener`` (called through py4j):
    passes each progress's JSON to a :class:`SparkProgress`, two py4j calls per batch."""

    def __init__(self, log: SparkProgress) -> None:
        self.log = log

    def onQueryStarted(self, jevent: Any) -> None:
        """Nothing to record."""

    def onQueryProgress(self, jevent: Any) -> None:
        self.log.offer(jevent.progress().json())

    def onQueryIdle(self, jevent: Any) -> None:
        """Nothing to record."""

    def onQueryTerminated(self, jevent: Any) -> None:
        """Nothing to record."""

    class Java:
        implements = ("org.apache.spark.sql.streaming.PythonStreamingQueryListener",)


def append_progress(path: Path, record: Mapping[str, Any], last: int | None) -> None:
    """Append a batch's progress line; a replayed batch replaces its line and any later one.

    ``last`` is the batch this process wrote last: the file is only read when it may hold a
    line to replace (the first batch after a start, or a replay).
    """
    if last is None or record["batchId"] <= last:
        lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
        kept = [line for line in lines if json.loads(line)["batchId"] < record["batchId"]]
        if len(kept) != len(lines):
            atomic_write(path, "".join(line + "\n" for line in kept))
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(record, sort_keys=True) + "\n")
