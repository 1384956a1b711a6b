"""Job files: what ``tsmon run job.toml`` runs, read and checked before Spark starts.

A job names its input (a directory of CSV/JSON/Parquet files, a socket of JSON lines, a Kafka
topic, the built-in generator, or a recorded file replayed at a speed-up), how input columns
map to ``(series, source, ts, value)``, the queries (inline or a query file), the adaptive-filter
settings, the sinks, the checkpoint directory, the trigger interval, the Spark master and extra
Spark configuration. Every mistake is reported with the key it concerns and what was expected,
before any Spark work starts::

    queries = '''
    QUERY path AS SUM(r1.queue, r7.queue) WITHIN 5
    QUERY deep ON r*.queue WHEN mean(1m) > 40 EMIT series, max(5m)   -- runs at the nodes
    '''                            # or query_file = "routers.tsq"; top-level keys come first

    [job]
    name = "routers"
    checkpoint = "/var/tsmon/routers"
    trigger = "2s"                 # micro-batch interval
    max_future = "1d"              # points stamped > 1d after the batch's clock: dead letters
    idle_timeout = "1h"            # a source 1h behind (event time) stops holding answers back
    master = "local[2]"            # or spark://host:7077
    buckets = 16                   # source buckets (state keys); default 8 x shuffle partitions

    [job.spark_conf]
    "spark.sql.shuffle.partitions" = "4"

    [input]
    kind = "files"                 # files | socket | generator | replay | kafka
    path = "incoming/"             # each kind's keys: docs/inputs.md
    format = "csv"                 # csv | json | parquet
    columns = { series = "metric", source = "router", ts = "time", value = "v" }

    [sources]                      # series glob -> source, when rows carry no source column
    "r7.*" = "r7"

    [registers]                    # what each source node stores for its watch queries
    retention = "1h"               # event time (and/or capacity_points = N)
    allowed_lateness = "0s"        # older points go to the dead letters as too_late
    duplicates = "keep_last"       # or keep_first (then a repeated timestamp is a dead letter)

    [filters]
    period = "10s"
    shrink = 0.05
    growth = "capped"

    [standing]                     # standing queries (... CONFIDENCE p): deferred evaluation
    tick = "1s"                    # event time a micro-batch is expected to span
    partitions = 2                 # query partitions (stateful keys spread over executors)
    k = 100                        # items per stream behind each estimate of mu, sigma
    drift_test = 2.0               # use a drift only when |mu| >= 2 standard errors; false: always
    max_dt = 100                   # defer at most 100 sampling intervals (or "6h", or inf)
    reestimate = 100               # re-estimate mu, sigma at least every 100 sampling intervals
    interrupt_after = 3            # a series silent > 3 sampling intervals is interrupted
    # also interrupt_retry = "1s" (default: one tick), budget, max_wait, combine = "rss":
    # tsmon.engine.standing_settings.SETTINGS_KEYS

    [replication]                  # summary readers (SWAT-ASR), tsmon.spark.readers
    phase = "10s"                  # event time between expansion/contraction tests

    [[sinks]]
    kind = "parquet"
    path = "out/"

    [http]                         # optional: docs/http.md
    listen = "127.0.0.1:8080"      # the HTTP API, /metrics and the dashboard (tsmon run --http)
    webhook = "http://127.0.0.1:9093/hook"   # POST every event here
    webhook_format = "json"        # or "alertmanager", "alertmanager-webhook"
"""

from __future__ import annotations

import datetime
import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tsmon.core.units import UnitError, parse_duration_ms
from tsmon.engine.replicas import DEFAULT_PHASE_MS
from tsmon.engine.settings import DAY_MS, HOUR_MS, RegisterSettings
from tsmon.engine.standing_settings import SETTINGS_KEYS, StandingSettings, standing_settings
from tsmon.query import QuerySyntaxError, parse_queries
from tsmon.streams.fleet import STREAM_METRICS, STREAM_START_MS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

