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
    period = "auto"                # T: chosen online from the streamed updates, or a duration
    shrink = 0.05
    growth = "capped"
    backlog = 32                   # updates queued per series for a source far ahead, then merged

    [standing]                     # standing queries (... CONFIDENCE p): deferred evaluation
    tick = "1s"                    # event time a micro-batch is expected to span
    partitions = 2                 # query partitions (stateful keys spread over executors)
    k = 100                        # items per stream behind each estimate of mu, sigma
    drift_test = 2.0               # use a drift only when |mu| >= 2 standard errors; false: always
    jump_test = 3.0                # due at a tick the aggregate jumps > eps via > 3 sigma moves
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

import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tsmon.core.textfile import read_text
from tsmon.core.units import UnitError
from tsmon.engine.replicas import DEFAULT_PHASE_MS
from tsmon.engine.settings import BACKLOG, DAY_MS, HOUR_MS, RegisterSettings
from tsmon.engine.standing_settings import SETTINGS_KEYS, StandingSettings, standing_settings
from tsmon.query import QuerySyntaxError, parse_queries
from tsmon.spark.input_spec import InputSpec, read_input
from tsmon.spark.toml_checks import (
    JobError,
    choice,
    conf_value,
    count,
    duration,
    is_int,
    limit,
    no_unknown,
    strings,
    toml_str,
    toml_table,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

SINK_KINDS = ("console", "parquet", "callback")
WEBHOOK_FORMATS = ("json", "alertmanager", "alertmanager-webhook")
GROWTH = ("paper", "capped")
DUPLICATES = ("keep_last", "keep_first")


@dataclass(frozen=True)
class FilterSpec:
    """Adaptive-filter settings: period ``T`` (ms; None, ``period = "auto"``: chosen online by
    the coordinator, :mod:`tsmon.protocols.filters.tuning`), shrink ``S``, growth allocation and
    the coordinator's queue bound per series (``backlog``, docs/time.md "A source far ahead")."""

    period_ms: int | None = None
    shrink: float = 0.05
    growth: str = "capped"
    backlog: int = BACKLOG


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
        text = read_text(file, "job file")
    except (OSError, ValueError) as e:  # missing, a folder, unreadable, not UTF-8
        raise JobError(str(e)) from None
    try:
        raw = tomllib.loads(text)
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
    no_unknown(raw, known, where, "top level")
    job = toml_table(raw, "job", where)
    keys = {"name", "checkpoint", "trigger", "master", "spark_conf", "max_future", "idle_timeout"}
    no_unknown(job, keys | {"buckets"}, where, "[job]")
    if "checkpoint" not in job:
        raise JobError(f'{where}: [job] needs checkpoint = "<dir>" (state and control files)')
    conf = toml_table(job, "spark_conf", where, "[job.spark_conf]")
    return Job(
        name=toml_str(job, "name", where, "[job]", default="tsmon"),
        checkpoint=base / toml_str(job, "checkpoint", where, "[job]"),
        trigger_ms=duration(job, "trigger", where, "[job]", default="1s"),
        max_future_ms=limit(job, "max_future", where, default="1d"),
        idle_timeout_ms=limit(job, "idle_timeout", where, default="1h"),
        master=toml_str(job, "master", where, "[job]", default="local[2]"),
        spark_conf={str(k): conf_value(k, v, where) for k, v in conf.items()},
        buckets=_buckets(job, where),
        input=input_spec or read_input(toml_table(raw, "input", where, required=True), base, where),
        sources=strings(toml_table(raw, "sources", where), where, "[sources]"),
        filters=_filters(toml_table(raw, "filters", where), where),
        registers=_registers(toml_table(raw, "registers", where), where),
        standing=_standing(toml_table(raw, "standing", where), where),
        replica_phase_ms=_phase(toml_table(raw, "replication", where), where),
        queries=_queries(raw, base, where),
        sinks=tuple(_sink(s, base, where) for s in _sinks(raw, where)),
        http=_http(toml_table(raw, "http", where), where),
    )


def _buckets(job: Mapping[str, Any], where: str) -> int | None:
    """``[job] buckets``: how many state keys the sources are hashed to (frozen per checkpoint)."""
    value = job.get("buckets")
    if value is not None and not (is_int(value) and 1 <= value <= 100_000):
        raise JobError(f"{where}: [job] buckets must be an integer 1..100000, got {value!r}")
    return value


def _registers(t: Mapping[str, Any], where: str) -> RegisterSettings:
    """Register settings of every source node; checked by building one node's monitor."""
    keys = {"retention", "capacity_points", "allowed_lateness", "duplicates"}
    no_unknown(t, keys, where, "[registers]")
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
    if capacity is not None and not (is_int(capacity) and capacity >= 1):
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
    no_unknown(t, {"period", "shrink", "growth", "backlog"}, where, "[filters]")
    shrink = t.get("shrink", 0.05)
    if not (isinstance(shrink, int | float) and not isinstance(shrink, bool) and 0 <= shrink < 1):
        raise JobError(f"{where}: [filters] shrink must be in [0, 1), got {shrink!r}; e.g. 0.05")
    auto = t.get("period", "auto") == "auto"  # T chosen online by the coordinator
    return FilterSpec(
        period_ms=None if auto else duration(t, "period", where, "[filters]", ""),
        shrink=float(shrink),
        growth=choice(t, "growth", GROWTH, where, "[filters]", default="capped"),
        backlog=count(t, "backlog", where, default=BACKLOG, least=2, name="[filters]"),
    )


#: [standing] keys that are durations: a bare number is refused (it would be milliseconds).
STANDING_DURATIONS = ("tick", "interrupt_retry")


def _standing(t: Mapping[str, Any], where: str) -> StandingSettings:
    no_unknown(t, set(SETTINGS_KEYS), where, "[standing]")
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
    no_unknown(t, {"phase"}, where, "[replication]")
    return duration(t, "phase", where, "[replication]", default=f"{DEFAULT_PHASE_MS}ms")


def _queries(raw: Mapping[str, Any], base: Path, where: str) -> str:
    if "queries" in raw and "query_file" in raw:
        raise JobError(f"{where}: give either queries = '''...''' or query_file, not both")
    if "query_file" in raw:
        file = base / toml_str(raw, "query_file", where, "top-level")
        try:
            text = read_text(file, "query_file")
        except (OSError, ValueError) as e:  # missing, a folder, unreadable, not UTF-8
            raise JobError(f"{where}: {e}") from None
        return _checked(text, str(file))
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
    no_unknown(t, {"kind", "path"}, where, "[[sinks]]")
    kind = choice(t, "kind", SINK_KINDS, where, "[[sinks]]")
    if kind == "parquet" and "path" not in t:
        raise JobError(f'{where}: a parquet sink needs path = "<dir>"')
    return SinkSpec(kind, base / toml_str(t, "path", where, "[[sinks]]") if "path" in t else None)


def _http(t: Mapping[str, Any], where: str) -> HttpSpec:
    no_unknown(t, {"listen", "webhook", "webhook_format"}, where, "[http]")
    listen = toml_str(t, "listen", where, "[http]") if "listen" in t else None
    if listen is not None:
        listen_address(listen, f"{where}: [http] listen")
    webhook = toml_str(t, "webhook", where, "[http]") if "webhook" in t else None
    if webhook is not None and not webhook.startswith(("http://", "https://")):
        raise JobError(f"{where}: [http] webhook must be an http(s):// URL, got {webhook!r}")
    fmt = choice(t, "webhook_format", WEBHOOK_FORMATS, where, "[http]", default="json")
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
