"""How long a command takes on an idle job: from submission to the batch that applies it.

Starts a real ``tsmon run`` (a subprocess, ``local[2]``) on one small CSV file, waits until
the job is idle (its last batch wrote no control and no batch came for two trigger
intervals), then, ``--commands`` times: submits ``ALTER QUERY s WITHIN δ`` (in this process,
as ``tsmon query alter`` does), polls the command log every 10 ms until the job records the
command as applied, and waits for the job to go idle again. The latency of each is measured
from the command file's write to the poll that saw the outcome (so it holds up to 10 ms of
polling), and printed as a ratio to the trigger interval (the baseline: a command is taken by
the batch of the next trigger, and the issue's target is within 2 of them).

``python benchmarks/bench_idle_commands.py [--trigger 1] [--commands 5]``
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tsmon.spark.commands import CommandLog

JOB = """
queries = "QUERY s AS SUM(a.x, b.x) WITHIN 2"
[job]
checkpoint = "ckpt"
trigger = "{trigger}s"
[input]
kind = "files"
path = "incoming"
format = "csv"
columns = {{ series = "metric", ts = "time", value = "v" }}
"""


def records(root: Path) -> list[dict]:
    path = root / "ckpt" / "progress.jsonl"
    return [json.loads(line) for line in path.open()] if path.exists() else []


def wait_idle(root: Path, trigger: float, timeout: float = 300.0) -> int:
    """The last batch once the job is idle."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = records(root)
        if done and done[-1]["controlRows"] == 0:
            time.sleep(2 * trigger)
            if records(root)[-1]["batchId"] == done[-1]["batchId"]:
                return done[-1]["batchId"]
        time.sleep(0.1)
    raise SystemExit("the job did not go idle")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trigger", type=float, default=1.0, help="trigger interval, seconds")
    parser.add_argument("--commands", type=int, default=5)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="tsmon-idle-"))
    (root / "job.toml").write_text(JOB.format(trigger=args.trigger), encoding="utf-8")
    (root / "incoming").mkdir()
    (root / "incoming" / "p0.csv").write_text("metric,time,v\na.x,0,1\nb.x,0,2\n")
    job = subprocess.Popen(
        [sys.executable, "-m", "tsmon.cli", "run", str(root / "job.toml")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=dict(os.environ),
    )
    latencies = []
    try:
        log = CommandLog(root / "ckpt")
        for n in range(args.commands):
            last = wait_idle(root, args.trigger)
            started = time.monotonic()
            command_id = log.submit("alter", f"ALTER QUERY s WITHIN {1 + n % 2}")
            while True:
                state = {s["id"]: s for s in log.states()}[command_id]
                if state["state"] in ("applied", "rejected"):
                    break
                time.sleep(0.01)
            latency = time.monotonic() - started
            latencies.append(latency)
            print(
                f"command {n}: {state['state']} in batch {state['batch']} (the job was idle "
                f"after batch {last}) {latency:.2f} s after it was submitted = "
                f"{latency / args.trigger:.2f} trigger intervals"
            )
    finally:
        job.send_signal(signal.SIGINT)
        job.wait(timeout=120)
    median, worst = statistics.median(latencies), max(latencies)
    print(
        f"trigger {args.trigger:g} s, {len(latencies)} commands on an idle job: median "
        f"{median:.2f} s ({median / args.trigger:.2f} trigger intervals), max {worst:.2f} s "
        f"({worst / args.trigger:.2f} trigger intervals)"
    )


if __name__ == "__main__":
    main()
