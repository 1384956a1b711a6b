"""What a checkpoint keeps of the job it was started with, checked at every restart: its
queries (``job-queries.json``) and the settings its source nodes and coordinator are built with
(``job-settings.json``). ``tsmon run`` and the PySpark API both check here, before Spark starts
(:class:`tsmon.spark.runtime.JobRunner`); docs/running.md, "Restarting on a checkpoint".

The nodes and the coordinator come back from the checkpoint as they were, settings included,
and a source seen for the first time starts from the job's: an edited query or setting would be
ignored for every known source and applied to new ones only, and a series that a changed
``sources`` mapping moves to another source would be quarantined. So a restart is refused when
either differs, naming what changed, and nothing is written.
"""

from __future__ import annotations

import dataclasses
import json
import math
from enum import Enum
from pathlib import Path
from typing import Any

from tsmon.core.units import format_duration_ms
from tsmon.engine.settings import HostSettings, register_config
from tsmon.query import parse_queries
from tsmon.query.parser import query_key
from tsmon.query.patterns import is_glob
from tsmon.spark.driver import JobQueries
from tsmon.spark.files import atomic_write
from tsmon.spark.job import Job, JobError

__all__ = [
    "QUERIES_FILE",
    "SETTINGS_FILE",
    "check_restart",
    "checked_queries",
    "running_on",
    "settings_record",
]

QUERIES_FILE = "job-queries.json"
"""The job's queries a checkpoint was started with (``<checkpoint>/job-queries.json``)."""
SETTINGS_FILE = "job-settings.json"
"""The job's settings a checkpoint was started with (``<checkpoint>/job-settings.json``)."""

#: The job's key of each :class:`HostSettings` field that is not a table of its own.
_KEYS = {
    "period_ms": "[filters] period",
    "shrink": "[filters] shrink",
    "growth": "[filters] growth",
    "backlog": "[filters] backlog",
    "replica_phase_ms": "[replication] phase",
    "max_future_ms": "[job] max_future",
    "idle_timeout_ms": "[job] idle_timeout",
}
#: HostSettings fields checked apart (the queries) or not settings of the job.
_NOT_SETTINGS = ("queries", "tracked")
#: Differences named in the message, at most.
_SHOWN = 8


def checked_queries(job: Job) -> JobQueries:
    """``job``'s queries, parsed and checked, once :func:`check_restart` has let its checkpoint
    start under them and its settings: what a runner starts with, and what ``tsmon run``
    checks before it says it is starting Spark."""
    queries = JobQueries.of(job)
    check_restart(job, queries.settings(job))
    return queries


def check_restart(job: Job, settings: HostSettings) -> None:
    """Refuse to restart ``job``'s checkpoint under other queries or settings than it was
    started with (a one-line :class:`JobError` naming the difference and what to do); record
    them on a first start. ``settings``: what the job's nodes and coordinator are built with.

    Queries compare by name (ignoring case) and text (ignoring spacing); a running job's
    queries change with commands (``tsmon query``, ``Run.add_query``), kept in the checkpoint.
    Settings compare by value (``"10s"`` is ``"10000ms"``), :func:`settings_record`. A
    checkpoint made before either file existed adopts the job's on its next start.
    """
    queries = {query_key(s.name): " ".join(s.text.split()) for s in parse_queries(job.queries)}
    record = settings_record(job, settings)
    checkpoint = job.checkpoint
    then_queries = _recorded(checkpoint / QUERIES_FILE, "statements")
    if then_queries is not None:
        both = queries.keys() & then_queries.keys()
        differences = [
            f"{what}: {', '.join(sorted(names))}"
            for what, names in (
                ("added", queries.keys() - then_queries.keys()),
                ("removed", then_queries.keys() - queries.keys()),
                ("changed", {n for n in both if queries[n] != then_queries[n]}),
            )
            if names
        ]
        if differences:
            raise JobError(
                f"the job file's queries differ from those checkpoint {checkpoint} was "
                f"started with ({'; '.join(differences)}). Change a running job's queries with "
                f"tsmon query add|alter|remove --job {checkpoint} and keep the job file as it "
                "was, or start from a new checkpoint directory"
            )
    then_settings = _recorded(checkpoint / SETTINGS_FILE, "settings")
    if then_settings is not None:
        changed = [
            f"{key}: {then_settings.get(key, 'unset')} -> {record.get(key, 'unset')}"
            for key in {**then_settings, **record}
            if then_settings.get(key) != record.get(key)
        ]
        if changed:
            more = f"; and {len(changed) - _SHOWN} more" if len(changed) > _SHOWN else ""
            raise JobError(
                f"the job's settings differ from those checkpoint {checkpoint} was started "
                f"with ({'; '.join(changed[:_SHOWN])}{more}): its source nodes and coordinator "
                "keep the settings they started with, so put these settings back, or start "
                "from a new checkpoint directory"
            )
    for name, key, value, found in (
        (QUERIES_FILE, "statements", queries, then_queries),
        (SETTINGS_FILE, "settings", record, then_settings),
    ):
        if found is None:
            atomic_write(checkpoint / name, json.dumps({key: value}, indent=1, sort_keys=True))