INPUT_KINDS = ("files", "socket", "generator", "replay", "kafka")
#: The keys of an [input] table, per kind.
INPUT_KEYS = {
    "files": {"kind", "path", "format", "columns"},
    "replay": {"kind", "path", "format", "columns", "series", "speedup"},
    "socket": {"kind", "host", "port", "columns"},
    "kafka": {"kind", "bootstrap", "topic", "starting_offsets", "columns"},
    "generator": {
        "kind",
        "sources",
        "metrics",
        "step",
        "speedup",
        "max_ticks_per_batch",
        "ticks",
        "seed",
        "start",
    },
}
FORMATS = ("csv", "json", "parquet")
SINK_KINDS = ("console", "parquet", "callback")
WEBHOOK_FORMATS = ("json", "alertmanager", "alertmanager-webhook")
GROWTH = ("paper", "capped")
DUPLICATES = ("keep_last", "keep_first")
COLUMNS = ("series", "source", "ts", "value")


class JobError(ValueError):
    """A job file that cannot run: names the file, the key and what was expected."""


@dataclass(frozen=True)
class InputSpec:
    """Where points come from, and which input column holds each of series/source/ts/value.

    ``kind`` decides which other fields matter (see ``docs/inputs.md``): ``files`` and
    ``replay`` read ``path`` in ``format``; ``replay`` offers its rows at ``speedup`` × wall
    time, ``series`` naming the one series of a file without a series column; ``socket`` reads
    JSON lines from ``host:port``; ``kafka`` reads JSON values from ``topic`` at ``bootstrap``
    from ``starting_offsets``; ``generator`` makes ``sources`` hosts × ``metrics`` series, one
    point each per ``step_ms`` of event time from ``start_ms``, at ``speedup`` × wall time, at
    most ``max_ticks_per_batch`` steps per micro-batch, ``ticks`` steps in all (None: endless).
    """

    kind: str
    path: Path | None = None
    format: str = "csv"
    host: str = "localhost"
    port: int | None = None
    speedup: float = 1.0
    columns: Mapping[str, str] = field(
        default_factory=lambda: {c: c for c in ("series", "ts", "value")}
    )
    series: str | None = None
    bootstrap: str | None = None
    topic: str | None = None
    starting_offsets: str = "latest"
    sources: int = 200
    metrics: int = 15
    step_ms: int = 10_000
    max_ticks_per_batch: int = 100
    ticks: int | None = None
    seed: int = 7
    start_ms: int = STREAM_START_MS


@dataclass(frozen=True)
class FilterSpec:
    """Adaptive-filter settings: period ``T`` (ms), shrink ``S`` and growth allocation."""

    period_ms: int = 10_000
    shrink: float = 0.05
    growth: str = "capped"


@dataclass(frozen=True)
class SinkSpec:
    """One output: ``console``, ``parquet`` (needs ``path``) or a user ``callback``."""

    kind: str
    path: Path | None = None


@dataclass(frozen=True)
class HttpSpec:
    """The ``[http]`` table: serve the HTTP API on ``listen`` (``host:port``), POST every
    event to ``webhook`` as ``webhook_format`` (:data:`WEBHOOK_FORMATS`); None: off."""

    listen: str | None = None
    webhook: str | None = None
    webhook_format: str = "json"


@dataclass(frozen=True)
class Job:
    """A checked job file."""

    name: str
    checkpoint: Path
    trigger_ms: int
    master: str
    spark_conf: Mapping[str, str]
    input: InputSpec
    sources: Mapping[str, str]
    filters: FilterSpec
    queries: str
    sinks: tuple[SinkSpec, ...]
    registers: RegisterSettings = field(default_factory=RegisterSettings)
    standing: StandingSettings = field(default_factory=StandingSettings)
    replica_phase_ms: int = DEFAULT_PHASE_MS
    max_future_ms: int | None = DAY_MS
    idle_timeout_ms: int | None = HOUR_MS
    http: HttpSpec = field(default_factory=HttpSpec)
    buckets: int | None = None  # source buckets of the Spark host (None: its default)


def load_job(path: str | Path) -> Job:
    """Read and check a job file; relative paths in it are relative to the file.

    Raises :class:`JobError` naming the key and what was expected.

    Examples
    --------
    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> p = os.path.join(d, "job.toml")
    >>> _ = open(p, "w").write('queries = "QUERY s AS SUM(a, b) WITHIN 1"\\n[job]\\n'
    ...                        'checkpoint = "ck"\\n[input]\\nkind = "generator"\\n')
    >>> job = load_job(p)
    >>> job.input.kind, job.trigger_ms, job.checkpoint.name, job.filters.growth
    ('generator', 1000, 'ck', 'capped')
    """
    file = Path(path)
    try:
        raw = tomllib.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise JobError(f"{file}: no such job file") from None
    except tomllib.TOMLDecodeError as e:
        raise JobError(f"{file}: not valid TOML: {e}") from None
    return parse_job(raw, file.parent, str(file))


