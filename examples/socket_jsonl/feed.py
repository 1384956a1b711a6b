"""Serve NAB series as JSON lines on a local TCP port, for the job's ``socket`` input.

    python examples/socket_jsonl/feed.py --port 9999 --rows 300 \\
        ../shared/data/nab/realAWSCloudwatch/ec2_cpu_utilization_24ae8d.csv ...

Spark's socket source is a client: this script listens, takes the job's one connection, then
sends the points of all files in time order, ``--rate`` lines a second (the job then sees
them arrive over several micro-batches), each as
``{"metric": "aws.<file stem>", "time": "2014-02-14 14:30:00", "v": 0.132}`` (NAB's own
timestamp text, UTC). It then keeps the connection open until the job closes it (or Ctrl-C).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import socket
import time
from pathlib import Path


def lines(files: list[Path], rows: int | None) -> list[str]:
    """The first ``rows`` points of each NAB file as JSON lines, all files in time order."""
    points = []
    for path in files:
        with path.open(newline="") as f:
            for n, row in enumerate(csv.DictReader(f)):
                if n == rows:
                    break
                points.append((row["timestamp"], f"aws.{path.stem}", row["value"]))
    points.sort(key=lambda p: p[0])  # ISO text sorts as time; stable for equal times
    return [json.dumps({"metric": s, "time": t, "v": float(v)}) + "\n" for t, s, v in points]


def serve(port: int, payload: list[str], rate: float, wait: float) -> None:
    with socket.create_server(("127.0.0.1", port)) as server:
        print(f"serving {len(payload)} lines on 127.0.0.1:{port}", flush=True)
        server.settimeout(wait)
        try:
            connection, _ = server.accept()
        except TimeoutError:
            raise SystemExit(f"no job connected within {wait:g} s") from None
        connection.settimeout(None)
        with connection:
            start = time.monotonic()
            for i, line in enumerate(payload):
                connection.sendall(line.encode())
                time.sleep(max(0.0, start + (i + 1) / rate - time.monotonic()))
            print(f"sent {len(payload)} lines", flush=True)
            while connection.recv(4096):  # until the job closes the connection
                pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path, help="NAB CSV files (timestamp,value)")
    parser.add_argument("--port", type=int, default=9999, help="port to listen on (127.0.0.1)")
    parser.add_argument("--rows", type=int, help="only the first ROWS rows of each file")
    parser.add_argument("--rate", type=float, default=50.0, help="lines per second")
    parser.add_argument(
        "--wait", type=float, default=600.0, help="seconds to wait for the job to connect"
    )
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C: stop serving, quietly
        serve(args.port, lines(args.files, args.rows), args.rate, args.wait)


if __name__ == "__main__":
    main()
