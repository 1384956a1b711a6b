"""The inputs of a Spark job: one streaming DataFrame per ``[input]`` kind.

:func:`raw_stream` gives the rows of a job's input as they come, with the mapping of
``series``, ``ts``, ``value`` (and ``source``) to its columns;
:func:`tsmon.spark.points.point_rows` then reads them (casts, dead-letter reasons).
Each kind, and why it is built the way it is (``docs/inputs.md`` shows the job files):

- ``files``: Spark's file source over a directory, one new file per micro-batch, its bytes read
  in the executors (:mod:`tsmon.spark.filerows`): columns as text, so one bad value makes one
  dead letter, and one bad line or file makes dead letters, instead of a failed batch.
- ``socket``: Spark's socket source, one JSON object per line, parsed with ``from_json`` into
  text columns (a line that is not JSON has no series: a dead letter). Spark's socket source is
  **not fault tolerant**: lines received but not yet processed are lost when the job stops, and
  nothing is replayed after a restart. The job reads its input once, so it opens one
  connection.
- ``kafka``: Spark's Kafka source (the ``spark-sql-kafka-0-10`` package), message values as
  JSON lines like the socket. Replayable from Kafka's offsets, hence fault tolerant.
- ``generator``: :class:`GeneratorSource`, a Python streaming data source over
  :class:`tsmon.streams.fleet.FleetStream` (hosts × metrics, one point per series per tick).
- ``replay``: :class:`ReplaySource`, a recorded file offered in time order at a speed-up.

The two Python sources are deterministic: a batch's rows depend only on its offsets, never on
the wall clock, so Spark can replay a batch after a crash (``readBetweenOffsets``) and get the
same rows. The wall clock only decides how far the offset moves at each trigger (pacing).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from pyspark.sql.datasource import DataSource, SimpleDataSourceStreamReader

from tsmon.spark.filerows import arrow_rows, json_object, json_text, schema, text_columns
from tsmon.spark.input_spec import InputSpec
from tsmon.spark.job import JobError

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = [
    "COLUMN_ORDER",
    "GENERATOR_COLUMNS",
    "GeneratorSource",
    "ReplaySource",
    "raw_stream",
    "read_recording",
    "replay_roles",
]

#: The roles in the order of a row's mapped columns (a column named twice, once).
COLUMN_ORDER = ("series", "source", "ts", "value")
#: Schema of Spark's ``binaryFile`` source (a stream must declare it).
BINARY_FILE_DDL = "path STRING, modificationTime TIMESTAMP, length BIGINT, content BINARY"
#: Schema of the generator's rows: typed already, with the host as the source.
GENERATOR_COLUMNS = "source STRING, series STRING, ts BIGINT, value DOUBLE"


def raw_stream(spark: SparkSession, spec: InputSpec) -> tuple[DataFrame, dict[str, str]]:
    """The streaming DataFrame of a job's input and the column holding each of ``series``,
    ``ts``, ``value`` (and ``source`` when the rows carry one) in it.

    Raises :class:`JobError` for what the user can fix before the job runs: an unreadable
    recording or one without the mapped columns, a Kafka input without the Kafka connector
    on the classpath.
    """
    if spec.kind == "files":
        return _files(spark, spec), dict(spec.columns)
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
        read_recording(path, spec.format, spec.columns, spec.series)  # errors before Spark
        spark.dataSource.register(ReplaySource)
        options = {
            "path": str(path),
            "format": spec.format,
            "columns": json.dumps(dict(spec.columns)),
            "series": spec.series or "",
            "speedup": repr(spec.speedup),
        }
        frame = spark.readStream.format(ReplaySource.name()).options(**options).load()
        return frame, {c: c for c in replay_roles(spec.columns, spec.series)}
    raise JobError(f"[input] kind {spec.kind!r} is not an input kind")


def _files(spark: SparkSession, spec: InputSpec) -> DataFrame:
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
    return files.mapInArrow(partial(arrow_rows, fmt=spec.format, names=names), schema(names))


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


class GeneratorSource(DataSource):
    """Streaming data source ``tsmon_generator``: a :class:`FleetStream` as rows of
    :data:`GENERATOR_COLUMNS`, one tick of every series at a time.

    Options (all strings, as Spark passes them): ``hosts``, ``metrics``, ``step_ms``,
    ``start_ms``, ``seed`` (the fleet), ``speedup`` (event time per wall time),
    ``max_ticks_per_batch`` and ``ticks`` (the number of ticks in all; ``-1``: endless).
    """

    @classmethod
    def name(cls) -> str:
        """The format name of ``spark.readStream.format(...)``."""
        return "tsmon_generator"

    def schema(self) -> str:
        """Typed rows with the host as the source."""
        return GENERATOR_COLUMNS

    def simpleStreamReader(self, schema: Any) -> GeneratorReader:
        """A reader offering ticks as wall time passes; offsets are ``{"tick": n}``."""
        return GeneratorReader(self.options)


class GeneratorReader(SimpleDataSourceStreamReader):
    """Offers ticks ``[a, b)`` per batch: ``b`` grows with wall time × speedup, capped.

    The clock starts with the reader (when the query starts), at the tick of the first
    :meth:`read` (tick 0 of a new job, the checkpointed tick after a restart): that tick is
    due at once, and each further one when another step of event time has passed at the
    speed-up. Rows depend only on the ticks, so :meth:`readBetweenOffsets` replays a batch
    exactly, in whatever process Spark runs it. ``clock`` (seconds) is for tests.
    """

    def __init__(
        self, options: Mapping[str, str], clock: Callable[[], float] = time.monotonic
    ) -> None:
        from tsmon.streams.fleet import FleetStream

        self.step_ms = int(options["step_ms"])
        self.speedup = float(options["speedup"])
        self.cap = int(options["max_ticks_per_batch"])
        ticks = int(options["ticks"])
        self.ticks = None if ticks < 0 else ticks
        self.fleet = FleetStream(
            hosts=int(options["hosts"]),
            metrics=int(options["metrics"]),
            step_ms=self.step_ms,
            start_ms=int(options["start_ms"]),
            seed=int(options["seed"]),
        )
        self._names = list(zip(self.fleet.sources(), self.fleet.series(), strict=True))
        self._clock = clock
        self._began = clock()
        self._first: int | None = None  # the tick of the first read

    def initialOffset(self) -> dict:
        """A new job starts at tick 0."""
        return {"tick": 0}

    def read(self, start: dict) -> tuple[Iterator[tuple], dict]:
        """The ticks due now from ``start``, at most ``max_ticks_per_batch`` of them."""
        a = int(start["tick"])
        if self._first is None:
            self._first = a
        elapsed_ms = (self._clock() - self._began) * 1000.0
        due = self._first + 1 + int(elapsed_ms * self.speedup // self.step_ms)
        b = min(due, a + self.cap)
        if self.ticks is not None:
            b = min(b, self.ticks)
        if b <= a:
            return iter(()), start
        return iter(self._rows(a, b)), {"tick": b}

    def readBetweenOffsets(self, start: dict, end: dict) -> Iterator[tuple]:
        """The rows of ticks ``[start, end)`` again (a batch replayed after a failure)."""
        return iter(self._rows(int(start["tick"]), int(end["tick"])))

    def _rows(self, a: int, b: int) -> list[tuple]:
        values = self.fleet.values(a, b).tolist()
        return [
            (source, series, ts, v)
            for ts, row in zip(self.fleet.ts(a, b).tolist(), values, strict=True)
            for (source, series), v in zip(self._names, row, strict=True)
        ]


# -- replay of a recorded file ---------------------------------------------------------------


def replay_roles(columns: Mapping[str, str], series: str | None) -> list[str]:
    """The fields of a replayed row, in the order of :data:`COLUMN_ORDER`: the mapped roles,
    and ``series`` when the job names the file's one series."""
    return [c for c in COLUMN_ORDER if c in columns or (c == "series" and series)]