def parse_job(
    raw: Mapping[str, Any], base: Path, where: str = "job", input_spec: InputSpec | None = None
) -> Job:
    """Check a parsed job table (see :func:`load_job`); ``input_spec`` replaces the ``[input]``
    table (the PySpark API's DataFrame, :mod:`tsmon.spark.api`)."""
    known = {
        "job", "input", "sources", "filters", "registers", "standing", "replication",
        "queries", "query_file", "sinks", "http",
    }  # fmt: skip
    _no_unknown(raw, known, where, "top level")
    job = _table(raw, "job", where)
    keys = {"name", "checkpoint", "trigger", "master", "spark_conf", "max_future", "idle_timeout"}
    _no_unknown(job, keys | {"buckets"}, where, "[job]")
    if "checkpoint" not in job:
        raise JobError(f'{where}: [job] needs checkpoint = "<dir>" (state and control files)')
    conf = _table(job, "spark_conf", where, "[job.spark_conf]")
    return Job(
        name=_str(job, "name", where, "[job]", default="tsmon"),
        checkpoint=base / _str(job, "checkpoint", where, "[job]"),
        trigger_ms=_duration(job, "trigger", where, "[job]", default="1s"),
        max_future_ms=_limit(job, "max_future", where, default="1d"),
        idle_timeout_ms=_limit(job, "idle_timeout", where, default="1h"),
        master=_str(job, "master", where, "[job]", default="local[2]"),
        spark_conf={str(k): _conf_value(k, v, where) for k, v in conf.items()},
        buckets=_buckets(job, where),
        input=input_spec or _input(_table(raw, "input", where, required=True), base, where),
        sources=_strings(_table(raw, "sources", where), where, "[sources]"),
        filters=_filters(_table(raw, "filters", where), where),
        registers=_registers(_table(raw, "registers", where), where),
        standing=_standing(_table(raw, "standing", where), where),
        replica_phase_ms=_phase(_table(raw, "replication", where), where),
        queries=_queries(raw, base, where),
        sinks=tuple(_sink(s, base, where) for s in _sinks(raw, where)),
        http=_http(_table(raw, "http", where), where),
    )


def _input(t: Mapping[str, Any], base: Path, where: str) -> InputSpec:
    kind = _choice(t, "kind", INPUT_KINDS, where, "[input]")
    path = t.get("path")
    if kind in ("files", "replay") and path is None:
        raise JobError(f'{where}: [input] kind = "{kind}" needs path = "<file or dir>"')
    port = t.get("port")
    if kind == "socket" and not (_is_int(port) and 0 < port < 65536):
        raise JobError(f'{where}: [input] kind = "socket" needs port = <1..65535>, got {port!r}')
    for key, example in (("bootstrap", "broker1:9092,broker2:9092"), ("topic", "metrics")):
        if kind == "kafka" and key not in t:
            raise JobError(f'{where}: [input] kind = "kafka" needs {key} = "{example}"')
    _no_unknown(t, INPUT_KEYS[kind], where, f'[input] of kind = "{kind}"')
    columns = _strings(_table(t, "columns", where, "[input.columns]"), where, "[input.columns]")
    _no_unknown(columns, set(COLUMNS), where, "[input.columns]")
    if kind == "generator":  # its rows carry their host as the source
        mapping = {c: c for c in COLUMNS}
    else:
        # series, ts and value default to same-named columns; source only when named (else the
        # [sources] globs, else each series is its own source)
        mapping = {c: columns.get(c, c) for c in COLUMNS if c != "source" or c in columns}
    if "series" in t and "series" in columns:
        raise JobError(
            f"{where}: [input] give either series (one series for the whole file) or "
            "[input.columns] series (the column naming each row's series), not both"
        )
    speedup = t.get("speedup", 360 if kind == "generator" else 1.0)
    if not (
        isinstance(speedup, int | float)
        and not isinstance(speedup, bool)
        and math.isfinite(speedup)
        and speedup > 0
    ):
        raise JobError(
            f"{where}: [input] speedup must be a number > 0 (event time per wall time), "
            f"got {speedup!r}"
        )
    spec = InputSpec(
        kind=kind,
        path=None if path is None else base / _str(t, "path", where, "[input]"),
        format=_choice(t, "format", FORMATS, where, "[input]", default="csv"),
        host=_str(t, "host", where, "[input]", default="localhost"),
        port=port,
        speedup=float(speedup),
        columns=mapping,
        series=_str(t, "series", where, "[input]") if "series" in t else None,
        bootstrap=_str(t, "bootstrap", where, "[input]") if kind == "kafka" else None,
        topic=_str(t, "topic", where, "[input]") if kind == "kafka" else None,
        starting_offsets=_str(t, "starting_offsets", where, "[input]", default="latest"),
        sources=_count(t, "sources", where, default=200),
        metrics=_count(t, "metrics", where, default=15, most=len(STREAM_METRICS)),
        step_ms=_duration(t, "step", where, "[input]", default="10s"),
        max_ticks_per_batch=_count(t, "max_ticks_per_batch", where, default=100),
        ticks=_count(t, "ticks", where, default=1) if "ticks" in t else None,
        seed=_count(t, "seed", where, default=7, least=0),
        start_ms=_epoch_ms(t, "start", where),
    )
    _input_exists(spec, where)
    return spec


