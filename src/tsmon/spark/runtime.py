"""A tsmon job on Structured Streaming: source nodes in executors, the coordinator on the driver.

::

    input ─ normalise: good rows, unreadable rows as 'pass' ─┐
                                                            ├─ union ─ groupBy(bucket)
    ctrl-<N>.json ──────────────────────────────────────────┘       │ applyInPandasWithState
        SourceNode: messages, events, dead letters, one heartbeat;  │ ('pass' rows go through
                                                                    ▼  unchanged: one scan)
        foreachBatch: CoordinatorNode.step ─ answers, events, dead letters to the sinks
                      └─ ctrl-<N>.json for batch N+1 (atomic)

The input is any streaming DataFrame with a column mapping, read by
:func:`tsmon.spark.points.point_rows` (the PySpark API, :mod:`tsmon.spark.api`, gives the user's;
without one, the job's ``[input]`` gives it, :func:`tsmon.spark.inputs.raw_stream`).
The nodes and the coordinator are :class:`~tsmon.engine.node.SourceNode` and
:class:`~tsmon.engine.hub.CoordinatorNode` (pure, generic over the query kinds of
:mod:`tsmon.kinds`, also run in-process by ``BatchedRuntime``); this module only hosts them.
The coordinator snapshots its state after every batch (``coordinator/coord-<N>.pkl``, atomic;
:mod:`tsmon.spark.driver`) and a replayed batch ``N`` restarts from the snapshot of ``N − 1``,
so control, answers and counts are written once whatever Spark replays.

Only the parts' rows (filter updates, top-k messages, stream models, events, summary answers,
rejected points) and one heartbeat per node and batch leave a node. Sinks
(:mod:`tsmon.spark.sinks`): a live console table, Parquet (answers of every kind, events, dead
letters; one file per batch id, replaced on a replay) and a callback; progress per batch goes
to ``<checkpoint>/progress.jsonl``. Live query changes (``tsmon query add|alter|remove --job
DIR``, :mod:`tsmon.spark.commands`) are applied by the coordinator at the start of the next
batch and reach the nodes with the control after it.

Watch-query changes reach the sources that have reported; a source that first reports later
starts from the job file's watch queries and gets the changes with the control after its first
batch (so for that one batch it runs the job file's set). On a restart, nodes and the
coordinator come from the checkpoint; new nodes take the job file's watch queries, so change
queries with ``tsmon query``, not by editing the job file of a running job: a restart under a
job file whose queries or settings (``[sources]``, ``[filters]``, ``[registers]``, ...) differ
from those the checkpoint started with is refused, naming the difference
(:func:`~tsmon.spark.restart.check_restart`).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping
from functools import partial
from typing import Any

from tsmon.engine.deadletters import Reason
from tsmon.engine.events import event_order
from tsmon.engine.guard import Quarantine, row_counts
from tsmon.engine.hub import CoordinatorNode
from tsmon.engine.node import new_node
from tsmon.kinds import answers_part
from tsmon.spark.buckets import (
    BucketsChanged,
    default_buckets,
    freeze_buckets,
    shuffle_partitions,
)
from tsmon.spark.commands import CommandLog, apply
from tsmon.spark.control import ControlChannel
from tsmon.spark.cpu import CpuTimes
from tsmon.spark.driver import (
    Coordinator,
    known_sources,
    latest_answers,
    running_queries,
)
from tsmon.spark.failures import query_failures, start_failures
from tsmon.spark.host import PASS, node_stream
from tsmon.spark.job import Job, JobError
from tsmon.spark.points import point_rows
from tsmon.spark.progress import SparkProgress, append_progress, utc_times
from tsmon.spark.readers import write_replicas
from tsmon.spark.restart import checked_queries, running_on
from tsmon.spark.sinks import DEAD_LETTER_COLUMNS, BatchOutput, Callback, Sinks

#: Dead-letter reasons of unreadable input rows (the ``reason`` column of the dead-letter sink).
REASONS = tuple(
    r.value
    for r in (
        Reason.BAD_SERIES,
        Reason.BAD_TIMESTAMP,
        Reason.NOT_NUMERIC,
        Reason.NAN,
        Reason.INFINITE,
    )
)


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
    stream
        ``(DataFrame, columns)``: any streaming DataFrame and the column of each of
        ``series``, ``ts``, ``value`` (and ``source``) in it (:mod:`tsmon.spark.points`);
        None: the job's ``[input]`` (:func:`tsmon.spark.inputs.raw_stream`).
    """

    def __init__(
        self,
        job: Job,
        spark: Any = None,
        callback: Callback | None = None,
        stream: tuple[Any, Mapping[str, str]] | None = None,
    ) -> None:
        self.queries = checked_queries(job)  # before Spark starts: a restart under edits fails
        self.job = job
        self.stream = stream
        if spark is None:
            from tsmon.spark.session import spark_session

            spark = spark_session(job.master, job.name, dict(job.spark_conf))
        self.spark = spark
        self.sinks = Sinks(job.sinks, callback)
        self.coordinator = Coordinator(job, self.queries)
        self._progress_last: int | None = None
        self.commands = CommandLog(job.checkpoint)
        self.channel = ControlChannel(job.checkpoint / "control")
        self.latest: dict[str, Mapping[str, Any]] = {}  # part -> query -> newest answer
        self.dead_letters = 0
        self.input_rows = 0  # input rows of the batches this runner ran (accepted + dead)
        self.batches = 0
        self._query: Any = None  # the StreamingQuery, once started
        self._batch_done = threading.Event()  # set as each batch leaves foreachBatch
        self._dropped_shown: set[str] = set()
        self._waiting_shown: set[str] = set()  # queries said to match no series
        self.spark_progress = SparkProgress(job.checkpoint / "spark_progress.jsonl")
        self.cpu = CpuTimes(self.spark)  # the Python workers' CPU time, by part

    # -- plan --------------------------------------------------------------------------------
    def _rows(self) -> Any:
        """Input rows with ``source, series, ts, value, seq`` and a ``reason`` for bad ones."""
        if self.stream is None:
            from tsmon.spark.inputs import raw_stream

            self.stream = raw_stream(self.spark, self.job.input, self.cpu.acc)
        raw, columns = self.stream
        return point_rows(raw, columns, self.job.sources, self.job.input.ts_unit)

    def start(self) -> None:
        """Start the job's one streaming query (a :class:`JobError` if it runs already). The
        input is scanned once: its good rows go through the source nodes, its unreadable rows
        pass through them unchanged to the driver (dead letters)."""
        from pyspark.sql import functions as F

        if running_on(self.spark, self.job.checkpoint / "nodes"):  # Spark would stop it
            raise JobError(
                "the run is started already; stop() it before starting it again (a query "
                f"runs on the checkpoint {self.job.checkpoint}, maybe of another Run or session)"
            )
        rows = self._rows()
        fields = ("source", "series", "ts", "value", "raw_ts", "raw_value", "reason", "detail")
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
        try:
            buckets = freeze_buckets(
                self.job.checkpoint,
                self.job.buckets,
                default_buckets(self.spark),
                shuffle_partitions(self.spark),
            )
        except BucketsChanged as e:
            raise JobError(str(e)) from None
        nodes = node_stream(
            self.spark,
            data,
            self.channel.read_stream(self.spark),
            partial(new_node, settings=self.queries.settings(self.job)),
            buckets,
            self.cpu.acc,
            str(self.job.checkpoint / "history"),
        )
        trigger = {"processingTime": f"{self.job.trigger_ms} milliseconds"}
        try:
            self.sinks.start()
            self.spark_progress.attach(self.spark)
            with start_failures():
                self._query = (
                    nodes.writeStream.foreachBatch(self._on_batch)
                    .option("checkpointLocation", str(self.job.checkpoint / "nodes"))
                    .trigger(**trigger)
                    .start()
                )
        except BaseException:  # a JobError, a Py4J error, Ctrl-C: nothing is left attached
            self.stop()  # the listener and the console
            raise
        self.spark_progress.query_id = str(self._query.id)

    @property
    def node_query(self) -> Any:
        """The StreamingQuery of the source nodes and the coordinator (its ``recentProgress``)."""
        return self._query

    def answers(self, kind: str = "bounded") -> Mapping[str, Any]:
        """The newest answer of every query of ``kind`` after the last batch: ``bounded``
        (the default), ``topk``, ``standing`` or ``summary``."""
        return self.latest.get(answers_part(kind), {})

    def process_all_available(self) -> None:
        """Block until every input available now (and the control it causes) is processed."""
        with query_failures():
            self._query.processAllAvailable()

    def await_termination(self, timeout: float | None = None) -> bool | None:
        """Block until the query stops, or ``timeout`` seconds pass (then False); an error in
        it is raised here as a :class:`JobError`."""
        with query_failures():
            return self._query.awaitTermination(timeout)

    def stop(self, patience_s: float = 60.0) -> None:
        """Stop the streaming query between batches (waiting up to ``patience_s`` for the
        running one to end) and the live console. A query stopped in the middle of a batch is
        replayed on restart, but Spark's stream thread dies of it with a Java stack trace on
        stderr."""
        deadline = time.monotonic() + patience_s
        self._batch_done.clear()
        while (
            self._query is not None
            and self._query.isActive
            and self._query.status["isTriggerActive"]
            and time.monotonic() < deadline
        ):  # a trigger runs: stop once it is over, or once its batch has left Python
            if self._batch_done.wait(0.02):
                break
        if self._query is not None:
            self._query.stop()
        self.spark_progress.detach()
        self.sinks.stop()

    def close(self, patience_s: float = 60.0) -> None:
        """:meth:`stop`, then stop the SparkSession: what a process does before it exits."""
        self.stop(patience_s)
        self.spark.stop()

    # -- driver callbacks ----------------------------------------------------------------------
    def _on_batch(self, df: Any, batch_id: int) -> None:
        started = time.perf_counter()
        # through Arrow, not collect() and Row.asDict(): same rows in the same order, ~25 ms
        # less per benchmark batch of ~4,700 rows, during which the cluster waits
        collected = df.toArrow().to_pylist()
        for r in collected:
            r["payload"] = json.loads(r["payload"])
        unreadable = [r["payload"] for r in collected if r["kind"] == PASS]
        rows = [r for r in collected if r["kind"] != PASS]
        commands = self.commands.take(batch_id)  # the same ones if this batch is replayed

        def prepare(node: CoordinatorNode) -> list[dict]:
            return apply(node, commands, partial(known_sources, self.job))

        node, control, outcomes, quarantine = self.coordinator.step(batch_id, rows, prepare)
        self.commands.record(batch_id, outcomes)
        for outcome in outcomes:  # each change as it is applied (or why it is not)
            state = "applied" if outcome["ok"] else "rejected"
            command = f"{outcome['op']} command {outcome['id']}"
            print(f"tsmon: batch {batch_id} {state} {command}: {outcome['detail']}")
        progress_of_parts: dict[str, Any] = {}
        for part in node.parts.values():
            progress_of_parts.update(part.progress())
        for name, reason in progress_of_parts.get("droppedQueries", {}).items():
            if name not in self._dropped_shown:
                print(f"tsmon: query {name!r} dropped: {reason}")
                self._dropped_shown.add(name)
        waiting = node.waiting
        for name, why in waiting.notes.items():
            if name not in self._waiting_shown:  # once, and again after it matched
                print(f"tsmon: query {name!r} waits: {why}")
                self._waiting_shown.add(name)
        for name, what in waiting.started.items():
            print(f"tsmon: query {name!r} {what}")
            self._waiting_shown.discard(name)
        # the channel numbers rows itself, keeping the coordinator's order
        self.channel.write(
            batch_id, {src: [r["payload"] for r in rs] for src, rs in control.items()}
        )
        self.latest = latest_answers(node)
        arrived = {name: part.arrived() for name, part in node.parts.items()}
        events = [r["payload"] for r in event_order(rows)]
        dead = [r for r in [*rows, *quarantine.rows] if r["kind"] == "dead"]
        rejected = [_unreadable(p) for p in unreadable] + [
            _rejected(r["source"], r["payload"]) for r in dead
        ]
        quarantined = _quarantined(dead, quarantine)
        # rows of several nodes arrive in no fixed order: sort, so a replay writes the same file
        rejected.sort(key=lambda d: tuple(str(d[c]) for c in DEAD_LETTER_COLUMNS))
        self.dead_letters += len(rejected)
        replicas = node.part("replica")
        if replicas.clock:  # summary readers follow these files (tsmon.spark.readers)
            write_replicas(self.job.checkpoint, batch_id, replicas)
        counts = row_counts(rows, quarantine, len(unreadable))
        progress = {
            "batchId": batch_id,
            # every input row of the batch is accepted or a dead letter: inputRows =
            # numInputRows + deadLetters; the node rows the coordinator's step left out are
            # dead letters too, counted apart (their points were accepted at their node)
            "numInputRows": counts.accepted,
            "inputRows": counts.input_rows,
            "rowsToCoordinator": len(rows),
            "controlRows": sum(len(v) for v in control.values()),
            "answers": sum(len(a) for a in self.latest.values()),
            "events": len(events),
            "deadLetters": counts.dead_letters,
            "coordinatorQuarantined": counts.coordinator_quarantined,
            "quarantined": quarantined,
            **node.progress(),
            "commands": outcomes,
            "queries": running_queries(node),
            "messages": _counts(node),
            **progress_of_parts,
            "previousBatchDurationMs": self.spark_progress.last_duration_ms,
            # CPU of the file reader and the host in the Python workers (tsmon.spark.cpu)
            "pythonCpuMs": self.cpu.since_last(),
            "driverMs": round(1000 * (time.perf_counter() - started), 3),
        }
        progress.update(utc_times(progress))
        output = BatchOutput(
            batch_id,
            events,
            rejected,
            progress,
            self.latest,
            arrived,
        )
        self.sinks.emit(output)
        self.input_rows += progress["inputRows"]
        self.batches += 1
        append_progress(self.job.checkpoint / "progress.jsonl", progress, self._progress_last)
        self._progress_last = batch_id
        self._batch_done.set()


def _quarantined(dead: list[dict], coordinator: Quarantine) -> dict[str, int]:
    """Quarantined rows per source, each source told once per batch on the console (the
    error, not the row: a dead letter of the coordinator's also shows the row it left out)."""
    counts: dict[str, int] = {}
    errors: dict[str, str] = dict.fromkeys(coordinator.sources, str(coordinator.error))
    for r in dead:
        if r["payload"]["reason"] == Reason.QUARANTINED.value:
            counts[r["source"]] = counts.get(r["source"], 0) + 1
            errors.setdefault(r["source"], r["payload"]["detail"])
    for source, n in sorted(counts.items()):
        step = "the coordinator's" if source in coordinator.sources else "its node"
        print(
            f"tsmon: quarantined {n} row(s) of source {source!r} ({step} step failed): "
            f"{errors[source]}"
        )
    return counts


def _unreadable(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The dead letter of an input row that could not be read (JSON drops null fields and
    writes NaN and infinities as strings)."""
    row = {**dict.fromkeys(DEAD_LETTER_COLUMNS), "detail": "", **payload}
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
