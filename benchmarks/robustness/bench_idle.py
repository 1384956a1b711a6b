"""One of four sources stops: answers over the other three, and the coordinator's state size.

Four sources ``n0..n3`` with one series each, four points per source per batch (1 s of event
time per batch); ``n3`` stops after batch 5. Bounded queries: ``three`` = AVG of n0..n2 and
``four`` = AVG of all four. Prints, per batch, the coordinator's snapshot size (bytes) and the
answers' ``as_of_ms``, with an idle timeout of 10 s of event time and without one
(issue 16 target: answers over the other three advance every batch; snapshot size bounded).

    PYTHONPATH=src python benchmarks/robustness/bench_idle.py [--batches 50]
"""

from __future__ import annotations

import argparse
import math

from tsmon.engine.batched import BatchedRuntime

SOURCES = ["n0", "n1", "n2", "n3"]
QUERIES = """
QUERY three AS AVG(s0, s1, s2) WITHIN 0.5
QUERY four AS AVG(s0, s1, s2, s3) WITHIN 0.5
"""


def run(batches: int, idle_timeout_ms: int | None) -> list[tuple[int, int, int, list[str]]]:
    rt = BatchedRuntime(
        1_000,
        0.1,
        0,
        queries=QUERIES,
        source_of={f"s{i}": s for i, s in enumerate(SOURCES)},
        idle_timeout_ms=idle_timeout_ms,
    )
    out = []
    for b in range(batches):
        t = (b + 1) * 1_000
        rt.run_batch(
            [
                (src, f"s{i}", t + j * 250, 10 * i + 3 * math.sin((t + j * 250) / 7_000 + i))
                for i, src in enumerate(SOURCES)
                if i < 3 or b <= 5
                for j in range(4)
            ]
        )
        answers = rt.answers()
        idle = rt.coordinator.idle_sources()
        out.append((len(rt.coordinator.snapshot()), answers["three"].as_of_ms, t, idle))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=50)
    args = ap.parse_args()
    with_idle = run(args.batches, 10_000)
    without = run(args.batches, None)
    print("batch  snapshot B (idle 10s)  as_of_ms  idle     | snapshot B (no idle)  as_of_ms")
    for b, (a, c) in enumerate(zip(with_idle, without, strict=True)):
        print(f"{b:5d}  {a[0]:20d}  {a[1]:8d}  {','.join(a[3]) or '-':7s}  | {c[0]:19d}  {c[1]:8d}")
    idle_from = next(b for b, a in enumerate(with_idle) if a[3])
    sizes = [a[0] for a in with_idle[idle_from + 1 :]]
    print(f"idle from batch {idle_from}; snapshot after it: {min(sizes)}-{max(sizes)} B")
    print(f"without an idle timeout: {without[idle_from][0]} B at batch {idle_from},")
    print(f"  {without[-1][0]} B at batch {args.batches - 1} (answers held at {without[-1][1]})")


if __name__ == "__main__":
    main()
