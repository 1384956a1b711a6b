"""A tsmon job on Structured Streaming: source nodes in executors, the coordinator on the driver.

::

    input files ─ normalise ─┬─ good rows ─┐
                             │             ├─ union ─ groupBy(source) ─ transformWithState
    ctrl-<N>.json ───────────┼─────────────┘                 │ SourceNode: message + heartbeat rows
                             │                               ▼
                             │        foreachBatch: CoordinatorNode.step ─ answers to sinks
                             │                     └─ ctrl-<N>.json for batch N+1 (atomic)
                             └─ bad rows ─ foreachBatch: dead letters with their reason

The protocol code is :mod:`tsmon.engine.batched` (pure, also run in-process by
``BatchedRuntime``); this module only hosts it. The coordinator snapshots its state after every
batch (``coordinator/coord-<N>.pkl``, atomic) and a replayed batch ``N`` restarts from the
snapshot of ``N − 1``, so control, answers and counts are written once whatever Spark replays.

**Supported in this slice:** file inputs (CSV, JSON, Parquet) with a column mapping; a series
glob → source mapping; bounded-aggregate queries over literal series names; sinks console,
parquet (answers and dead letters, one file per batch id, replace-on-replay) and a callback;
per-batch progress as JSON lines; restart from the checkpoint; live query changes
(``tsmon query add|alter|remove --job DIR``, :mod:`tsmon.spark.commands`), applied by the
coordinator at the start of the next batch. **Not yet:** socket, generator and replay inputs,
watch queries (``QUERY q ON ...``) at the nodes, globs in aggregates (a Spark job does not know
its series when it starts).
"""

from __future__ import annotations

import fnmatch
import json
import pickle
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from tsmon.engine.batched import CoordinatorNode, SourceNode
from tsmon.engine.bounded import to_query
from tsmon.protocols.filters import Answer
from tsmon.query import parse_queries
from tsmon.query.aggregate import resolve_aggregate
from tsmon.query.ast import AggregateDef
from tsmon.query.patterns import is_glob, series_matches
from tsmon.spark.commands import CommandLog, apply
from tsmon.spark.control import ControlChannel
from tsmon.spark.files import atomic_file, atomic_write
from tsmon.spark.job import Job, JobError

#: ``callback(batch_id, answers)`` is called on the driver after every batch.
Callback = Callable[[int, Mapping[str, Answer]], None]

#: Dead-letter reasons of input rows (the ``reason`` column of the dead-letter sink).
REASONS = ("bad_series", "unreadable_ts", "not_numeric", "nan", "infinite")
#: CSV files have a header with the mapped columns in this order (a column named twice, once).
COLUMN_ORDER = ("series", "source", "ts", "value")


def job_queries(job: Job) -> list[Any]:
    """The protocol queries of a job's bounded aggregates; anything else is a :class:`JobError`.

    Series must be named literally: the job cannot expand a glob before its series exist.
    """
    out = []
    for statement in parse_queries(job.queries):
        if not isinstance(statement, AggregateDef):
            raise JobError(
                f"query {statement.name!r}: only bounded aggregates (QUERY q AS AGG(...) WITHIN "
                "δ) run on the Spark runtime so far; run watch queries with the Monitor"
            )
        globs = [t.series for t in statement.terms if is_glob(t.series)]
        if globs:
            raise JobError(
                f"query {statement.name!r}: glob {globs[0]!r} — name the series literally in a "
                "Spark job (its series are not known when it starts)"
            )
        names = [t.series for t in statement.terms]
        out.append(to_query(resolve_aggregate(statement, names)))
    return out


