"""From Eq. 7's ``Δt`` to the tick of a query's next evaluation, and the caps on ``Δt`` (§4.4).

Ticks. Stream values change only at ticks, and the answer of an evaluation at ``t`` is what
users read at every tick until the next evaluation. Eq. 7 makes ``F(s) = Pr[|A(t + s) - A(t)|
≤ ε]`` equal ``p`` at ``s = Δt`` and, ``F`` decreasing (§4.2), at least ``p`` for every
``s ≤ Δt``. So the answer may stand at every tick up to ``t + Δt`` and the next evaluation is
due at the *first tick after* ``t + Δt``: with ticks ``h`` apart, ``(⌊Δt / h⌋ + 1) h`` on
(:func:`tick_interval`). Every tick's answer is then within ε with probability at least ``p``
under the model, which is the per-tick reading of §6.1's fidelity ("total time A's
cache-source errors ≤ ε / total simulation time"). Rounding down instead (the tick at or
before ``t + Δt``) evaluates at a tick whose stale answer already met ``p``: with ``Δt`` of
1-2 ticks, as on 5-minute NAB CPU series at ε = 6 s_A, that is an evaluation at every tick
instead of every other (``benchmarks/deferral/README.md``, *Real ticks*).

Caps. A deadline is fixed when a query is evaluated, so a model that says "never"
(``σ̂ = μ̂ = 0`` over a flat stretch) must not silence a query for good: ``Δt`` is capped at
``max_dt_periods`` sampling intervals of the query's fastest stream and at ``max_dt_ms``
(:func:`interval_caps`); in sampling intervals, the cap scales with the data whatever the tick.

Jumps (not in the paper). A deadline is also fixed from the ``σ̂`` of the last ``k`` items, and
real series jump: a CPU series quiet for 100 samples gets a small ``σ̂`` and a long ``Δt``, then
steps by many ``σ̂`` and the answer is wrong until the deadline (runs of 50 wrong ticks on NAB
CPU). With a jump test of ``z`` a query whose aggregate jumped by more than its ε at a tick
(``Σ |a_i| · jump_i > ε``, :func:`jumps`) is due at that tick, as a query is when one of its
streams is interrupted (§4.5).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from tsmon.protocols.deferral.model import NO_TS
from tsmon.protocols.deferral.snapshot import StreamSnapshot
from tsmon.protocols.deferral.weights import QueryWeights

__all__ = ["JumpTest", "interval_caps", "jumps", "tick_interval"]


def tick_interval(dt: ArrayLike, tick_ms: float) -> NDArray[np.float64]:
    """Interval to the first tick after ``Δt``: ``(⌊Δt / h⌋ + 1) h`` (``h = tick_ms``; ``inf``
    stays ``inf``). Every tick strictly before it is at most ``Δt`` after the evaluation.

    Examples
    --------
    >>> tick_interval([0.0, 0.5, 1.0, 1.6, 2.0, np.inf], 1).tolist()
    [1.0, 1.0, 2.0, 2.0, 3.0, inf]
    >>> tick_interval(700_000.0, 300_000).tolist()   # Δt of 2.33 five-minute ticks
    900000.0
    """
    dt = np.asarray(dt, dtype=np.float64)
    return (np.floor(dt / tick_ms) + 1.0) * tick_ms


def interval_caps(
    weights: sp.csr_array, period: NDArray[np.float64], max_dt_ms: float, max_dt_periods: float
) -> NDArray[np.float64]:
    """Cap on ``Δt`` of each row of ``weights``: ``max_dt_ms``, and ``max_dt_periods`` sampling
    intervals of the row's fastest stream (streams without a period, ``nan``, are ignored).

    Examples
    --------
    >>> w = sp.csr_array([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]])
    >>> interval_caps(w, np.array([10.0, 30.0, np.nan]), 5_000.0, 100.0).tolist()
    [1000.0, 5000.0]
    """
    cap = np.full(weights.shape[0], float(max_dt_ms))
    if not np.isfinite(max_dt_periods) or weights.nnz == 0:
        return cap
    starts = weights.indptr[:-1]
    some = np.diff(weights.indptr) > 0
    fastest = np.full(weights.shape[0], np.nan)
    fastest[some] = np.fmin.reduceat(period[weights.indices], starts[some])
    return np.fmin(cap, max_dt_periods * fastest)


def jumps(
    prev_value: NDArray[np.float64],
    prev_ts: NDArray[np.int64],
    snap: StreamSnapshot,
    z: float,
) -> NDArray[np.float64]:
    """Size ``|y - μ δ|`` of each stream's increment since the previous tick where the DBM model
    calls it a jump, ``|y - μ δ| > z σ √δ`` (Eq. 5: ``y ~ N(μ δ, σ² δ)``); 0 elsewhere.

    ``y`` and ``δ`` join the stream's value and timestamp at the previous tick (``prev_value``,
    ``prev_ts``) to this tick's; streams without a new item, without a previous one, interrupted
    or with unknown ``σ`` have none.

    Examples
    --------
    >>> snap = StreamSnapshot(8, np.array([1.5, 9.0, 4.0]), np.zeros(3), np.ones(3),
    ...                       np.array([4, 4, 0]), np.zeros(3, bool), np.full(3, 4.0))
    >>> jumps(np.array([1.0, 1.0, 0.0]), np.array([0, 0, 0]), snap, 3.0).tolist()
    [0.0, 8.0, 0.0]
    """
    n = len(snap.value)
    new = (snap.last_ts > prev_ts[:n]) & (prev_ts[:n] != NO_TS) & ~snap.interrupted
    delta = np.where(new, snap.last_ts - prev_ts[:n], 1).astype(np.float64)
    with np.errstate(invalid="ignore"):
        resid = np.abs(snap.value - prev_value[:n] - snap.mu * delta)
        jump = new & (resid > z * snap.sigma * np.sqrt(delta))  # nan σ or value: no jump
    return np.where(jump, resid, 0.0)


class JumpTest:
    """The jump test of a partition: each stream's value and timestamp at the previous tick,
    and the rows whose aggregate moved by more than their limit through this tick's jumps."""

    def __init__(self, z: float) -> None:
        self.z = float(z)
        self.value, self.ts = np.zeros(0), np.zeros(0, np.int64)  # by stream, last tick

    def rows(
        self, snap: StreamSnapshot, weights: QueryWeights, limit: NDArray[np.float64]
    ) -> NDArray[np.int64]:
        """Rows with ``Σ |a_i| · jump_i > limit`` at ``snap`` (weights built for its streams)."""
        n = len(snap.value)
        value = np.r_[self.value, np.full(max(0, n - len(self.value)), np.nan)]
        ts = np.r_[self.ts, np.full(max(0, n - len(self.ts)), NO_TS)]
        jump = jumps(value, ts, snap, self.z)
        self.value, self.ts = snap.value.copy(), snap.last_ts.copy()
        if not jump.any() or weights.absolute is None or len(limit) == 0:
            return np.zeros(0, np.int64)
        bound = (jump @ weights.column_max[:n]) * (1 + 1e-12)  # ≥ every row's, rounding too
        if bound <= limit.min():  # no row can exceed its limit: skip the sparse product
            return np.zeros(0, np.int64)
        return np.flatnonzero(np.asarray(weights.absolute @ jump) > limit)
