"""Centred moments of ``(t, x)`` pairs: what count, sum, mean, variance and slope derive from.

A window keeps its moments centred (Welford/Chan form) between batches. Inside a batch it works
with plain sums of features about anchors ``K`` (value) and ``T0`` (time) set to the current
means, so the sums stay small and the variance is free of catastrophic cancellation even for
values like ``1e9 + noise`` (Chan, Golub & LeVeque's shifted-data form).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

N_FEATURES = 6  # columns: 1, d, d^2, tau, tau^2, tau*d with d = x - K, tau = (t - T0) / 1000 s


@dataclass
class Moments:
    """Centred moments: count, means and second (co)moments; time in seconds.

    Examples
    --------
    >>> m = Moments.exact(np.array([0, 1000, 2000]), np.array([1.0, 3.0, 5.0]))
    >>> m.n, m.mean, m.m2, m.comoment / m.m2_t   # slope: 2 per second
    (3.0, 3.0, 8.0, 2.0)
    """

    n: float = 0.0
    mean: float = 0.0
    m2: float = 0.0
    mean_t_ms: float = 0.0
    m2_t: float = 0.0
    comoment: float = 0.0

    @classmethod
    def exact(cls, ts_ms: np.ndarray, values: np.ndarray) -> Moments:
        """Two-pass moments of the given points, the most accurate form."""
        if len(values) == 0:
            return cls()
        mean = float(values.mean())
        mean_t = float(ts_ms.mean())
        d = values - mean
        tau = (ts_ms - mean_t) / 1000.0
        return cls(float(len(values)), mean, float(d @ d), mean_t, float(tau @ tau), float(tau @ d))

    def anchors(self, ts_ms: np.ndarray, values: np.ndarray) -> tuple[float, float]:
        """Anchors for a batch: the current means, or the batch's first point when empty."""
        if self.n > 0:
            return self.mean, self.mean_t_ms
        return float(values[0]), float(ts_ms[0])

    def as_sums(self) -> np.ndarray:
        """Feature sums about the current means (the linear terms are zero by construction)."""
        return np.array([self.n, 0.0, self.m2, 0.0, self.m2_t, self.comoment])

    @classmethod
    def from_sums(cls, sums: np.ndarray, anchor: float, anchor_t_ms: float) -> Moments:
        """Centre feature sums taken about ``(anchor, anchor_t_ms)``."""
        n, s_d, s_dd, s_t, s_tt, s_td = (float(v) for v in sums)
        if n <= 0:
            return cls()
        return cls(
            n,
            anchor + s_d / n,
            max(s_dd - s_d * s_d / n, 0.0),
            anchor_t_ms + 1000.0 * s_t / n,
            max(s_tt - s_t * s_t / n, 0.0),
            s_td - s_t * s_d / n,
        )


def features(ts_ms: np.ndarray, values: np.ndarray, anchor: float, anchor_t_ms: float) -> np.ndarray:
    """Per-point feature rows ``[1, d, d^2, tau, tau^2, tau*d]`` about the anchors."""
    d = values - anchor
    tau = (ts_ms - anchor_t_ms) / 1000.0
    return np.column_stack((np.ones_like(d), d, d * d, tau, tau * tau, tau * d))


def stats_from_sums(sums: np.ndarray, anchor: float) -> dict[str, np.ndarray]:
    """count, sum, mean, var (ddof=1), stddev and least-squares slope per second, per row."""
    n, s_d, s_dd, s_t, s_tt, s_td = sums.T
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_d = np.where(n > 0, s_d / n, np.nan)
        m2 = np.maximum(s_dd - s_d * mean_d, 0.0)
        m2_t = s_tt - s_t * s_t / n
        var = np.where(n > 1, m2 / (n - 1), np.nan)
        slope = np.where((n > 1) & (m2_t > 0), (s_td - s_t * mean_d) / m2_t, np.nan)
    return {
        "count": n,
        "sum": n * anchor + s_d,
        "mean": anchor + mean_d,
        "var": var,
        "stddev": np.sqrt(var),
        "slope": slope,
    }
