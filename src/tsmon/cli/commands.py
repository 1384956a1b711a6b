"""What each ``tsmon`` subcommand does (the parser is in :mod:`tsmon.cli`)."""

from __future__ import annotations

import argparse
import os
import signal
import threading
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

console = Console(highlight=False, markup=False)  # data text may hold [brackets]


def _run(args: argparse.Namespace) -> int:
    """Run a job file on Spark: until interrupted (Ctrl-C or SIGTERM), or over the available
    input (``--once``); either way it ends with one summary line and Spark stopped.

    The job file is checked completely before Spark starts (:func:`tsmon.spark.job.load_job`).
    The job waits in a thread (:func:`tsmon.spark.signals.run_until_signalled`), so no call
    into the JVM is ever interrupted half-way.
    """
    from dataclasses import replace

    from tsmon.http import serve
    from tsmon.spark.api import Monitor
    from tsmon.spark.job import load_job
    from tsmon.spark.restart import checked_queries
    from tsmon.spark.session import jvm_output
    from tsmon.spark.signals import INTERRUPTED, run_until_signalled

    job = load_job(args.job)
    http = job.http
    if args.http is not None:
        http = replace(http, listen=args.http)
    service = serve(job, http)  # before Spark: a bad address or a busy port fails at once
    if service.url is not None:
        console.print(
            f"HTTP API, /metrics and the dashboard on {service.url}/ (docs/http.md)",
            soft_wrap=True,
        )
    log = None if args.verbose else job.checkpoint / "spark.log"
    started: list[Any] = []  # the runner, once Spark is up

    def work(signalled: threading.Event) -> None:
        # Spark starts in here too: a Ctrl-C while pyspark launches the JVM (which ignores
        # SIGINT) would end this process and leave the JVM running without it
        with jvm_output(log):  # Spark's own messages: to the log, unless --verbose
            started.append(Monitor.from_job(job).run())  # the PySpark API over the [input]
        runner = started[0]
        if log is not None:
            console.print(
                f"Spark's own messages go to {log} (--verbose shows them here)", soft_wrap=True
            )
        service.subscribe(runner.sinks)
        if signalled.is_set():  # came while Spark started: stop() found no runner
            runner.close()
            return
        runner.start()
        (runner.process_all_available if args.once else runner.await_termination)()

    def stop() -> None:
        if started:
            started[0].close()  # the query, then Spark

    try:
        # after the HTTP address (a failed start records nothing), before "starting Spark"
        checked_queries(job)  # a restart under edited queries or settings is refused
        console.print(f"tsmon run {job.name}: starting Spark ({job.master}) ...", soft_wrap=True)
        if log is not None:
            log.parent.mkdir(parents=True, exist_ok=True)
        signalled = run_until_signalled(work, stop)
    finally:
        service.close()
    if not started:  # a signal, then Spark failed to start (else the failure was raised)
        console.print("interrupted")
        return INTERRUPTED
    runner = started[0]
    if signalled:
        console.print("interrupted: stopped (state is in the checkpoint)")
    accepted = runner.input_rows - runner.dead_letters
    console.print(
        f"done: {runner.batches} batches, {runner.input_rows} rows in ({accepted} accepted, "
        f"{runner.dead_letters} dead letters), {len(runner.answers())} answers; progress in "
        f"{job.checkpoint / 'progress.jsonl'}",
        soft_wrap=True,
    )
    return 0


def _cluster(args: argparse.Namespace) -> int:
    """Run a standalone master and workers on loopback in the foreground until Ctrl-C.

    Start-up problems (Java, a busy port, a worker that does not register) are a
    :class:`~tsmon.spark.standalone.ClusterError` (an ``OSError``): one ``error:`` line.
    """
    import tempfile

    from tsmon.spark.standalone import StandaloneCluster

    signal.signal(signal.SIGTERM, signal.default_int_handler)  # `kill` stops it as Ctrl-C does
    work_dir = args.work_dir or Path(tempfile.gettempdir()) / f"tsmon-cluster-{os.getpid()}"
    cluster = StandaloneCluster(work_dir, args.workers, args.cores, args.memory, args.port)
    console.print(f"starting a Spark master and {args.workers} worker(s); logs in {work_dir} ...")
    try:
        with cluster:
            partitions = 2 * args.workers * args.cores  # each is a state store per batch
            console.print(
                f"master {cluster.url} (web UI {cluster.webui_url}); in a job file:\n"
                f'  [job]\n  master = "{cluster.url}"\n  [job.spark_conf]\n'
                f'  "spark.sql.shuffle.partitions" = "{partitions}"  # about 2 per core\n'
                "Ctrl-C stops the master and workers (see docs/cluster.md)",
                soft_wrap=True,
            )
            cluster.wait()
    except KeyboardInterrupt:
        console.print("interrupted: master and workers stopped")
    return 0


