"""Figure 9 (§5.3) and padding (§4.1): late updates and fidelity against the latency tolerance λ.

Serializing queues (§4): workload ``fig7_workload(δ = 5, 10 hosts, FIG8_PARAMS)`` — one AVG over
10 hosts' one-minute packet rates (100..800 packets/s, a stand-in for the paper's Q5), replayed
with every message delayed by ``LanLatency`` (seeded: 0.5 ms + log-normal, median 2 ms; 1 % of
messages wait another log-normal of median 150 ms — a LAN with rare retransmissions). For each
λ: the fraction of streamed updates later than λ (``SerializingQueue.late / released``, the
paper's Figure 9 from the other side), late updates per hour, and the *fidelity*: the fraction
of time (answers sampled every ``--sample-ms``) whose bound held the exact AVG as of the
answer's ``as_of_ms`` and was at most δ wide.

Padding (§4.1): random walks updated every 100 ms with steps ±s_i, so the change over any λ is
at most ``(⌊λ/100⌋ + 1)·s_i`` — a known maximum change rate ``R_i``. Padded bounds answer as of
*now* (lag 0) instead of ``now − λ``; compared with serializing on the same data and delays,
and with delays uniform in ``[0, λ]`` (none late: fidelity must be 1).
``python benchmarks/filters/fig9.py --quick`` is a smoke run (< 30 s).
"""

from __future__ import annotations

import math
import sys

from rich.console import Console
from rich.table import Table

from tsmon.protocols.filters.queries import Query
from tsmon.sim.filters.experiments import (
    machine_line,
    parallel_map,
    parse_script_args,
    pyplot,
    script_parser,
    write_rows_csv,
)
from tsmon.sim.filters.latency import LanLatency, UniformDelay
from tsmon.sim.filters.runner import run_with_latency
from tsmon.sim.filters.traffic import FIG8_PARAMS, fig7_workload
from tsmon.sim.filters.walks import random_walks

STEP_MS = 100  # update interval of the padding walks


def serializing(task: tuple[float, int, int, int, int, int]) -> dict:
    delta, duration_s, warmup_s, lam, sample_ms, seed = task
    w = fig7_workload(delta, n_hosts=10, duration_s=duration_s, params=FIG8_PARAMS, seed=seed)
    r = run_with_latency(
        w, period_ms=10_000, shrink=0.05, latency_ms=lam, delay=LanLatency(seed=seed),
        warmup_ms=warmup_s * 1000, sample_ms=sample_ms,
    )  # fmt: skip
    hours = w.duration_ms / 3.6e6
    return {
        "lambda_ms": lam, "seed": seed, "released": r.released, "late": r.late,
        "late_fraction": r.late_fraction, "on_time": 1 - r.late_fraction,
        "late_per_hour": r.late / hours, "fidelity": r.fidelity, "samples": r.check.checked,
        "missed": r.check.missed, "too_wide": r.check.too_wide, "msg_per_s": r.per_time_unit,
        "lag_ms": r.lag_ms,
    }  # fmt: skip


