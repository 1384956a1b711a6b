"""Top-k start-up in the batch runtime: control-only micro-batches until the answer settles.

``N`` sources each see one distinct new object in the first batch (source ``s<j>`` sees
``o<j>`` with value ``j``, so the exact top ``k`` is ``o<N>..o<N−k+1>``); then empty batches
run, one hop each, until the answer says ``settled``. Prints, per ``N``: the control-only
batches to settle, the protocol's messages, the resolutions of each phase and whether the
settled answer is the exact top ``k`` (it must be, at ε = 0). In-process
(:class:`tsmon.engine.batched.BatchedRuntime`), no Spark.

    PYTHONPATH=src .venv/bin/python benchmarks/topk/startup.py [--sources 10,100,1000] [--k 10]
"""

from __future__ import annotations

import argparse
import sys
import time

from tsmon.engine.batched import BatchedRuntime

PERIOD_MS = 10**12  # no bounded query runs: keep the filters out of the way


def settle(n: int, k: int, limit: int) -> tuple[int, int, dict[str, int], bool, float]:
    """Batches after the first until settled, messages, phases, exact answer, seconds."""
    rt = BatchedRuntime(PERIOD_MS, 0.1, 0, queries=f"QUERY q AS TOP {k} OF o* BY v WITHIN 0")
    t0 = time.perf_counter()
    rt.run_batch([(f"s{j:04d}", f"o{j}.v", 1, float(j)) for j in range(1, n + 1)])
    control = 0
    while not rt.answers("topk")["q"].settled and control < limit:
        rt.run_batch([])
        control += 1
    answer = rt.answers("topk")["q"]
    running = next(iter(rt.coordinator.part("topk").topk.running.values()))
    phases = dict(running.resolver.coordinator.phases)
    want = tuple(sorted(f"o{j}" for j in range(max(1, n - k + 1), n + 1)))
    exact = answer.settled and answer.members == want
    return control, answer.messages, phases, exact, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sources", default="10,100,1000", help="comma-separated N")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--limit", type=int, default=5000, help="give up after this many batches")
    args = ap.parse_args(argv)
    bad = 0
    print("sources  control batches  messages  phase2  probe  phase3  refresh  exact  seconds")
    for n in (int(x) for x in args.sources.split(",")):
        control, messages, ph, exact, secs = settle(n, args.k, args.limit)
        bad += not exact
        print(
            f"{n:7d}  {control:15d}  {messages:8d}  {ph['phase2']:6d}  {ph['probe']:5d}  "
            f"{ph['phase3']:6d}  {ph['refresh']:7d}  {exact!s:>5}  {secs:7.1f}"
        )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
