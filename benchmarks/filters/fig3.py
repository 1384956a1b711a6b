"""Figure 3 (§3.3): adaptive vs optimized static (App. F) vs uniform static, one AVG query.

Workload: ``fig3_workload`` — one AVG query over 10 random walks (one per source), step sizes
uniform in (0.1, 2.0), moving ±s_i once per time unit; the x-axis is the precision constraint δ.
Method, baselines and the oracle check: :mod:`tsmon.sim.filters.figures`.
``python benchmarks/filters/fig3.py --quick`` is a smoke run (< 30 s).
"""

from __future__ import annotations

from tsmon.sim.filters.figures import walk_figure
from tsmon.sim.filters.walks import fig3_workload


def main(argv: list[str] | None = None) -> None:
    walk_figure(
        argv,
        __doc__,
        __file__,
        name="fig3",
        make=fig3_workload,
        delta_name="δ",
        deltas="1,2,3,4,6,8,10,15",
        quick_deltas="2,4,8",
        workload="fig3_workload (1 AVG over 10 walks, steps ±s_i, s_i ~ U(0.1, 2))",
        x_label="precision constraint δ",
        title="Fig. 3: one AVG over 10 random walks",
    )


if __name__ == "__main__":
    main()