class Coordinator:
    """The driver side: one :class:`CoordinatorNode` stepped per batch, snapshotted to disk.

    Every batch starts from the snapshot of the previous one (kept in memory, else read from
    ``coordinator/coord-<N−1>.pkl``), so a batch that fails half-way, or is replayed after a
    crash, starts again from the same state.
    """

    def __init__(self, job: Job, queries: list[Any]) -> None:
        self.job = job
        self.queries = queries  # the job's bounded aggregates (job_queries)
        self.directory = job.checkpoint / "coordinator"
        self.directory.mkdir(parents=True, exist_ok=True)
        self._last: tuple[int, bytes] | None = None  # (batch id, snapshot) of the last step

    def _fresh(self) -> CoordinatorNode:
        f = self.job.filters
        node = CoordinatorNode(f.period_ms, f.shrink, seed=0, growth=f.growth)
        for query in self.queries:
            node.add_query(query, source_of=_known_sources(self.job, query.objects))
        return node

    def _path(self, batch_id: int) -> Path:
        return self.directory / f"coord-{batch_id:09d}.pkl"

    def node_for(self, batch_id: int) -> CoordinatorNode:
        """A new copy of the coordinator as of the end of batch ``batch_id − 1``."""
        if self._last is not None and self._last[0] == batch_id - 1:
            return pickle.loads(self._last[1])
        previous = self._path(batch_id - 1)
        if previous.exists():
            return pickle.loads(previous.read_bytes())
        if any(self.directory.glob("coord-*.pkl")) and batch_id > 0:
            raise RuntimeError(
                f"no coordinator snapshot for batch {batch_id - 1} in {self.directory}; the "
                "checkpoint is incomplete — start the job from a fresh checkpoint directory"
            )
        return self._fresh()

    def step(
        self, batch_id: int, rows: list[dict], prepare: Callable[[CoordinatorNode], Any]
    ) -> tuple[CoordinatorNode, dict, Any]:
        """Run ``prepare(node)`` (live query commands), then step on batch ``batch_id``'s node
        outputs; returns the node, the control rows and what ``prepare`` returned."""
        node = self.node_for(batch_id)
        prepared = prepare(node)
        control = node.step(batch_id, rows)
        snapshot = node.snapshot()
        atomic_write(self._path(batch_id), snapshot)
        for old in sorted(self.directory.glob("coord-*.pkl"))[:-2]:
            old.unlink()  # keep the last two snapshots
        self._last = (batch_id, snapshot)
        return node, control, prepared


