"""Validity run: the protocol's answer against exact sums on long streams (Babcock & Olston 2003).

Two streams of ≥ 1,000,000 updates each (defaults), both with Appendix C offloading (θ = 20):

* ``zipf`` — workload (a) (:func:`workloads.popular_documents`): Zipf(1) requests over 20,000
  documents at 27 nodes, all-day counts, top-10;
* ``window`` — a sliding-window stream with cancelling updates
  (:func:`workloads.busiest_destination`): Zipf(0.8) destinations over 2,000 hosts at 8 nodes,
  a packet every 0.3 s, 15-minute window (~3,000 live packets), a rank rotation every 5 min,
  top-10: small values that often fall, so offloads and full refreshes occur.

**Zero latency** (:class:`TopKNetwork`): for every ε (0, 5, 50) the answer is checked after
EVERY update. **Latency** (:class:`DelayedNetwork`, one update per time unit, every message
delivered ``delay`` units after it is sent, delay 1 and 10): the answer is checked after every
update at which the network is quiet (nothing in flight, nothing queued, no node awaiting) and
after :meth:`DelayedNetwork.settle` every ``--settle-every`` updates and at the end.

The check is ε-validity, ``min_{t∈T} V_t + ε ≥ max_{s∉T} V_s`` with unseen objects at 0,
against an incremental exact oracle: exact totals in a dict and ``(V, object)`` in a
``SortedList``, so an update costs O(log n) and a check O(k + log n) (the ``k + 1`` largest
entries hold the largest object outside ``T``). Violations are counted (the first few are
printed); the exit status is 1 if there was any.

``python benchmarks/topk/validity.py --quick`` is a smoke run; CSV goes to
``benchmarks/topk/out/validity.csv``.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cost import parse_theta
from harness import machine
from rich.console import Console
from rich.table import Table
from sortedcontainers import SortedList  # ships with hypothesis (dev dependency)
from workloads import Workload, busiest_destination, popular_documents

from tsmon.protocols.topk import MessageCounts
from tsmon.sim.topk import TopKNetwork
from tsmon.sim.topk.network import DelayedNetwork

OUT = Path(__file__).resolve().parent / "out"
LIVE = 3_000  # packets in the window stream's 15-minute window


class Oracle:
    """Exact ``V_i``: totals in a dict, ``(V_i, O_i)`` in a sorted list (O(log n) per update).

    Examples
    --------
    >>> o = Oracle([{"a": 5, "b": 3}])
    >>> o.apply("c", 4); o.apply("a", -2)
    >>> o.slack(frozenset({"c"}), 0), o.slack(frozenset({"a"}), 0), o.slack(frozenset({"a"}), 1)
    (1, -1, 0)
    >>> o.slack(frozenset({"a", "b", "c"}), 0)  # unseen objects are 0
    3
    """

    def __init__(self, initial: Iterable[dict[Hashable, int]] = ()) -> None:
        self.values: dict[Hashable, int] = {}
        self.order = SortedList()
        for values in initial:
            for obj, v in values.items():
                self.apply(obj, v)

    def apply(self, obj: Hashable, delta: int) -> None:
        old = self.values.get(obj)
        if old is not None:
            self.order.remove((old, obj))
            new = old + delta
        else:
            new = delta
        self.values[obj] = new
        self.order.add((new, obj))

    def slack(self, top: frozenset[Hashable], eps: int) -> int:
        """``min_T V_t + ε − max_{∉T} V_s`` (unseen objects 0): ≥ 0 iff ``top`` is ε-valid."""
        values = self.values
        low = min((values.get(t, 0) for t in top), default=0)
        n = len(self.order)
        high = 0
        for value, obj in self.order.islice(max(0, n - len(top) - 1), n, reverse=True):
            if obj not in top:
                high = max(value, 0)
                break
        return low + eps - high


@dataclass
class Row:
    """One network's run."""

    stream: str
    network: str
    eps: int
    delay: int
    theta: int | None
    m: int
    k: int
    updates: int
    checks: int
    violations: int
    quiet: int = 0  # updates after which the delayed network was quiet
    quiet_valid: int = 0  # ... and its answer was ε-valid
    settles: int = 0
    messages: int = 0
    offload_msgs: int = 0
    entries_mean: float = 0.0
    entries_max: int = 0
    resolutions: int = 0
    phase2: int = 0
    probe: int = 0
    phase3: int = 0
    refresh: int = 0
    stale: int = 0
    answer_changes: int = 0
    seconds: float = 0.0


