"""A tsmon job on Structured Streaming: source nodes in executors, the coordinator on the driver.

::

    input ─ normalise: good rows, unreadable rows as 'pass' ─┐
                                                            ├─ union ─ groupBy(source)
    ctrl-<N>.json ──────────────────────────────────────────┘       │ transformWithState
        SourceNode: messages, events, dead letters, one heartbeat;  │ ('pass' rows go through
                                                                    ▼  unchanged: one scan)
        foreachBatch: CoordinatorNode.step ─ answers, events, dead letters to the sinks
                      └─ ctrl-<N>.json for batch N+1 (atomic)

The protocol code is :mod:`tsmon.engine.batched` (pure, also run in-process by
``BatchedRuntime``); this module only hosts it. The coordinator snapshots its state after every
batch (``coordinator/coord-<N>.pkl``, atomic) and a replayed batch ``N`` restarts from the
snapshot of ``N − 1``, so control, answers and counts are written once whatever Spark replays.

Source nodes hold the job's watch queries (``QUERY q ON ...``) over their own series, with
registers and windows (:mod:`tsmon.engine.watch`); only their events and rejected points leave
them, with the filter messages and one heartbeat per node and batch. Bounded aggregates run at
the coordinator. Sinks (:mod:`tsmon.spark.sinks`): a live console table, Parquet (answers,
events, dead letters; one file per batch id, replaced on a replay) and a callback; progress per
batch goes to ``<checkpoint>/progress.jsonl``. Live query changes (``tsmon query
add|alter|remove --job DIR``, :mod:`tsmon.spark.commands`) are applied by the coordinator at the
start of the next batch and reach the nodes with the control after it. A bounded aggregate
over globs covers the matching series as the rows show them
(:meth:`~tsmon.engine.batched.CoordinatorNode.add_glob_query`).

Watch-query changes reach the sources that have reported; a source that first reports later
starts from the job file's watch queries and gets the changes with the control after its first
batch (so for that one batch it runs the job file's set). On a restart, nodes and the
coordinator come from the checkpoint; new nodes take the job file's watch queries, so change
queries with ``tsmon query``, not by editing the job file of a running job.
"""

from __future__ import annotations

import fnmatch
import json
import pickle
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from tsmon.core.moments import MAX_ABS_VALUE
from tsmon.engine.batched import CoordinatorNode, new_node
from tsmon.engine.bounded import to_query
from tsmon.engine.deferred import PARTITION_PREFIX, standing_series
from tsmon.engine.standing import StandingAnswer, check_window, series_weights
from tsmon.engine.summaries import SummaryAnswer
from tsmon.engine.topk import TopKAnswer
from tsmon.engine.watch import LOCAL_KINDS, event_order
from tsmon.protocols.filters import Answer, Query
from tsmon.query import parse_queries
from tsmon.query.aggregate import resolve_aggregate
from tsmon.query.ast import AggregateDef, StandingDef, TopKDef
from tsmon.query.patterns import is_glob, series_matches
from tsmon.spark.commands import CommandLog, apply, runnable
from tsmon.spark.control import ControlChannel
from tsmon.spark.files import atomic_write
from tsmon.spark.host import PASS, node_stream
from tsmon.spark.job import Job, JobError
from tsmon.spark.readers import write_replicas
from tsmon.spark.sinks import DEAD_LETTER_COLUMNS, BatchOutput, Callback, Sinks

#: Dead-letter reasons of unreadable input rows (the ``reason`` column of the dead-letter sink).
REASONS = ("bad_series", "unreadable_ts", "not_numeric", "nan", "infinite")
#: Dead-letter reason of a value beyond ``MAX_ABS_VALUE`` (readable, but window sums overflow).
OUT_OF_RANGE = "value_out_of_range"
#: Dead-letter reason of a row whose source is a reserved node key (a query partition's).
BAD_SOURCE = "bad_source"


