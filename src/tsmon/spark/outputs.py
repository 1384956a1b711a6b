"""The PySpark API's outputs: each batch's answers, events and dead letters as Spark DataFrames.

After every micro-batch the driver hands each output a DataFrame of that batch (possibly
empty) and the batch id, the way ``foreachBatch`` does. An output is either a function
``f(df, batch_id)`` of the user's, or a spec ``"<format>:<path>"`` (any ``DataFrameWriter``
format: ``parquet``, ``json``, ``csv``, ``orc``, ``delta`` ...), which writes a non-empty batch
to ``<path>/batch_id=<N>/`` in overwrite mode: a batch Spark replays after a crash replaces its
directory, and ``spark.read.parquet(path)`` (or ``pandas.read_parquet``) reads every batch back
with ``batch_id`` as the partition column. Schemas (times in UTC; ``*_utc`` beside each
epoch-ms column)::

    answers       batch_id BIGINT, part STRING, query STRING, value DOUBLE, lo DOUBLE,
                  hi DOUBLE, as_of_ms BIGINT, as_of_utc TIMESTAMP, answer STRING
    events        batch_id BIGINT, query STRING, series STRING, ts_ms BIGINT,
                  ts_utc TIMESTAMP, value DOUBLE, payload STRING, coverage DOUBLE,
                  replayed BOOLEAN
    dead_letters  batch_id BIGINT, source STRING, series STRING, ts BIGINT, ts_utc TIMESTAMP,
                  value DOUBLE, raw_ts STRING, raw_value STRING, reason STRING, detail STRING

``answers`` holds the answers that arrived in the batch, of every part (:data:`tsmon.kinds.PARTS`:
``bounded`` with its bounds ``[lo, hi]`` as of ``as_of_ms``; ``topk``, ``standing``, ``local``
for summary queries), ``answer`` being the whole answer as JSON (``value``, ``lo``, ``hi``,
``as_of_ms`` are null where a kind's answer has no such field). ``payload`` is an event's
output columns as JSON.
"""

from __future__ import annotations

import inspect
import json
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from tsmon import kinds
from tsmon.core.timestamps import MAX_INSTANT_MS, MIN_INSTANT_MS
from tsmon.spark.job import JobError
from tsmon.spark.sinks import DEAD_LETTER_COLUMNS, BatchOutput, event_rows, with_utc

__all__ = ["SCHEMAS", "Output", "Outputs", "answer_rows", "answers_frame", "output"]

#: ``f(df, batch_id)``: what an output is called with after every batch.
Output = Callable[[Any, int], None]
#: Each output's columns (without the ``*_utc`` ones, added from the epoch-ms ones).
SCHEMAS = {
    "answers": "batch_id BIGINT, part STRING, query STRING, value DOUBLE, lo DOUBLE, hi DOUBLE, "
    "as_of_ms BIGINT, answer STRING",
    "events": "batch_id BIGINT, query STRING, series STRING, ts_ms BIGINT, value DOUBLE, "
    "payload STRING, coverage DOUBLE, replayed BOOLEAN",
    "dead_letters": "batch_id BIGINT, source STRING, series STRING, ts BIGINT, value DOUBLE, "
    "raw_ts STRING, raw_value STRING, reason STRING, detail STRING",
}
#: The epoch-ms column of each output that gets a UTC timestamp twin.
_MILLIS = {"answers": "as_of_ms", "events": "ts_ms", "dead_letters": "ts"}
_NUMBERS = ("value", "lo", "hi")
_SPEC = re.compile(r"([A-Za-z][\w.]*):(.+)")


def output(target: str | Output | None, name: str) -> Output | None:
    """The output function of ``target``: a function as is, a ``"<format>:<path>"`` spec as
    a writer; a :class:`JobError` for anything else (before the query starts)."""
    if target is None:
        return None
    if callable(target):
        _check_call(target, name)
        return target
    match = _SPEC.fullmatch(target) if isinstance(target, str) else None
    if match is None:
        raise JobError(
            f"{name}: give a function f(df, batch_id) or a '<format>:<path>' spec such as "
            f"'parquet:out/{name}', got {target!r}"
        )
    return _Spec(*match.groups())


def _check_call(function: Output, name: str) -> None:
    """A :class:`JobError` if ``function`` cannot be called as ``f(df, batch_id)`` (a function
    whose signature Python cannot read, a builtin's, is taken as it is). A decorated
    function's own signature, not the one ``functools.wraps`` points to: a decorator may
    supply arguments."""
    try:
        signature = inspect.signature(function, follow_wrapped=False)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(None, 0)
    except TypeError as e:
        raise JobError(
            f"{name}: {getattr(function, '__qualname__', function)!s} must take (df, batch_id), "
            f"as foreachBatch calls it: {e}"
        ) from None


