"""The ``[input]`` table of a job file: which input, and which column holds each of series,
source, ts and value (``docs/inputs.md``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tsmon.core.timestamps import EPOCH_UNITS
from tsmon.spark.toml_checks import (
    JobError,
    choice,
    count,
    duration,
    epoch_ms,
    is_int,
    no_unknown,
    strings,
    toml_str,
    toml_table,
)
from tsmon.streams.fleet import STREAM_METRICS, STREAM_START_MS

__all__ = ["COLUMNS", "FORMATS", "INPUT_KEYS", "INPUT_KINDS", "InputSpec", "read_input"]

INPUT_KINDS = ("files", "socket", "generator", "replay", "kafka")
#: The keys of an [input] table, per kind.
INPUT_KEYS = {
    "files": {"kind", "path", "format", "columns", "ts_unit"},
    "replay": {"kind", "path", "format", "columns", "series", "speedup", "ts_unit"},
    "socket": {"kind", "host", "port", "columns", "ts_unit"},
    "kafka": {"kind", "bootstrap", "topic", "starting_offsets", "columns", "ts_unit"},
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
COLUMNS = ("series", "source", "ts", "value")


@dataclass(frozen=True)
class InputSpec:
    """Where points come from, and which input column holds each of series/source/ts/value.

    ``kind`` decides which other fields matter (see ``docs/inputs.md``); ``ts_unit`` is the
    unit of epoch numbers in the ts column (not of instants; not the generator's): ``files`` and
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
    ts_unit: str = "ms"
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


def read_input(t: Mapping[str, Any], base: Path, where: str) -> InputSpec:
    kind = choice(t, "kind", INPUT_KINDS, where, "[input]")
    path = t.get("path")
    if kind in ("files", "replay") and path is None:
        raise JobError(f'{where}: [input] kind = "{kind}" needs path = "<file or dir>"')
    port = t.get("port")
    if kind == "socket" and not (is_int(port) and 0 < port < 65536):
        raise JobError(f'{where}: [input] kind = "socket" needs port = <1..65535>, got {port!r}')
    for key, example in (("bootstrap", "broker1:9092,broker2:9092"), ("topic", "metrics")):
        if kind == "kafka" and key not in t:
            raise JobError(f'{where}: [input] kind = "kafka" needs {key} = "{example}"')
    no_unknown(t, INPUT_KEYS[kind], where, f'[input] of kind = "{kind}"')
    columns = strings(toml_table(t, "columns", where, "[input.columns]"), where, "[input.columns]")
    no_unknown(columns, set(COLUMNS), where, "[input.columns]")
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
        path=None if path is None else base / toml_str(t, "path", where, "[input]"),
        format=choice(t, "format", FORMATS, where, "[input]", default="csv"),
        host=toml_str(t, "host", where, "[input]", default="localhost"),
        port=port,
        speedup=float(speedup),
        columns=mapping,
        series=toml_str(t, "series", where, "[input]") if "series" in t else None,
        ts_unit=choice(t, "ts_unit", tuple(EPOCH_UNITS), where, "[input]", default="ms"),
        bootstrap=toml_str(t, "bootstrap", where, "[input]") if kind == "kafka" else None,
        topic=toml_str(t, "topic", where, "[input]") if kind == "kafka" else None,
        starting_offsets=toml_str(t, "starting_offsets", where, "[input]", default="latest"),
        sources=count(t, "sources", where, default=200),
        metrics=count(t, "metrics", where, default=15, most=len(STREAM_METRICS)),
        step_ms=duration(t, "step", where, "[input]", default="10s"),
        max_ticks_per_batch=count(t, "max_ticks_per_batch", where, default=100),
        ticks=count(t, "ticks", where, default=1) if "ticks" in t else None,
        seed=count(t, "seed", where, default=7, least=0),
        start_ms=epoch_ms(t, "start", where),
    )
    _exists(spec, where)
    return spec


def _exists(spec: InputSpec, where: str) -> None:
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