def read_recording(
    path: Path, fmt: str, columns: Mapping[str, str], series: str | None = None
) -> list[tuple]:
    """A recorded file's rows as text, stably sorted by time.

    Every row is a tuple of text (or None) in the order of :func:`replay_roles`. ``columns``
    maps roles to the file's columns; ``series`` names the one series of a file without a
    series column (NAB's ``timestamp,value`` files), and then fills every row's series.

    Values stay text so the runtime reads them as it reads any input: an unreadable timestamp
    or value becomes a dead letter with its reason, not an error here. Rows are ordered by
    their timestamp (digits: epoch ms; else an ISO-8601 instant, UTC unless it has an
    offset), keeping file order among equal ones. A row whose timestamp cannot be read keeps
    its place after the row before it in the file (it sorts as if it had that row's time;
    before the first readable one, as the earliest), so it reaches the dead letters in the
    batch where the file had it.

    Raises :class:`JobError` if the file is missing, unreadable, or lacks a mapped column.
    """
    roles = replay_roles(columns, series)
    in_file = [r for r in roles if not (r == "series" and series)]
    where = f"[input] {path}"
    if not path.is_file():
        raise JobError(f"{where}: no such file; replay needs one recorded file")
    try:
        table = _read_text_columns(path, fmt, [columns[r] for r in in_file])
    except JobError:
        raise
    except Exception as e:  # the readers' many errors: a clear message instead
        raise JobError(f"{where}: cannot read it as {fmt} ({type(e).__name__}: {e})") from None
    ts = table[columns["ts"]]
    fields = [[series] * len(ts) if r not in in_file else table[columns[r]] for r in roles]
    order = np.argsort(_time_keys(ts), kind="stable")
    rows = list(zip(*fields, strict=True))
    return [rows[i] for i in order]