def _input_exists(spec: InputSpec, where: str) -> None:
    """A files input reads an existing directory, a replay an existing file: checked here, so
    a typo stops the job before Spark starts or a checkpoint is made."""
    if spec.kind == "files" and spec.path is not None and not spec.path.is_dir():
        what = "a file, not a directory" if spec.path.exists() else "no such directory"
        raise JobError(
            f"{where}: [input] path {str(spec.path)!r}: {what}; a files input reads new "
            "files dropped into a directory (create it first)"
        )
    if spec.kind == "replay" and spec.path is not None and not spec.path.is_file():
        raise JobError(f"{where}: [input] path {str(spec.path)!r}: no such file to replay")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _count(
    t: Mapping[str, Any],
    key: str,
    where: str,
    default: int,
    least: int = 1,
    most: int | None = None,
) -> int:
    """An integer key of [input] in ``least..most`` (``default`` when absent)."""
    value = t.get(key, default)
    if not (_is_int(value) and value >= least and (most is None or value <= most)):
        span = f"{least}..{most}" if most is not None else f">= {least}"
        raise JobError(f"{where}: [input] {key} must be an integer {span}, got {value!r}")
    return value


def _buckets(job: Mapping[str, Any], where: str) -> int | None:
    """``[job] buckets``: how many state keys the sources are hashed to (frozen per checkpoint)."""
    value = job.get("buckets")
    if value is not None and not (_is_int(value) and 1 <= value <= 100_000):
        raise JobError(f"{where}: [job] buckets must be an integer 1..100000, got {value!r}")
    return value


def _epoch_ms(t: Mapping[str, Any], key: str, where: str) -> int:
    """Epoch ms from an integer or a TOML date-time with an offset (default 2024-01-01Z)."""
    value = t.get(key, STREAM_START_MS)
    if isinstance(value, datetime.datetime) and value.tzinfo is not None:
        return round(value.timestamp() * 1000)
    if not _is_int(value):
        raise JobError(
            f"{where}: [input] {key} must be epoch milliseconds or a date-time with an offset "
            f"(e.g. 2024-01-01T00:00:00Z), got {value!r}"
        )
    return value


