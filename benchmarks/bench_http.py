"""What the HTTP subscribers add to a batch on the driver, against the Parquet sink.

Workload: the output of one batch of a large job — ``--queries`` bounded answers (each with
its bounds), ``--events`` events and 20 dead letters — made from the real answer and event
types. Timed per batch, in this process: the Parquet sink writing it (the baseline every job
with a Parquet sink already pays), :meth:`tsmon.http.live.Live.feed` (what ``--http`` adds to
the driver's batch), :meth:`tsmon.http.webhook.Webhook.feed` (what a webhook adds: queueing
only, to a local endpoint that answers at once) and one ``/metrics`` scrape (which runs in the
server's thread, not in the batch). Prints each as a ratio to the Parquet sink.

``python benchmarks/bench_http.py --quick`` is a smoke run.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from time import perf_counter

from tsmon.http.live import Live
from tsmon.http.metrics import metrics_text
from tsmon.http.webhook import Webhook
from tsmon.protocols.filters.coordinator import Answer
from tsmon.spark.job import SinkSpec
from tsmon.spark.sinks import BatchOutput, Sinks


def batch(batch_id: int, queries: int, events: int) -> BatchOutput:
    answers = {
        f"q{i}": Answer(float(i + batch_id), i - 0.5, i + batch_id + 0.5, batch_id * 1000)
        for i in range(queries)
    }
    evs = [
        {"query": f"w{i % 10}", "series": f"host{i}.cpu", "ts_ms": batch_id * 1000 + i,
         "value": 0.5, "payload": {"series": f"host{i}.cpu", "last": 0.5}, "coverage": 1.0,
         "replayed": False}
        for i in range(events)
    ]  # fmt: skip
    dead = [
        {"source": "h", "series": "h.x", "ts": None, "value": None, "raw_ts": "x",
         "raw_value": "1", "reason": "bad_timestamp", "detail": ""}
        for _ in range(20)
    ]  # fmt: skip
    progress = {"batchId": batch_id, "numInputRows": 30_000, "rowsToCoordinator": 900,
                "watermark": batch_id * 1000, "messages": {"streamed": 10 * batch_id}}  # fmt: skip
    arrived = {"bounded": list(answers.items())}
    return BatchOutput(batch_id, evs, dead, progress, {"bounded": answers}, arrived)


def per_batch(fn, outs: list[BatchOutput]) -> float:
    times = []
    for out in outs:
        start = perf_counter()
        fn(out)
        times.append(perf_counter() - start)
    return statistics.median(times)


class _Ok(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args) -> None:
        """Quiet."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--events", type=int, default=200)
    parser.add_argument("--batches", type=int, default=30)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.queries, args.events, args.batches = 50, 20, 3
    outs = [batch(b, args.queries, args.events) for b in range(args.batches)]
    with tempfile.TemporaryDirectory() as tmp:
        parquet = per_batch(Sinks([SinkSpec("parquet", Path(tmp))]).emit, outs)
    live = Live()
    feed = per_batch(live.feed, outs)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    hook = Webhook(f"http://127.0.0.1:{server.server_address[1]}/", capacity=10**6)
    queue = per_batch(hook.feed, outs)
    hook.close(timeout=120)
    server.shutdown()
    scrape = per_batch(lambda out: metrics_text(live), outs[:5])
    print(
        f"one batch: {args.queries} bounded answers, {args.events} events, 20 dead letters "
        f"(median of {args.batches} batches)"
    )
    print(f"  Parquet sink (baseline)   {1000 * parquet:8.2f} ms   1.00")
    for name, t in (("Live.feed (--http)", feed), ("Webhook.feed (queue)", queue)):
        print(f"  {name:<25} {1000 * t:8.2f} ms   {t / parquet:.2f}")
    print(f"  /metrics scrape (server)  {1000 * scrape:8.2f} ms   {scrape / parquet:.2f}")
    print(f"  webhook: {hook.stats()}")


if __name__ == "__main__":
    main()
