"""SWAT (Bulut & Singh 2003): inner-product error vs number of levels kept (§2.5, Fig. 4c).

What is measured. A ``SWAT(window=N, k=1, levels=L)`` (§2.5: only the top ``L`` of the
``log2 N`` levels are kept) is fed a long stream one value at a time (``update``, §2.3) and is
queried repeatedly; every answer is compared with the exact inner product computed by numpy over
the raw window (the oracle). For every dataset x query kind x query mode x ``L`` (all levels down
to 1) we report the mean absolute error (Fig. 4c's metric), its 95th percentile, the mean
relative error ``|err| / |exact|`` (Fig. 5's metric), the mean returned bound, and the number of
*violations*: answers with ``|err| > bound`` or the exact value outside ``[lower, upper]`` (a
violation is a bug in ``tsmon.core.swat*``, reported, never hidden). Memory is the number of
coefficients the tree keeps (``n_coefficients``, ``3L - 2`` for ``k = 1``; each also carries a
block min/max, and the §2.5 accumulator that replaces the dropped levels adds O(k) floats).

Choices (from the paper where it says, ours where it is silent):

- window ``N = 512``, ``k = 1`` Haar coefficient (the block average) per node: §2.7, Fig. 4c
  ("we change the number of levels ... for a window size of 512"), §2.2 ("a single coefficient").
- weights as in §2.6: exponential ``W = [1, 1/2, ..., 1/2**(M-1)]``, linear
  ``W = [M/M, (M-1)/M, ..., 1/M]``; the largest weight is on the query's most recent point and
  the points are consecutive (§2.1: "the data items of interest are consecutive").
- fixed mode (§2.7): the same query "over the most recent values" (positions ``0..M-1``) at
  every query time. The paper does not give ``M``; we run two: ``M = 32`` (short, inside the
  fine levels) and ``M = N`` (the whole window), ``--fixed-lengths``. The choice matters for
  linear weights: with ``M = N`` the old half of the window is always answered by the level
  ``log2 N - 2`` nodes, whatever ``L``, and dominates the error, so dropping levels changes
  little; with a short query the query's own points move to coarser nodes as levels are dropped.
- random mode (§2.7, §5: "the sizes of the queries and the specific data points of interest
  are chosen uniformly"): at each query time ``M ~ U{1..N}`` and the start ``p ~ U{0..N-M}``,
  indices ``p..p+M-1`` (like §2.1's linear example ``[8, 9, 10, 11]``). The same draws are used
  for every ``L`` and both kinds (common random numbers), so the curves differ only by ``L``.
- query times: the paper queries at every arrival (``T_q = T_d``); to fit the time budget with
  ``>= 10**5`` arrivals we query every ``--query-period`` = 11 arrivals (about 9K query times
  per series, the paper's Fig. 4 ran 10K queries; the period is odd, so the query
  times visit every phase of the tree's power-of-two update schedule evenly: no aliasing with
  the periodic error of Fig. 4a). ``--query-period 1`` is the paper's setting. Queries start
  after a warm-up of ``2N`` values (every level valid).
- data: ``uniform`` i.i.d. on [0, 100] (the paper's synthetic data, §2.7);
  ``random_walk`` Gaussian N(0, 1) steps from 50, reflected into [0, 100] (kept positive so
  the relative error is meaningful; same range as the synthetic data); two real NAB series in
  place of the paper's Santa Barbara temperatures (not available offline):
  ``realAWSCloudwatch/rds_cpu_utilization_cc0c53`` (a machine CPU %, smooth like temperatures)
  and ``realTweets/Twitter_volume_AAPL`` (bursty counts). NAB series (4K-16K points) are
  replayed forwards then backwards until the stream is long enough (mirror tiling: no jump at
  the seams). The relative error leaves out the few queries whose exact answer is 0.
- reference: the §2.6 closed forms, Eq. (2) ``exponential_query_bound`` and Eq. (3)
  ``linear_query_bound``, with ``eps`` = largest step seen so far, are evaluated for the full
  tree in fixed mode (the case they are derived for) and their exceedances counted
  (``paper_exceed``; informational, the §2.6 model is an O() estimate, not the guarantee).

The paper's Fig. 5 compares SWAT with the Histogram of Guha & Koudas by query type; it is not
a levels sweep. What is reproduced here is the levels sweep of Fig. 4c in both query modes; the
relative errors at ``L = log2 N`` can be set beside the SWAT numbers of Fig. 5 (there N = 1024).

Reading the figures: the relative error is heavy-tailed where exact answers come near 0 (the
AAPL tweet counts hold a run of 26 zeros), so p95 and ``err_over_mean_exact`` (mean |err| /
mean |exact|) are in the CSV too, and the PNG's relative panels show ``err_over_mean_exact``.
Exponential weights beyond position 32 are below ``2**-32``, so the two fixed lengths give the
same exponential figures. A Haar average keeps its segment's sum, so for slowly varying
(linear) weights the errors of a node largely cancel: the linear-query error is not monotone in
``L`` (several series dip at one ``L`` before rising), while the per-position error is.

``python benchmarks/summaries/levels.py`` writes ``out/levels.csv`` and ``out/levels.png``
(about 2 minutes on 2 cores, ``--jobs``); ``--quick`` (about 12 s) writes ``levels_quick.*``.
"""

