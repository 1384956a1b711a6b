"""Feature sums of ``(t, x)`` pairs: what sum, mean, variance and slope derive from.

A window keeps the count ``n`` and the sums of ``[d, d^2]`` (plus ``[tau, tau^2, tau*d]`` when
a slope is asked for) with ``d = x - K`` and ``tau = (t - T0) / 1000`` seconds, about anchors
``K`` (a value) and ``T0`` (an integer timestamp in ms). Anchors near the window's means keep
the sums small, so the variance is free of catastrophic cancellation even for values like
``1e9 + noise`` (the shifted-data form of Chan, Golub & LeVeque). Before each batch the anchors
move to the current means by an exact algebraic shift of the sums; the time anchor stays an
integer so that timestamps of ~1.7e12 ms lose nothing to rounding.

Sums reached by adding and subtracting (a sliding window) carry an absolute rounding error of
a few ulps of the magnitudes involved, not of their own value: a window of two points 1 ms
apart, 42 s after the anchor, has a centred time moment of 5e-7 s^2 computed from terms of
~1800 s^2. ``ill_conditioned`` compares each statistic with those magnitudes (the anchor's
distance included) and tells when it may have lost digits; such windows are recomputed by
``exact_stats``, so every statistic is within 1e-9 relative of the exact value (measured:
below 1e-10 on real series with gaps of hours).

Values are limited to ``|x| <= MAX_ABS_VALUE`` (1e140): then no square, product or running sum
of a window can overflow float64 (``value_in_range`` is the predicate input readers reject
with). Tiny values, subnormals included, need no limit, but a window whose values are all
below ``TINY_VALUE`` and not all equal has squares that underflow (a standard deviation of
7e-311 from a variance of 5e-621, which is 0 in float64): ``tiny_windows`` finds such windows
and ``exact_stats`` scales their values by a power of 2 first, so only results that are
themselves below 2**-1022 lose relative precision, as any float64 result does.
"""

from __future__ import annotations

import math
from collections.abc import Set
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

VALUE_ROWS = 2  # d, d^2
TIME_ROWS = 5  # d, d^2, tau, tau^2, tau*d
SQUARE_ROWS = {VALUE_ROWS: slice(1, 2), TIME_ROWS: slice(1, 4, 2)}  # rows that only grow
#: The largest magnitude a value may have: its square times 2**53 points (and the product with
#: any time offset below 1e150 s) stays far below the float64 maximum of ~1.8e308.
MAX_ABS_VALUE: float = 1e140
#: A statistic below this share of the magnitudes it was computed from is recomputed exactly:
#: the others keep a relative error of about c * 2**-52 / 2**-16 ~ c * 3.4e-12, c ~ the square
#: root of the number of terms summed (a few tens), far below the 1e-9 tsmon promises.
_ILL_CONDITIONED = 2.0**-14
#: Below this magnitude squares may underflow (2**-511 squared is 2**-1022, the smallest normal
#: float64; values that differ by less than 2**-511 are equal or both below 2**-458), so windows
#: of only such values are recomputed by ``exact_stats`` on values scaled by a power of 2.
TINY_VALUE: float = 2.0**-450
_SCALE_UP = 600  # at most 2**600: 2**-450 * 2**600 stays far below MAX_ABS_VALUE


def value_in_range(values: np.ndarray) -> np.ndarray:
    """Which values windows take: finite, with ``|x| <= MAX_ABS_VALUE`` (subnormals included).

    Examples
    --------
    >>> value_in_range(np.array([70.5, -1e140, 5e-324, 1e141, np.inf, np.nan])).tolist()
    [True, True, True, False, False, False]
    """
    with np.errstate(invalid="ignore"):
        return np.abs(values) <= MAX_ABS_VALUE


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

    @property
    def with_time(self) -> bool:
        """Whether the time moments (for the slope) are kept."""
        return len(self.sums) == TIME_ROWS

    @classmethod
    def exact(cls, ts_ms: np.ndarray, values: np.ndarray, with_time: bool = False) -> Moments:
        """Sums of the given points about their own means: the most accurate form."""
        if len(values) == 0:
            return cls(sums=np.zeros(TIME_ROWS if with_time else VALUE_ROWS))
        if len(values) == 1:  # about the point itself: every sum is zero
            rows = TIME_ROWS if with_time else VALUE_ROWS
            return cls(float(values[0]), int(ts_ms[0]), 1.0, np.zeros(rows))
        # the value nearest the mean: n * (mean - K)^2 <= M2, so the variance loses at most one
        # bit to the anchor's offset, and equal values give exactly zero variance and slope
        anchor = float(values[np.argmin(np.abs(values - values.mean()))])
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
        return Moments(new_anchor, self.anchor_t_ms + shift_ms, n, np.array(shifted))

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


