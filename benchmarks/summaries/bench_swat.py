"""SWAT (Bulut & Singh 2003, §2): update throughput and inner-product latency vs baselines.

Update: points/s for N = 1024 and 65536, bulk ``extend`` over 10^6 points (one call, and
micro-batches of 1024) and per-point ``update``, against baselines run in this process: writing
into a numpy ring buffer (bulk and per point) and recomputing the window's Haar transform from
scratch at each arrival. Query: median latency of an exponential inner-product query over the
whole N = 1024 window (finest nodes, and with a precision ``delta``), a point query, against
``np.dot`` on the raw window. Targets from the issue: update >= 1M points/s amortized,
inner-product query on N = 1024 <= 100 µs. Medians of ``time.perf_counter`` repeats.

``python benchmarks/summaries/bench_swat.py --quick`` is a smoke run (a few seconds).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

from tsmon.core.swat import SWAT
from tsmon.core.wavelets import haar_forward

UPDATE_TARGET = 1e6  # points/s
QUERY_TARGET_US = 100.0


def median_time(fn: Callable[[], object], repeats: int) -> float:
    """Median wall time of ``fn()`` in seconds, after one warm-up call."""
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def per_call_us(fn: Callable[[], object], calls: int) -> float:
    """Median of per-call latency in µs over ``calls`` calls."""
    for _ in range(min(calls, 100)):
        fn()
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def ring_bulk(window: int, x: np.ndarray, chunk: int) -> None:
    """Baseline: append chunks to a ring buffer of the last ``window`` values."""
    buf, pos = np.zeros(window), 0
    for i in range(0, len(x), chunk):
        part = x[i : i + chunk][-window:]
        j = np.arange(pos, pos + len(part)) % window
        buf[j] = part
        pos = (pos + len(x[i : i + chunk])) % window


def ring_points(window: int, xs: list[float]) -> None:
    """Baseline: one value at a time into a ring buffer."""
    buf, pos = np.zeros(window), 0
    for v in xs:
        buf[pos] = v
        pos = (pos + 1) % window


def haar_recompute(window: int, xs: list[float]) -> None:
    """Baseline: recompute the full Haar transform of the window after every arrival."""
    buf, pos = np.zeros(window), 0
    for v in xs:
        buf[pos] = v
        pos = (pos + 1) % window
        haar_forward(np.roll(buf, -pos)[::-1])


def swat_points(window: int, xs: list[float]) -> None:
    tree = SWAT(window)
    for v in xs:
        tree.update(v)


def run(quick: bool) -> None:
    rng = np.random.default_rng(0)
    n_bulk = 10**5 if quick else 10**6
    n_point = 2 * 10**4 if quick else 2 * 10**5
    n_recompute = 500 if quick else 3000
    repeats = 3 if quick else 5
    x = np.cumsum(rng.normal(size=n_bulk))
    xs = x[:n_point].tolist()
    print(f"update throughput, points/s (median of {repeats}; bulk over {n_bulk:,} points)")
    header = f"{'N':>6} {'variant':<34} {'points/s':>14} {'throughput ratio':>22}"
    print(header)
    print("-" * len(header))
    for window in (1024, 65536):
        ring_b = n_bulk / median_time(lambda w=window: ring_bulk(w, x, 1024), repeats)
        ring_p = n_point / median_time(lambda w=window: ring_points(w, xs), repeats)
        recompute = n_recompute / median_time(
            lambda w=window, r=xs[:n_recompute]: haar_recompute(w, r), 1
        )
        one = n_bulk / median_time(lambda w=window: SWAT(w).extend(x), repeats)
        chunked = n_bulk / median_time(
            lambda w=window: [
                t.extend(x[i : i + 1024]) for t in [SWAT(w)] for i in range(0, n_bulk, 1024)
            ],
            repeats,
        )
        per_point = n_point / median_time(lambda w=window: swat_points(w, xs), repeats)
        rows = [
            ("SWAT.extend (one call)", one, f"{one / ring_b:.2f}x ring bulk"),
            ("SWAT.extend (batches of 1024)", chunked, f"{chunked / ring_b:.2f}x ring bulk"),
            ("SWAT.update (per point)", per_point, f"{per_point / ring_p:.2f}x ring per point"),
            ("", per_point, f"{per_point / recompute:.0f}x Haar recompute"),
            ("baseline: ring buffer, batches 1024", ring_b, ""),
            ("baseline: ring buffer, per point", ring_p, ""),
            ("baseline: Haar recompute per point", recompute, ""),
        ]
        for name, rate, ratio in rows:
            if name:
                print(f"{window:>6} {name:<34} {rate:>14,.0f} {ratio:>22}")
            else:
                print(f"{'':>6} {'':<34} {'':>14} {ratio:>22}")
        verdict = "meets" if chunked >= UPDATE_TARGET else "misses"
        print(f"{'':>6} bulk update {verdict} the {UPDATE_TARGET:,.0f} points/s target")

    window, calls = 1024, 500 if quick else 3000
    tree = SWAT(window).extend(x[: 5 * window])
    raw = x[: tree.count][::-1][:window].copy()
    idx, w = np.arange(window), 0.5 ** np.arange(window)
    exact = float(w @ raw)
    finest = tree.inner_product(idx, w)
    delta = 3 * finest.bound  # loose enough for coarser nodes: exercises the level search
    loose = tree.inner_product(idx, w, delta=delta)
    t_ip = per_call_us(lambda: tree.inner_product(idx, w), calls)
    t_delta = per_call_us(lambda: tree.inner_product(idx, w, delta=delta), calls)
    t_point = per_call_us(lambda: tree.point(517), calls)
    t_dot = per_call_us(lambda: np.dot(w, raw), calls)
    print()
    print(f"query latency on N = {window}, median µs over {calls} calls")
    print(
        f"  inner product, finest nodes (Fig. 3b) {t_ip:8.1f} µs  {t_ip / t_dot:6.0f}x np.dot "
        f"| error {abs(finest.value - exact):.2e} <= bound {finest.bound:.2e}"
    )
    print(
        f"  inner product, delta = {delta:<14.2e} {t_delta:8.1f} µs  {t_delta / t_dot:6.0f}x "
        f"np.dot | start level {loose.start_level}, bound {loose.bound:.2e}"
    )
    print(f"  point query                           {t_point:8.1f} µs")
    print(f"  baseline: np.dot on the raw window    {t_dot:8.1f} µs")
    verdict = "meets" if t_ip <= QUERY_TARGET_US else "misses"
    print(f"  inner product {verdict} the {QUERY_TARGET_US:.0f} µs target")
    print(
        f"\nmemory: {tree.n_coefficients} coefficients (3 log N - 2 = "
        f"{3 * (window.bit_length() - 1) - 2}) vs {window} values for the raw window"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, a smoke run")
    run(parser.parse_args().quick)


if __name__ == "__main__":
    main()