from __future__ import annotations

import argparse
import csv
import math
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from tsmon.core.swat import SWAT
from tsmon.core.swat_query import exponential_query_bound, linear_query_bound

OUT = Path(__file__).resolve().parent / "out"
NAB = Path("/work/shared/data/nab")
NAB_SERIES = {
    "nab_rds_cpu": "realAWSCloudwatch/rds_cpu_utilization_cc0c53.csv",
    "nab_tweets_aapl": "realTweets/Twitter_volume_AAPL.csv",
}
QUERY_KINDS = ("exponential", "linear")
CHUNK = 2048  # oracle rows per numpy block (bounds memory at CHUNK x N floats)
REL_TOL = 1e-9  # float tolerance of the bound check, relative to 1 + sum |W| |d|


@dataclass(frozen=True)
class Mode:
    """A query mode: ``fixed`` with length ``m`` (positions ``0..m-1``), or ``random``."""

    name: str
    m: int | None = None

    @property
    def label(self) -> str:
        return self.name if self.m is None else f"{self.name} M={self.m}"


def weights(kind: str, m: int) -> np.ndarray:
    """§2.6 weights of a length-``m`` query, most recent point first."""
    j = np.arange(m, dtype=float)
    return 0.5**j if kind == "exponential" else (m - j) / m


def weight_matrix(kind: str, start: np.ndarray, length: np.ndarray, window: int) -> np.ndarray:
    """Rows of window-length weight vectors: query ``q`` puts its weights on ``p..p+M-1``."""
    j = np.arange(window)[None, :] - start[:, None]
    inside = (j >= 0) & (j < length[:, None])
    jj = np.where(inside, j, 0).astype(float)
    m = length[:, None].astype(float)
    w = 0.5**jj if kind == "exponential" else (m - jj) / m
    return np.where(inside, w, 0.0)


def mirror_tile(x: np.ndarray, n: int) -> np.ndarray:
    """``x, x[::-1], x, ...`` cut to ``n`` values (a long stream from a short series)."""
    return np.resize(np.concatenate([x, x[::-1]]), n)


def reflected_walk(
    n: int, rng: np.random.Generator, lo: float = 0.0, hi: float = 100.0
) -> np.ndarray:
    """Gaussian N(0, 1) random walk from the middle of ``[lo, hi]``, reflected at both ends."""
    width = hi - lo
    y = np.mod(np.cumsum(rng.normal(size=n)) + width / 2, 2 * width)
    return lo + np.where(y > width, 2 * width - y, y)


def make_datasets(n: int, seed: int) -> dict[str, np.ndarray]:
    """The streams: uniform [0, 100] (paper), reflected random walk, two NAB series."""
    rng = np.random.default_rng(seed)
    data = {
        "uniform": rng.uniform(0.0, 100.0, size=n),
        "random_walk": reflected_walk(n, rng),
    }
    for name, rel in NAB_SERIES.items():
        path = NAB / rel
        if not path.exists():
            print(f"warning: {path} missing, dataset {name} skipped")
            continue
        raw = np.loadtxt(path, delimiter=",", skiprows=1, usecols=1)
        data[name] = mirror_tile(raw[np.isfinite(raw)], n)
    return data