def exact_slope(ts_ms: np.ndarray, values: np.ndarray) -> float:
    """The least-squares slope per second, correctly rounded: from exact integer sums of the
    timestamps and of the values as integer multiples of the smallest power of 2 among them.

    Examples
    --------
    >>> exact_slope(np.array([0, 1000, 2000]), np.array([0.1, 0.7, 0.1]))
    0.0
    """
    mantissas, exponents = np.frexp(values)
    shifts = exponents - 53
    low = int(shifts.min())
    ints = (mantissas * 2.0**53).astype(np.int64)  # value = int * 2**shift, exactly
    ts = ts_ms - ts_ms[0]
    sums = _small_sums(ts, ints, shifts - low) or _big_sums(ts, ints, shifts - low)
    n, (sum_t, sum_tt, sum_x, sum_tx) = len(values), sums
    num = n * sum_tx - sum_t * sum_x
    den = n * sum_tt - sum_t * sum_t
    if den == 0:
        return math.nan
    return float(Fraction(1000 * num, den) * Fraction(2) ** low)


_INT_SUM_LIMIT = 2**62  # int64 sums of terms each below limit / count cannot overflow
_SPLIT = 26  # int = high * 2**26 + low: |high| < 2**27, 0 <= low < 2**26


def _small_sums(ts: np.ndarray, ints: np.ndarray, shifts: np.ndarray) -> list[int] | None:
    """``[sum t, sum t^2, sum x, sum t*x]`` as Python ints for ``x = ints * 2**shifts``
    (``ts >= 0``), from int64 sums per shift, or None where these could overflow (long or
    wide windows)."""
    n, top = len(ts), int(np.abs(ts).max())
    if top * top * n >= _INT_SUM_LIMIT or top * n << (_SPLIT + 1) >= _INT_SUM_LIMIT:
        return None
    order = np.argsort(shifts, kind="stable")
    shift, ts = shifts[order], ts[order]
    high, low = ints[order] >> _SPLIT, ints[order] & ((1 << _SPLIT) - 1)
    starts = np.flatnonzero(np.concatenate(([True], shift[1:] != shift[:-1])))
    parts = (np.add.reduceat(p, starts).tolist() for p in (high, low, ts * high, ts * low))
    sum_x = sum_tx = 0
    for k, h, lo, th, tl in zip(shift[starts].tolist(), *parts, strict=True):
        sum_x += (h << (k + _SPLIT)) + (lo << k)
        sum_tx += (th << (k + _SPLIT)) + (tl << k)
    return [int(ts.sum()), int((ts * ts).sum()), sum_x, sum_tx]


