"""Exact rational window statistics, and the relative error of float64 answers against them.

Every float64 is an integer multiple of 2**-1074, so the values times 2**1074 are Python ints
and every window sum is exact; a statistic is a ratio of such sums, rounded once to float64
(``inf`` where it overflows). Prefix sums make each window O(1) big-int operations.
"""

from __future__ import annotations

from fractions import Fraction
from math import isqrt
from pathlib import Path

import numpy as np

from tests.oracle import window_index
from tsmon.core.window_spec import WindowSpec

#: The NAB data (next to the project, or the shared copy), None when absent.
_NAB_PLACES = (
    Path(__file__).resolve().parents[2] / "../shared/data/nab",
    Path("/work/shared/data/nab"),
)
NAB = next((path for path in _NAB_PLACES if path.is_dir()), None)
_ULP = 1074  # 2**-1074, the smallest subnormal: every float64 is an integer multiple of it
EXACT_STATS = ("count", "sum", "mean", "var", "stddev", "min", "max", "first", "last", "rate")
ROUNDED_STATS = ("sum", "mean", "var", "stddev", "rate", "slope")  # the others are picked


def _to_float(q: Fraction) -> float:
    try:
        return float(q)
    except OverflowError:
        return float("inf") if q > 0 else float("-inf")


def _sqrt(q: Fraction) -> float:
    """sqrt(q) for q >= 0, to float64 within half an ulp (64 correct bits, rounded once)."""
    num, den = q.numerator, q.denominator
    shift = max(0, 140 - (num.bit_length() - den.bit_length()))
    shift += shift % 2
    return _to_float(Fraction(isqrt((num << shift) // den), 1 << (shift // 2)))


def exact_stats(ts: np.ndarray, values: np.ndarray, spec: WindowSpec) -> dict[str, np.ndarray]:
    """Every statistic but coverage of ``spec``'s window as of each point, exactly rounded."""
    xs = [int(Fraction(float(v)) * (1 << _ULP)) for v in values.tolist()]
    tl = [int(t) for t in ts.tolist()]
    p = {k: [0] for k in ("x", "xx", "t", "tt", "tx")}
    for t, x in zip(tl, xs, strict=True):
        for key, term in (("x", x), ("xx", x * x), ("t", t), ("tt", t * t), ("tx", t * x)):
            p[key].append(p[key][-1] + term)
    out: dict[str, list[float]] = {name: [] for name in (*EXACT_STATS, "slope")}
    nan, scale = float("nan"), Fraction(1, 1 << _ULP)
    for j in range(len(tl)):
        idx = window_index(ts, j, spec)
        n = len(idx)
        lo, hi = (int(idx[0]), int(idx[-1]) + 1) if n else (0, 0)
        s = {key: prefix[hi] - prefix[lo] for key, prefix in p.items()}
        out["count"].append(float(n))
        out["sum"].append(_to_float(s["x"] * scale))
        for name in ("mean", "min", "max", "first", "last"):
            out[name].append(nan)
        if n:
            held = values[lo:hi]
            out["mean"][-1] = _to_float(Fraction(s["x"], n) * scale)
            out["min"][-1], out["max"][-1] = float(held.min()), float(held.max())
            out["first"][-1], out["last"][-1] = float(held[0]), float(held[-1])
        m2 = Fraction(n * s["xx"] - s["x"] ** 2, n) * scale * scale if n else 0
        out["var"].append(_to_float(m2 / (n - 1)) if n > 1 else nan)
        out["stddev"].append(_sqrt(m2 / (n - 1)) if n > 1 else nan)
        span = tl[hi - 1] - tl[lo] if n else 0
        rate = Fraction(xs[hi - 1] - xs[lo], span) * scale * 1000 if span else None
        out["rate"].append(_to_float(rate) if rate is not None else nan)
        m2t = n * s["tt"] - s["t"] ** 2
        slope = Fraction(n * s["tx"] - s["t"] * s["x"], m2t) * scale * 1000 if m2t else None
        out["slope"].append(_to_float(slope) if slope is not None else nan)
    return {name: np.array(col) for name, col in out.items()}


def relative_errors(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|got - exact| / |exact| per point: 0 where both agree (NaN, infinities and zeros
    included), inf where they disagree on whether the statistic is defined, finite or zero."""
    got, exact = np.asarray(got, dtype=np.float64), np.asarray(exact, dtype=np.float64)
    same = (got == exact) | (np.isnan(got) & np.isnan(exact))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        err = np.abs(got - exact) / np.abs(exact)
    err[~same & ~np.isfinite(err)] = np.inf
    err[same] = 0.0
    return err
