"""Top-k answers under continuous load in the batch runtime: settled fraction, validity, staleness.

Each workload of :mod:`workloads` (a: popular documents, b: least-loaded server, c: busiest
destination, d1/d3: NAB tweets) is replayed as points ``(source n<j>, series o<object>.v,
ts, Δ)`` through :class:`tsmon.engine.batched.BatchedRuntime` with one top-k query (``OVER`` the
workload's window, which the sources cancel by themselves; BOTTOM for (b)), ``--per-batch``
points per micro-batch: the sources keep sending while resolutions run (one batch per hop, as
in ``tests/engine/test_topk_batched.py``). The initial objects of a workload are points of
value 0 in the first batch.

After every batch the answer is checked against exact sums (each source's points over its
window at the source's own time, as the sources count them):

* **settled**: the batches whose answer says ``settled``; each is checked ε-valid, and an
  invalid one is counted in ``invalid settled`` (the target is 0);
* **staleness**: the answer of batch ``b`` is stale by ``s`` batches when the newest batch
  ``b − s`` whose exact sums it is ε-valid for is ``s`` back (0: valid now; before the first
  batch every sum is 0, which the empty answer fits); ``--history``
  bounds the look-back (a larger staleness prints as ``> history``). Worst and 99th percentile
  over all batches, settled or not. A Phase 3 combines the requester's values of one batch
  with the others' of the next, so an answer may fit no single batch's sums and look older
  than it is; hence also
* **invalid run**: the longest run of consecutive batches whose answer is not ε-valid now.

Exit status 1 if a settled answer was invalid. ``--quick`` is a smoke run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cost import make
from harness import machine
from rich.console import Console
from rich.table import Table
from workloads import Workload

from tsmon.engine.batched import BatchedRuntime

# the bounded queries' filter period; there are none, and a short one would only make every
# series' filter step through each period boundary of the workloads' hours and days
PERIOD_MS = 10**12


class Exact:
    """Exact sums per object over each source's window at the source's newest timestamp."""

    def __init__(self, window_ms: int | None) -> None:
        self.window_ms = window_ms
        self.totals: dict[str, float] = {}
        self.live: dict[str, deque[tuple[int, str, float]]] = {}

    def add(self, source: str, ts: int, obj: str, value: float) -> None:
        self.totals[obj] = self.totals.get(obj, 0.0) + value
        if self.window_ms is not None:
            self.live.setdefault(source, deque()).append((ts, obj, value))

    def expire(self, now_of: dict[str, int | None]) -> None:
        if self.window_ms is None:
            return
        for source, live in self.live.items():
            now = now_of.get(source)
            while now is not None and live and live[0][0] <= now - self.window_ms:
                _, obj, value = live.popleft()
                self.totals[obj] -= value


def valid(members: tuple[str, ...], totals: dict[str, float], k: int, eps: float, bottom: bool):
    """ε-validity of ``members`` (unseen objects at 0 are candidates of a TOP query)."""
    if len(members) < k:
        return set(totals) <= set(members)
    inside = [totals.get(o, 0.0) for o in members]
    chosen = set(members)
    outside = [v for o, v in totals.items() if o not in chosen]
    if bottom:
        return not outside or max(inside) <= min(outside) + eps + 1e-9
    return min(inside) + eps + 1e-9 >= max([*outside, 0.0])


@dataclass
class Row:
    workload: str
    eps: float
    batches: int
    points: int
    settled: int
    invalid_settled: int
    valid: int
    worst_stale: int  # history + 1: beyond the look-back
    p99_stale: float
    invalid_run: int
    messages: int
    seconds: float


def batches(w: Workload, per_batch: int) -> list[list[tuple[str, str, int, float]]]:
    """The workload as micro-batches of points (the initial objects at 0 in the first)."""
    start = w.arrivals[0][0] if w.arrivals else 0.0
    first = [
        (f"n{j:02d}", f"o{obj}.v", int(start * 1000), 0.0)
        for j, values in enumerate(w.initial, start=1)
        for obj in values
    ]
    points = [(f"n{j:02d}", f"o{obj}.v", int(t * 1000), float(d)) for t, j, obj, d in w.arrivals]
    out = [first + points[:per_batch]]
    out += [points[i : i + per_batch] for i in range(per_batch, len(points), per_batch)]
    return out


def run(w: Workload, eps: float, per_batch: int, history: int) -> Row:
    word = "BOTTOM" if w.bottom else "TOP"
    over = f" OVER {int(w.window)}s" if w.window else ""
    text = f"QUERY q AS {word} {w.k} OF o* BY v{over} WITHIN {eps}"
    rt = BatchedRuntime(PERIOD_MS, 0.1, 0, queries=text)
    exact = Exact(int(w.window * 1000) if w.window else None)
    past: deque[dict[Hashable, float]] = deque([{}], maxlen=history + 1)  # before: all 0
    row = Row(w.name, eps, 0, 0, 0, 0, 0, 0, 0.0, 0, 0, 0.0)
    stale: list[int] = []
    run_now = 0
    t0 = time.perf_counter()
    for batch in batches(w, per_batch):
        rt.run_batch(batch)
        for source, series, ts, value in batch:
            exact.add(source, ts, series[:-2], value)
        exact.expire({s: n.now_ms for s, n in rt.nodes.items()})
        past.appendleft(dict(exact.totals))
        answer = rt.answers("topk")["q"]
        row.batches += 1
        row.points += len(batch)
        fits = (valid(answer.members, totals, w.k, eps, w.bottom) for totals in past)
        s = next((i for i, ok in enumerate(fits) if ok), history + 1)
        stale.append(s)
        row.valid += s == 0
        run_now = 0 if s == 0 else run_now + 1
        row.invalid_run = max(row.invalid_run, run_now)
        if answer.settled:
            row.settled += 1
            row.invalid_settled += s != 0
        row.messages = answer.messages
    row.seconds = time.perf_counter() - t0
    row.worst_stale = max(stale)
    row.p99_stale = statistics.quantiles(stale, n=100)[98] if len(stale) > 1 else stale[0]
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--workloads", default="a,b,c,d3", help="comma-separated workloads")
    ap.add_argument("--eps", default="0,5", help="ε values (in value units)")
    ap.add_argument("--scale", type=float, default=0.25, help="stream length × default")
    ap.add_argument("--per-batch", type=int, default=200, help="points per micro-batch")
    ap.add_argument("--history", type=int, default=50, help="staleness look-back (batches)")
    ap.add_argument("--quick", action="store_true", help="scale 0.02, ε = 0")
    args = ap.parse_args(argv)
    if args.quick:
        args.scale, args.eps = 0.02, "0"
    console = Console(width=180)
    start = time.perf_counter()
    rows = []
    for name in args.workloads.split(","):
        w = make(name, 1, args.scale)
        if w is None:
            console.print(f"[yellow]workload {name} skipped (no data)[/yellow]")
            continue
        for eps in (float(e) for e in args.eps.split(",")):
            rows.append(run(w, eps, args.per_batch, args.history))
            console.print(f"  {name} ε={eps:g}: {rows[-1].seconds:.0f} s")
    table = Table(title=f"top-k under continuous load: {args.per_batch} points per batch, "
                  f"one-batch control delay (scale {args.scale:g})")  # fmt: skip
    cols = ("workload", "ε", "batches", "points", "settled", "invalid settled", "valid",
            "worst stale", "p99 stale", "invalid run", "messages", "s")  # fmt: skip
    for c in cols:
        table.add_column(c, justify="right")
    for r in rows:
        worst = f"> {args.history}" if r.worst_stale > args.history else str(r.worst_stale)
        table.add_row(
            r.workload, f"{r.eps:g}", f"{r.batches:,}", f"{r.points:,}",
            f"{r.settled / r.batches:.1%}", str(r.invalid_settled),
            f"{r.valid / r.batches:.1%}", worst, f"{r.p99_stale:g}", str(r.invalid_run),
            f"{r.messages:,}",
            f"{r.seconds:.0f}",
        )  # fmt: skip
    console.print(table)
    bad = sum(r.invalid_settled for r in rows)
    console.print(
        f"{'FAIL' if bad else 'OK'}: {bad} invalid settled answers of "
        f"{sum(r.settled for r in rows):,} settled in {sum(r.batches for r in rows):,} batches; "
        f"worst staleness {max(r.worst_stale for r in rows)} batches, longest invalid run "
        f"{max(r.invalid_run for r in rows)}; "
        f"{time.perf_counter() - start:.0f} s wall; {machine()}"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
