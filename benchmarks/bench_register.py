"""The cost of registering many queries: CPU ms per added query as their number grows.

Every workload adds ``N`` queries (``--sizes``, 250, 500, 1,000 and 2,000 by default) over
``--series`` series ``s<j>.x`` (100 by default), each a fresh process state:

* ``monitor one by one``: an embedded :class:`~tsmon.Monitor` (every series has a point),
  one ``add_query`` call per statement: bounded ``QUERY d<i> AS SUM(s<i>.x, s<i+1>.x)
  WITHIN 0.5`` (the batch host, settled after each), and watch ``QUERY w<i> ON s<i>.x WHEN
  last > i`` (the store);
* ``monitor one text``: the same statements as one ``add_query`` text of ``N`` statements;
* ``coordinator live``: the Spark job's coordinator (:class:`~tsmon.engine.hub.CoordinatorNode`,
  after one step of heartbeats from 10 sources, so the bounded coordinator has a time), one
  ``add`` command applied at a time as the driver applies them
  (:func:`tsmon.spark.commands.apply`), watch and bounded.

It prints the CPU time (``time.process_time``, which holds when other jobs share the machine)
per added query at each ``N``, and the ratio of the per-add cost at the largest ``N`` to that
at the smallest: 1.0 is a linear total, 8.0 (for 2,000 vs 250) a quadratic one.

``PYTHONPATH=src python benchmarks/bench_register.py [--sizes 250,500,1000,2000]
[--series 100] [--only monitor-one,monitor-text,coordinator]``
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable

from tsmon import Monitor
from tsmon.engine.hub import CoordinatorNode
from tsmon.engine.settings import HostSettings
from tsmon.spark.commands import Command, apply

SOURCES = 10
"""Sources of the coordinator's series (series ``s<j>.x`` lives at ``n<j mod 10>``)."""


def bounded(i: int, series: int) -> str:
    return f"QUERY d{i} AS SUM(s{i % series}.x, s{(i + 1) % series}.x) WITHIN 0.5"


def watch(i: int, series: int) -> str:
    return f"QUERY w{i} ON s{i % series}.x WHEN last > {i}"


STATEMENTS = {"bounded": bounded, "watch": watch}


def monitor(series: int) -> Monitor:
    mon = Monitor(["s*.x"], retention="1h")
    mon.ingest([f"s{j}.x" for j in range(series)], [0] * series, [1.0] * series, clock_ms=0)
    return mon


def monitor_one(kind: str, n: int, series: int) -> float:
    """CPU seconds of ``n`` ``add_query`` calls, one statement each."""
    mon, make = monitor(series), STATEMENTS[kind]
    texts = [make(i, series) for i in range(n)]
    started = time.process_time()
    for text in texts:
        mon.add_query(text)
    return time.process_time() - started


def monitor_text(kind: str, n: int, series: int) -> float:
    """CPU seconds of one ``add_query`` call of ``n`` statements."""
    mon, make = monitor(series), STATEMENTS[kind]
    text = "\n".join(make(i, series) for i in range(n))
    started = time.process_time()
    mon.add_query(text)
    return time.process_time() - started


def coordinator(kind: str, n: int, series: int) -> float:
    """CPU seconds of ``n`` add commands applied one at a time to a started coordinator."""
    node = CoordinatorNode(HostSettings(period_ms=1_000, shrink=0.05, seed=0, growth="capped"))
    homes = {f"s{j}.x": f"n{j % SOURCES}" for j in range(series)}
    beats = [
        {
            "source": source,
            "kind": "heartbeat",
            "payload": {"now_ms": 0, "series": sorted(s for s, h in homes.items() if h == source)},
        }
        for source in sorted(set(homes.values()))
    ]
    node.step(0, beats)
    make = STATEMENTS[kind]
    commands = [Command(f"c{i}", "add", make(i, series)) for i in range(n)]

    def source_of(names: list[str]) -> dict[str, str]:
        return {s: homes[s] for s in names}

    started = time.process_time()
    for command in commands:
        (outcome,) = apply(node, [command], source_of)
        assert outcome["ok"], outcome
    return time.process_time() - started


WORKLOADS: dict[str, Callable[[str, int, int], float]] = {
    "monitor-one": monitor_one,
    "monitor-text": monitor_text,
    "coordinator": coordinator,
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="250,500,1000,2000", help="query counts N")
    parser.add_argument("--series", type=int, default=100)
    parser.add_argument("--only", default=",".join(WORKLOADS), help="workloads to run")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"CPU ms per added query; {args.series} series; N = {', '.join(map(str, sizes))}")
    for workload in args.only.split(","):
        run = WORKLOADS[workload]
        for kind in STATEMENTS:
            per_add = []
            for n in sizes:
                gc.collect()
                per_add.append(run(kind, n, args.series) / n * 1e3)
            figures = "  ".join(f"{n}: {ms:7.3f}" for n, ms in zip(sizes, per_add, strict=True))
            ratio = per_add[-1] / per_add[0]
            print(
                f"{workload:>12} {kind:>7}  {figures}  "
                f"ratio {sizes[-1]} vs {sizes[0]}: {ratio:.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