def _registers(t: Mapping[str, Any], where: str) -> RegisterSettings:
    """Register settings of every source node; checked by building one node's monitor."""
    keys = {"retention", "capacity_points", "allowed_lateness", "duplicates"}
    _no_unknown(t, keys, where, "[registers]")
    default = RegisterSettings()
    if t.get("duplicates", default.duplicates) not in DUPLICATES:
        raise JobError(
            f"{where}: [registers] duplicates must be one of {list(DUPLICATES)}, "
            f"got {t['duplicates']!r}"
        )
    for key in ("retention", "allowed_lateness"):
        if key in t and not isinstance(t[key], str):
            raise JobError(
                f'{where}: [registers] {key} must be a duration with a unit, e.g. "1h" or '
                f'"30s", got {t[key]!r}'
            )
    capacity = t.get("capacity_points", default.capacity_points)
    if capacity is not None and not (_is_int(capacity) and capacity >= 1):
        raise JobError(
            f"{where}: [registers] capacity_points must be an integer >= 1, got {capacity!r}"
        )
    settings = RegisterSettings(
        retention=t.get("retention", default.retention),
        capacity_points=capacity,
        allowed_lateness=t.get("allowed_lateness", default.allowed_lateness),
        duplicates=t.get("duplicates", default.duplicates),
    )
    try:
        settings.store()
    except (ValueError, TypeError, UnitError) as e:
        raise JobError(f"{where}: [registers]: {e}") from None
    return settings


def _filters(t: Mapping[str, Any], where: str) -> FilterSpec:
    _no_unknown(t, {"period", "shrink", "growth"}, where, "[filters]")
    shrink = t.get("shrink", 0.05)
    if not (isinstance(shrink, int | float) and not isinstance(shrink, bool) and 0 <= shrink < 1):
        raise JobError(f"{where}: [filters] shrink must be in [0, 1), got {shrink!r}; e.g. 0.05")
    return FilterSpec(
        period_ms=_duration(t, "period", where, "[filters]", default="10s"),
        shrink=float(shrink),
        growth=_choice(t, "growth", GROWTH, where, "[filters]", default="capped"),
    )


#: [standing] keys that are durations: a bare number is refused (it would be milliseconds).
STANDING_DURATIONS = ("tick", "interrupt_retry")


def _standing(t: Mapping[str, Any], where: str) -> StandingSettings:
    _no_unknown(t, set(SETTINGS_KEYS), where, "[standing]")
    for key in (*STANDING_DURATIONS, "max_wait"):
        value = t.get(key, "")
        if not (isinstance(value, str) or (key == "max_wait" and value == math.inf)):
            raise JobError(
                f'{where}: [standing] {key} must be a duration with a unit, e.g. "5s"'
                f"{' (or inf)' if key == 'max_wait' else ''}, got {value!r}"
            )
    try:
        return standing_settings(t)
    except ValueError as e:
        raise JobError(f"{where}: [standing] {e}") from None


def _phase(t: Mapping[str, Any], where: str) -> int:
    _no_unknown(t, {"phase"}, where, "[replication]")
    return _duration(t, "phase", where, "[replication]", default=f"{DEFAULT_PHASE_MS}ms")


def _queries(raw: Mapping[str, Any], base: Path, where: str) -> str:
    if "queries" in raw and "query_file" in raw:
        raise JobError(f"{where}: give either queries = '''...''' or query_file, not both")
    if "query_file" in raw:
        file = base / _str(raw, "query_file", where, "top-level")
        if not file.is_file():
            raise JobError(f"{where}: query_file {str(file)!r} does not exist")
        return _checked(file.read_text(encoding="utf-8"), str(file))
    text = raw.get("queries", "")
    if not isinstance(text, str):
        raise JobError(f"{where}: queries must be a string of query statements")
    return _checked(text, where)


def _checked(text: str, where: str) -> str:
    """``text`` if it parses as queries (before Spark starts), else a :class:`JobError`."""
    try:
        parse_queries(text)
    except QuerySyntaxError as e:
        raise JobError(f"{where}: queries: {e}") from None
    return text


def _sinks(raw: Mapping[str, Any], where: str) -> list[Mapping[str, Any]]:
    sinks = raw.get("sinks", [{"kind": "console"}])
    if not isinstance(sinks, list) or not all(isinstance(s, dict) for s in sinks):
        raise JobError(f'{where}: sinks must be [[sinks]] tables, e.g. [[sinks]] kind = "console"')
    return sinks


def _sink(t: Mapping[str, Any], base: Path, where: str) -> SinkSpec:
    _no_unknown(t, {"kind", "path"}, where, "[[sinks]]")
    kind = _choice(t, "kind", SINK_KINDS, where, "[[sinks]]")
    if kind == "parquet" and "path" not in t:
        raise JobError(f'{where}: a parquet sink needs path = "<dir>"')
    return SinkSpec(kind, base / _str(t, "path", where, "[[sinks]]") if "path" in t else None)