class JobRunner:
    """Run a :class:`~tsmon.spark.job.Job` on a SparkSession.

    Parameters
    ----------
    job
        The checked job.
    spark
        A session from :func:`tsmon.spark.session.spark_session` (made from the job if None).
    callback
        Called with ``(batch_id, answers)`` after every batch (the ``callback`` sink).
    """

    def __init__(self, job: Job, spark: Any = None, callback: Callback | None = None) -> None:
        if job.input.kind != "files":
            raise JobError(
                f"input kind {job.input.kind!r} is not supported by the Spark runtime yet; "
                'use kind = "files"'
            )
        queries = job_queries(job)  # errors before Spark starts
        self.job = job
        if spark is None:
            from tsmon.spark.session import spark_session

            spark = spark_session(job.master, job.name, dict(job.spark_conf))
        self.spark = spark
        self.callback = callback
        self.coordinator = Coordinator(job, queries)
        self._progress_last: int | None = None
        self.commands = CommandLog(job.checkpoint)
        self.channel = ControlChannel(job.checkpoint / "control")
        self.answers: dict[str, Answer] = {}
        self.dead_letters = 0
        self._queries: list[Any] = []

    # -- plan --------------------------------------------------------------------------------
    def _rows(self) -> Any:
        """Input rows with ``source, series, ts, value, seq`` and a ``reason`` for bad ones."""
        from pyspark.sql import functions as F

        spec = self.job.input
        cols = spec.columns
        reader = self.spark.readStream.option("maxFilesPerTrigger", 1)
        path = str(spec.path)
        if spec.format == "parquet":
            try:  # a file stream needs its schema up front: take it from the files there now
                schema = self.spark.read.parquet(path).schema
            except Exception as e:
                raise JobError(
                    f"[input] {path}: cannot read a Parquet schema there ({type(e).__name__}); "
                    "put at least one input file in place before starting a Parquet job"
                ) from None
            raw = reader.schema(schema).parquet(path)
        else:
            names = list(dict.fromkeys(cols[c] for c in COLUMN_ORDER if c in cols))
            schema = ", ".join(f"`{n}` STRING" for n in names)
            raw = reader.schema(schema)
            if spec.format == "csv":  # header names checked, in the order series, source, ts, value
                raw = raw.option("header", True).option("enforceSchema", False).csv(path)
            else:
                raw = raw.json(path)
        text = {k: F.col(f"`{v}`").cast("string") for k, v in cols.items() if v in raw.columns}
        series = text["series"]
        # the source column when a row has one, else the [sources] globs, else the series itself
        source = (
            F.coalesce(text["source"], self._source_expr(series))
            if "source" in text
            else (self._source_expr(series))
        )
        raw_ts = text["ts"]
        # try_* casts: Spark 4 runs in ANSI mode, where a bad cast fails the whole query
        ts = F.when(raw_ts.rlike(r"^-?\d+$"), raw_ts.try_cast("bigint")).otherwise(
            F.unix_millis(F.try_to_timestamp(raw_ts))
        )
        value = text["value"].try_cast("double")
        reason = (
            F.when(series.isNull() | (series == ""), "bad_series")
            .when(ts.isNull(), "unreadable_ts")
            .when(value.isNull(), "not_numeric")
            .when(F.isnan(value), "nan")
            .when(F.abs(value) == float("inf"), "infinite")
        )
        return raw.select(
            source.alias("source"),
            series.alias("series"),
            ts.alias("ts"),
            value.alias("value"),
            # streams have no row ids: points of one source at one instant go in series order;
            # two points of one series at one instant are a duplicate with no defined order
            F.xxhash64(series).alias("seq"),
            raw_ts.alias("raw_ts"),
            text["value"].alias("raw_value"),
            reason.alias("reason"),
        )

    def _source_expr(self, series: Any) -> Any:
        """Source of each row from the ``[sources]`` globs; a series is its own source else.

        Literal names are one map lookup (a job may list thousands); wildcard globs are tried
        in file order after it.
        """
        from itertools import chain

        from pyspark.sql import functions as F

        literal = {g: s for g, s in self.job.sources.items() if not is_glob(g)}
        expr = series
        for glob, source in reversed([(g, s) for g, s in self.job.sources.items() if is_glob(g)]):
            # the fnmatch rule of tsmon.query.patterns, as a Java regex (Python's translation)
            expr = F.when(series.rlike("^" + fnmatch.translate(glob)), F.lit(source)).otherwise(
                expr
            )
        if literal:
            pairs = F.create_map(
                *chain.from_iterable((F.lit(k), F.lit(v)) for k, v in literal.items())
            )
            expr = F.coalesce(F.try_element_at(pairs, series), expr)  # ANSI: no error if absent
        return expr

    def start(self) -> None:
        """Start the node query and the dead-letter query."""
        from tsmon.spark.host import node_stream

        rows = self._rows()
        good = rows.where(rows.reason.isNull()).select("source", "series", "ts", "value", "seq")
        f = self.job.filters
        nodes = node_stream(
            self.spark,
            good,
            self.channel.read_stream(self.spark),
            partial(SourceNode, period_ms=f.period_ms, shrink=f.shrink),
        )
        trigger = {"processingTime": f"{self.job.trigger_ms} milliseconds"}
        ckpt = self.job.checkpoint
        self._queries = [
            nodes.writeStream.foreachBatch(self._on_batch)
            .option("checkpointLocation", str(ckpt / "nodes"))
            .trigger(**trigger)
            .start(),
            rows.where(rows.reason.isNotNull())
            .writeStream.foreachBatch(self._on_dead)
            .option("checkpointLocation", str(ckpt / "dead"))
            .trigger(**trigger)
            .start(),
        ]

    @property
    def node_query(self) -> Any:
        """The StreamingQuery of the source nodes and the coordinator (its ``recentProgress``)."""
        return self._queries[0]

    def process_all_available(self) -> None:
        """Block until every input available now (and the control it causes) is processed."""
        with _failures():
            for query in self._queries:
                query.processAllAvailable()
            self._queries[0].processAllAvailable()

    def await_termination(self) -> None:
        """Block until a query stops (an error in it is raised here as a :class:`JobError`)."""
        with _failures():
            self.spark.streams.awaitAnyTermination()

    def stop(self) -> None:
        """Stop both queries."""
        for query in self._queries:
            query.stop()

    # -- driver callbacks ----------------------------------------------------------------------
    def _on_batch(self, df: Any, batch_id: int) -> None:
        started = time.perf_counter()
        rows = [{**r.asDict(), "payload": json.loads(r["payload"])} for r in df.collect()]
        commands = self.commands.take(batch_id)  # the same ones if this batch is replayed

        def prepare(node: CoordinatorNode) -> list[dict]:
            return apply(node, commands, partial(_known_sources, self.job))

        node, control, outcomes = self.coordinator.step(batch_id, rows, prepare)
        self.commands.record(batch_id, outcomes)
        for outcome in outcomes:
            if not outcome["ok"]:
                print(f"tsmon: query command {outcome['id']} rejected: {outcome['detail']}")
        # the channel numbers rows itself, keeping the coordinator's order
        self.channel.write(
            batch_id, {src: [r["payload"] for r in rs] for src, rs in control.items()}
        )
        self.answers = node.answers()
        heartbeats = [r["payload"] for r in rows if r["kind"] == "heartbeat"]
        progress = {
            "batchId": batch_id,
            "numInputRows": sum(h["points"] for h in heartbeats),
            "rowsToCoordinator": len(rows),
            "controlRows": sum(len(v) for v in control.values()),
            "answers": len(self.answers),
            "commands": outcomes,
            "messages": _counts(node),
            "driverMs": round(1000 * (time.perf_counter() - started), 3),
        }
        self._write_answers(batch_id)
        _append_progress(self.job.checkpoint / "progress.jsonl", progress, self._progress_last)
        self._progress_last = batch_id
        if self.callback is not None:
            self.callback(batch_id, self.answers)
        if any(s.kind == "console" for s in self.job.sinks):
            _print_answers(batch_id, self.answers)

    def _write_answers(self, batch_id: int) -> None:
        import pandas as pd

        for sink in self.job.sinks:
            if sink.kind != "parquet" or sink.path is None:
                continue
            columns = ["batch_id", "query", "value", "lo", "hi", "as_of_ms"]
            frame = pd.DataFrame(
                [(batch_id, q, a.value, a.lo, a.hi, a.as_of_ms) for q, a in self.answers.items()],
                columns=columns,
            )
            atomic_file(
                sink.path / "answers" / f"batch-{batch_id:09d}.parquet",
                partial(frame.to_parquet, index=False),
            )

    def _on_dead(self, df: Any, batch_id: int) -> None:
        frame = df.toPandas()
        self.dead_letters += len(frame)
        for sink in self.job.sinks:
            if sink.kind == "parquet" and sink.path is not None and len(frame):
                atomic_file(
                    sink.path / "dead_letters" / f"batch-{batch_id:09d}.parquet",
                    partial(frame.to_parquet, index=False),
                )