@dataclass(frozen=True)
class _Spec:
    """A ``"<format>:<path>"`` output: one batch into ``<path>/batch_id=<N>/``, replaced if
    the batch is replayed."""

    fmt: str
    path: str

    def __call__(self, df: Any, batch_id: int) -> None:
        if not df.isEmpty():
            target = f"{self.path.rstrip('/')}/batch_id={batch_id}"
            df.drop("batch_id").write.mode("overwrite").format(self.fmt).save(target)

    def __str__(self) -> str:
        return f"'{self.fmt}:{self.path}'"


def answer_rows(batch_id: int, answers: Mapping[str, Sequence[tuple[str, Any]]]) -> list[tuple]:
    """``answers`` (part → ``(query, answer)`` pairs) as rows of the ``answers`` schema."""
    rows = []
    for part in (p for p in kinds.PARTS if p.sink is not None):  # the parts that answer
        for query, answer in answers.get(part.name, ()):
            fields = asdict(answer)
            rows.append(
                (
                    batch_id,
                    part.name,
                    query,
                    *(fields.get(f) for f in _NUMBERS),
                    fields.get("as_of_ms"),
                    json.dumps(fields, sort_keys=True, default=str),
                )
            )
    return rows


def answers_frame(batch_id: int, answers: Mapping[str, Sequence[tuple[str, Any]]]) -> pd.DataFrame:
    """:func:`answer_rows` as a pandas frame (``run.answers()``)."""
    frame = pd.DataFrame(answer_rows(batch_id, answers), columns=_columns("answers"))
    return with_utc(frame)


def _columns(name: str) -> list[str]:
    return [c.split()[0] for c in SCHEMAS[name].split(", ")]


class Outputs:
    """The API's outputs as a :class:`~tsmon.spark.sinks.Sinks` subscriber: each batch's
    frames, made only for the outputs given, handed to them in the order answers, events,
    dead letters."""

    def __init__(self, spark: Any, targets: Mapping[str, Output | None]) -> None:
        self.spark = spark
        self.targets = {name: f for name, f in targets.items() if f is not None}

    def __call__(self, out: BatchOutput) -> None:
        """Hand batch ``out`` to every output."""
        rows = {
            "answers": lambda: answer_rows(out.batch_id, out.arrived),
            "events": lambda: event_rows(out),
            "dead_letters": lambda: [
                (out.batch_id, *(r[c] for c in DEAD_LETTER_COLUMNS)) for r in out.rejected
            ],
        }
        for name, target in self.targets.items():
            frame = self.frame(name, rows[name]())
            try:
                target(frame, out.batch_id)
            except Exception:  # the query fails with it; say which output, and what restarts
                print(
                    f"tsmon: the {name} output {_name(target)} failed on batch {out.batch_id}; "
                    "the query stops: fix it and start again on the checkpoint, which replays "
                    "this batch",
                    file=sys.stderr,
                )
                raise

    def frame(self, name: str, rows: list[tuple]) -> Any:
        """``rows`` as a Spark DataFrame of output ``name``'s schema, with its UTC column."""
        from pyspark.sql import functions as F

        columns = _columns(name)
        types = [c.split()[1] for c in SCHEMAS[name].split(", ")]
        records = [tuple(_typed(v, t) for v, t in zip(row, types, strict=True)) for row in rows]
        df = self.spark.createDataFrame(records, SCHEMAS[name])
        millis = _MILLIS[name]
        # null outside the instants tsmon reads, as with_utc (a bad_timestamp of the year
        # 33658 overflows a Python datetime; of 10**17 ms, Spark's TIMESTAMP)
        instant = F.col(millis).between(MIN_INSTANT_MS, MAX_INSTANT_MS)
        twin = F.when(instant, F.timestamp_millis(millis))
        twin = twin.alias(f"{millis.removesuffix('_ms')}_utc")
        at = columns.index(millis) + 1
        return df.select(*columns[:at], twin, *columns[at:])


def _name(target: Output) -> str:
    """A function's name, or a spec as it was given."""
    return getattr(target, "__qualname__", None) or str(target)


def _typed(value: Any, kind: str) -> Any:
    """``value`` as Spark's ``kind`` takes it (numpy scalars, ints for doubles); None stays."""
    if value is None:
        return None
    if kind == "BIGINT":
        return int(value)
    if kind == "DOUBLE":
        return float(value)
    if kind == "BOOLEAN":
        return bool(value)
    return value