def _big_sums(ts: np.ndarray, ints: np.ndarray, shifts: np.ndarray) -> list[int]:
    """The same sums as :func:`_small_sums` with Python ints: exact, any size."""
    xs = ints.astype(object) * (2 ** shifts.astype(object))
    t = ts.astype(object)
    return [t.sum(), t.dot(t), xs.sum(), t.dot(xs)]


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
    n: np.ndarray,
    sums: np.ndarray,
    scale: np.ndarray,
    anchor: float,
    terms: float,
    wanted: Set[str],
) -> np.ndarray:
    """Windows (of 2 points or more) whose wanted statistics are so small next to the sums
    they were computed from that the subtraction may have lost precision: a mean of values that
    cancel, a variance of nearly equal values, a short window far from the time anchor, a
    slope near zero. NaN sums count as ill-conditioned.

    ``scale`` holds the magnitudes of the squared rows (``SQUARE_ROWS``) subtracted to reach
    ``sums``; ``terms`` bounds how many terms they summed, so that ``sqrt(terms * scale)``
    bounds the magnitude of the linear rows (Cauchy-Schwarz).
    """
    limit = _ILL_CONDITIONED
    ok = np.ones(len(n), dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        if "sum" in wanted or "mean" in wanted:
            linear = np.sqrt(terms * scale[0])
            ok &= np.abs(n * anchor + sums[0]) >= limit * (n * abs(anchor) + linear)
        if "var" in wanted or "stddev" in wanted:
            ok &= sums[1] - sums[0] * sums[0] / n >= limit * scale[0]
        if "slope" in wanted:
            ok &= sums[3] - sums[2] * sums[2] / n >= limit * scale[1]  # time moment
            ok &= ~_weak_slope(n, sums, scale)
    return ~ok & (n >= 2)


def _weak_slope(n: np.ndarray, sums: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Where the comoment of times and values is small next to the magnitudes of its terms
    (a slope near zero, or none: equal values), or NaN."""
    with np.errstate(divide="ignore", invalid="ignore"):
        comoment = sums[4] - sums[2] * sums[0] / n
        return ~(np.abs(comoment) >= _ILL_CONDITIONED * np.sqrt(scale[0] * scale[1]))


def exact_stats(ts_ms: np.ndarray, values: np.ndarray, wanted: Set[str]) -> dict[str, float]:
    """The moment statistics of these points computed from them alone (two-pass about the
    value nearest their mean); sum and mean of values of both signs are correctly rounded
    (``math.fsum``), exact even where they cancel.

    Examples
    --------
    >>> exact_stats(np.array([0, 1000, 2000]), np.array([1e16, 1.0, -1e16]), {"sum", "count"})
    {'count': 3.0, 'sum': 1.0}
    """
    top = float(np.abs(values).max())
    if 0 < top < TINY_VALUE:  # squares would underflow: the same statistics of 2**k * values
        k = min(_SCALE_UP, -math.frexp(top)[1])
        scaled = exact_stats(ts_ms, np.ldexp(values, k), wanted)
        powers = {"count": 0, "var": 2}  # var scales by 2**(2k), the others by 2**k
        return {name: math.ldexp(v, -k * powers.get(name, 1)) for name, v in scaled.items()}
    moments = Moments.exact(ts_ms, values, with_time="slope" in wanted)
    n, sums = np.array([moments.n]), moments.sums[:, None]
    one = stats_from_sums(n, sums, moments.anchor, wanted)
    out = {name: float(value[0]) for name, value in one.items()}
    if "slope" in wanted and sums[1, 0] > 0 and _weak_slope(n, sums, sums[SQUARE_ROWS[5]])[0]:
        out["slope"] = exact_slope(ts_ms, values)  # a slope near 0 next to its terms
    if ("sum" in wanted or "mean" in wanted) and values.min() < 0 < values.max():
        total = math.fsum(values.tolist())  # values of both signs may cancel
        out |= {k: v for k, v in (("sum", total), ("mean", total / len(values))) if k in wanted}
    return out


def tiny_windows(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Which windows ``values[lo[j]:hi[j]]`` hold only values below ``TINY_VALUE``, not all
    zero (their squares may underflow: ``exact_stats`` scales them). One pass over ``values``
    when none is tiny and nonzero, as on any real series.

    Examples
    --------
    >>> values = np.array([1.0, 5e-324, 1e-310, 0.0])
    >>> tiny_windows(values, np.array([0, 1, 3]), np.array([2, 3, 4])).tolist()
    [False, True, False]
    """
    magnitudes = np.abs(values)
    if len(values) == 0 or magnitudes.min() >= TINY_VALUE:  # the usual case: two passes
        return np.zeros(len(lo), dtype=bool)
    small, nonzero = magnitudes < TINY_VALUE, values != 0
    if not (small & nonzero).any():
        return np.zeros(len(lo), dtype=bool)
    big = np.concatenate(([0], np.cumsum(~small)))
    some = np.concatenate(([0], np.cumsum(nonzero)))
    return (big[hi] == big[lo]) & (some[hi] > some[lo])
