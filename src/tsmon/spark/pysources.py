"""tsmon's two Python streaming data sources (``pyspark.sql.datasource``): the generated fleet
(:class:`GeneratorSource`) and a recorded file replayed in time order (:class:`ReplaySource`).

Both are deterministic: a batch's rows depend only on its offsets, never on the wall clock, so
Spark can replay a batch after a crash (the generator's ``partitions`` and ``read``, the
replay's ``readBetweenOffsets``) and get the same rows. The wall clock only decides how far the
offset moves at each trigger (pacing).
"""

from __future__ import annotations

import inspect
import itertools
import json
import time
from collections.abc import Callable, Iterator, Mapping
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from pyspark.errors import PySparkNotImplementedError
from pyspark.sql.datasource import (
    DataSource,
    DataSourceStreamReader,
    InputPartition,
    SimpleDataSourceStreamReader,
)

# light imports only: Spark's Python processes that load these sources (the data source's
# lookup, its read planning, the streaming source runner) import this module each
from tsmon.spark.toml_checks import JobError

if TYPE_CHECKING:  # pragma: no cover - typing only
    from tsmon.streams.fleet import FleetStream

__all__ = [
    "COLUMN_ORDER",
    "GENERATOR_COLUMNS",
    "PARTITIONS",
    "GeneratorReader",
    "GeneratorSource",
    "ReplayReader",
    "ReplaySource",
    "SimpleGeneratorReader",
    "read_recording",
    "replay_roles",
]

#: The roles in the order of a row's mapped columns (a column named twice, once).
COLUMN_ORDER = ("series", "source", "ts", "value")
#: Schema of the generator's rows: typed already, with the host as the source.
GENERATOR_COLUMNS = "source STRING, series STRING, ts BIGINT, value DOUBLE"
#: Tick ranges per generated batch: one per core of a ``local[2]`` session, read in parallel.
PARTITIONS = 2
#: Whether Spark gives stream readers their start offset (``latestOffset(start, limit)``,
#: pyspark 4.2); before, :class:`GeneratorSource` falls back to :class:`SimpleGeneratorReader`.
_ADMISSION_CONTROL = "start" in inspect.signature(DataSourceStreamReader.latestOffset).parameters


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

    def streamReader(self, schema: Any) -> GeneratorReader:
        """A reader offering ticks as wall time passes; offsets are ``{"tick": n}``. A pyspark
        whose stream readers get no start offset (before 4.2) falls back to
        :meth:`simpleStreamReader` on this error."""
        if not _ADMISSION_CONTROL:
            raise PySparkNotImplementedError(
                errorClass="NOT_IMPLEMENTED", messageParameters={"feature": "streamReader"}
            )
        return GeneratorReader(self.options)

    def simpleStreamReader(self, schema: Any) -> SimpleGeneratorReader:
        """The same ticks through the driver, for a pyspark before 4.2."""
        return SimpleGeneratorReader(GeneratorReader(self.options))


class TickRange(InputPartition):
    """Ticks ``[a, b)`` of a batch with the fleet's :meth:`~FleetStream.position` before
    ``a``: an executor computes their rows without walking from tick 0."""

    def __init__(self, a: int, b: int, walk: np.ndarray, burst: np.ndarray) -> None:
        self.a, self.b, self.walk, self.burst = a, b, walk, burst


