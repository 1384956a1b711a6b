"""Any streaming DataFrame as points: the column mapping checked, rows read, bad ones labelled.

:func:`point_rows` turns a DataFrame and its mapping of ``series``, ``ts``, ``value`` (and
``source``) to columns into rows ``source, series, ts, value, seq`` with a dead-letter
``reason`` (null for a good row) and the text the row had (``raw_ts``, ``raw_value``). It is
the one reading of input rows: the job file's inputs (:mod:`tsmon.spark.inputs`) and the
PySpark API (:mod:`tsmon.spark.api`) both go through it. :func:`check_columns` refuses a
mapping that cannot work with one line, before a query starts.

Column types read:

- ``series``, ``source``: text;
- ``ts``: a Spark ``TIMESTAMP``, an integer epoch number, or text (digits: an epoch number;
  a decimal with a point or an exponent: an epoch number floored to the ms; else an ISO-8601
  time, read by ``try_to_timestamp``); epoch numbers are in ``ts_unit`` (ms by default). A
  ``DOUBLE`` is refused: Java's text of a double is not always Python's, which in-process
  reads;
- ``value``: any number type, or text (``try_cast`` to double);
- a files input's Parquet rows carry ``ts`` and ``value`` typed beside the text columns
  (:data:`~tsmon.spark.filerows.TYPED_TS`, :data:`~tsmon.spark.filerows.TYPED_VALUE`): a
  row has one of the two, the typed one when its file holds numbers.

Text is read with ``try_*`` casts: Spark 4 runs in ANSI mode, where a bad cast fails the query.
The text a dead letter shows (``raw_ts``, ``raw_value``, ``detail``) is made only for rows
with a reason: good rows cost no text (a typed number's text is Spark's cast to string).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from itertools import chain
from typing import TYPE_CHECKING

from tsmon.core.moments import MAX_ABS_VALUE
from tsmon.core.timestamps import (
    EPOCH_DECIMAL_PLACES,
    EPOCH_MS_TEXT,
    EPOCH_NUMBER_TEXT,
    MAX_INSTANT_MS,
    MIN_INSTANT_MS,
    OUTSIDE_INSTANTS,
    TRIMMED,
    epoch_unit,
)
from tsmon.engine.deadletters import Reason
from tsmon.engine.points import (
    BAD_SERIES,
    BAD_VALUE,
    NUMBER_TEXT,
    UNREADABLE_TIMESTAMP,
    VALUE_HINTS,
)
from tsmon.kinds import PARTS
from tsmon.query.patterns import is_glob
from tsmon.spark.filerows import TYPED_TS, TYPED_VALUE, file_origin
from tsmon.spark.job import JobError

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pyspark.sql import Column, DataFrame

__all__ = ["ROLES", "check_columns", "point_rows", "source_expr"]

#: The roles a column can play; ``source`` is optional.
ROLES = ("series", "ts", "value", "source")
#: Node keys a data source may not have (they belong to a part's own nodes).
RESERVED_PREFIXES = tuple(p.reserved_prefix for p in PARTS if p.reserved_prefix is not None)
_INTEGERS = ("tinyint", "smallint", "int", "bigint")
_NUMBERS = (*_INTEGERS, "float", "double")
#: What each role reads (the ``simpleString`` of a Spark type; decimals are numbers too).
_ACCEPTED = {
    "series": ("string",),
    "source": ("string",),
    "ts": ("string", "timestamp", *_INTEGERS),
    "value": ("string", *_NUMBERS),
}
_WANTED = {
    "series": "a string",
    "source": "a string",
    "ts": "a timestamp, integer epoch numbers (ms, or ts_unit) or a string",
    "value": "a number or a string",
}


def check_columns(df: DataFrame, columns: Mapping[str, str] | None) -> dict[str, str]:
    """The role → column mapping of ``df`` (``series``, ``ts``, ``value`` default to
    same-named columns), or a :class:`JobError` saying in one line what is wrong: not a
    streaming DataFrame, an unknown role, a column ``df`` lacks, a column of a type the role
    cannot read."""
    if not getattr(df, "isStreaming", False):
        raise JobError(
            "give a streaming DataFrame (spark.readStream...), got "
            f"{'a batch DataFrame' if hasattr(df, 'isStreaming') else type(df).__name__}"
        )
    given = dict(columns or {})
    unknown = sorted(set(given) - set(ROLES))
    if unknown:
        raise JobError(f"columns: unknown role {unknown[0]!r}; the roles are {list(ROLES)}")
    mapping = {role: given.get(role, role) for role in ROLES if role != "source" or role in given}
    types = dict(df.dtypes)
    for role, column in mapping.items():
        if not isinstance(column, str) or not column:
            raise JobError(f"columns: {role} must name a column, got {column!r}")
        if column not in types:
            raise JobError(
                f"columns: {role} is column {column!r}, which the DataFrame does not have; "
                f"it has {sorted(types)}"
            )
        kind = types[column]
        if not (kind in _ACCEPTED[role] or (role == "value" and kind.startswith("decimal"))):
            raise JobError(
                f"columns: {role} column {column!r} is {kind}; it must be {_WANTED[role]}"
                + (_NO_ZONE.format(column=column) if role == "ts" and kind in _ZONELESS else "")
            )
    return mapping


_ZONELESS = ("timestamp_ntz", "date")
_NO_ZONE = (
    " (an instant, with its time zone: tsmon does not guess one for a wall-clock time or a "
    "date); cast it where it is read, e.g. df.withColumn({column!r}, "
    "F.col({column!r}).cast('timestamp')), which reads it in the session time zone "
    "(spark.sql.session.timeZone; UTC in tsmon's spark_session())"
)


def point_rows(
    raw: DataFrame,
    columns: Mapping[str, str],
    sources: Mapping[str, str],
    ts_unit: str = "ms",
) -> DataFrame:
    """Rows ``source, series, ts, value, seq, raw_ts, raw_value, reason, detail`` of ``raw``.

    ``source`` is the source column when a row has one, else the ``sources`` globs
    (:func:`source_expr`), else the series itself. Epoch numbers in the ``ts`` column are
    in ``ts_unit`` (:data:`~tsmon.core.timestamps.EPOCH_UNITS`). ``reason`` is the
    dead-letter reason of a row that cannot be a point (null for a good one); ``detail``
    (:func:`_what_was_wrong`) what was wrong with it, after where in a file it was (file
    inputs: ``<file>:<line>: ``); '' for a good row.
    """
    from pyspark.sql import functions as F

    mapping = check_columns(raw, columns)
    types = dict(raw.dtypes)

    def col(role: str) -> Column:
        return F.col(f"`{mapping[role]}`")

    series = col("series")
    source = source_expr(series, sources)
    if "source" in mapping:
        source = F.coalesce(col("source"), source)
    typed = {c: F.col(c) if c in raw.columns else None for c in (TYPED_TS, TYPED_VALUE)}
    ts, raw_ts = _timestamp(col("ts"), types[mapping["ts"]], typed[TYPED_TS], ts_unit)
    value, raw_value, missing = _value(col("value"), types[mapping["value"]], typed[TYPED_VALUE])
    unparsed, origin = file_origin(raw.columns)
    # Three projections, each naming what the next one reads: as one, the reason (which reads
    # source, ts and value 10 times) would be written out whole in every column that tests
    # it, and the optimizer and planner walk every copy again in every micro-batch
    # (queryPlanning, benchmarks/README.md "Outside addBatch"). Spark keeps them apart
    # (CollapseProject does not copy an expression that is read more than once) and runs
    # them in one generated stage, each value computed once.
    name = _free_names(raw.columns, ("source", "ts", "value", "missing", "reason"))
    parsed = raw.withColumns(
        {name["source"]: source, name["ts"]: ts, name["value"]: value, name["missing"]: missing}
    )
    source, ts, value = (F.col(name[c]) for c in ("source", "ts", "value"))
    reserved = F.lit(False)
    for prefix in RESERVED_PREFIXES:
        reserved = reserved | source.startswith(prefix)
    reason = (
        F.when(unparsed.isNotNull(), unparsed)
        .when(reserved, Reason.BAD_SOURCE.value)
        .when(series.isNull() | (series == ""), Reason.BAD_SERIES.value)
        .when(ts.isNull(), Reason.BAD_TIMESTAMP.value)
        .when(~ts.between(MIN_INSTANT_MS, MAX_INSTANT_MS), Reason.BAD_TIMESTAMP.value)
        .when(F.col(name["missing"]), Reason.MISSING.value)
        .when(value.isNull(), Reason.NOT_NUMERIC.value)
        .when(F.isnan(value), Reason.NAN.value)
        .when(F.abs(value) == float("inf"), Reason.INFINITE.value)
        .when(F.abs(value) > MAX_ABS_VALUE, Reason.VALUE_OUT_OF_RANGE.value)
    )
    checked = parsed.withColumn(name["reason"], reason)
    good = F.col(name["reason"]).isNull()
    shown = {
        "source": _shown(source, "string", None),
        "series": _shown(series, "string", None),
        "ts": _shown(col("ts"), types[mapping["ts"]], typed[TYPED_TS]),
        "value": _shown(col("value"), types[mapping["value"]], typed[TYPED_VALUE]),
    }
    detail = _what_was_wrong(F.col(name["reason"]), shown, ts, ts_unit)
    if origin is not None:
        detail = F.concat_ws(": ", origin, detail)
    # max_future is checked at the source node, against the batch's clock its host gets
    # (spark/host.py): here current_timestamp() would be a literal in the generated code,
    # new every batch, so Spark would compile the stage again each batch
    return checked.select(
        source.alias("source"),
        series.alias("series"),
        ts.alias("ts"),
        value.alias("value"),
        # streams have no row ids: points of one source at one instant go in an order fixed by
        # their content (series, epoch ms, value), the same whatever order the shuffle
        # delivers them in, so a replayed batch gives the same outputs; only identical points
        # tie, and their order changes nothing
        F.xxhash64(series, ts, value).alias("seq"),
        F.when(~good, raw_ts).alias("raw_ts"),
        F.when(~good, raw_value).alias("raw_value"),
        F.col(name["reason"]).alias("reason"),
        F.when(good, F.lit("")).otherwise(detail).alias("detail"),
    )


RESERVED_SOURCE = "source {raw} is named like a node key of tsmon's own (starting with {prefixes})"
"""The detail of a ``bad_source`` dead letter (Spark's alone: a source node takes no such rows)."""


def _what_was_wrong(reason: Column, shown: Mapping[str, Column], ts: Column, unit: str) -> Column:
    """What was wrong with a row, by its ``reason``: the text a dead letter of ``read_batch``
    (``engine/points.py``) has, ``shown`` (:func:`_shown`) standing for the ``repr`` of the
    role's raw item; null for a file's line that could not be read (a reason of its own)."""
    from pyspark.sql import functions as F

    prefixes = ", ".join(map(repr, RESERVED_PREFIXES))
    what = (
        F.when(
            reason == Reason.BAD_SOURCE.value,
            _filled(RESERVED_SOURCE, shown["source"], prefixes=prefixes),
        )
        .when(reason == Reason.BAD_SERIES.value, _filled(BAD_SERIES, shown["series"]))
        .when(
            ts.isNull() & (reason == Reason.BAD_TIMESTAMP.value),
            _filled(UNREADABLE_TIMESTAMP, shown["ts"], unit=unit),
        )
        .when(reason == Reason.BAD_TIMESTAMP.value, _filled(OUTSIDE_INSTANTS, ts.cast("string")))
    )
    for why, hint in VALUE_HINTS.items():
        what = what.when(reason == why.value, _filled(BAD_VALUE, shown["value"], hint=hint))
    return what


def _filled(template: str, raw: Column, **fixed: str) -> Column:
    """``template`` (a ``str.format`` text) with the column ``raw`` in its ``{raw}`` field and
    ``fixed`` in the others."""
    from pyspark.sql import functions as F

    before, after = template.format(raw="\0", **fixed).split("\0")
    return F.concat(F.lit(before), raw, F.lit(after))


def _shown(column: Column, kind: str, typed: Column | None) -> Column:
    """A role's raw item as Python's ``repr`` shows it in-process, as far as SQL does it
    simply: text in single quotes (``repr`` also escapes backslashes and control characters,
    and quotes a text holding a ``'`` in double quotes: not done here), a number or instant as
    Spark's text (a double's differs from Python's: ``1.0E300``, not ``1e+300``), null as
    ``None``; ``typed``: the number of a row whose file held numbers (:func:`_value`)."""
    from pyspark.sql import functions as F

    text = column.cast("string")
    if kind == "string":
        text = F.concat(F.lit("'"), text, F.lit("'"))
    if typed is not None:
        text = F.coalesce(text, typed.cast("string"))
    return F.coalesce(text, F.lit("None"))


def _free_names(taken: list[str], names: tuple[str, ...]) -> dict[str, str]:
    """A column name for each of ``names`` that is not in ``taken`` (``__tsmon_<name>``, with
    more leading underscores if a column has that name).

    >>> _free_names(["x", "__tsmon_ts"], ("ts", "value"))
    {'ts': '___tsmon_ts', 'value': '__tsmon_value'}
    """
    out = {}
    lowered = {c.lower() for c in taken}
    for n in names:
        free = f"__tsmon_{n}"
        while free.lower() in lowered:  # Spark's names ignore case by default
            free = "_" + free
        out[n] = free
    return out


def _timestamp(
    column: Column, kind: str, typed: Column | None, unit: str = "ms"
) -> tuple[Column, Column]:
    """Epoch ms, and the text a dead letter shows; ``typed``: the epoch ms of rows whose file
    held numbers (then ``column``, their text, is null); ``unit``: that of epoch numbers (an
    integer column, digits), not of instants."""
    from pyspark.sql import functions as F

    if kind == "timestamp":
        return F.unix_millis(column), column.cast("string")
    text = column.cast("string")
    if kind != "string":  # an integer type: an epoch number
        return _epoch_ms(column.cast("bigint"), unit), text
    # digits are epoch numbers, as in-process (EPOCH_MS_TEXT): " 1000 ", "+1000" and "\x011000"
    # too, which try_to_timestamp read as the year 1000; \z: Java's $ also matches before \x85
    number = _epoch_ms(text.try_cast("bigint"), unit)
    ms = (
        F.when(text.rlike(f"^{EPOCH_MS_TEXT}\\z"), number)
        .when(text.rlike(f"^{EPOCH_NUMBER_TEXT}\\z"), _decimal_ms(text, unit))
        .otherwise(F.unix_millis(F.try_to_timestamp(text)))
    )
    if typed is None:
        return ms, text
    return F.coalesce(typed, ms), F.coalesce(text, typed.cast("string"))


def _epoch_ms(number: Column, unit: str) -> Column:
    """An epoch number (BIGINT) in ``unit`` as epoch ms, as in-process
    (:func:`~tsmon.core.timestamps.epoch_to_ms`): seconds times 1,000 (null beyond BIGINT),
    micro- and nanoseconds floored to the millisecond (exact: as decimals, not doubles)."""
    from pyspark.sql import functions as F

    times, per = epoch_unit(unit)
    if times != 1:
        return F.try_multiply(number, F.lit(times).cast("bigint"))
    return _floor_per(number, per)


def _floor_per(number: Column, per: int) -> Column:
    """A BIGINT floor-divided by ``per`` (exact: as decimals, not doubles)."""
    from pyspark.sql import functions as F

    if per != 1:
        return F.floor(number.cast("decimal(20,0)") / F.lit(per)).cast("bigint")
    return number


def _decimal_ms(text: Column, unit: str) -> Column:
    """A decimal epoch number's text (:data:`~tsmon.core.timestamps.EPOCH_NUMBER_TEXT`) in
    ``unit`` as epoch ms, as in-process (:func:`~tsmon.core.timestamps.decimal_ms`): cast to
    DECIMAL(38, 9) (rounded half up; null beyond), times the unit's ``times`` (DECIMAL(38, 6):
    exact), floored, null beyond BIGINT, floor-divided by its ``per``."""
    from pyspark.sql import functions as F

    times, per = epoch_unit(unit)
    # the cast trims what Java's String.trim does (0x00-0x20), not 0x7f as the BIGINT cast
    number = F.btrim(text, F.lit(TRIMMED)).try_cast(f"decimal(38,{EPOCH_DECIMAL_PLACES})")
    if times != 1:
        number = number * F.lit(times).cast(f"decimal({len(str(times))},0)")
    return _floor_per(F.floor(number).try_cast("bigint"), per)


def _value(column: Column, kind: str, typed: Column | None) -> tuple[Column, Column, Column]:
    """The value as a double, its text (shown by a dead letter), and whether it is missing;
    ``typed``: the value of rows whose file held numbers (then ``column`` is null)."""
    from pyspark.sql import functions as F

    text = column.cast("string")
    if kind != "string":
        return column.cast("double"), text, column.isNull()
    # the cast also takes Java's "1d" and "0x1p3": only the numbers in-process reads are read
    number = F.when(text.rlike(f"^{NUMBER_TEXT}\\z"), text.try_cast("double"))
    if typed is None:
        return number, text, column.isNull()
    value = F.coalesce(typed, number)
    return value, F.coalesce(text, typed.cast("string")), column.isNull() & typed.isNull()


def source_expr(series: Column, sources: Mapping[str, str]) -> Column:
    """Source of each row from the ``sources`` globs; a series is its own source else.

    Literal names are one map lookup (a job may list thousands); wildcard globs are tried in
    their order after it (the rule of :func:`tsmon.spark.driver.known_sources`).
    """
    from pyspark.sql import functions as F

    literal = {g: s for g, s in sources.items() if not is_glob(g)}
    expr = series
    for glob, source in reversed([(g, s) for g, s in sources.items() if is_glob(g)]):
        # the fnmatch rule of tsmon.query.patterns, as a Java regex (Python's translation)
        expr = F.when(series.rlike("^" + fnmatch.translate(glob)), F.lit(source)).otherwise(expr)
    if literal:
        pairs = F.create_map(*chain.from_iterable((F.lit(k), F.lit(v)) for k, v in literal.items()))
        expr = F.coalesce(F.try_element_at(pairs, series), expr)  # ANSI: no error if absent
    return expr
