"""One of three sources runs ahead in event time: the coordinator's snapshot size.

Three sources ``n0..n2`` with one series each, four points per source per batch (1 s of
event time per batch); from batch 20 on, ``n2``'s points are stamped ``--lead-s`` later
(6 h). One bounded query, ``total`` = SUM of the three. The coordinator's time follows the
two behind, so ``n2``'s updates wait in its queue (Olston et al. §4) until that time
reaches them. Prints, every 10 batches, the coordinator's snapshot size and its queued
records with the queue bounded per series (``--backlog``, a job's ``[filters] backlog``,
default 32) and unbounded (the paper's queue, as before the bound), and the answer's width
(δ = 1; the bound's cost: wider while the coordinator's time passes a folded stretch, which
with a lead of 6 h it never does; try ``--lead-s 60``).

    PYTHONPATH=src python benchmarks/robustness/bench_ahead.py [--batches 120] [--lead-s 21600]
        [--backlog 32]
"""

from __future__ import annotations

import argparse
import math

from tsmon.engine.batched import BatchedRuntime
from tsmon.engine.settings import BACKLOG

SOURCES = ["n0", "n1", "n2"]
JUMP_AT = 20


def run(batches: int, backlog: int | None, lead_ms: int) -> list[tuple[int, int, int, float]]:
    """Per batch: snapshot bytes, queued records, folds so far, the answer's width."""
    rt = BatchedRuntime(
        1_000,
        0.1,
        0,
        queries="QUERY total AS SUM(s0, s1, s2) WITHIN 1",
        source_of={f"s{i}": s for i, s in enumerate(SOURCES)},
        max_future_ms=None,
        backlog=backlog,
    )
    out = []
    for b in range(batches):
        t = (b + 1) * 1_000
        points = []
        for i, src in enumerate(SOURCES):
            ahead = lead_ms if i == 2 and b >= JUMP_AT else 0
            for j in range(4):
                ts = t + ahead + j * 250
                points.append((src, f"s{i}", ts, 10 * i + 3 * math.sin(ts / 7_000 + i)))
        answer = rt.run_batch(points)["total"]
        queue = rt.coordinator.part("bounded").coordinator.queue
        out.append((len(rt.coordinator.snapshot()), len(queue), queue.merged, answer.width))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=120)
    ap.add_argument("--lead-s", type=int, default=6 * 3_600)
    ap.add_argument("--backlog", type=int, default=BACKLOG)
    args = ap.parse_args()
    backlog = args.backlog
    after = run(args.batches, backlog, args.lead_s * 1_000)
    before = run(args.batches, None, args.lead_s * 1_000)
    print(f"batch | bounded (backlog {backlog}): snapshot B, queued, folds, width | unbounded")
    for b in [*range(0, args.batches, 10), args.batches - 1]:
        a, u = after[b], before[b]
        print(
            f"{b:5d} | {a[0]:8d} {a[1]:6d} {a[2]:6d} {a[3]:6.3f} | {u[0]:8d} {u[1]:6d} {u[3]:6.3f}"
        )
    last = slice(args.batches // 2, None)
    sizes_a = [a[0] for a in after[last]]
    sizes_u = [u[0] for u in before[last]]
    print(
        f"second half: bounded {min(sizes_a)}-{max(sizes_a)} B, "
        f"unbounded {min(sizes_u)}-{max(sizes_u)} B; "
        f"last batch ratio bounded/unbounded {after[-1][0] / before[-1][0]:.2f}"
    )
    widths_a, widths_u = [a[3] for a in after[1:]], [u[3] for u in before[1:]]
    print(
        f"answer width after the first batch: bounded max {max(widths_a):.3f}, "
        f"mean {sum(widths_a) / len(widths_a):.3f}; unbounded max {max(widths_u):.3f}, "
        f"mean {sum(widths_u) / len(widths_u):.3f}"
    )


if __name__ == "__main__":
    main()