@dataclass(frozen=True)
class Task:
    """One SWAT run: a dataset, a level count, the query schedule."""

    dataset: str
    x: np.ndarray
    window: int
    k: int
    levels: int
    times: np.ndarray  # index of the most recent value at each query time
    modes: tuple[Mode, ...]
    start: np.ndarray  # random mode: first position of each query
    length: np.ndarray  # random mode: length of each query


@dataclass
class SwatRun:
    """SWAT side of a task: ``answers[kind, label]`` is ``(Q, 4)``: value, bound, lower, upper."""

    dataset: str
    levels: int
    answers: dict[tuple[str, str], np.ndarray]
    eps: np.ndarray  # largest step seen at each query time (the §2.6 eps)
    coefficients: int
    nodes: int
    seconds: float


def run_swat(task: Task) -> SwatRun:
    """Feed the stream point by point (``update``) and answer every query at each query time."""
    t0 = time.perf_counter()
    tree = SWAT(window=task.window, k=task.k, levels=task.levels)
    x, times = task.x, task.times
    answers = {(k, md.label): np.empty((len(times), 4)) for k in QUERY_KINDS for md in task.modes}
    eps = np.empty(len(times))
    fixed = [
        (md.label, np.arange(md.m), {k: weights(k, md.m) for k in QUERY_KINDS})
        for md in task.modes
        if md.m is not None
    ]
    randoms = [md.label for md in task.modes if md.m is None]
    exp_w = weights("exponential", task.window)
    tree.extend(x[: times[0]])  # warm-up in bulk
    nxt = int(times[0])
    update, inner_product = tree.update, tree.inner_product
    for j, t in enumerate(times.tolist()):
        for v in x[nxt : t + 1].tolist():
            update(v)
        nxt = t + 1
        eps[j] = tree.max_step
        for label, idx, ws in fixed:
            for kind in QUERY_KINDS:
                r = inner_product(idx, ws[kind])
                answers[kind, label][j] = (r.value, r.bound, r.lower, r.upper)
        if randoms:
            p, m = int(task.start[j]), int(task.length[j])
            idx = np.arange(p, p + m)
            for kind in QUERY_KINDS:
                r = inner_product(idx, exp_w[:m] if kind == "exponential" else weights(kind, m))
                answers[kind, randoms[0]][j] = (r.value, r.bound, r.lower, r.upper)
    return SwatRun(
        task.dataset,
        task.levels,
        answers,
        eps,
        tree.n_coefficients,
        tree.n_nodes,
        time.perf_counter() - t0,
    )


def oracle(
    x: np.ndarray, times: np.ndarray, wmat: Callable[[slice], np.ndarray], window: int
) -> tuple[np.ndarray, np.ndarray]:
    """Exact answers ``sum_i W_i d_i`` and scales ``sum_i |W_i| |d_i|`` from the raw window."""
    exact, scale = np.empty(len(times)), np.empty(len(times))
    lags = np.arange(window)
    for a in range(0, len(times), CHUNK):
        sl = slice(a, a + CHUNK)
        raw = x[times[sl, None] - lags[None, :]]  # raw[q, i] = d_i at query q (0 = newest)
        w = wmat(sl)
        exact[sl] = np.einsum("qi,qi->q", w, raw)
        scale[sl] = np.einsum("qi,qi->q", np.abs(w), np.abs(raw))
    return exact, scale


def exact_answers(task: Task) -> dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]:
    """Oracle answers per ``(kind, mode label)`` for a dataset's query schedule."""
    n, times, out = task.window, task.times, {}
    for kind in QUERY_KINDS:
        for md in task.modes:
            if md.m is None:

                def wmat(sl: slice, kind: str = kind) -> np.ndarray:
                    return weight_matrix(kind, task.start[sl], task.length[sl], n)
            else:
                row = np.zeros(n)
                row[: md.m] = weights(kind, md.m)

                def wmat(sl: slice, row: np.ndarray = row) -> np.ndarray:
                    return np.broadcast_to(row, (len(times[sl]), n))

            out[kind, md.label] = oracle(task.x, times, wmat, n)
    return out


