"""Deferred evaluation of standing aggregate queries over DBM streams (Zhu & Ravishankar, 2004).

Streams are drifting Brownian motions; a standing query ``(A, ε, p)`` is re-evaluated only when
its model says ``|A(t + Δt) - A(t)| ≤ ε`` no longer holds with probability ``p``. Paper map:

- :mod:`~tsmon.protocols.deferral.model`: Eq. 1-2, 4-6 (DBM, linear aggregates), Eq. 15-17 and
  Algorithm 2 (online estimation of ``μ, σ`` from the last ``k`` items), :class:`StreamModels`.
- :mod:`~tsmon.protocols.deferral.deferral`: standing queries ``(A, ε, p)`` (§4), Eq. 3, 7
  (next evaluation time), Eq. 8 (extrapolation), Eq. 9 (relative bounds).
- :mod:`~tsmon.protocols.deferral.extrema`: §4.3, Eq. 10-12, Theorem 1 (sliding and landmark
  MAX/MIN).
- :mod:`~tsmon.protocols.deferral.interrupt`: §4.5, Eq. 13, Algorithm 1 (interrupted streams).
- :mod:`~tsmon.protocols.deferral.schedule`: §5, Eq. 18 (EDF under a CPU budget, penalties).
- :mod:`~tsmon.protocols.deferral.partition`: :class:`QueryPartition`, the query side: due
  queries evaluated on a :class:`StreamSnapshot` per tick (a runtime may host many apart);
  :mod:`~tsmon.protocols.deferral.snapshot` the snapshot, answers and counters it uses;
  :mod:`~tsmon.protocols.deferral.weights` its sparse ``a_i`` rows (Eq. 2, 6);
  :mod:`~tsmon.protocols.deferral.deadlines` the next evaluation's tick (the first after Eq. 7's
  ``Δt``) and the caps on ``Δt``.
- :mod:`~tsmon.protocols.deferral.engine`: :class:`DeferralEngine`, a partition that also keeps
  the stream models, combining them per tick.

Pure code: time is an argument in integer milliseconds (``μ`` per ms, ``σ`` per √ms), no clock
reads or I/O, and every evaluation, missed deadline and penalty is counted.
"""

from tsmon.protocols.deferral.deferral import (
    StandingQuery,
    extrapolate,
    next_interval,
    relative_eps,
    upper_exceed_interval,
    within_bound_probability,
)
from tsmon.protocols.deferral.engine import DeferralEngine, snapshot_of
from tsmon.protocols.deferral.extrema import (
    ExtremumAnswer,
    LandmarkExtrema,
    WindowSeries,
    sliding_extremum,
    sliding_phi1,
)
from tsmon.protocols.deferral.interrupt import (
    InterruptMonitor,
    approximate_values,
    detect_interrupted,
    interruption_error,
)
from tsmon.protocols.deferral.model import (
    StreamModels,
    aggregate_params,
    aggregate_values,
    estimate_params,
)
from tsmon.protocols.deferral.partition import QueryPartition
from tsmon.protocols.deferral.schedule import Completed, EdfScheduler, moore_hodgson, penalty
from tsmon.protocols.deferral.snapshot import Answer, Counters, StreamSnapshot

__all__ = [
    "Answer",
    "Completed",
    "Counters",
    "DeferralEngine",
    "EdfScheduler",
    "ExtremumAnswer",
    "InterruptMonitor",
    "LandmarkExtrema",
    "QueryPartition",
    "StandingQuery",
    "StreamModels",
    "StreamSnapshot",
    "WindowSeries",
    "aggregate_params",
    "aggregate_values",
    "approximate_values",
    "detect_interrupted",
    "estimate_params",
    "extrapolate",
    "interruption_error",
    "moore_hodgson",
    "next_interval",
    "penalty",
    "relative_eps",
    "sliding_extremum",
    "sliding_phi1",
    "snapshot_of",
    "upper_exceed_interval",
    "within_bound_probability",
]
