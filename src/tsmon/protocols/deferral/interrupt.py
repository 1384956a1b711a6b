"""Interrupted streams: detection, ``A_approx`` (Eq. 13) and its error ``ε_intr`` (§4.5).

A stream is *interrupted* at ``now`` when it has been silent for more than ``factor`` times its
expected period (the mean interval between its buffered items; the paper leaves the test open).
It recovers by itself as soon as an item arrives again.

During an interruption the best estimate of the stream is its last value moved along its drift,
``Ŝ_i(t) = S_i(t_i) + μ_i (t - t_i)``, where ``t_i`` is the timestamp of its last item; ``A_approx``
is the aggregate of the ``Ŝ_i`` (Eq. 13). The error of ``Ŝ_i`` at belief ``p`` is the half-width
of Eq. 7 with ``μ = 0`` (the drift is already in ``Ŝ_i``): ``e_i = z σ_i √(t - t_i)`` with
``z = Φ⁻¹((1 + p) / 2)``. ``ε_intr`` is their ``|a_i|``-weighted sum (the paper's weighted
combination, ``combine="linear"``), or, with ``combine="rss"``, ``z sqrt(Σ a_i² σ_i² (t - t_i))``
(Eq. 6 applied to the interrupted streams alone; tighter, exact for independent streams).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray
from scipy.special import ndtri

from tsmon.protocols.deferral.model import NO_TS


def detect_interrupted(
    last_ts_ms: ArrayLike,
    period_ms: ArrayLike,
    now_ms: int,
    *,
    factor: float = 3.0,
    min_silence_ms: float = 0.0,
) -> NDArray[np.bool_]:
    """Streams silent for more than ``max(factor · period, min_silence_ms)`` at ``now_ms``.

    Streams without an item, or with fewer than two (no period), are never interrupted.

    Examples
    --------
    >>> detect_interrupted([100, 70, 0], [10.0, 10.0, float("nan")], now_ms=105).tolist()
    [False, True, False]
    """
    if factor <= 0:
        raise ValueError(f"factor must be > 0 periods, got {factor}")
    last = np.asarray(last_ts_ms, dtype=np.int64)
    period = np.asarray(period_ms, dtype=np.float64)
    limit = np.maximum(factor * period, min_silence_ms)
    return (last != NO_TS) & np.isfinite(period) & ((now_ms - last) > limit)


def approximate_values(
    value: ArrayLike, last_ts_ms: ArrayLike, mu: ArrayLike, interrupted: ArrayLike, now_ms: int
) -> NDArray[np.float64]:
    """``Ŝ_i(now)``: exact for live streams, ``S_i(t_i) + μ_i (now - t_i)`` if interrupted (§4.5).

    Examples
    --------
    >>> approximate_values([1.0, 2.0], [90, 50], [0.1, 0.1], [False, True], 100).tolist()
    [1.0, 7.0]
    """
    v = np.asarray(value, dtype=np.float64)
    gap = now_ms - np.asarray(last_ts_ms, dtype=np.int64)
    return np.where(interrupted, v + np.asarray(mu, dtype=np.float64) * gap, v)


def interruption_error(
    weights: sp.sparray | sp.spmatrix,
    sigma: ArrayLike,
    last_ts_ms: ArrayLike,
    interrupted: ArrayLike,
    now_ms: int,
    p: ArrayLike,
    *,
    combine: Literal["linear", "rss"] = "linear",
) -> NDArray[np.float64]:
    """``ε_intr`` of every aggregate row of ``weights`` at belief ``p`` (§4.5); 0 if none is.

    Examples
    --------
    >>> w = sp.csr_array([[0.5, 0.5]])
    >>> e = interruption_error(w, [1.0, 2.0], [0, 96], [False, True], 100, 0.9)
    >>> round(float(e[0]), 4)   # 0.5 · z_0.95 · 2 · √4
    3.2897
    """
    w = sp.csr_array(weights)
    intr = np.asarray(interrupted, dtype=bool)
    gap = np.where(intr, now_ms - np.asarray(last_ts_ms, dtype=np.int64), 0).astype(np.float64)
    sig = np.where(intr, np.nan_to_num(np.asarray(sigma, dtype=np.float64)), 0.0)
    z = ndtri((1 + np.asarray(p, dtype=np.float64)) / 2)  # Eq. 7 with μ = 0, solved for ε
    if combine == "linear":
        return z * np.asarray(abs(w) @ (sig * np.sqrt(gap))).ravel()
    if combine == "rss":
        return z * np.sqrt(np.asarray(w.multiply(w) @ (sig**2 * gap)).ravel())
    raise ValueError(f"combine must be 'linear' or 'rss', got {combine!r}")


class InterruptMonitor:
    """Tracks which streams are interrupted and reports when interruptions start and end.

    Parameters
    ----------
    factor : float
        Silence longer than ``factor`` expected periods marks a stream interrupted.
    min_silence_ms : float
        Never flag a silence shorter than this (guards streams with very short periods).

    Examples
    --------
    >>> mon = InterruptMonitor(factor=2.0)
    >>> period = np.array([10.0, 10.0])
    >>> mon.update(25, np.array([20, 20]), period)[0].tolist()
    [False, False]
    >>> intr, started, ended = mon.update(45, np.array([40, 20]), period)
    >>> intr.tolist(), started.tolist(), ended.tolist()
    ([False, True], [1], [])
    >>> intr, started, ended = mon.update(50, np.array([50, 50]), period)   # stream 1 resumed
    >>> intr.tolist(), started.tolist(), ended.tolist(), mon.n_interruptions
    ([False, False], [], [1], 1)
    """

    def __init__(self, factor: float = 3.0, *, min_silence_ms: float = 0.0) -> None:
        if factor <= 0:
            raise ValueError(f"factor must be > 0 periods, got {factor}")
        self.factor = factor
        self.min_silence_ms = min_silence_ms
        self.interrupted = np.zeros(0, dtype=bool)
        self.n_interruptions = 0
        self.n_recoveries = 0

    def __repr__(self) -> str:
        return f"InterruptMonitor(factor={self.factor}, interrupted={int(self.interrupted.sum())})"

    def update(
        self, now_ms: int, last_ts_ms: NDArray, period_ms: NDArray
    ) -> tuple[NDArray[np.bool_], NDArray[np.int64], NDArray[np.int64]]:
        """Return ``(interrupted, newly_interrupted_ids, recovered_ids)`` at ``now_ms``."""
        now = detect_interrupted(
            last_ts_ms, period_ms, now_ms, factor=self.factor, min_silence_ms=self.min_silence_ms
        )
        before = np.zeros(len(now), dtype=bool)
        n = min(len(before), len(self.interrupted))
        before[:n] = self.interrupted[:n]
        started = np.flatnonzero(now & ~before)
        ended = np.flatnonzero(before & ~now)
        self.n_interruptions += len(started)
        self.n_recoveries += len(ended)
        self.interrupted = now
        return now, started, ended