@contextmanager
def _failures() -> Iterator[None]:
    """A failed streaming query becomes a :class:`JobError` with the first line of its reason
    (the rest of Spark's message is the query plan)."""
    from pyspark.errors import StreamingQueryException

    try:
        yield
    except StreamingQueryException as e:
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise JobError(f"the streaming query failed: {reason}") from None


def _known_sources(job: Job, objects: list[str]) -> dict[str, str]:
    """Where the job says each series lives, as rows will show it: by its ``[sources]`` glob;
    else, without a source column, the series itself. With a source column the rows decide,
    so such series are left out (the coordinator learns them from the rows)."""
    out = {}
    for obj in objects:
        literal = job.sources.get(obj) if not is_glob(obj) else None  # literal names first,
        globs = (s for g, s in job.sources.items() if is_glob(g) and series_matches(obj, [g]))
        source = literal if literal is not None else next(globs, None)  # as in _source_expr
        if source is None and "source" not in job.input.columns:
            source = obj
        if source is not None:
            out[obj] = source
    return out


def _counts(node: CoordinatorNode) -> dict[str, int]:
    c = node.counts
    m = c.messages
    return {
        "streamed": m.streamed,
        "growth": m.growth,
        "shrink": m.shrink,
        "rowsIn": c.rows_in,
        "heartbeats": c.heartbeats,
        "controlRows": c.control_rows,
        "batches": c.batches,
    }


def _append_progress(path: Path, record: Mapping[str, Any], last: int | None) -> None:
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


def _print_answers(batch_id: int, answers: Mapping[str, Answer]) -> None:
    from rich.console import Console

    from tsmon.report import format_value

    console = Console()
    for name, a in answers.items():
        console.print(
            f"batch {batch_id} {name}: [{format_value(a.lo)}, {format_value(a.hi)}] "
            f"value {format_value(a.value)} as of {a.as_of_ms}",
            soft_wrap=True,
        )
