"""Figure 7 (§5.1): adaptive vs uniform static widths, one AVG query over 200 traffic sources.

Workload: ``fig7_workload`` — 200 hosts of synthetic wide-area traffic (Pareto on/off sessions,
0..~150 packets/s, standing in for the [PF95] trace), each object the one-minute moving average
of its packet rate, updated every second; one AVG query with precision δ (packets/s). Adaptive
filters with ``T = 10`` s, ``S = 0.05``, all messages counted (§5.1: "accounting for all
communication costs") after a warm-up; uniform static widths (``W = δ``) and not filtering on
the same data in the same process. Every adaptive answer is checked against the exact oracle.
``python benchmarks/filters/fig7.py --quick`` is a smoke run (< 30 s).
"""

from __future__ import annotations

import statistics

from tsmon.sim.filters.figures import traffic_figure, traffic_result
from tsmon.sim.filters.traffic import fig7_workload


def main(argv: list[str] | None = None) -> None:
    sweep, rows = traffic_figure(
        argv,
        __doc__,
        __file__,
        name="fig7",
        make=fig7_workload,
        hosts=200,
        deltas="0.5,1,2,5,10,20",
        deltas_help="precision constraints δ",
        quick={"deltas": "1,5", "seeds": 1, "hosts": 50, "duration": 900, "warmup": 120},
        quick_help="50 hosts, 15 min, δ in 1,5; 1 seed",
        workload="fig7_workload, {hosts} hosts",
        x_label="precision constraint δ (packets/s)",
        title="Fig. 7: one AVG over {hosts} traffic sources",
    )
    median = statistics.median(r["adapt_unif"] for r in rows)
    traffic_result(sweep, rows, f"median_adapt_unif={median:.3f}")


if __name__ == "__main__":
    main()