def summarize(runs: list[SwatRun], tasks: list[Task]) -> list[dict]:
    """Errors against the oracle, per dataset x kind x mode x L (one CSV row each)."""
    rows = []
    first = {}
    for t in tasks:
        first.setdefault(t.dataset, t)
    for ds, task in first.items():
        n_all = task.window.bit_length() - 1
        exact = exact_answers(task)
        q = len(task.times)
        for run in sorted((r for r in runs if r.dataset == ds), key=lambda r: -r.levels):
            for kind in QUERY_KINDS:
                for md in task.modes:
                    value, bound, lower, upper = run.answers[kind, md.label].T
                    ex, scale = exact[kind, md.label]
                    err = np.abs(value - ex)
                    tol = REL_TOL * (scale + 1.0)
                    nz = ex != 0
                    rel = err[nz] / np.abs(ex[nz])
                    paper_bound, paper_exceed = math.nan, ""
                    if md.m is not None and run.levels == n_all:
                        fn = (
                            exponential_query_bound if kind == "exponential" else linear_query_bound
                        )
                        pb = np.array([fn(md.m, e) for e in run.eps])
                        paper_bound, paper_exceed = float(pb.mean()), int((err > pb + tol).sum())
                    rows.append(
                        {
                            "dataset": ds,
                            "query": kind,
                            "mode": md.name,
                            "length": str(md.m) if md.m else f"1-{task.window}",
                            "label": md.label,
                            "levels": run.levels,
                            "coefficients": run.coefficients,
                            "nodes": run.nodes,
                            "queries": q,
                            "mean_abs_err": float(err.mean()),
                            "p95_abs_err": float(np.percentile(err, 95)),
                            "max_abs_err": float(err.max()),
                            "mean_rel_err": float(rel.mean()),
                            "p95_rel_err": float(np.percentile(rel, 95)),
                            "err_over_mean_exact": float(err.mean() / np.abs(ex).mean()),
                            "rel_excluded": int(q - nz.sum()),
                            "mean_bound": float(bound.mean()),
                            "err_over_bound": float(err.mean() / bound.mean()),
                            "max_err_over_bound": float(np.max(err / np.maximum(bound, 1e-300))),
                            "violations": int((err > bound + tol).sum()),
                            "strict_violations": int((err > bound).sum()),
                            "interval_violations": int(
                                ((ex < lower - tol) | (ex > upper + tol)).sum()
                            ),
                            "paper_bound": paper_bound,
                            "paper_exceed": paper_exceed,
                        }
                    )
    return rows


def write_csv(rows: list[dict], path: Path) -> None:
    """One row per dataset x query kind x mode x levels."""
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=[k for k in rows[0] if k != "label"])
        writer.writeheader()
        for row in rows:
            writer.writerow(
                {
                    k: (f"{v:.6g}" if isinstance(v, float) else v)
                    for k, v in row.items()
                    if k != "label"
                }
            )


def select(rows: list[dict], ds: str, kind: str, label: str) -> list[dict]:
    """Rows of one series, by decreasing levels kept."""
    sel = [r for r in rows if r["dataset"] == ds and r["query"] == kind and r["label"] == label]
    return sorted(sel, key=lambda r: -r["levels"])


