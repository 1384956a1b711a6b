"""Figure 4 (§3.3): adaptive vs optimized static (App. F) vs uniform static, five AVG queries.

Workload: ``fig4_workload`` — five AVG queries over random subsets (sizes 2–5) of 10 random walks
with step sizes uniform in (0.1, 2.0); query j has δ_j uniform in (0, δmax], the x-axis.
Method, baselines and the oracle check: :mod:`tsmon.sim.filters.figures`.
``python benchmarks/filters/fig4.py --quick`` is a smoke run (< 30 s).
"""

from __future__ import annotations

from tsmon.sim.filters.figures import walk_figure
from tsmon.sim.filters.walks import fig4_workload


def main(argv: list[str] | None = None) -> None:
    walk_figure(
        argv,
        __doc__,
        __file__,
        name="fig4",
        make=fig4_workload,
        delta_name="δmax",
        deltas="2,4,6,8,12,16,20,30",
        quick_deltas="4,8,16",
        workload="fig4_workload (5 AVG, sets of 2–5 of 10 walks, δ_j ~ U(0, δmax])",
        x_label="δmax (δ_j uniform in (0, δmax])",
        title="Fig. 4: five AVG queries over 10 random walks",
    )


if __name__ == "__main__":
    main()
