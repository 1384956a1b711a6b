"""Feature sums of ``(t, x)`` pairs: what sum, mean, variance and slope derive from.

A window keeps the count ``n`` and the sums of ``[d, d^2]`` (plus ``[tau, tau^2, tau*d]`` when
a slope is asked for) with ``d = x - K`` and ``tau = (t - T0) / 1000`` seconds, about anchors
``K`` (a value) and ``T0`` (an integer timestamp in ms). Anchors near the window's means keep
the sums small, so the variance is free of catastrophic cancellation even for values like
``1e9 + noise`` (the shifted-data form of Chan, Golub & LeVeque). Before each batch the anchors
move to the current means by an exact algebraic shift of the sums; the time anchor stays an
integer so that timestamps of ~1.7e12 ms lose nothing to rounding.

Sums reached by adding and subtracting (a sliding window) or by shifting anchors carry an
absolute rounding error of a few ulps of the magnitudes involved, not of their own value: a
window of two points 1 ms apart, 42 s after the anchor, has a centred time moment of 5e-7 s^2
computed from terms of ~1800 s^2. ``Moments.scale`` keeps that magnitude across batches and
rebases, so ``ill_conditioned`` can tell when a small moment is mostly rounding noise.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass, field

import numpy as np

VALUE_ROWS = 2  # d, d^2
TIME_ROWS = 5  # d, d^2, tau, tau^2, tau*d
SQUARE_ROWS = {VALUE_ROWS: [1], TIME_ROWS: [1, 3]}  # the rows that only grow


@dataclass
class Moments:
    """Count and feature sums about ``(anchor, anchor_t_ms)``.

    Examples
    --------
    >>> m = Moments.exact(np.array([0, 1000, 2000]), np.array([1.0, 3.0, 5.0]), with_time=True)
    >>> stats = stats_from_sums(np.array([m.n]), m.sums[:, None], m.anchor, {"var", "slope"})
    >>> float(stats["var"][0]), float(stats["slope"][0])
    (4.0, 2.0)
    """

    anchor: float = 0.0
    anchor_t_ms: int = 0
    n: float = 0.0
    sums: np.ndarray = field(default_factory=lambda: np.zeros(VALUE_ROWS))
    scale: np.ndarray | None = None  # see error_scale; None: the sums were summed directly

    @property
    def with_time(self) -> bool:
        """Whether the time moments (for the slope) are kept."""
        return len(self.sums) == TIME_ROWS

    @property
    def error_scale(self) -> np.ndarray:
        """Magnitude of the terms the square rows (``SQUARE_ROWS``) were reached from: their
        absolute rounding error is a few ulps of it. For sums of nonnegative terms summed
        directly it is the sums themselves; sums left after subtractions or an anchor shift
        keep the larger magnitude they came from, however small they are now."""
        if self.scale is not None:
            return self.scale
        return np.abs(self.sums[SQUARE_ROWS[len(self.sums)]])

    @classmethod
    def exact(cls, ts_ms: np.ndarray, values: np.ndarray, with_time: bool = False) -> Moments:
        """Sums of the given points about their own means: the most accurate form."""
        if len(values) == 0:
            return cls(sums=np.zeros(TIME_ROWS if with_time else VALUE_ROWS))
        if len(values) == 1:  # about the point itself: every sum is zero
            rows = TIME_ROWS if with_time else VALUE_ROWS
            return cls(float(values[0]), int(ts_ms[0]), 1.0, np.zeros(rows))
        anchor = float(values.mean())
        anchor_t = int(ts_ms[0]) + round(float(np.mean(ts_ms - ts_ms[0])))
        rows = features(ts_ms, values, anchor, anchor_t, with_time)
        return cls(anchor, anchor_t, float(len(values)), rows.sum(axis=1))

    def rebased(self, ts_ms: np.ndarray, values: np.ndarray) -> Moments:
        """The same sums about the current means (or the batch's first point when empty)."""
        n = self.n
        if n <= 0:
            return Moments(float(values[0]), int(ts_ms[0]), 0.0, np.zeros_like(self.sums))
        s1, s2 = self.sums[:2]
        new_anchor = self.anchor + s1 / n
        delta = new_anchor - self.anchor  # the shift actually applied, after rounding
        shifted = [s1 - n * delta, s2 - 2 * delta * s1 + n * delta * delta]
        scale = [abs(2 * delta * s1) + n * delta * delta]  # the magnitudes cancelled
        shift_ms = 0
        if self.with_time:
            s3, s4, s5 = self.sums[2:]
            shift_ms = round(1000.0 * s3 / n)
            eps = shift_ms / 1000.0
            shifted += [
                s3 - n * eps,
                s4 - 2 * eps * s3 + n * eps * eps,
                s5 - delta * s3 - eps * s1 + n * eps * delta,
            ]  # exact shift of each sum to d' = d - delta, tau' = tau - eps
            scale.append(abs(2 * eps * s3) + n * eps * eps)
        return Moments(
            new_anchor,
            self.anchor_t_ms + shift_ms,
            n,
            np.array(shifted),
            self.error_scale + np.array(scale),
        )

    def merged(self, other: Moments) -> Moments:
        """The moments of both point sets together (pairwise combination of Chan et al.),
        about the combined means; both must keep the time moments.

        Examples
        --------
        >>> ts, x = np.array([0, 1000, 2000, 3000]), np.array([1.0, 4.0, 2.0, 8.0])
        >>> both = Moments.exact(ts[:1], x[:1], True).merged(Moments.exact(ts[1:], x[1:], True))
        >>> whole = Moments.exact(ts, x, True)
        >>> bool(np.allclose(both.sums, whole.rebased(ts, x).sums)), both.n
        (True, 4.0)
        """
        if other.n == 0:
            return self
        if self.n == 0:
            return other
        n = self.n + other.n
        (mean_a, m2_a, t_a, m2t_a, c_a), (mean_b, m2_b, t_b, m2t_b, c_b) = (
            self._centred(),
            other._centred(),
        )
        weight = self.n * other.n / n
        dx, dt = mean_b - mean_a, (t_b - t_a) / 1000.0
        mean = mean_a + dx * other.n / n
        mean_t = t_a + (t_b - t_a) * other.n / n
        anchor_t = round(mean_t)
        s_t = n * (mean_t - anchor_t) / 1000.0
        m2_t = m2t_a + m2t_b + dt * dt * weight
        return Moments(
            mean,
            anchor_t,
            n,
            np.array(
                [
                    0.0,
                    m2_a + m2_b + dx * dx * weight,
                    s_t,
                    m2_t + s_t * s_t / n,
                    c_a + c_b + dx * dt * weight,
                ]
            ),
        )  # about d = x - mean, so the linear value sum is zero

    def _centred(self) -> tuple[float, float, float, float, float]:
        """(mean, M2, mean time in ms, M2 of time in s^2, comoment) of the points summed."""
        n, (s1, s2, s3, s4, s5) = self.n, self.sums
        return (
            self.anchor + s1 / n,
            s2 - s1 * s1 / n,
            self.anchor_t_ms + 1000.0 * s3 / n,
            s4 - s3 * s3 / n,
            s5 - s3 * s1 / n,
        )


def features(
    ts_ms: np.ndarray, values: np.ndarray, anchor: float, anchor_t_ms: int, with_time: bool
) -> np.ndarray:
    """Feature rows about the anchors, one column per point: ``d, d^2[, tau, tau^2, tau*d]``."""
    out = np.empty((TIME_ROWS if with_time else VALUE_ROWS, len(values)))
    np.subtract(values, anchor, out=out[0])
    np.multiply(out[0], out[0], out=out[1])
    if with_time:
        np.subtract(ts_ms, anchor_t_ms, out=out[2])
        out[2] /= 1000.0
        np.multiply(out[2], out[2], out=out[3])
        np.multiply(out[2], out[0], out=out[4])
    return out


def stats_from_sums(
    n: np.ndarray, sums: np.ndarray, anchor: float, wanted: Set[str]
) -> dict[str, np.ndarray]:
    """The wanted ones of count, sum, mean, var (ddof=1), stddev and slope per second."""
    out: dict[str, np.ndarray] = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        if "count" in wanted:
            out["count"] = n
        if "sum" in wanted:
            out["sum"] = n * anchor + sums[0]
        mean_d = sums[0] / n
        if "mean" in wanted:
            out["mean"] = anchor + mean_d
        if "var" in wanted or "stddev" in wanted:
            var = np.maximum(sums[1] - sums[0] * mean_d, 0.0) / (n - 1)
            var[n < 2] = np.nan
            out["var"] = var
            out["stddev"] = np.sqrt(var)
        if "slope" in wanted:
            m2_t = sums[3] - sums[2] * sums[2] / n
            slope = (sums[4] - sums[2] * mean_d) / m2_t
            slope[(n < 2) | ~(m2_t > 0)] = np.nan
            out["slope"] = slope
    return out


def ill_conditioned(
    n: np.ndarray, sums: np.ndarray, scale: np.ndarray, min_count: int = 2
) -> np.ndarray:
    """Points whose second moments are so small next to the running sums they came from that
    the subtraction may have lost precision (a short window at the end of a long batch, or
    after a long gap).

    ``scale`` holds the sums of the squared rows added and subtracted to reach ``sums``,
    including the ``error_scale`` of the sums started from. Windows of fewer than
    ``min_count`` points are never flagged: with the default 2 their variance and slope are
    undefined anyway; a state carried to the next batch asks for 1, since the moments of a
    single point are zero and anything else is rounding noise that outlives the point.
    """
    limit = 2.0**-20  # unflagged points keep a relative error below ~ 2**20 * eps ~ 2e-10
    with np.errstate(divide="ignore", invalid="ignore"):
        ill = sums[1] - sums[0] ** 2 / n < limit * scale[0]
        if len(scale) > 1:
            ill |= sums[3] - sums[2] ** 2 / n < limit * scale[1]
    return ill & (n >= min_count)