def _query_submit(args: argparse.Namespace) -> int:
    """Check a command (syntax errors with line:column, nothing written) and submit it."""
    from tsmon.spark.commands import CommandLog, job_directory
    from tsmon.spark.driver import latest_snapshot

    directory = job_directory(args.job)
    log = CommandLog(directory)
    command_id = log.submit(args.op, args.text)
    console.print(
        f"submitted {args.op} as {command_id}; the job applies it at its next batch",
        soft_wrap=True,
    )
    snapshot = latest_snapshot(directory)  # what the job would make of it, told at once
    note = None if snapshot is None else _foresee(snapshot[1], log, command_id)
    if note is not None:
        console.print(f"note: {note}", soft_wrap=True)
    return 0


def _foresee(node: Any, log: Any, command_id: str) -> str | None:
    """What becomes of command ``command_id`` if the job's newest snapshot ``node`` (a copy:
    nothing is written) takes the pending commands: why it would be rejected, or why its
    query would wait for its series (:meth:`~tsmon.engine.hub.CoordinatorNode.why_waiting`)."""
    from tsmon.spark.commands import apply, check

    pending = log.pending()
    outcome = apply(node, pending, lambda series: {})
    mine = next((o for o in outcome if o["id"] == command_id), None)
    if mine is None:
        return None
    if not mine["ok"]:
        return f"the job would reject it as things stand: {mine['detail']}"
    command = next(c for c in pending if c.id == command_id)
    if command.op == "remove":
        return None
    why = node.why_waiting(node.registered_name(check(command.op, command.text).name))
    return None if why is None else f"it will wait: {why}"


def _query_list(args: argparse.Namespace) -> int:
    """The queries running after the job's last batch with their state (running, waiting for
    a series, dropped), then every command with its state (pending, applied or rejected)."""
    from tsmon.spark.commands import CommandLog, job_directory

    directory = job_directory(args.job)
    console.print(_running_table(directory))
    rows = CommandLog(directory).states()
    if not rows:
        console.print(f"no commands submitted to {args.job}")
        return 0
    table = Table(title=f"{args.job}: {len(rows)} commands")
    table.add_column("id (cmd-<UTC time>-<pid>-<n>)", no_wrap=True)
    for column in ("op", "text", "state"):
        table.add_column(column)
    for row in rows:
        state = row["state"]
        if row["batch"] is not None:
            state += f" in batch {row['batch']}"
        if row["detail"]:
            state += f": {row['detail']}"
        table.add_row(row["id"], row["op"], row["text"], state)
    console.print(table)
    return 0


def _running_table(directory: Path) -> Table | str:
    """The queries of the newest coordinator snapshot, by kind, with their state."""
    from tsmon.spark.driver import latest_snapshot

    snapshot = latest_snapshot(directory)
    if snapshot is None:
        return f"no batch has run yet in {directory}: the job's queries start with its first"
    batch, node = snapshot
    table = Table(title=f"queries running after batch {batch}")
    for column in ("query", "part", "state"):
        table.add_column(column)
    waiting = node.waiting.notes
    for name, part in node.parts.items():
        dropped = part.progress().get("droppedQueries", {})
        for query in part.names():
            state = "running"
            if query in waiting:
                state = f"waits: {waiting[query]}"
            elif query in dropped:
                state = f"dropped: {dropped[query]}"
            table.add_row(query, name, state)
    return table


def _check(args: argparse.Namespace) -> int:
    """Every error of a query file (status 2 if any), then its statements (:mod:`.check`)."""
    from tsmon.cli.check import run_check

    return run_check(args.file, console)


def _demo(args: argparse.Namespace) -> int:
    """The Spark demo (:mod:`tsmon.demos.spark`), or the in-process one with ``--in-process``."""
    if args.in_process:
        from tsmon.demos.inprocess import run_demo

        return run_demo(console, hosts=args.hosts or 100, hours=args.hours)
    from tsmon.demos.spark import DemoSettings, run_spark_demo

    settings = DemoSettings(hosts=args.hosts or 200, ticks=args.ticks, master=args.master)
    return run_spark_demo(Console(highlight=False), settings, args.dir, args.verbose)
