"""Simulated networks for the distributed top-k experiments (Babcock & Olston 2003).

- :mod:`~tsmon.sim.topk.network`: :class:`TopKNetwork` (instantaneous resolution, §3.1) and
  :class:`DelayedNetwork` (every message delayed, Appendix A), over the engine's transport.
- :mod:`~tsmon.sim.topk.caching`: :class:`CachingNetwork`, the caching baseline of §4.4.
"""

from tsmon.sim.topk.caching import CachingNetwork
from tsmon.sim.topk.network import DelayedNetwork, TopKNetwork

__all__ = ["CachingNetwork", "DelayedNetwork", "TopKNetwork"]
