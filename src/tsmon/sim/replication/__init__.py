"""Simulated trees of sites for SWAT-ASR and its baselines (Bulut & Singh 2003, §5).

- :mod:`~tsmon.sim.replication.network`: :class:`AsrNetwork`, :class:`ItemNetwork` (zero
  latency, every message counted per link), :func:`binary_tree`.
- :mod:`~tsmon.sim.replication.workload`: streams and query schedules.
- :mod:`~tsmon.sim.replication.runner`: :func:`run` with an exact numpy oracle.
"""

from tsmon.sim.replication.network import AsrNetwork, ItemNetwork, binary_tree, depths
from tsmon.sim.replication.runner import SCHEMES, RunResult, make_network, run
from tsmon.sim.replication.workload import (
    Event,
    ReplicationWorkload,
    uniform_noise,
    weather_like,
)

__all__ = [
    "SCHEMES",
    "AsrNetwork",
    "Event",
    "ItemNetwork",
    "ReplicationWorkload",
    "RunResult",
    "binary_tree",
    "depths",
    "make_network",
    "run",
    "uniform_noise",
    "weather_like",
]