def _http(t: Mapping[str, Any], where: str) -> HttpSpec:
    _no_unknown(t, {"listen", "webhook", "webhook_format"}, where, "[http]")
    listen = _str(t, "listen", where, "[http]") if "listen" in t else None
    if listen is not None:
        listen_address(listen, f"{where}: [http] listen")
    webhook = _str(t, "webhook", where, "[http]") if "webhook" in t else None
    if webhook is not None and not webhook.startswith(("http://", "https://")):
        raise JobError(f"{where}: [http] webhook must be an http(s):// URL, got {webhook!r}")
    fmt = _choice(t, "webhook_format", WEBHOOK_FORMATS, where, "[http]", default="json")
    return HttpSpec(listen, webhook, fmt)


def listen_address(text: str, what: str = "--http") -> tuple[str, int]:
    """``(host, port)`` of ``host:port`` (port 0: a free one); a :class:`JobError` else.

    >>> listen_address("127.0.0.1:8080")
    ('127.0.0.1', 8080)
    """
    host, sep, port = text.rpartition(":")
    if not (sep and host and port.isdigit() and int(port) < 65536):
        raise JobError(f"{what} must be host:port, e.g. 127.0.0.1:8080, got {text!r}")
    return host, int(port)


def _table(
    t: Mapping[str, Any], key: str, where: str, name: str | None = None, required: bool = False
) -> Mapping[str, Any]:
    if key not in t:
        if required:
            raise JobError(f"{where}: missing [{key}] table")
        return {}
    value = t[key]
    if not isinstance(value, dict):
        raise JobError(f"{where}: {name or f'[{key}]'} must be a table, got {value!r}")
    return value


def _no_unknown(t: Mapping[str, Any], keys: set[str], where: str, name: str) -> None:
    unknown = sorted(set(t) - keys)
    if unknown:
        hint = ""
        if unknown[0] in ("queries", "query_file", "sources", "filters", "sinks"):
            hint = " (in TOML a key after [table] belongs to it: put top-level keys first)"
        raise JobError(
            f"{where}: unknown key {unknown[0]!r} in {name}; expected one of {sorted(keys)}{hint}"
        )


def _str(t: Mapping[str, Any], key: str, where: str, name: str, default: str | None = None) -> str:
    value = t.get(key, default)
    if not isinstance(value, str) or not value:
        raise JobError(f"{where}: {name} {key} must be a non-empty string, got {value!r}")
    return value


def _choice(
    t: Mapping[str, Any],
    key: str,
    choices: tuple[str, ...],
    where: str,
    name: str,
    default: str | None = None,
) -> str:
    value = t.get(key, default)
    if value not in choices:
        raise JobError(f"{where}: {name} {key} must be one of {list(choices)}, got {value!r}")
    return str(value)


def _strings(t: Mapping[str, Any], where: str, name: str) -> dict[str, str]:
    """A table of text values (a number or a boolean is refused, never turned into text)."""
    for key, value in t.items():
        if not isinstance(value, str) or not value:
            raise JobError(
                f"{where}: {name} {key} must be a non-empty string (quote it), got {value!r}"
            )
    return dict(t)


def _conf_value(key: str, value: Any, where: str) -> str:
    """A Spark setting as Spark reads it: text, an integer, or a boolean (true/false)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int):
        return str(value)
    raise JobError(
        f"{where}: [job.spark_conf] {key!r} must be a string, an integer or a boolean, "
        f"got {value!r}"
    )


def _duration(t: Mapping[str, Any], key: str, where: str, name: str, default: str) -> int:
    value = t.get(key, default)
    if not isinstance(value, str):
        raise JobError(
            f'{where}: {name} {key} must be a duration with a unit, e.g. "5s" or "250ms", '
            f"got {value!r}"
        )
    try:
        return parse_duration_ms(value)
    except UnitError as e:
        raise JobError(f"{where}: {name} {key}: {e}") from None


def _limit(t: Mapping[str, Any], key: str, where: str, default: str) -> int | None:
    """A duration of ``[job]``, or ``"off"`` (no limit: None)."""
    if t.get(key) == "off":
        return None
    return _duration(t, key, where, "[job]", default)
