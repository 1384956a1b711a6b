"""Top-k queries on Spark: the monitor nodes' partial values live in the source nodes' state
(RocksDB), resolutions span micro-batches (a Phase 3 takes two), and after every input file
the sets, epochs and message counts equal the in-process batch runtime's with the same
one-batch delay; once the control settles, each set is valid within ε against exact sums."""

from __future__ import annotations

import json
import random
from collections import defaultdict
from pathlib import Path

import pandas as pd
import pytest

from tests.spark.test_runtime import batch_reference, drop, job_in
from tsmon.query import parse_query
from tsmon.spark.commands import CommandLog
from tsmon.spark.runtime import JobRunner

pytestmark = [pytest.mark.spark, pytest.mark.slow]

JOB = """
queries = '''
QUERY hot AS TOP 2 OF doc* BY hits WITHIN 1
QUERY recent AS TOP 1 OF doc* BY hits OVER 3s WITHIN 0
QUERY idle AS BOTTOM 1 OF srv* BY load OVER 2s WITHIN 0.5
'''

[job]
checkpoint = "ckpt"

[input]
kind = "files"
path = "incoming"
format = "json"
columns = { series = "metric", source = "server", ts = "time", value = "v" }

[filters]
period = "1s"

[[sinks]]
kind = "parquet"
path = "out"
"""
SERVERS = ["web1", "web2", "web3"]


def make_files(n: int, seed: int = 11) -> list[list[dict]]:
    """Hits of 8 documents with drifting popularity at 3 servers, and 4 servers' loads."""
    rng = random.Random(seed)
    files = []
    for f in range(n):
        rows = []
        for k in range(60):
            server = SERVERS[k % 3]
            ts = f * 1_000 + k * 15 + SERVERS.index(server)
            if k % 4 == 3:
                srv = f"srv{rng.randrange(4)}"
                rows.append({"metric": f"{srv}.load", "server": server, "time": ts, "v": 1.0})
                continue
            doc = min(int(rng.paretovariate(0.8 + f / 4)), 8)
            rows.append({"metric": f"doc{doc}.hits", "server": server, "time": ts, "v": 1.0})
        files.append(rows)
    return files


def exact(rows: list[dict], now_of: dict[str, int], pattern: str, window: int | None) -> dict:
    out: dict[str, float] = defaultdict(float)
    for r in rows:
        if not r["metric"].startswith(pattern):
            continue
        obj = r["metric"].rsplit(".", 1)[0]
        if window is None or r["time"] > now_of[r["server"]] - window:
            out[obj] += r["v"]
        else:
            out.setdefault(obj, 0.0)
    return out


def test_topk_on_spark_equals_the_batch_runtime(spark, tmp_path: Path) -> None:
    job = job_in(tmp_path, JOB)
    ref = batch_reference(job)
    files = make_files(6)
    runner = JobRunner(job, spark=spark)
    runner.start()
    log = CommandLog(job.checkpoint)
    alter = "ALTER QUERY hot TOP 3 WITHIN 0"
    seen: list[dict] = []
    for i, rows in enumerate(files):
        if i == 3:  # a live change: both apply it before the same batch
            log.submit("alter", alter)
            ref.coordinator.alter(parse_query(alter))
        drop(tmp_path / "incoming", f"part-{i:03d}.json", rows)
        runner.process_all_available()
        ref.run_batch([(r["server"], r["metric"], r["time"], r["v"]) for r in rows])
        while ref.control:  # the control-only batches Spark runs for the ctrl files
            ref.run_batch([])
        assert runner.answers("topk") == ref.answers("topk"), i
        seen += rows
        now_of = {s: n.now_ms for s, n in ref.nodes.items()}
        for name, pattern, window in [("hot", "doc", None), ("recent", "doc", 3000)]:
            answer = runner.answers("topk")[name]
            assert answer.settled
            values = exact(seen, now_of, pattern, window)
            low = min(values.get(o, 0.0) for o in answer.members)
            rest = [v for o, v in values.items() if o not in answer.members]
            assert low + answer.eps >= max(rest, default=0.0), (i, name)
        idle = runner.answers("topk")["idle"]
        loads = exact(seen, now_of, "srv", 2000)
        rest = [v for o, v in loads.items() if o not in idle.members]
        assert max(loads[o] for o in idle.members) <= min(rest, default=0.0) + idle.eps, i
    runner.stop()
    last = runner.answers("topk")
    assert last["hot"].k == 3 and last["hot"].eps == 0 and len(last["hot"].members) == 3
    assert last["hot"].nodes == 3 and last["hot"].epoch >= 1
    assert sum(a.messages for a in last.values()) > 0
    frames = [pd.read_parquet(p) for p in sorted((tmp_path / "out" / "topk").iterdir())]
    final = frames[-1].set_index("query")
    assert json.loads(final.loc["hot", "members"]) == list(last["hot"].members)
    progress = [json.loads(x) for x in (tmp_path / "ckpt" / "progress.jsonl").open()]
    assert progress[-1]["topk"]["hot"]["epoch"] == last["hot"].epoch
    # some batch ended with a resolution under way: it went on in the next (control) batch
    assert any(not t["settled"] for p in progress for t in p["topk"].values())