class GeneratorReader(DataSourceStreamReader):
    """Offers ticks ``[a, b)`` per batch: ``b`` grows with wall time × speedup, capped.

    The clock starts with the reader (when the query starts), at the tick of the first
    :meth:`latestOffset` (tick 0 of a new job, the checkpointed tick after a restart): that
    tick is due at once, and each further one when another step of event time has passed at
    the speed-up. The cap holds whatever read limit Spark passes (it is the pacing, not a
    limit of what is available). Rows depend only on the ticks: the driver's reader plans a
    batch as :data:`PARTITIONS` tick ranges (:class:`TickRange`), each carrying the fleet's
    position, and executor tasks :meth:`read` them as Arrow batches (no row passes through
    the planning reader or Spark's block manager), so a batch replayed in any process gets
    the same rows. ``clock`` (seconds) is for tests.
    """

    def __init__(
        self, options: Mapping[str, str], clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.options = dict(options)
        self.step_ms = int(options["step_ms"])
        self.speedup = float(options["speedup"])
        self.cap = int(options["max_ticks_per_batch"])
        ticks = int(options["ticks"])
        self.ticks = None if ticks < 0 else ticks
        self._clock = clock
        self._began = clock()
        self._first: int | None = None  # the tick of the first latestOffset

    @cached_property
    def fleet(self) -> FleetStream:
        """The fleet, built where it is first used: Spark pickles the reader into every read
        task before it has one."""
        from tsmon.streams.fleet import FleetStream

        o = self.options
        return FleetStream(
            hosts=int(o["hosts"]),
            metrics=int(o["metrics"]),
            step_ms=self.step_ms,
            start_ms=int(o["start_ms"]),
            seed=int(o["seed"]),
        )

    def initialOffset(self) -> dict:
        """A new job starts at tick 0."""
        return {"tick": 0}

    def latestOffset(self, start: dict, limit: Any) -> dict:
        """The end of the ticks due now from ``start``, at most ``max_ticks_per_batch``."""
        a = int(start["tick"])
        if self._first is None:
            self._first = a
        elapsed_ms = (self._clock() - self._began) * 1000.0
        due = self._first + 1 + int(elapsed_ms * self.speedup // self.step_ms)
        b = min(due, a + self.cap)
        if self.ticks is not None:
            b = min(b, self.ticks)
        return {"tick": max(a, b)}

    def partitions(self, start: dict, end: dict) -> list[TickRange]:
        """Ticks ``[start, end)`` cut into at most :data:`PARTITIONS` ranges."""
        a, b = int(start["tick"]), int(end["tick"])
        n = min(PARTITIONS, b - a)
        edges = [a + (b - a) * i // n for i in range(n + 1)] if n > 0 else []
        return [TickRange(x, y, *self.fleet.position(x)) for x, y in itertools.pairwise(edges)]

    def read(self, partition: TickRange) -> Iterator[Any]:  # type: ignore[override]
        """The range's rows as one Arrow record batch of :data:`GENERATOR_COLUMNS`."""
        import pyarrow as pa

        a, b = partition.a, partition.b
        self.fleet.resume(a, partition.walk, partition.burst)
        k = len(self.fleet.series())
        which = pa.array(np.tile(np.arange(k, dtype=np.int32), b - a))
        columns = [
            pa.array(self.fleet.sources(), pa.string()).take(which),
            pa.array(self.fleet.series(), pa.string()).take(which),
            pa.array(np.repeat(self.fleet.ts(a, b), k)),
            pa.array(self.fleet.values(a, b).reshape(-1)),
        ]
        yield pa.RecordBatch.from_arrays(columns, schema=_arrow_schema())


class SimpleGeneratorReader(SimpleDataSourceStreamReader):
    """:class:`GeneratorReader`'s ticks, paced alike, as rows through the driver: for a
    pyspark whose stream readers are not told where a batch starts (before 4.2), since a
    restarted job's reader must pace from the checkpointed tick."""

    def __init__(self, paced: GeneratorReader) -> None:
        self.paced = paced

    def initialOffset(self) -> dict:
        return self.paced.initialOffset()

    def read(self, start: dict) -> tuple[Iterator[tuple], dict]:
        """The ticks due now from ``start``, at most ``max_ticks_per_batch`` of them."""
        end = self.paced.latestOffset(start, None)
        return self.readBetweenOffsets(start, end), end

    def readBetweenOffsets(self, start: dict, end: dict) -> Iterator[tuple]:
        """The rows of ticks ``[start, end)`` (again, for a batch replayed after a failure)."""
        rows = self.paced.fleet.points(int(start["tick"]), int(end["tick"]))
        return rows.itertuples(index=False, name=None)


def _arrow_schema() -> Any:
    """The Arrow schema Spark expects for :data:`GENERATOR_COLUMNS` (nullable fields)."""
    import pyarrow as pa

    return pa.schema(
        [
            ("source", pa.string()),
            ("series", pa.string()),
            ("ts", pa.int64()),
            ("value", pa.float64()),
        ]
    )


# -- replay of a recorded file ---------------------------------------------------------------


def replay_roles(columns: Mapping[str, str], series: str | None) -> list[str]:
    """The fields of a replayed row, in the order of :data:`COLUMN_ORDER`: the mapped roles,
    and ``series`` when the job names the file's one series."""
    return [c for c in COLUMN_ORDER if c in columns or (c == "series" and series)]


def read_recording(
    path: Path,
    fmt: str,
    columns: Mapping[str, str],
    series: str | None = None,
    ts_unit: str = "ms",
) -> list[tuple]:
    """A recorded file's rows as text, stably sorted by time.

    Every row is a tuple of text (or None) in the order of :func:`replay_roles`. ``columns``
    maps roles to the file's columns; ``series`` names the one series of a file without a
    series column (NAB's ``timestamp,value`` files), and then fills every row's series.

    Values stay text so the runtime reads them as it reads any input: an unreadable timestamp
    or value becomes a dead letter with its reason, not an error here. Rows are ordered by
    their timestamp (digits: an epoch number in ``ts_unit``; else an ISO-8601 instant, UTC
    unless it has an offset), keeping file order among equal ones. A row whose timestamp
    cannot be read keeps its place after the row before it in the file (it sorts as if it
    had that row's time; before the first readable one, as the earliest), so it reaches the
    dead letters in the batch where the file had it.

    Raises :class:`JobError` if the file is missing, unreadable, or lacks a mapped column.
    """
    roles = replay_roles(columns, series)
    in_file = [r for r in roles if not (r == "series" and series)]
    where = f"[input] {path}"
    if not path.is_file():
        raise JobError(f"{where}: no such file; replay needs one recorded file")
    try:
        table = _read_text_columns(path, fmt, [columns[r] for r in in_file], ts_unit)
    except JobError:
        raise
    except Exception as e:  # the readers' many errors: a clear message instead
        raise JobError(f"{where}: cannot read it as {fmt} ({type(e).__name__}: {e})") from None
    ts = table[columns["ts"]]
    fields = [[series] * len(ts) if r not in in_file else table[columns[r]] for r in roles]
    order = np.argsort(_time_keys(ts, ts_unit), kind="stable")
    rows = list(zip(*fields, strict=True))
    return [rows[i] for i in order]


def _read_text_columns(
    path: Path, fmt: str, names: list[str], ts_unit: str
) -> dict[str, list[str | None]]:
    """The named columns of a CSV, JSON-lines or Parquet file, every value as text or None
    (a Parquet instant as :func:`~tsmon.spark.filerows.text_arrays` writes it for ``ts_unit``)."""
    from tsmon.spark.filerows import json_object, json_text, text_columns

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
    return text_columns(pq.read_table(path, columns=wanted), wanted, ts_unit)


def _require(path: Path, wanted: list[str], available: list[str]) -> None:
    missing = [n for n in wanted if n not in available]
    if missing:
        raise JobError(
            f"[input] {path}: no column {missing[0]!r}; it has {available}. Map the file's "
            'columns in [input.columns], or name its one series with [input] series = "..."'
        )


def _time_keys(ts: list[str | None], ts_unit: str = "ms") -> np.ndarray:
    """Sort keys (epoch ms, float) of timestamps as the runtime reads them (digits and
    decimals: epoch numbers in ``ts_unit``, read by
    :func:`~tsmon.core.timestamps.read_epoch_ms`); an unreadable one takes the key of the row
    before it (the earliest key before the first readable one)."""
    import pandas as pd

    from tsmon.core.timestamps import EPOCH_NUMBER_TEXT, read_epoch_ms

    text = pd.Series(ts, dtype=object)
    digits = text.str.fullmatch(EPOCH_NUMBER_TEXT, na=False).astype(bool)  # as the runtime
    keys = pd.Series(np.nan, index=text.index)
    millis, read = read_epoch_ms(text[digits].to_numpy(dtype=object), ts_unit)
    keys[digits] = np.where(read, millis, np.nan)  # exact ms; beyond int64: unreadable
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
        unit = options.get("ts_unit", "ms")
        path, fmt = Path(options["path"]), options["format"]
        self.rows = read_recording(path, fmt, columns, series, unit)
        ts = replay_roles(columns, series).index("ts")
        # nondecreasing: an unreadable timestamp sorted after a row with the key it takes
        self.keys = _time_keys([r[ts] for r in self.rows], unit)
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