@dataclass(frozen=True)
class JobQueries:
    """A job's queries, parsed and checked once: bounded aggregates over literal names as
    protocol queries, those over globs as statements, and the watch queries' text."""

    literal: list[Query]
    globbed: list[AggregateDef]
    watch: str
    topk: str = ""
    standing: str = ""

    @classmethod
    def of(cls, job: Job) -> JobQueries:
        """Parse and check ``job``'s queries (a :class:`JobError` for one that a running job
        cannot register, or that cannot be evaluated, e.g. weights summing to 0)."""
        literal, globbed, watch, topk, standing = [], [], [], [], []
        for s in parse_queries(job.queries):
            try:
                runnable(s)
                if isinstance(s, LOCAL_KINDS):  # watch and summary queries: at the nodes
                    watch.append(s.text)
                elif isinstance(s, TopKDef):
                    topk.append(s.text)
                elif isinstance(s, StandingDef):
                    check_window(s)
                    series_weights(s, [])  # a glob matches no series before the job runs
                    standing.append(s.text)
                elif isinstance(s, AggregateDef) and any(is_glob(t.series) for t in s.terms):
                    globbed.append(s)
                elif isinstance(s, AggregateDef):
                    literal.append(to_query(resolve_aggregate(s, [t.series for t in s.terms])))
                else:
                    raise ValueError(
                        f"line {s.line}: {type(s).__name__} statements do not run in a Spark "
                        "job; give them to a Monitor (tsmon watch) or submit them as commands"
                    )
            except ValueError as e:  # QuerySyntaxError is one
                raise JobError(str(e)) from None
        return cls(literal, globbed, "\n".join(watch), "\n".join(topk), "\n".join(standing))

    def register(self, node: CoordinatorNode, job: Job) -> None:
        """Register the bounded aggregates at a fresh coordinator."""
        for query in self.literal:
            node.add_query(query, source_of=_known_sources(job, query.objects))
        for statement in self.globbed:
            node.add_glob_query(statement)


def job_queries(job: Job) -> list[Query]:
    """The protocol queries of the job's bounded aggregates over literal series names."""
    return JobQueries.of(job).literal


def job_watch(job: Job) -> str:
    """The text of a job's watch queries (``QUERY q ON ...``), which every source node runs."""
    return JobQueries.of(job).watch


def register_queries(node: CoordinatorNode, job: Job) -> None:
    """Register the job's bounded aggregates at a fresh coordinator."""
    JobQueries.of(job).register(node, job)


