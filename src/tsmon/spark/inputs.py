"""The inputs of a Spark job: one streaming DataFrame per ``[input]`` kind.

:func:`raw_stream` gives the rows of a job's input as they come, with the mapping of
``series``, ``ts``, ``value`` (and ``source``) to its columns;
:func:`tsmon.spark.points.point_rows` then reads them (casts, dead-letter reasons).
Each kind, and why it is built the way it is (``docs/inputs.md`` shows the job files):

- ``files``: Spark's file source over a directory, one new file per micro-batch, its bytes read
  in the executors (:mod:`tsmon.spark.filerows`): columns as text (a Parquet file's numbers
  typed), so one bad value makes one dead letter, and one bad line or file makes dead letters,
  instead of a failed batch.
- ``socket``: Spark's socket source, one JSON object per line, parsed with ``from_json`` into
  text columns (a line that is not JSON has no series: a dead letter). Spark's socket source is
  **not fault tolerant**: lines received but not yet processed are lost when the job stops, and
  nothing is replayed after a restart. The job reads its input once, so it opens one
  connection.
- ``kafka``: Spark's Kafka source (the ``spark-sql-kafka-0-10`` package), message values as
  JSON lines like the socket. Replayable from Kafka's offsets, hence fault tolerant.
- ``generator``: :class:`~tsmon.spark.pysources.GeneratorSource`, a Python streaming data
  source over :class:`tsmon.streams.fleet.FleetStream` (hosts × metrics, one point per series
  per tick).
- ``replay``: :class:`~tsmon.spark.pysources.ReplaySource`, a recorded file offered in time
  order at a speed-up.

The two Python sources are deterministic, so Spark can replay a batch after a crash
(:mod:`tsmon.spark.pysources`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tsmon.spark.filerows import arrow_rows, schema
from tsmon.spark.input_spec import InputSpec
from tsmon.spark.job import JobError
from tsmon.spark.pysources import (
    COLUMN_ORDER,
    GeneratorSource,
    ReplaySource,
    read_recording,
    replay_roles,
)

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["raw_stream"]

#: Schema of Spark's ``binaryFile`` source (a stream must declare it).
BINARY_FILE_DDL = "path STRING, modificationTime TIMESTAMP, length BIGINT, content BINARY"


def raw_stream(
    spark: SparkSession, spec: InputSpec, cpu: Any = None
) -> tuple[DataFrame, dict[str, str]]:
    """The streaming DataFrame of a job's input and the column holding each of ``series``,
    ``ts``, ``value`` (and ``source`` when the rows carry one) in it.

    Raises :class:`JobError` for what the user can fix before the job runs: an unreadable
    recording or one without the mapped columns, a Kafka input without the Kafka connector
    on the classpath. ``cpu``: an accumulator the file reader adds its CPU time to
    (:class:`tsmon.spark.cpu.CpuTimes`).
    """
    if spec.kind == "files":
        return _files(spark, spec, cpu), dict(spec.columns)
    if spec.kind == "socket":
        lines = (
            spark.readStream.format("socket")
            .option("host", spec.host)
            .option("port", spec.port)
            .load()
        )
        return _json_columns(lines, lines["value"], spec.columns), dict(spec.columns)
    if spec.kind == "kafka":
        records = _kafka(spark, spec)
        text = records["value"].cast("string")
        return _json_columns(records, text, spec.columns), dict(spec.columns)
    if spec.kind == "generator":
        spark.dataSource.register(GeneratorSource)
        reader = spark.readStream.format(GeneratorSource.name())
        options = {
            "hosts": spec.sources,
            "metrics": spec.metrics,
            "step_ms": spec.step_ms,
            "start_ms": spec.start_ms,
            "seed": spec.seed,
            "speedup": repr(spec.speedup),
            "max_ticks_per_batch": spec.max_ticks_per_batch,
            "ticks": -1 if spec.ticks is None else spec.ticks,
        }
        frame = reader.options(**{k: str(v) for k, v in options.items()}).load()
        return frame, {c: c for c in COLUMN_ORDER}
    if spec.kind == "replay":
        if spec.path is None:
            raise JobError('[input] kind = "replay" needs path = "<file>"')
        path = Path(spec.path)
        read_recording(path, spec.format, spec.columns, spec.series, spec.ts_unit)  # errors now
        spark.dataSource.register(ReplaySource)
        options = {
            "path": str(path),
            "format": spec.format,
            "columns": json.dumps(dict(spec.columns)),
            "series": spec.series or "",
            "speedup": repr(spec.speedup),
            "ts_unit": spec.ts_unit,
        }
        frame = spark.readStream.format(ReplaySource.name()).options(**options).load()
        return frame, {c: c for c in replay_roles(spec.columns, spec.series)}
    raise JobError(f"[input] kind {spec.kind!r} is not an input kind")


def _files(spark: SparkSession, spec: InputSpec, cpu: Any) -> DataFrame:
    """A directory of CSV, JSON or Parquet files, one new file per micro-batch: each file is
    streamed as bytes and read by :func:`tsmon.spark.filerows.file_rows` in the executors
    (columns by name, bad lines and unreadable files as rows with a reason)."""
    names = list(dict.fromkeys(spec.columns[c] for c in COLUMN_ORDER if c in spec.columns))
    files = (
        spark.readStream.option("maxFilesPerTrigger", 1)
        .format("binaryFile")
        .schema(BINARY_FILE_DDL)
        .load(str(spec.path))
        .select("path", "content")
    )
    typed = spec.format == "parquet"
    text = {spec.columns.get(r) for r in ("series", "source")}  # always read as text
    roles = tuple(spec.columns[r] if spec.columns[r] not in text else None for r in ("ts", "value"))
    unit = spec.ts_unit
    reader = partial(arrow_rows, fmt=spec.format, names=names, cpu=cpu, typed=roles, ts_unit=unit)
    return files.mapInArrow(reader, schema(names, typed))


def _json_columns(frame: DataFrame, text: Column, columns: Mapping[str, str]) -> DataFrame:
    """``text`` (one JSON object per row) parsed into the mapped columns, all as text.

    Numbers become their text and are read by the runtime like CSV values; a row that is not
    a JSON object gives nulls (a dead letter with reason ``bad_series``), never an error.
    """
    from pyspark.sql import functions as F

    names = list(dict.fromkeys(columns[c] for c in COLUMN_ORDER if c in columns))
    schema = ", ".join(f"`{n}` STRING" for n in names)
    parsed = frame.select(F.from_json(text, schema).alias("json"))
    return parsed.select(*(F.col("json").getField(n).alias(n) for n in names))


def _kafka(spark: SparkSession, spec: InputSpec) -> DataFrame:
    """Kafka records of ``spec.topic``; a :class:`JobError` naming the package to add when
    the Kafka connector is not on the classpath."""
    from pyspark.errors import AnalysisException

    try:
        return (
            spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", spec.bootstrap)
            .option("subscribe", spec.topic)
            .option("startingOffsets", spec.starting_offsets)
            .load()
        )
    except AnalysisException as e:
        if e.getCondition() not in ("KAFKA_DATA_SOURCE_NOT_ENABLED", "DATA_SOURCE_NOT_FOUND"):
            raise
        # Spark 4 is built for Scala 2.13 only; the connector's version is Spark's own
        package = f"org.apache.spark:spark-sql-kafka-0-10_2.13:{spark.version}"
        raise JobError(
            f'[input] kind = "kafka": Spark {spark.version} has no Kafka connector on its '
            f'classpath; add spark.jars.packages = "{package}" to [job.spark_conf] (downloaded '
            "when the session starts; see docs/inputs.md)"
        ) from None


# -- the generator ---------------------------------------------------------------------------