def padding(task: tuple[str, str, int, int, float, int]) -> dict:
    mode, delays, lam, steps, delta, seed = task
    w = random_walks(10, steps, seed=seed, step_range=(0.05, 0.5), time_unit_ms=STEP_MS)
    w = w.with_queries([Query.avg("avg", w.objects, delta)])
    assert w.step_sizes is not None
    rates = None
    if mode == "padding":
        jumps = lam // STEP_MS + 1  # most steps in any window of λ ms
        per_s = 1000 / max(lam, 1)
        rates = {o: jumps * float(s) * per_s for o, s in zip(w.objects, w.step_sizes, strict=True)}
    delay = LanLatency(seed=seed) if delays == "lan" else UniformDelay(0, lam, seed=seed)
    r = run_with_latency(
        w, period_ms=10 * STEP_MS * 10, shrink=0.05, latency_ms=lam, delay=delay,
        warmup_ms=200 * STEP_MS * 10, max_rates=rates, sample_ms=STEP_MS // 2,
    )  # fmt: skip
    return {
        "mode": mode, "delays": delays, "lambda_ms": lam, "seed": seed,
        "late_fraction": r.late_fraction, "fidelity": r.fidelity, "missed": r.check.missed,
        "too_wide": r.check.too_wide, "samples": r.check.checked,
        "msg_per_s": r.counts.total / (r.time_units * STEP_MS / 1000), "lag_ms": r.lag_ms,
    }  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    ap = script_parser(__doc__, __file__)
    ap.add_argument("--lambdas", default="0,2,5,10,20,50,100,200,400,1000", help="λ in ms")
    ap.add_argument("--pad-lambdas", default="50,100,200,400", help="λ in ms for padding")
    ap.add_argument("--delta", type=float, default=5.0, help="δ of the traffic AVG (§5.3)")
    ap.add_argument("--pad-delta", type=float, default=5.0, help="δ of the walk AVG")
    ap.add_argument("--duration", type=int, default=7_200, help="traffic seconds")
    ap.add_argument("--warmup", type=int, default=300, help="traffic seconds not checked")
    ap.add_argument("--pad-steps", type=int, default=12_000, help="walk steps of 100 ms")
    ap.add_argument("--sample-ms", type=int, default=100, help="fidelity sampling interval")
    ap.add_argument("--seeds", type=int, default=2)
    quick = {"lambdas": "0,10,100,400", "pad_lambdas": "100,400", "duration": 900, "warmup": 120,
             "pad_steps": 4_000, "seeds": 1}  # fmt: skip
    args = parse_script_args(ap, argv, quick=quick, quick_help="15 min of traffic, fewer λ, 1 seed")
    console = Console(width=150)
    lams = [int(x) for x in args.lambdas.split(",")]
    seeds = list(range(args.seeds))
    console.print(
        f"serializing: fig7_workload(δ={args.delta:g}, 10 hosts, FIG8_PARAMS), {args.duration} s, "
        f"LanLatency, T = 10 s, S = 0.05, fidelity sampled every {args.sample_ms} ms after "
        f"{args.warmup} s, seeds {seeds}"
    )
    tasks = [(args.delta, args.duration, args.warmup, lam, args.sample_ms, s)
             for lam in lams for s in seeds]  # fmt: skip
    rows = parallel_map(serializing, tasks, args.jobs)
    table = Table(title="Fig. 9: streamed updates later than λ, and fidelity (summed over seeds)")
    for c in ("λ ms", "released", "late", "on time", "late/hour", "fidelity", "missed",
              "too wide", "msg/s", "answer lag ms"):  # fmt: skip
        table.add_column(c, justify="right")
    summary = []
    for lam in lams:
        rs = [r for r in rows if r["lambda_ms"] == lam]
        rel, late = sum(r["released"] for r in rs), sum(r["late"] for r in rs)
        samples = sum(r["samples"] for r in rs)
        bad = sum(r["missed"] + r["too_wide"] for r in rs)  # a sample can be both: upper bound
        fid = 1 - sum(r["samples"] * (1 - r["fidelity"]) for r in rs) / samples
        s = {"lambda_ms": lam, "on_time": 1 - late / rel, "late_per_hour":
             sum(r["late_per_hour"] for r in rs) / len(rs), "fidelity": fid}  # fmt: skip
        summary.append(s)
        table.add_row(
            str(lam), f"{rel:,}", f"{late:,}", f"{s['on_time']:.4%}", f"{s['late_per_hour']:.1f}",
            f"{fid:.5%}", str(sum(r["missed"] for r in rs)), str(sum(r["too_wide"] for r in rs)),
            f"{sum(r['msg_per_s'] for r in rs) / len(rs):.3f}", f"{rs[0]['lag_ms']:.0f}",
        )  # fmt: skip
        del bad
    console.print(table)
    pad_lams = [int(x) for x in args.pad_lambdas.split(",")]
    ptasks = [(m, d, lam, args.pad_steps, args.pad_delta, s)
              for lam in pad_lams for m in ("serializing", "padding") for d in ("lan", "uniform")
              for s in seeds]  # fmt: skip
    prow = parallel_map(padding, ptasks, args.jobs)
    ptable = Table(
        title=f"§4.1 padding vs serializing: 10 walks every {STEP_MS} ms, AVG δ = "
        f"{args.pad_delta:g}, R_i = (⌊λ/{STEP_MS}⌋+1)·s_i per λ (medians over seeds)"
    )
    for c in ("λ ms", "mode", "delays", "late frac", "fidelity", "missed", "too wide", "msg/s",
              "answer lag ms"):  # fmt: skip
        ptable.add_column(c, justify="right")
    for lam in pad_lams:
        for m in ("serializing", "padding"):
            for d in ("lan", "uniform"):
                rs = [r for r in prow if (r["lambda_ms"], r["mode"], r["delays"]) == (lam, m, d)]
                ptable.add_row(
                    str(lam), m, d, f"{sum(r['late_fraction'] for r in rs) / len(rs):.4f}",
                    f"{min(r['fidelity'] for r in rs):.5%}", str(sum(r["missed"] for r in rs)),
                    str(sum(r["too_wide"] for r in rs)),
                    f"{sum(r['msg_per_s'] for r in rs) / len(rs):.2f}", f"{rs[0]['lag_ms']:.0f}",
                )  # fmt: skip
    console.print(ptable)
    args.out.mkdir(parents=True, exist_ok=True)
    write_rows_csv(rows, args.out / "fig9.csv")
    write_rows_csv(prow, args.out / "fig9_padding.csv")
    plt = pyplot()
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 4.6))
    x = [max(s["lambda_ms"], 0.5) for s in summary]
    ax.plot(x, [s["on_time"] for s in summary], "o-", label="updates within λ")
    ax.plot(x, [s["fidelity"] for s in summary], "s--", label="fidelity (time)")
    ax.set_xscale("log")
    ax.set_xlabel("latency tolerance λ (ms; 0 drawn at 0.5)")
    ax.set_ylabel("fraction")
    ax.set_title("Fig. 9: on-time updates and fidelity vs λ")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    for m, mark in (("serializing", "o-"), ("padding", "s--")):
        rs = [r for r in prow if r["mode"] == m and r["delays"] == "lan"]
        xs = sorted({r["lambda_ms"] for r in rs})
        ax2.plot(xs, [min(r["fidelity"] for r in rs if r["lambda_ms"] == v) for v in xs], mark,
                 label=f"{m}, LAN delays")  # fmt: skip
    ax2.set_xlabel("λ (ms)")
    ax2.set_ylabel("fidelity (min over seeds)")
    ax2.set_title("§4.1 padding vs serializing")
    ax2.grid(True, alpha=0.3)
    ax2.legend()
    fig.tight_layout()
    fig.savefig(args.out / "fig9.png", dpi=110)
    plt.close(fig)
    console.print(f"wrote {args.out / 'fig9.csv'}, fig9_padding.csv and fig9.png")
    console.print(machine_line())
    uniform_bad = sum(r["missed"] + r["too_wide"] for r in prow if r["delays"] == "uniform")
    at400 = next((s for s in summary if s["lambda_ms"] == 400), summary[-1])
    print(
        f"RESULT fig9 on_time@{at400['lambda_ms']}ms={at400['on_time']:.5f} "
        f"fidelity@{at400['lambda_ms']}ms={at400['fidelity']:.6f} "
        f"late_per_hour@{at400['lambda_ms']}ms={at400['late_per_hour']:.2f} "
        + " ".join(f"on_time@{s['lambda_ms']}={s['on_time']:.4f}" for s in summary)
        + f" violations_when_delays_le_lambda={uniform_bad} seeds={len(seeds)}"
    )
    sys.exit(0 if uniform_bad == 0 and not math.isnan(at400["fidelity"]) else 1)


if __name__ == "__main__":
    main()
