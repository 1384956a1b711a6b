"""From-scratch recomputation of window statistics: the exact answers tests compare against."""

from __future__ import annotations

import numpy as np

from tsmon.core.window_spec import WindowKind, WindowSpec


def window_index(ts: np.ndarray, j: int, spec: WindowSpec) -> np.ndarray:
    """Indices of the points in ``spec``'s window as of point ``j`` (``ts`` sorted); a window
    ``before`` the point is the window as of point ``j - 1`` (empty for the first point)."""
    if spec.before:
        return window_index(ts, j - 1, spec.base) if j > 0 else np.arange(0)
    upto = np.arange(j + 1)
    if spec.kind is WindowKind.COUNT:
        return upto[max(0, j + 1 - spec.size) :]
    if spec.kind is WindowKind.TIME:
        return upto[ts[: j + 1] > ts[j] - spec.size]
    return upto[ts[: j + 1] >= spec.size]


def observed_coverage(ts: np.ndarray, j: int, spec: WindowSpec) -> float:
    """``coverage`` of ``spec``'s window as of point ``j`` when nothing was evicted: the share
    of its span (its N points) observed since the stream's first point ``ts[0]``; before the
    point, as of point ``j - 1`` (0 for the first point)."""
    if spec.before:
        return observed_coverage(ts, j - 1, spec.base) if j > 0 else 0.0
    if spec.kind is WindowKind.COUNT:
        return min((j + 1) / spec.size, 1.0)
    if spec.kind is WindowKind.TIME:
        return min((int(ts[j]) - int(ts[0]) + 1) / spec.size, 1.0)
    if ts[j] < spec.size:  # the landmark is still ahead: nothing to cover
        return 1.0
    return min((int(ts[j]) - int(ts[0]) + 1) / (int(ts[j]) - spec.size + 1), 1.0)


def window_stats(ts: np.ndarray, values: np.ndarray) -> dict[str, float]:
    """Every statistic of the points given, recomputed with numpy."""
    n = len(values)
    nan = float("nan")
    out = {"count": float(n), "sum": float(values.sum()) if n else 0.0}
    out["mean"] = float(values.mean()) if n else nan
    out["var"] = float(values.var(ddof=1)) if n > 1 else nan
    out["stddev"] = float(np.sqrt(out["var"]))
    out["min"] = float(values.min()) if n else nan
    out["max"] = float(values.max()) if n else nan
    out["first"] = float(values[0]) if n else nan
    out["last"] = float(values[-1]) if n else nan
    span_s = (ts[-1] - ts[0]) / 1000.0 if n else 0.0
    out["rate"] = float((values[-1] - values[0]) / span_s) if span_s > 0 else nan
    if n > 1 and span_s > 0:
        tau = (ts - ts.mean()) / 1000.0
        out["slope"] = float(tau @ (values - values.mean()) / (tau @ tau))
    else:
        out["slope"] = nan
    return out


def tolerance(name: str, values: np.ndarray, ts: np.ndarray) -> tuple[float, float]:
    """(rtol, atol) for comparing ``name`` over windows of this stream.

    Order statistics and counts are picked or counted, so they must match exactly. The others
    get float64 rounding bounds: a few ulps of the stream's magnitude (``scale``) per point
    summed, plus a 1e-9 share of its spread for the moments. A cancellation error on large
    offsets (1e9 + noise) is many orders of magnitude above these bounds.
    """
    eps = np.finfo(np.float64).eps
    n = max(len(values), 1)
    spread = float(np.ptp(values)) if len(values) else 0.0
    scale = float(np.abs(values).max()) if len(values) else 0.0
    if name in ("count", "min", "max", "first", "last"):
        return 0.0, 0.0
    if name == "mean":
        return 1e-12, 8 * eps * scale + 1e-10 * spread
    if name == "sum":
        return 1e-12, n * (8 * eps * scale + 1e-10 * spread)
    var_atol = 1e-9 * spread**2 + (8 * eps * scale) ** 2
    if name == "var":
        return 1e-6, var_atol
    if name == "stddev":  # |sqrt(a) - sqrt(b)| <= sqrt(|a - b|)
        return 1e-6, float(np.sqrt(var_atol))
    t_spread = max(float(np.ptp(ts)) / 1000.0, 1e-3) if len(ts) else 1.0
    return 1e-6, 1e-9 * (spread + 1.0) / 1e-3 + 8 * eps * scale / t_spread  # slope, rate