def plot(rows: list[dict], path: Path, window: int) -> None:
    """Fig. 4c-like panels: error vs levels kept, per query kind and mode, a line per dataset."""
    datasets = list(dict.fromkeys(r["dataset"] for r in rows))
    labels = list(dict.fromkeys(r["label"] for r in rows))
    colors = dict(zip(datasets, plt.rcParams["axes.prop_cycle"].by_key()["color"], strict=False))
    panels = [(kind, "abs") for kind in QUERY_KINDS] + [(kind, "rel") for kind in QUERY_KINDS]
    fig, axes = plt.subplots(
        len(panels), len(labels), figsize=(5.6 * len(labels), 3.6 * len(panels)), sharex=True
    )
    for row_i, (kind, metric) in enumerate(panels):
        for col, label in enumerate(labels):
            ax = axes[row_i, col]
            for ds in datasets:
                sel = select(rows, ds, kind, label)
                lv = [r["levels"] for r in sel]
                c = colors[ds]
                if metric == "abs":
                    ax.plot(lv, [r["mean_abs_err"] for r in sel], "o-", color=c, label=ds)
                    ax.plot(lv, [r["mean_bound"] for r in sel], "--", color=c, alpha=0.5)
                    bad = [r for r in sel if r["violations"] or r["interval_violations"]]
                    ax.plot(
                        [r["levels"] for r in bad],
                        [r["mean_abs_err"] for r in bad],
                        "x",
                        color="red",
                        ms=12,
                        mew=2,
                    )
                else:
                    ax.plot(lv, [r["err_over_mean_exact"] for r in sel], "o-", color=c, label=ds)
            what = (
                "mean |error| (—), mean bound (--)"
                if metric == "abs"
                else "relative: mean |error| / mean |exact|"
            )
            ax.set_title(f"{kind} query, {label}: {what}", fontsize=9)
            ax.set_yscale("log")
            ax.grid(True, which="both", alpha=0.3)
            ax.set_xticks(range(1, window.bit_length()))
            if row_i == len(panels) - 1:
                ax.set_xlabel("levels kept L (all levels on the left)")
    for ax in axes[0]:
        ax.invert_xaxis()  # shared x: inverting one inverts the column
    axes[0, 0].legend(fontsize=8)
    fig.suptitle(
        f"SWAT (N = {window}, k = 1): inner-product error vs number of top levels kept "
        "(Bulut & Singh 2003, §2.5, Fig. 4c); red x = bound violated"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def print_table(rows: list[dict]) -> None:
    """The CSV figures as a plain table."""
    head = (
        f"{'dataset':<16} {'query':<11} {'mode':<12} {'L':>2} {'coef':>4} {'mean|err|':>10} "
        f"{'p95|err|':>10} {'mean rel':>9} {'p95 rel':>9} {'mean bound':>11} {'err/bnd':>8} "
        f"{'viol':>5} {'Eq.2/3':>9}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        paper = "" if math.isnan(r["paper_bound"]) else f"{r['paper_bound']:.3g}"
        viol = r["violations"] + r["interval_violations"]
        print(
            f"{r['dataset']:<16} {r['query']:<11} {r['label']:<12} {r['levels']:>2} "
            f"{r['coefficients']:>4} {r['mean_abs_err']:>10.4g} {r['p95_abs_err']:>10.4g} "
            f"{r['mean_rel_err']:>9.3g} {r['p95_rel_err']:>9.3g} {r['mean_bound']:>11.4g} "
            f"{r['err_over_bound']:>8.3f} {viol:>5} {paper:>9}"
        )


def fit_shape(dropped: np.ndarray, err: np.ndarray) -> str:
    """``linear`` or ``exponential``: which straight line, on ``err`` or on ``log err`` against
    the number of dropped levels, fits better (R^2)."""

    def r2(y: np.ndarray) -> float:
        res = y - np.polyval(np.polyfit(dropped, y, 1), dropped)
        tot = ((y - y.mean()) ** 2).sum()
        return 1.0 - (res**2).sum() / tot if tot > 0 else 1.0

    return "exponential" if r2(np.log(err)) > r2(err) else "linear"


def print_summary(rows: list[dict]) -> None:
    """Pivot (mean |err| by L), growth per series, and the comparison with the paper."""
    levels = sorted({r["levels"] for r in rows}, reverse=True)
    print("\nmean |error| by levels kept; ratio = error at L=1 / error with all levels")
    head = f"{'dataset':<16} {'query':<11} {'mode':<12} "
    head += "".join(f"{'L=' + str(v):>9}" for v in levels) + f" {'ratio':>7} {'growth':>12}"
    print(head)
    print("-" * len(head))
    stats: dict[tuple[str, str], list[tuple[str, float]]] = {}
    labels = list(dict.fromkeys(r["label"] for r in rows))
    for ds in dict.fromkeys(r["dataset"] for r in rows):
        for label in labels:
            for kind in QUERY_KINDS:
                sel = select(rows, ds, kind, label)
                err = np.array([r["mean_abs_err"] for r in sel])
                shape = fit_shape(levels[0] - np.array([r["levels"] for r in sel]), err)
                ratio = float(err[-1] / err[0])
                stats.setdefault((kind, label), []).append((shape, ratio))
                cells = "".join(f"{e:>9.3g}" for e in err)
                print(f"{ds:<16} {kind:<11} {label:<12} {cells} {ratio:>7.3g} {shape:>12}")
    n_viol = sum(r["violations"] + r["interval_violations"] for r in rows)
    n_strict = sum(r["strict_violations"] for r in rows)
    n_ans = sum(r["queries"] for r in rows)
    worst = max(r["max_err_over_bound"] for r in rows)
    print(
        f"\nbound check: {n_viol} violations in {n_ans:,} answers "
        f"(|err| > returned bound, or exact answer outside [lower, upper], to {REL_TOL:g} "
        f"relative rounding; {n_strict} with no tolerance); worst |err| / bound = {worst:.4f}"
    )
    print(
        "paper (Fig. 4c, fixed mode): as levels are dropped the linear-query error grows "
        "exponentially, the exponential-query error linearly. Measured:"
    )
    for label in labels:
        parts = []
        for kind in QUERY_KINDS:
            s = stats[kind, label]
            ratios = [x[1] for x in s]
            n_exp = sum(x[0] == "exponential" for x in s)
            parts.append(
                f"{kind} x{min(ratios):.3g}..x{max(ratios):.3g} at L=1 vs all levels "
                f"({n_exp}/{len(s)} series fit exponential growth better)"
            )
        print(f"  {label}: " + "; ".join(parts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short stream, a smoke run")
    parser.add_argument("--points", type=int, help="stream length (default 100000; quick 12000)")
    parser.add_argument("--window", type=int, default=512, help="N, a power of two (paper: 512)")
    parser.add_argument("--k", type=int, default=1, help="coefficients per node (paper: 1)")
    parser.add_argument("--query-period", type=int, help="arrivals between queries (default 11)")
    parser.add_argument(
        "--fixed-lengths", default="32,N", help="fixed-mode query lengths, comma-separated"
    )
    parser.add_argument("--jobs", type=int, default=2, help="worker processes")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    t_start = time.perf_counter()
    window = args.window
    n_points = args.points or (12_000 if args.quick else 100_000)
    period = args.query_period or (13 if args.quick else 11)
    lengths = [window if s.strip() == "N" else int(s) for s in args.fixed_lengths.split(",")]
    modes = (*(Mode("fixed", m) for m in lengths), Mode("random"))
    n_levels = window.bit_length() - 1

    data = make_datasets(n_points, args.seed)
    rng = np.random.default_rng(args.seed + 1)
    times = np.arange(2 * window, n_points, period)
    tasks = []
    for ds, x in data.items():
        length = rng.integers(1, window + 1, size=len(times))  # M ~ U{1..N}
        start = rng.integers(0, window - length + 1)  # p ~ U{0..N-M}
        for levels in range(n_levels, 0, -1):
            tasks.append(Task(ds, x, window, args.k, levels, times, modes, start, length))
    print(
        f"SWAT levels sweep: N = {window}, k = {args.k}, {len(data)} datasets x {n_points:,} "
        f"points, a query every {period} arrivals ({len(times):,} query times) x "
        f"{len(QUERY_KINDS)} kinds x modes [{', '.join(m.label for m in modes)}], "
        f"L = {n_levels}..1, {args.jobs} worker(s)"
    )
    if args.jobs > 1:
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            runs = list(pool.map(run_swat, tasks))
    else:
        runs = [run_swat(t) for t in tasks]
    rows = summarize(runs, tasks)
    OUT.mkdir(parents=True, exist_ok=True)
    suffix = "_quick" if args.quick else ""
    csv_path, png_path = OUT / f"levels{suffix}.csv", OUT / f"levels{suffix}.png"
    write_csv(rows, csv_path)
    plot(rows, png_path, window)
    print()
    print_table(rows)
    print_summary(rows)
    cpu = sum(r.seconds for r in runs)
    print(
        f"\nwrote {csv_path} and {png_path}; SWAT runs {cpu:.0f} s CPU, "
        f"wall time {time.perf_counter() - t_start:.0f} s"
    )


if __name__ == "__main__":
    main()