def _recorded(path: Path, key: str) -> dict[str, str] | None:
    """The record ``key`` of the file ``path``, None if it is not there."""
    if not path.exists():
        return None
    try:
        return dict(json.loads(path.read_text(encoding="utf-8"))[key])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise JobError(
            f"{path} is damaged ({type(e).__name__}: {e}); restore it or start from a new "
            "checkpoint directory"
        ) from None


def settings_record(job: Job, settings: HostSettings) -> dict[str, str]:
    """Each setting the job's nodes and coordinator are built with (every field of
    ``settings`` but the queries), and each ``sources`` entry, by the job's key, as a canonical
    text: durations in their largest exact unit (``"10000ms"`` is ``10s``), others as
    ``repr``. Wildcard globs are tried in order, so their order is a setting too.

    >>> from tsmon.spark.api import Monitor
    >>> job = Monitor(None, "ck", sources={"r*": "R", "s*": "S"},
    ...               registers={"retention": "3600s"}).job
    >>> record = settings_record(job, HostSettings(None, 0.05, registers=job.registers))
    >>> record["[sources] 'r*'"], record["[sources] order of the globs"]
    ("'R'", "'r*', 's*'")
    >>> record["[registers] retention"], record["[filters] period"], record["[filters] shrink"]
    ('1h', 'None', '0.05')
    """
    record = {f"[sources] {glob!r}": repr(source) for glob, source in job.sources.items()}
    globs = [glob for glob in job.sources if is_glob(glob)]
    if len(globs) > 1:
        record["[sources] order of the globs"] = ", ".join(map(repr, globs))
    r = settings.registers
    if r is not None:  # as given ("1h"): the config the registers are built with
        config = register_config(r.capacity_points, r.retention, r.allowed_lateness, r.duplicates)
        settings = dataclasses.replace(settings, registers=config)  # type: ignore[arg-type]
    for field in dataclasses.fields(settings):
        value = getattr(settings, field.name)
        if field.name in _NOT_SETTINGS:
            continue
        if dataclasses.is_dataclass(value):
            for sub in dataclasses.fields(value):
                name = sub.name.removesuffix("_ms")
                record[f"[{field.name}] {name}"] = _shown(sub.name, getattr(value, sub.name))
        else:
            record[_KEYS.get(field.name, field.name)] = _shown(field.name, value)
    return record


def _shown(name: str, value: Any) -> str:
    """``value`` of field ``name`` as a canonical text: a duration (``*_ms``) in its largest
    exact unit, anything else as ``repr``."""
    if isinstance(value, Enum):
        value = value.value
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if name.endswith("_ms") and number and math.isfinite(value) and value == int(value) > 0:
        return format_duration_ms(int(value))
    return repr(value)


def running_on(spark: Any, checkpoint: Path) -> bool:
    """Whether a streaming query runs on Spark's ``checkpoint``: this run's, another run's of
    the same checkpoint (a notebook cell started again), in this session or another of its
    SparkContext (``spark.newSession()``); Spark would stop it, mid-batch, to start another."""
    try:  # Spark keeps the query's id in the checkpoint, for its restarts
        query_id = json.loads((checkpoint / "metadata").read_text())["id"]
    except (OSError, ValueError, KeyError):
        return False
    from py4j.protocol import Py4JError

    try:  # the map every session of the context shares, where Spark looks for the same id
        active = spark._jsparkSession.sharedState().activeStreamingQueries()
        return active.get(spark._jvm.java.util.UUID.fromString(query_id)) is not None
    except (AttributeError, Py4JError):  # Spark-internal (Connect has none): this session's
        return spark.streams.get(query_id) is not None