class Coordinator:
    """The driver side: one :class:`CoordinatorNode` stepped per batch, snapshotted to disk.

    Every batch starts from the snapshot of the previous one (kept in memory, else read from
    ``coordinator/coord-<N−1>.pkl``), so a batch that fails half-way, or is replayed after a
    crash, starts again from the same state.
    """

    def __init__(self, job: Job, queries: JobQueries) -> None:
        self.job = job
        self.queries = queries
        self.directory = job.checkpoint / "coordinator"
        self.directory.mkdir(parents=True, exist_ok=True)
        self._last: tuple[int, bytes] | None = None  # (batch id, snapshot) of the last step

    def _fresh(self) -> CoordinatorNode:
        f = self.job.filters
        node = CoordinatorNode(
            f.period_ms,
            f.shrink,
            seed=0,
            growth=f.growth,
            watch=self.queries.watch,
            topk=self.queries.topk,
            standing=self.queries.standing,
            standing_settings=self.job.standing,
        )
        self.queries.register(node, self.job)
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
        Called with a :class:`~tsmon.spark.sinks.BatchOutput` after every batch (the
        ``callback`` sink).
    """

    def __init__(self, job: Job, spark: Any = None, callback: Callback | None = None) -> None:
        self.queries = JobQueries.of(job)  # parsed and checked once, before Spark starts
        self.job = job
        if spark is None:
            from tsmon.spark.session import spark_session

            spark = spark_session(job.master, job.name, dict(job.spark_conf))
        self.spark = spark
        self.sinks = Sinks(job.sinks, callback)
        self.coordinator = Coordinator(job, self.queries)
        self._progress_last: int | None = None
        self.commands = CommandLog(job.checkpoint)
        self.channel = ControlChannel(job.checkpoint / "control")
        self.answers: dict[str, Answer] = {}
        self.topk: dict[str, TopKAnswer] = {}  # the top-k sets after the last batch
        self.standing: dict[str, StandingAnswer] = {}  # standing queries' last evaluations
        self.summaries: dict[str, SummaryAnswer] = {}  # summary queries' newest answers
        self.dead_letters = 0
        self._query: Any = None  # the StreamingQuery, once started
        self._dropped_shown: set[str] = set()
        self.spark_progress = SparkProgress(job.checkpoint / "spark_progress.jsonl")

    # -- plan --------------------------------------------------------------------------------
    def _rows(self) -> Any:
        """Input rows with ``source, series, ts, value, seq`` and a ``reason`` for bad ones."""
        from pyspark.sql import functions as F

        from tsmon.spark.inputs import raw_stream

        raw, cols = raw_stream(self.spark, self.job.input)
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
            F.when(source.startswith(PARTITION_PREFIX), BAD_SOURCE)
            .when(series.isNull() | (series == ""), "bad_series")
            .when(ts.isNull(), "unreadable_ts")
            .when(value.isNull(), "not_numeric")
            .when(F.isnan(value), "nan")
            .when(F.abs(value) == float("inf"), "infinite")
            .when(F.abs(value) > MAX_ABS_VALUE, OUT_OF_RANGE)
        )
        return raw.select(
            source.alias("source"),
            series.alias("series"),
            ts.alias("ts"),
            value.alias("value"),
            # streams have no row ids: points of one source at one instant go in an order fixed
            # by their content (series, then the text of ts and value), the same whatever order
            # the shuffle delivers them in, so a replayed batch gives the same outputs; only
            # identical rows tie, and their order changes nothing
            F.xxhash64(series, raw_ts, text["value"]).alias("seq"),
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
        """Start the job's one streaming query. The input is scanned once: its good rows go
        through the source nodes, its unreadable rows pass through them unchanged to the
        driver (dead letters)."""
        from pyspark.sql import functions as F

        rows = self._rows()
        fields = ("source", "series", "ts", "value", "raw_ts", "raw_value", "reason")
        readable = rows.reason.isNull()
        # one projection, no branch: Spark would scan the input once per branch of the plan
        data = rows.select(
            F.coalesce("source", F.lit("")).alias("source"),
            F.when(readable, "data").otherwise(PASS).alias("kind"),
            "series",
            "ts",
            "value",
            "seq",
            F.when(readable, None).otherwise(F.to_json(F.struct(*fields))).alias("payload"),
        )
        f = self.job.filters
        nodes = node_stream(
            self.spark,
            data,
            self.channel.read_stream(self.spark),
            partial(
                new_node,
                period_ms=f.period_ms,
                shrink=f.shrink,
                registers=self.job.registers,
                watch=self.queries.watch,
                topk=self.queries.topk,
                tracked=standing_series(self.queries.standing),
                standing_settings=self.job.standing,
                replica_phase_ms=self.job.replica_phase_ms,
            ),
        )
        trigger = {"processingTime": f"{self.job.trigger_ms} milliseconds"}
        self.sinks.start()
        self.spark_progress.attach(self.spark)
        self._query = (
            nodes.writeStream.foreachBatch(self._on_batch)
            .option("checkpointLocation", str(self.job.checkpoint / "nodes"))
            .trigger(**trigger)
            .start()
        )
        self.spark_progress.query_id = str(self._query.id)

    @property
    def node_query(self) -> Any:
        """The StreamingQuery of the source nodes and the coordinator (its ``recentProgress``)."""
        return self._query

    def process_all_available(self) -> None:
        """Block until every input available now (and the control it causes) is processed."""
        with _failures():
            self._query.processAllAvailable()

    def await_termination(self) -> None:
        """Block until a query stops (an error in it is raised here as a :class:`JobError`)."""
        with _failures():
            self.spark.streams.awaitAnyTermination()

    def stop(self) -> None:
        """Stop the streaming query and the live console."""
        if self._query is not None:
            self._query.stop()
        self.spark_progress.detach()
        self.sinks.stop()

    # -- driver callbacks ----------------------------------------------------------------------
    def _on_batch(self, df: Any, batch_id: int) -> None:
        started = time.perf_counter()
        collected = [{**r.asDict(), "payload": json.loads(r["payload"])} for r in df.collect()]
        unreadable = [r["payload"] for r in collected if r["kind"] == PASS]
        rows = [r for r in collected if r["kind"] != PASS]
        commands = self.commands.take(batch_id)  # the same ones if this batch is replayed

        def prepare(node: CoordinatorNode) -> list[dict]:
            return apply(node, commands, partial(_known_sources, self.job))

        node, control, outcomes = self.coordinator.step(batch_id, rows, prepare)
        self.commands.record(batch_id, outcomes)
        for outcome in outcomes:
            if not outcome["ok"]:
                print(f"tsmon: query command {outcome['id']} rejected: {outcome['detail']}")
        for name, reason in node.dropped.items():
            if name not in self._dropped_shown:
                print(f"tsmon: query {name!r} dropped: {reason}")
                self._dropped_shown.add(name)
        # the channel numbers rows itself, keeping the coordinator's order
        self.channel.write(
            batch_id, {src: [r["payload"] for r in rs] for src, rs in control.items()}
        )
        self.answers = node.answers()
        self.topk = node.topk_answers()
        self.standing = node.standing_answers()
        self.summaries = node.summary_answers()
        events = [r["payload"] for r in event_order(rows)]
        rejected = [_unreadable(p) for p in unreadable] + [
            _rejected(r["source"], r["payload"]) for r in rows if r["kind"] == "dead"
        ]
        # rows of several nodes arrive in no fixed order: sort, so a replay writes the same file
        rejected.sort(key=lambda d: tuple(str(d[c]) for c in DEAD_LETTER_COLUMNS))
        self.dead_letters += len(rejected)
        if node.replica_clock:  # summary readers follow these files (tsmon.spark.readers)
            write_replicas(self.job.checkpoint, batch_id, node)
        heartbeats = [r["payload"] for r in rows if r["kind"] == "heartbeat"]
        progress = {
            "batchId": batch_id,
            "numInputRows": sum(h["points"] for h in heartbeats),
            "rowsToCoordinator": len(rows),
            "controlRows": sum(len(v) for v in control.values()),
            "answers": len(self.answers),
            "events": len(events),
            "deadLetters": len(rejected),
            "commands": outcomes,
            "messages": _counts(node),
            # event time up to which every source has reported: answers are exact as of it
            "watermark": node.coordinator.settled_ms,
            "droppedQueries": dict(node.dropped),
            "topk": {q: {"epoch": t.epoch, "settled": t.settled} for q, t in self.topk.items()},
            "standing": node.standing.totals(),
            "previousBatchDurationMs": self.spark_progress.last_duration_ms,
            "driverMs": round(1000 * (time.perf_counter() - started), 3),
        }
        output = BatchOutput(
            batch_id,
            self.answers,
            events,
            rejected,
            progress,
            self.topk,
            self.standing,
            list(node.standing.arrived),
            self.summaries,
            list(node.summaries_arrived),
        )
        self.sinks.emit(output)
        _append_progress(self.job.checkpoint / "progress.jsonl", progress, self._progress_last)
        self._progress_last = batch_id


class SparkProgress:
    """Spark's own progress of every batch (``StreamingQueryProgress`` as JSON: ``batchId``,
    ``durationMs``, ``numInputRows``, ``processedRowsPerSecond``, ...), appended to a JSON-lines
    file by a ``StreamingQueryListener`` on the driver. It complements ``progress.jsonl``, which
    is written inside the batch and so cannot know the batch's own duration."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.last_duration_ms: int | None = None
        self.query_id: str | None = None  # set once the job's query has started
        self._listener: Any = None
        self._spark: Any = None

    def attach(self, spark: Any) -> None:
        """Start listening to ``spark``'s streaming queries."""
        from pyspark.sql.streaming import StreamingQueryListener

        log = self

        class Listener(StreamingQueryListener):
            def onQueryStarted(self, event: Any) -> None:
                """Nothing to record."""

            def onQueryProgress(self, event: Any) -> None:
                if str(event.progress.id) == log.query_id:
                    log.record(event.progress.json)

            def onQueryIdle(self, event: Any) -> None:
                """Nothing to record."""

            def onQueryTerminated(self, event: Any) -> None:
                """Nothing to record."""

        self._listener, self._spark = Listener(), spark
        spark.streams.addListener(self._listener)

    def record(self, progress_json: str) -> None:
        """Append one progress record and keep its total duration."""
        duration = json.loads(progress_json).get("durationMs", {}).get("triggerExecution")
        self.last_duration_ms = None if duration is None else int(duration)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(json.loads(progress_json), sort_keys=True) + "\n")

    def detach(self) -> None:
        """Stop listening."""
        if self._listener is not None:
            self._spark.streams.removeListener(self._listener)
            self._listener = None


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


def _unreadable(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The dead letter of an input row that could not be read (JSON drops null fields and
    writes NaN and infinities as strings)."""
    row = {**dict.fromkeys(DEAD_LETTER_COLUMNS), **payload, "detail": ""}
    if row["value"] is not None:
        row["value"] = float(row["value"])
    return row


def _rejected(source: str, p: Mapping[str, Any]) -> dict[str, Any]:
    """The dead letter of a point a source node rejected (too late, a duplicate)."""
    return {
        "source": source,
        "series": p["series"],
        "ts": p["ts_ms"],
        "value": p["value"],
        "raw_ts": str(p["ts_ms"]),
        "raw_value": repr(p["value"]),
        "reason": p["reason"],
        "detail": p["detail"],
    }


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
