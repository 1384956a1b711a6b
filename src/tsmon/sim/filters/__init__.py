"""Workloads and static baselines for the adaptive-filter experiments (Olston, Jiang, Widom 2003).

- :mod:`~tsmon.sim.filters.workload`: :class:`Workload`, a replayable update stream with queries.
- :mod:`~tsmon.sim.filters.walks`: random walks with random step sizes (§3.3, Figures 3, 4).
- :mod:`~tsmon.sim.filters.traffic`: network-traffic-like packet rates (§5, Figures 7, 8).
- :mod:`~tsmon.sim.filters.nab`: replay of real NAB series.
- :mod:`~tsmon.sim.filters.baselines`: not filtering, uniform and optimized static widths (App. F);
  :mod:`~tsmon.sim.filters.static` a replay through fixed-width filters.
- :mod:`~tsmon.sim.filters.hindsight`: what knowing the whole replay allows: static widths
  from real message counts, and the fewest messages any width policy could send (a floor).
"""

from tsmon.sim.filters.baselines import (
    OptimizationWarning,
    OptimizedWidths,
    constraint_matrix,
    model_cost,
    no_filtering_cost,
    optimized_static_widths,
    uniform_static_widths,
)
from tsmon.sim.filters.nab import NabReplay, nab_files, nab_workload
from tsmon.sim.filters.static import StaticResult, filter_scan, run_static
from tsmon.sim.filters.traffic import (
    FIG8_PARAMS,
    PREDICATE_PROBS,
    PREDICATES,
    PacketTrace,
    TrafficParams,
    fig7_workload,
    fig8_queries,
    fig8_workload,
    moving_average,
    simulate_packets,
    trace_workload,
)
from tsmon.sim.filters.walks import fig3_workload, fig4_workload, random_walks
from tsmon.sim.filters.workload import Workload, grid_workload, random_avg_queries

__all__ = [
    "FIG8_PARAMS",
    "PREDICATES",
    "PREDICATE_PROBS",
    "NabReplay",
    "OptimizationWarning",
    "OptimizedWidths",
    "PacketTrace",
    "StaticResult",
    "TrafficParams",
    "Workload",
    "constraint_matrix",
    "fig3_workload",
    "fig4_workload",
    "fig7_workload",
    "fig8_queries",
    "fig8_workload",
    "filter_scan",
    "grid_workload",
    "model_cost",
    "moving_average",
    "nab_files",
    "nab_workload",
    "no_filtering_cost",
    "optimized_static_widths",
    "random_avg_queries",
    "random_walks",
    "run_static",
    "simulate_packets",
    "trace_workload",
    "uniform_static_widths",
]
