"""Feature sums of ``(t, x)`` pairs: what count, sum, mean, variance and slope derive from.

A window keeps the sums of ``[1, d, d^2, tau, tau^2, tau*d]`` with ``d = x - K`` and
``tau = (t - T0) / 1000`` (seconds) about anchors ``K`` (a value) and ``T0`` (an integer
timestamp in ms). Anchors near the window's means keep the sums small, so the variance is free
of catastrophic cancellation even for values like ``1e9 + noise`` (the shifted-data form of
Chan, Golub & LeVeque). Before each batch the anchors move to the current means by an exact
algebraic shift of the sums; the time anchor stays an integer so that timestamps of ~1.7e12 ms
lose nothing to rounding.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

N_FEATURES = 6


@dataclass
class Moments:
    """Feature sums about ``(anchor, anchor_t_ms)``.

    Examples
    --------
    >>> m = Moments.exact(np.array([0, 1000, 2000]), np.array([1.0, 3.0, 5.0]))
    >>> {k: float(v[0]) for k, v in stats_from_sums(m.sums[None, :], m.anchor).items()}
    {'count': 3.0, 'sum': 9.0, 'mean': 3.0, 'var': 4.0, 'stddev': 2.0, 'slope': 2.0}
    """

    anchor: float = 0.0
    anchor_t_ms: int = 0
    sums: np.ndarray = field(default_factory=lambda: np.zeros(N_FEATURES))

    @property
    def n(self) -> float:
        """Number of points summed."""
        return float(self.sums[0])

    @classmethod
    def exact(cls, ts_ms: np.ndarray, values: np.ndarray) -> Moments:
        """Sums of the given points about their own means: the most accurate form."""
        if len(values) == 0:
            return cls()
        anchor = float(values.mean())
        anchor_t = int(ts_ms[0]) + round(float(np.mean(ts_ms - ts_ms[0])))
        return cls(anchor, anchor_t, features(ts_ms, values, anchor, anchor_t).sum(axis=0))

    def rebased(self, ts_ms: np.ndarray, values: np.ndarray) -> Moments:
        """The same sums about the current means (or the batch's first point when empty)."""
        n = self.n
        if n <= 0:
            return Moments(float(values[0]), int(ts_ms[0]))
        s1, s2, s3, s4, s5 = self.sums[1:]
        new_anchor = self.anchor + s1 / n
        delta = new_anchor - self.anchor  # the shift actually applied, after rounding
        shift_ms = round(1000.0 * s3 / n)
        eps = shift_ms / 1000.0
        sums = np.array(
            [
                n,
                s1 - n * delta,
                s2 - 2 * delta * s1 + n * delta * delta,
                s3 - n * eps,
                s4 - 2 * eps * s3 + n * eps * eps,
                s5 - delta * s3 - eps * s1 + n * eps * delta,
            ]
        )  # exact shift of each sum to d' = d - delta, tau' = tau - eps
        return Moments(new_anchor, self.anchor_t_ms + shift_ms, sums)


def features(ts_ms: np.ndarray, values: np.ndarray, anchor: float, anchor_t_ms: int) -> np.ndarray:
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