def make(name: str, seed: int, updates: int) -> Workload:
    """Stream ``name`` with at least ``updates`` updates."""
    if name == "zipf":
        w = popular_documents(seed, requests=updates)
        w.name = "zipf"
        return w
    if name == "window":
        # ~3,000 live packets (0.3 s per packet, 15-min window), so values stay small and
        # top-k objects often fall; 2 updates per packet but the last window's
        packets = (updates + LIVE) // 2 + 100
        duration = packets * 900.0 / LIVE
        w = busiest_destination(
            seed, packets, k=10, nodes=8, duration=duration, zipf=0.8, burst=0.0,
            rotations=max(1, int(duration // 300)),
        )  # fmt: skip
        w.name = "window"
        return w
    raise ValueError(f"unknown stream {name!r}")


def report(
    violations: list[str], stream: str, label: str, t: int, top: frozenset, slack: int
) -> None:
    if len(violations) < 20:
        violations.append(
            f"{stream} {label}: answer {sorted(top, key=str)} invalid after update {t} "
            f"(slack {slack})"
        )


def zero_latency(
    w: Workload, eps_values: Sequence[int], theta: int | None, violations: list[str]
) -> list[Row]:
    """Every ε in one pass; the answer is checked after every update."""
    oracle = Oracle(w.initial)
    nets = []
    for eps in eps_values:
        net = TopKNetwork(w.m, w.k, eps, initial=w.initial, theta=theta)
        net.counts = MessageCounts()
        nets.append(net)
    rows = [
        Row(w.name, "zero latency", eps, 0, theta, w.m, w.k, len(w.updates), 0, 0)
        for eps in eps_values
    ]
    answers = [net.answer() for net in nets]
    start = time.perf_counter()
    spent = [0.0] * len(nets)
    for t, (node, obj, delta) in enumerate(w.updates, start=1):
        oracle.apply(obj, delta)
        for i, net in enumerate(nets):
            t0 = time.perf_counter()
            net.update(node, obj, delta)
            spent[i] += time.perf_counter() - t0
            top = net.answer()
            row = rows[i]
            if top != answers[i]:
                row.answer_changes += 1
                answers[i] = top
            row.checks += 1
            slack = oracle.slack(top, net.eps)
            if slack < 0:
                row.violations += 1
                report(violations, w.name, f"zero latency ε={net.eps}", t, top, slack)
    oracle_time = (time.perf_counter() - start - sum(spent)) / len(nets)
    for row, net, s in zip(rows, nets, spent, strict=True):
        _fill(row, net, s + oracle_time)
    return rows


def delayed(
    w: Workload,
    eps_values: Sequence[int],
    delays: Sequence[int],
    theta: int | None,
    settle_every: int,
    violations: list[str],
) -> list[Row]:
    """One update per time unit; checks whenever quiet and after every settle."""
    oracle = Oracle(w.initial)
    runs = [(eps, d) for d in delays for eps in eps_values]
    nets = [
        DelayedNetwork(w.m, w.k, eps, d, initial=w.initial, theta=theta, start=0) for eps, d in runs
    ]
    for net in nets:
        net.counts = MessageCounts()  # the gather's requests are not counted (its replies are)
    rows = [
        Row(w.name, "delayed", eps, d, theta, w.m, w.k, len(w.updates), 0, 0) for eps, d in runs
    ]
    offset = [0] * len(nets)  # a settle moves a network's clock ahead of the stream's
    answers = [net.answer() for net in nets]
    spent = [0.0] * len(nets)
    start = time.perf_counter()

    def check(i: int, t: int, what: str) -> None:
        net, row = nets[i], rows[i]
        top = net.answer()
        row.checks += 1
        slack = oracle.slack(top, net.eps)
        if slack < 0:
            row.violations += 1
            report(violations, w.name, f"delay {net.delay} ε={net.eps} ({what})", t, top, slack)
        elif what == "quiet":
            row.quiet_valid += 1

    def settle(i: int, t: int) -> None:
        t0 = time.perf_counter()
        nets[i].settle()
        spent[i] += time.perf_counter() - t0
        offset[i] = max(offset[i], nets[i].now - t)
        rows[i].settles += 1
        if not nets[i].quiet:
            rows[i].violations += 1
            violations.append(f"{w.name} delay {nets[i].delay} ε={nets[i].eps}: not quiet")
        check(i, t, "settled")

    n = len(w.updates)
    for t, (node, obj, delta) in enumerate(w.updates, start=1):
        oracle.apply(obj, delta)
        for i, net in enumerate(nets):
            t0 = time.perf_counter()
            net.update(t + offset[i], node, obj, delta)
            spent[i] += time.perf_counter() - t0
            top = net.answer()
            if top != answers[i]:
                rows[i].answer_changes += 1
                answers[i] = top
            if net.quiet:
                rows[i].quiet += 1
                check(i, t, "quiet")
            if t % settle_every == 0 or t == n:
                settle(i, t)
    oracle_time = (time.perf_counter() - start - sum(spent)) / len(nets)
    for row, net, s in zip(rows, nets, spent, strict=True):
        _fill(row, net, s + oracle_time)
    return rows


def _fill(row: Row, net: TopKNetwork | DelayedNetwork, seconds: float) -> None:
    c, ph = net.counts, net.coordinator.phases
    row.messages, row.offload_msgs = c.total, c.offloads
    row.entries_mean, row.entries_max = c.mean_entries, c.max_entries
    row.resolutions, row.stale = net.resolutions, net.resolver.stale
    row.phase2, row.probe, row.phase3 = ph["phase2"], ph["probe"], ph["phase3"]
    row.refresh = ph["refresh"]
    row.seconds = seconds


def print_rows(rows: list[Row], console: Console) -> None:
    table = Table(title="validity: ε-valid answers against exact sums")
    cols = ("stream", "network", "ε", "delay", "updates", "checks", "violations", "quiet",
            "valid when quiet", "settles", "messages", "offload msgs", "entries mean", "max",
            "ph2", "probe", "ph3", "refresh", "stale", "changes", "s")  # fmt: skip
    for c in cols:
        table.add_column(c, justify="right")
    for r in rows:
        quiet = f"{r.quiet / r.updates:.1%}" if r.network == "delayed" else "—"
        valid = f"{r.quiet_valid / r.quiet:.2%}" if r.network == "delayed" and r.quiet else "—"
        table.add_row(
            r.stream, r.network, str(r.eps), str(r.delay), f"{r.updates:,}", f"{r.checks:,}",
            str(r.violations), quiet, valid, str(r.settles), f"{r.messages:,}",
            f"{r.offload_msgs:,}", f"{r.entries_mean:.2f}", str(r.entries_max),
            f"{r.phase2:,}", f"{r.probe:,}", f"{r.phase3:,}", str(r.refresh), str(r.stale),
            f"{r.answer_changes:,}", f"{r.seconds:.0f}",
        )  # fmt: skip
    console.print(table)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--streams", default="zipf,window", help="comma-separated: zipf, window")
    ap.add_argument("--updates", type=int, default=1_000_000, help="zero-latency stream length")
    ap.add_argument("--delayed-updates", type=int, default=200_000, help="delayed stream length")
    ap.add_argument("--eps", default="0,5,50", help="ε values")
    ap.add_argument("--delays", default="1,10", help="message delays (time units; 0: skip)")
    ap.add_argument("--theta", type=parse_theta, default=20, help="Appendix C θ (or none)")
    ap.add_argument("--settle-every", type=int, default=50_000, help="delayed: settle period")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--quick", action="store_true", help="20,000 / 5,000 updates")
    args = ap.parse_args(argv)
    if args.quick:
        args.updates, args.delayed_updates, args.settle_every = 20_000, 5_000, 2_000
    eps = [int(e) for e in args.eps.split(",")]
    delays = [int(d) for d in args.delays.split(",") if int(d) > 0]
    console = Console(width=200)
    violations: list[str] = []
    rows: list[Row] = []
    start = time.perf_counter()
    for name in args.streams.split(","):
        w = make(name, args.seed, args.updates)
        console.print(f"{name}: {w.description}; {len(w.updates):,} updates")
        t0 = time.perf_counter()
        rows += zero_latency(w, eps, args.theta, violations)
        console.print(f"  zero latency: {time.perf_counter() - t0:.0f} s")
        if delays and args.delayed_updates > 0:
            w.updates = w.updates[: args.delayed_updates]
            t0 = time.perf_counter()
            rows += delayed(w, eps, delays, args.theta, args.settle_every, violations)
            console.print(f"  delayed: {time.perf_counter() - t0:.0f} s")
    print_rows(rows, console)
    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / "validity.csv").open("w", newline="") as fh:
        wr = csv.DictWriter(fh, fieldnames=list(asdict(rows[0])))
        wr.writeheader()
        wr.writerows(asdict(r) for r in rows)
    zero = [r for r in rows if r.network == "zero latency"]
    late = [r for r in rows if r.network == "delayed"]
    console.print(
        f"zero latency: {sum(r.checks for r in zero):,} checks over "
        f"{sum(r.updates for r in zero):,} network-updates, "
        f"{sum(r.violations for r in zero)} violations"
    )
    if late:
        quiet = sum(r.quiet for r in late)
        valid = sum(r.quiet_valid for r in late)
        console.print(
            f"delayed: {sum(r.checks for r in late):,} checks; quiet after {quiet:,} of "
            f"{sum(r.updates for r in late):,} network-updates "
            f"({quiet / sum(r.updates for r in late):.1%}), valid at {valid:,} of them "
            f"({valid / quiet if quiet else 1:.2%}); {sum(r.settles for r in late)} settles; "
            f"{sum(r.violations for r in late)} violations"
        )
    for v in violations:
        console.print(f"[red]VIOLATION[/red] {v}")
    total = sum(r.violations for r in rows)
    console.print(
        f"{'FAIL' if total else 'OK'}: {total} violations; θ = {args.theta}; "
        f"{time.perf_counter() - start:.0f} s wall; {machine()}"
    )
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
