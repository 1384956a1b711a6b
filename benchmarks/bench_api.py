"""Throughput of the PySpark API (``tsmon.spark.Monitor``) against ``tsmon run`` on the same input.

The workload and queries are ``bench_spark.py``'s ``avg`` variant (``spark_workload.py``: seeded
random walks as Parquet files, one per micro-batch; ``AVG`` bounded aggregates). ``tsmon run`` is
run as the CLI runs it, ``Monitor.from_job(job).run()`` over the job's ``[input]`` (a Parquet files
input); the API run monitors the user's own ``spark.readStream.parquet(...)`` of the same
directory, with the same settings and no outputs. Both run in one SparkSession, alternately
``--rounds`` times (job, API, job, API, ...), each on a fresh checkpoint. Sustained points/s: the
points of the data batches after the first divided by their ``triggerExecution``; the ratio printed
is API / job of the medians (1.0: no cost). Answers of the two are checked equal.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from spark_runs import INPUT_DDL
from spark_workload import make_job, make_workload
from tsmon.spark.api import Monitor, Run
from tsmon.spark.session import spark_session


def sustained(run: Run, checkpoint: Path) -> float:
    """Points/s of the data batches after the first (warm-up) one: durations from Spark's
    progress, points from tsmon's (``inputRows``: Spark's ``numInputRows`` counts control rows,
    and files where the job reads them as bytes)."""
    lines = (checkpoint / "progress.jsonl").read_text(encoding="utf-8").splitlines()
    points = {p["batchId"]: p.get("inputRows", 0) for p in map(json.loads, lines)}
    records = sorted(run.node_query.recentProgress, key=lambda p: p.batchId)
    data = [(p, points.get(p.batchId, 0)) for p in records]
    data = [(p, n) for p, n in data if n][1:]
    seconds = sum(p.durationMs.get("triggerExecution", 0) for p, _ in data) / 1000
    return sum(n for _, n in data) / seconds


def one(spark: Any, args: argparse.Namespace, w: Any, root: Path, api: bool) -> tuple[float, Any]:
    """One run over every file; its sustained points/s and its answers."""
    job, _ = make_job(args, w, root)
    if api:
        mon = Monitor(
            spark,
            root / "api-ckpt",
            job.queries,
            trigger="1ms",
            buckets=args.buckets,
            filters={"period": args.period, "shrink": 0.05, "growth": "capped"},
            registers={"retention": args.retention},
        )
        df = spark.readStream.schema(INPUT_DDL).option("maxFilesPerTrigger", 1)
        columns = {c: c for c in ("series", "source", "ts", "value")}
        run = mon.run(df.parquet(str(w.directory)), columns)
    else:
        run = Monitor.from_job(job, spark).run()
    run.start()
    run.process_all_available()
    pps = sustained(run, root / "api-ckpt" if api else job.checkpoint)
    run.stop()
    return pps, run.answers("bounded")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sources", type=int, default=200)
    ap.add_argument("--series-per-source", type=int, default=10)
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--ticks-per-file", type=int, default=20)
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--terms", type=int, default=5)
    ap.add_argument("--delta", type=float, default=2.0)
    ap.add_argument("--step", type=float, default=0.5)
    ap.add_argument("--period", default="10s")
    ap.add_argument("--retention", default="1h")
    ap.add_argument("--buckets", type=int, default=None)
    ap.add_argument("--max-future", default="1d", help='[job] max_future ("off": no check)')
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seed", type=int, default=7)
    ap.set_defaults(variant="avg", level=None)  # bench_spark's AVG queries only
    args = ap.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="tsmon-bench-api-"))
    try:
        w = make_workload(args, root / "data")
        spark = spark_session(app_name="tsmon-bench-api")
        rates: dict[bool, list[float]] = {False: [], True: []}
        for r in range(args.rounds):
            answers = {}
            for api in (False, True):
                pps, answers[api] = one(spark, args, w, root / f"round-{r}-{int(api)}", api)
                rates[api].append(pps)
                print(f"round {r} {'API' if api else 'job'}: {pps:,.0f} points/s", flush=True)
            if answers[False] != answers[True]:
                sys.exit("the API's answers differ from tsmon run's")
        job, api = (statistics.median(rates[k]) for k in (False, True))
        print(
            f"{w.total:,} points, {args.files} batches: tsmon run {job:,.0f} points/s, "
            f"API {api:,.0f} points/s; ratio API/job {api / job:.3f} (answers equal)"
        )
        spark.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
