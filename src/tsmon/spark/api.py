"""The PySpark API: monitor any streaming DataFrame (docs/pyspark.md).

::

    from tsmon.spark import Monitor

    mon = Monitor(spark, checkpoint="ckpt", queries="QUERY s AS SUM(a.x, b.x) WITHIN 1")
    run = mon.start(points, columns={"series": "name", "ts": "event_time", "value": "v"},
                    answers="parquet:out/answers", events=my_foreach_batch)
    run.add_query("QUERY hot ON *.x WHEN last > 40 EMIT series, last")
    run.answers()          # pandas; run.events(), run.last_progress
    run.stop()

A :class:`Monitor` holds a job's settings (the keyword arguments take the keys and values of
the job file's tables, :mod:`tsmon.spark.job`); :meth:`Monitor.start` checks the DataFrame and
its column mapping (:func:`tsmon.spark.points.check_columns`) and the outputs before anything
is written, then starts one streaming query and returns its :class:`Run`. The pipeline is the
job runner's (:class:`tsmon.spark.runtime.JobRunner`): ``tsmon run job.toml`` is
:meth:`Monitor.from_job` over the DataFrame of the job's ``[input]``. Outputs:
:mod:`tsmon.spark.outputs`.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from tsmon.core.timestamps import EPOCH_UNITS
from tsmon.spark.input_spec import InputSpec
from tsmon.spark.job import Job, JobError, parse_job
from tsmon.spark.outputs import Output, Outputs, answers_frame, output
from tsmon.spark.points import check_columns
from tsmon.spark.runtime import JobRunner
from tsmon.spark.signals import run_until_signalled
from tsmon.spark.sinks import EVENT_COLUMNS, BatchOutput, Callback, event_rows, with_utc

__all__ = ["Monitor", "Run"]

#: The input kind of a monitor's job: a DataFrame given to :meth:`Monitor.start`.
DATAFRAME = "dataframe"
#: Where settings errors point: the keyword arguments are the job file's tables.
WHERE = "tsmon.spark.Monitor"
#: An example of each table argument, for the error of one that is not a dict.
_EXAMPLES = {
    "sources": '{"r1.*": "r1"}',
    "filters": '{"period": "1s"}',
    "registers": '{"retention": "1h"}',
    "standing": '{"tick": "1s"}',
    "replication": '{"phase": "10s"}',
}


class Monitor:
    """A job's settings, to monitor streaming DataFrames with.

    Parameters
    ----------
    spark
        The SparkSession (:func:`tsmon.spark.session.spark_session` pins what tsmon runs best
        on: RocksDB state, few shuffle partitions, UTC).
    checkpoint
        The job's directory: Spark's checkpoint, the coordinator's snapshots, the control
        files, live query commands, ``progress.jsonl``. Restart a job by starting a monitor of
        the same queries on the same checkpoint.
    queries
        Query statements (the language of ``docs/``; a job file's ``queries``).
    sources
        Series glob → source, for rows without a source column (a job file's ``[sources]``).
    trigger, max_future, idle_timeout, buckets, name
        As the job file's ``[job]`` keys (``trigger="1s"``, ``max_future="1d"`` or
        ``"off"``, ...).
    filters, registers, standing, replication
        Tables of the job file (e.g. ``filters={"period": "1s", "shrink": 0.1}``).

    A bad setting or query raises :class:`~tsmon.spark.job.JobError` naming it, here.
    """

    def __init__(
        self,
        spark: Any,
        checkpoint: str | Path,
        queries: str = "",
        sources: Mapping[str, str] | None = None,
        *,
        trigger: str = "1s",
        max_future: str = "1d",
        idle_timeout: str = "1h",
        buckets: int | None = None,
        name: str = "tsmon",
        filters: Mapping[str, Any] | None = None,
        registers: Mapping[str, Any] | None = None,
        standing: Mapping[str, Any] | None = None,
        replication: Mapping[str, Any] | None = None,
    ) -> None:
        path = os.fspath(checkpoint) if isinstance(checkpoint, os.PathLike) else checkpoint
        table = {"name": name, "checkpoint": path, "trigger": trigger}
        table |= {"max_future": max_future, "idle_timeout": idle_timeout}
        if buckets is not None:
            table["buckets"] = buckets
        raw: dict[str, Any] = {"job": table, "queries": queries, "sinks": []}
        for key, value in (
            ("sources", sources),
            ("filters", filters),
            ("registers", registers),
            ("standing", standing),
            ("replication", replication),
        ):
            if value is not None and not isinstance(value, Mapping):  # dict() would read it
                raise JobError(
                    f"{WHERE}: {key} must be a dict, e.g. {_EXAMPLES[key]}, got {value!r}"
                )
            if value is not None:
                raw[key] = dict(value)
        self.spark = spark
        self.job = parse_job(raw, Path.cwd(), WHERE, InputSpec(DATAFRAME))

    @classmethod
    def from_job(cls, job: Job, spark: Any = None) -> Monitor:
        """The monitor of a checked job file. Without ``spark``, its :class:`Run` makes the
        session from ``[job]`` after checking the checkpoint (a restart under edited queries
        is refused before Spark starts)."""
        mon = cls.__new__(cls)
        mon.spark, mon.job = spark, job
        return mon

    def start(
        self,
        df: Any,
        columns: Mapping[str, str] | None = None,
        *,
        answers: str | Output | None = None,
        events: str | Output | None = None,
        dead_letters: str | Output | None = None,
        ts_unit: str = "ms",
    ) -> Run:
        """Start monitoring the streaming DataFrame ``df``; returns the running :class:`Run`.

        ``columns`` maps the roles ``series``, ``ts``, ``value`` (default: same-named columns)
        and optionally ``source`` to columns of ``df``; ``ts_unit`` is the unit of epoch
        numbers in the ts column (``"s"``, ``"ms"``, ``"us"``, ``"ns"``; not of a
        ``TIMESTAMP`` or ISO-8601 text: docs/inputs.md). Each output is a function
        ``f(df, batch_id)`` or a ``"<format>:<path>"`` spec (:mod:`tsmon.spark.outputs`).
        A mapping, a column type or an output that cannot work raises
        :class:`~tsmon.spark.job.JobError` before the query starts.
        """
        outputs = {"answers": answers, "events": events, "dead_letters": dead_letters}
        run = self.run(df, columns, ts_unit=ts_unit, **outputs)
        run.start()
        return run

    def run(
        self,
        df: Any = None,
        columns: Mapping[str, str] | None = None,
        *,
        answers: str | Output | None = None,
        events: str | Output | None = None,
        dead_letters: str | Output | None = None,
        callback: Callback | None = None,
        ts_unit: str = "ms",
    ) -> Run:
        """The :class:`Run` of ``df`` (None: the job's ``[input]``, with its ``ts_unit``), not
        started yet."""
        job, stream = self.job, None
        if df is None and job.input.kind == DATAFRAME:
            raise JobError("give the streaming DataFrame to monitor: Monitor.start(df, columns)")
        if columns is not None and not isinstance(columns, Mapping):
            raise JobError(
                "columns: give a dict of role -> column, e.g. {'series': 'name', "
                f"'ts': 'event_time', 'value': 'v'}}, got {columns!r}"
            )
        if ts_unit not in EPOCH_UNITS:
            raise JobError(f"ts_unit must be one of {list(EPOCH_UNITS)}, got {ts_unit!r}")
        if df is None and ts_unit != "ms":
            raise JobError("ts_unit goes with a DataFrame; a job file's [input] has its own")
        if df is not None:
            mapping = check_columns(df, columns)
            job = replace(job, input=InputSpec(DATAFRAME, columns=mapping, ts_unit=ts_unit))
            stream = (df, mapping)
        targets = {"answers": answers, "events": events, "dead_letters": dead_letters}
        functions = {name: output(target, name) for name, target in targets.items()}
        run = Run(job, self.spark, callback, stream)
        if any(f is not None for f in functions.values()):
            run.sinks.subscribe(Outputs(run.spark, functions))
        return run


class Run(JobRunner):
    """A running monitor: its streaming query, live query changes, the newest results.

    ``add_query``, ``alter_query`` and ``remove_query`` submit a command as ``tsmon query``
    does (checked here, applied at the start of the next batch, kept in the checkpoint;
    returns the command's id); :meth:`query_log` lists them with their outcome.
    """

    #: Events :meth:`events` keeps (the newest).
    KEEP_EVENTS = 10_000

    def __init__(
        self,
        job: Job,
        spark: Any,
        callback: Callback | None = None,
        stream: tuple[Any, Mapping[str, str]] | None = None,
    ) -> None:
        super().__init__(job, spark, callback, stream)
        self._events: deque[tuple] = deque(maxlen=self.KEEP_EVENTS)
        self._lock = threading.Lock()  # batches end on Spark's stream thread
        self._last: BatchOutput | None = None
        self.sinks.subscribe(self._keep)

    def _keep(self, out: BatchOutput) -> None:
        rows = event_rows(out)
        with self._lock:
            self._last = out
            self._events.extend(rows)

    # -- live query changes --------------------------------------------------------------------
    def add_query(self, text: str) -> str:
        """Add a query (one ``QUERY name ...`` statement) at the next batch."""
        return self.commands.submit("add", text)

    def alter_query(self, text: str) -> str:
        """Change a query (``ALTER QUERY name WITHIN δ``, or a watch query redefined)."""
        return self.commands.submit("alter", text)

    def remove_query(self, name: str) -> str:
        """Remove query ``name`` at the next batch."""
        return self.commands.submit("remove", name)

    def query_log(self) -> pd.DataFrame:
        """Every submitted command with its state (as ``tsmon query list`` shows them):
        ``id, op, text, state`` (``pending``, ``taken``, ``applied``, ``rejected``),
        ``batch, detail``."""
        columns = ["id", "op", "text", "state", "batch", "detail"]
        return pd.DataFrame(self.commands.states(), columns=columns)

    # -- results -------------------------------------------------------------------------------
    def answers(self, kind: str | None = None) -> Any:  # type: ignore[override]
        """The newest answer of every query as a pandas frame (the ``answers`` output's
        columns; ``batch_id`` the last batch); ``kind`` (``bounded``, ``topk``, ``standing``,
        ``summary``): that kind's answers as objects, by query name."""
        if kind is not None:
            return super().answers(kind)
        batch = -1 if self._last is None else self._last.batch_id
        return answers_frame(batch, {p: list(a.items()) for p, a in self.latest.items()})

    def events(self) -> pd.DataFrame:
        """The newest events (up to :attr:`KEEP_EVENTS`), oldest first: the ``events``
        output's columns (``payload`` as JSON)."""
        with self._lock:
            rows = list(self._events)
        return with_utc(pd.DataFrame(rows, columns=EVENT_COLUMNS))

    # -- waiting -------------------------------------------------------------------------------
    def process_all_available(self) -> None:
        """Block until the input available now (and the control it causes) is processed.
        Ctrl-C (or SIGTERM) meanwhile stops the run between batches, then raises
        ``KeyboardInterrupt``."""
        self._until_interrupted(super().process_all_available)

    def await_termination(self, timeout: float | None = None) -> bool | None:
        """Block until the query stops (True), or ``timeout`` seconds pass (False); a failure
        is a :class:`JobError`. Ctrl-C (or SIGTERM) meanwhile stops the run between batches,
        then raises ``KeyboardInterrupt``."""
        return self._until_interrupted(partial(super().await_termination, timeout))

    def _until_interrupted(self, wait: Callable[[], Any]) -> Any:
        """``wait()`` in a thread (:func:`~tsmon.spark.signals.run_until_signalled`): a
        Ctrl-C in the JVM call would break Py4J's connection, with tracebacks, and kill the
        stream thread half-way through a batch."""
        done: list[Any] = []
        signalled: list[threading.Event] = []

        def work(flag: threading.Event) -> None:
            signalled.append(flag)
            done.append(wait())

        def stop() -> None:  # a signal may come before the thread runs work
            if not signalled or signalled[0].is_set():
                self.stop()

        if run_until_signalled(work, stop):
            raise KeyboardInterrupt(
                "tsmon: stopped between batches; the state is in the checkpoint"
            )
        return done[0]

    @property
    def last_progress(self) -> dict[str, Any] | None:
        """Spark's ``lastProgress`` of the query, with tsmon's record of its last batch
        (``progress.jsonl``) added: the fields Spark has keep Spark's meaning (its
        ``numInputRows`` counts control rows too; tsmon's accepted points are
        ``acceptedRows``), the others are tsmon's. None before the first batch."""
        spark = None if self._query is None else self._query.lastProgress
        tsmon = None if self._last is None else dict(self._last.progress)
        if spark is None and tsmon is None:
            return None
        merged = dict(tsmon or {})
        if tsmon is not None:
            merged["acceptedRows"] = tsmon["numInputRows"]
        merged.update(spark or {})
        return merged

    @property
    def status(self) -> dict[str, Any]:
        """Spark's ``status`` of the query."""
        return {} if self._query is None else dict(self._query.status)