def _read_text_columns(path: Path, fmt: str, names: list[str]) -> dict[str, list[str | None]]:
    """The named columns of a CSV, JSON-lines or Parquet file, every value as text or None."""
    wanted = list(dict.fromkeys(names))
    if fmt == "json":
        out: dict[str, list[str | None]] = {n: [] for n in wanted}
        seen: set[str] = set()  # keys of any record: a mapped key in none is a mistake
        with path.open(encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    continue
                record = json_object(line) or {}
                seen.update(record)
                for n in wanted:
                    out[n].append(json_text(record.get(n)))
        if seen:
            _require(path, wanted, sorted(seen))
        return out
    if fmt == "csv":
        import pandas as pd

        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        _require(path, wanted, list(frame.columns))
        return {n: frame[n].tolist() for n in wanted}
    import pyarrow.parquet as pq

    available = pq.read_schema(path).names
    _require(path, wanted, available)
    return text_columns(pq.read_table(path, columns=wanted), wanted)


def _require(path: Path, wanted: list[str], available: list[str]) -> None:
    missing = [n for n in wanted if n not in available]
    if missing:
        raise JobError(
            f"[input] {path}: no column {missing[0]!r}; it has {available}. Map the file's "
            'columns in [input.columns], or name its one series with [input] series = "..."'
        )


def _time_keys(ts: list[str | None]) -> np.ndarray:
    """Sort keys (epoch ms, float) of timestamps as the runtime reads them; an unreadable one
    takes the key of the row before it (the earliest key before the first readable one)."""
    import pandas as pd

    text = pd.Series(ts, dtype=object)
    digits = text.str.fullmatch(r"-?\d+", na=False).astype(bool)
    keys = pd.Series(np.nan, index=text.index)
    keys[digits] = text[digits].astype(float)
    iso = ~digits & text.notna()
    if iso.any():
        instants = pd.to_datetime(text[iso], utc=True, format="ISO8601", errors="coerce")
        keys[iso] = (instants - pd.Timestamp(0, tz="UTC")) / pd.Timedelta(milliseconds=1)
    keys = keys.ffill()
    return keys.fillna(keys.min() if keys.notna().any() else 0.0).to_numpy()


class ReplaySource(DataSource):
    """Streaming data source ``tsmon_replay``: a recorded file in time order, paced.

    Options: ``path``, ``format``, ``columns`` (JSON: role → file column), ``series`` (the one
    series of the file, or empty) and ``speedup`` (event time per wall time). Rows are text in
    the roles' order (see :func:`read_recording`); offsets are ``{"row": n}``, the index of the
    next row in the sorted recording.
    """

    @classmethod
    def name(cls) -> str:
        """The format name of ``spark.readStream.format(...)``."""
        return "tsmon_replay"

    def schema(self) -> str:
        """Every role as a text column named after it."""
        roles = replay_roles(json.loads(self.options["columns"]), self.options.get("series"))
        return ", ".join(f"{role} STRING" for role in roles)

    def simpleStreamReader(self, schema: Any) -> ReplayReader:
        """A reader over the sorted recording; offsets are ``{"row": n}``."""
        return ReplayReader(self.options)


class ReplayReader(SimpleDataSourceStreamReader):
    """Offers the rows whose time is at most ``t0 + elapsed × speedup``.

    ``t0`` is the time of the row at the first :meth:`read` (row 0 of a new job, the
    checkpointed row after a restart) and ``elapsed`` the wall time since the reader started
    (with the query). The recording is read and sorted once, when the reader starts.
    ``clock`` (seconds) is for tests.
    """

    def __init__(
        self, options: Mapping[str, str], clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.speedup = float(options["speedup"])
        columns = json.loads(options["columns"])
        series = options.get("series") or None
        self.rows = read_recording(Path(options["path"]), options["format"], columns, series)
        ts = replay_roles(columns, series).index("ts")
        # nondecreasing: an unreadable timestamp sorted after a row with the key it takes
        self.keys = _time_keys([r[ts] for r in self.rows])
        self._clock = clock
        self._began = clock()
        self._first: float | None = None  # the time of the row at the first read

    def initialOffset(self) -> dict:
        """A new job starts at the first row."""
        return {"row": 0}

    def read(self, start: dict) -> tuple[Iterator[tuple], dict]:
        """The rows from ``start`` that are due now."""
        a = int(start["row"])
        if a >= len(self.rows):
            return iter(()), start
        if self._first is None:
            self._first = float(self.keys[a])
        due = self._first + (self._clock() - self._began) * 1000.0 * self.speedup
        b = max(a, int(np.searchsorted(self.keys, due, side="right")))
        if b == a:
            return iter(()), start
        return iter(self.rows[a:b]), {"row": b}

    def readBetweenOffsets(self, start: dict, end: dict) -> Iterator[tuple]:
        """The rows ``[start, end)`` again (a batch replayed after a failure)."""
        return iter(self.rows[int(start["row"]) : int(end["row"])])
