"""Deferred MAX / MIN of a linear aggregate over sliding and landmark windows (§4.3, Theorem 1).

Sliding window (Eq. 10): ``M(t, w) = max{A(τ) : t - w ≤ τ ≤ t}``. After evaluating ``M`` at
``t_k`` (maximum ``A_m`` attained at ``t_m``) the next evaluation is due after
``Δt = min(φ₁, φ₂)`` (Eq. 11): ``φ₁`` is when the old part of the window alone would have let the
max fall to ``A_m - ε`` (one scan of ``[t_m, t_k]``), ``w`` if it never does; ``φ₂`` is when
``Pr[A(t_k + τ) ≤ A_m + ε]`` falls to ``p`` (closed form, :func:`upper_exceed_interval`).

Landmark window (Eq. 12): ``M_L(t, l) = max{A(τ) : l ≤ τ ≤ t}`` only grows, so ``Δt = φ₂``.

``A`` is known at sample times only (the series the engine records each tick), windows are
closed and times are integer ms: ``φ₁`` is one ms after the trailing edge passes the last
sample above ``A_m - ε``. MIN is MAX of ``-A`` (drift ``-μ_A``, same ``σ_A``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from tsmon.protocols.deferral.deferral import StandingQuery, relative_eps, upper_exceed_interval

Kind = Literal["max", "min"]


def _sign(kind: str) -> float:
    if kind not in ("max", "min"):
        raise ValueError(f"kind must be 'max' or 'min', got {kind!r}")
    return 1.0 if kind == "max" else -1.0


@dataclass(frozen=True)
class ExtremumAnswer:
    """One evaluation of a windowed extremum: value, where it was attained, and when next due."""

    value: float
    arg_ts_ms: int
    dt_ms: float
    phi1_ms: float
    phi2_ms: float


def sliding_phi1(
    ts_ms: ArrayLike, a: ArrayLike, now_ms: int, window_ms: int, eps: float
) -> tuple[float, int, float]:
    """``(A_m, t_m, φ₁)`` of the max over ``[now - w, now]`` (Eq. 10, 11), one scan.

    Examples
    --------
    >>> ts = [0, 1, 2, 3, 4, 5]
    >>> sliding_phi1(ts, [1.0, 5.0, 4.8, 3.0, 2.0, 4.5], now_ms=5, window_ms=5, eps=0.5)
    (5.0, 1, 3.0)
    """
    ts = np.asarray(ts_ms, dtype=np.int64)
    vals = np.asarray(a, dtype=np.float64)
    inside = (ts >= now_ms - window_ms) & (ts <= now_ms) & ~np.isnan(vals)
    ts, vals = ts[inside], vals[inside]
    if len(vals) == 0:
        raise ValueError(
            f"no sample of A in the window [{now_ms - window_ms}, {now_ms}] ms; "
            "record A before evaluating"
        )
    m_last = len(vals) - 1 - int(np.argmax(vals[::-1]))  # last time A_m was attained
    a_m = float(vals[m_last])
    suffix = np.maximum.accumulate(vals[::-1])[::-1]  # max over samples j..end
    after = np.flatnonzero(suffix[m_last + 1 :] <= a_m - eps)  # Eq. 11, w - τ ≤ t_k - t_m
    if eps <= 0:  # the max itself is within "≤ A_m - ε": the edge reaching t_m is enough
        phi1 = float(ts[m_last] - (now_ms - window_ms))
    elif len(after) == 0:
        phi1 = float(window_ms)  # "or w if no such τ exists"
    else:
        j = m_last + 1 + int(after[0])
        phi1 = float(ts[j - 1] + 1 - (now_ms - window_ms))  # edge just past sample j - 1
    return a_m, int(ts[m_last]), min(phi1, float(window_ms))


def sliding_extremum(
    ts_ms: ArrayLike,
    a: ArrayLike,
    now_ms: int,
    window_ms: int,
    eps: float,
    p: float,
    mu_a: float,
    sigma_a: float,
    *,
    kind: Kind = "max",
    max_dt: float = np.inf,
) -> ExtremumAnswer:
    """Evaluate a sliding-window MAX/MIN and its next interval ``min(φ₁, φ₂)`` (Theorem 1).

    Examples
    --------
    >>> ts = np.arange(11)
    >>> a = np.array([0, 1, 2, 3, 9, 3, 2, 1, 2, 3, 4.0])
    >>> ans = sliding_extremum(ts, a, now_ms=10, window_ms=8, eps=1.0, p=0.9,
    ...                        mu_a=0.0, sigma_a=1.0)
    >>> ans.value, ans.arg_ts_ms, ans.phi1_ms      # the 9 leaves [now - w + φ₁, now] at 3
    (9.0, 4, 3.0)
    >>> round(ans.phi2_ms, 4)                      # ((9 - 4 + 1) / z_0.9)² with μ = 0
    21.9195
    """
    s = _sign(kind)
    vals = s * np.asarray(a, dtype=np.float64)
    a_m, t_m, phi1 = sliding_phi1(ts_ms, vals, now_ms, window_ms, eps)
    ts = np.asarray(ts_ms, dtype=np.int64)
    a_now = float(vals[ts <= now_ms][-1])
    # φ₂ = min{τ : Pr[A(t_k + τ) - A(t_k) ≤ A_m - A(t_k) + ε] ≤ p}
    phi2 = float(upper_exceed_interval(s * mu_a, sigma_a, a_m - a_now + eps, p, max_dt=max_dt))
    return ExtremumAnswer(s * a_m, t_m, min(phi1, phi2, max_dt), phi1, phi2)


class LandmarkExtrema:
    """Running MAX/MIN of many aggregates since their landmark times (Eq. 12), vectorized.

    ``record`` folds one sample of every aggregate in; ``interval`` gives ``Δt = φ₂`` per
    query, since a landmark max can only grow.

    Examples
    --------
    >>> lm = LandmarkExtrema(landmarks_ms=[0, 5], kinds=["max", "min"])
    >>> for t, col in enumerate([[1.0, 1.0], [3.0, 2.0], [2.0, -1.0]]):
    ...     lm.record(t * 5, col)
    >>> lm.value.tolist(), lm.arg_ts_ms.tolist()   # max since 0; min since 5
    ([3.0, -1.0], [5, 10])
    """

    def __init__(self, landmarks_ms: ArrayLike = (), kinds: ArrayLike = ()) -> None:
        self.landmarks_ms = np.asarray(landmarks_ms, dtype=np.int64)
        self.sign = np.array([_sign(k) for k in kinds], dtype=np.float64)
        if len(self.sign) != len(self.landmarks_ms):
            raise ValueError(
                f"need one kind per landmark, got {len(self.sign)} kinds for "
                f"{len(self.landmarks_ms)} landmarks"
            )
        self._best = np.full(len(self.sign), -np.inf)  # max of s·A since the landmark
        self.arg_ts_ms = np.full(len(self.sign), -1, dtype=np.int64)
        self.current = np.full(len(self.sign), np.nan)  # latest s·A

    def __len__(self) -> int:
        return len(self.sign)

    @property
    def value(self) -> NDArray[np.float64]:
        """Current landmark extremum of each query (``nan`` before its landmark)."""
        return np.where(np.isfinite(self._best), self.sign * self._best, np.nan)

    def add(self, landmark_ms: int, kind: Kind) -> int:
        """Append one query; return its row."""
        self.landmarks_ms = np.append(self.landmarks_ms, landmark_ms)
        self.sign = np.append(self.sign, _sign(kind))
        self._best = np.append(self._best, -np.inf)
        self.arg_ts_ms = np.append(self.arg_ts_ms, -1)
        self.current = np.append(self.current, np.nan)
        return len(self.sign) - 1

    def remove(self, row: int) -> None:
        """Drop one query's row (later rows shift down by one)."""
        for name in ("landmarks_ms", "sign", "_best", "arg_ts_ms", "current"):
            setattr(self, name, np.delete(getattr(self, name), row))

    def record(self, ts_ms: int, a: ArrayLike) -> None:
        """Fold in ``A(ts)`` of every query (one sample per query)."""
        sa = self.sign * np.asarray(a, dtype=np.float64)
        live = ts_ms >= self.landmarks_ms
        self.current = np.where(live, sa, self.current)
        up = live & (sa > self._best)
        self._best = np.where(up, sa, self._best)
        self.arg_ts_ms = np.where(up, ts_ms, self.arg_ts_ms)

    def interval(
        self,
        rows: ArrayLike,
        eps: ArrayLike,
        p: ArrayLike,
        mu_a: ArrayLike,
        sigma_a: ArrayLike,
        *,
        max_dt: float = np.inf,
    ) -> NDArray[np.float64]:
        """``Δt = φ₂`` for ``rows``: ``Pr[A(t + τ) ≤ A_m + ε]`` falls to ``p`` (Eq. 11, 12)."""
        r = np.asarray(rows, dtype=np.int64)
        head = self._best[r] - self.current[r] + np.asarray(eps, dtype=np.float64)
        head = np.where(np.isnan(head), 0.0, head)  # before the landmark: due at once
        s = self.sign[r]
        return upper_exceed_interval(s * np.asarray(mu_a), sigma_a, head, p, max_dt=max_dt)


class WindowSeries:
    """Recorded samples ``A(ts)`` of many aggregates on one shared clock, for sliding windows.

    One column per ``record`` call (every tick); columns older than the longest window are
    dropped (amortized: the buffer compacts when half of it is stale).

    Examples
    --------
    >>> ws = WindowSeries()
    >>> r = ws.add_row(window_ms=2)
    >>> for t in range(5):
    ...     ws.record(t, [float(t * t)])
    >>> ts, a = ws.view(r, now_ms=4)
    >>> ts.tolist(), a.tolist()
    ([2, 3, 4], [4.0, 9.0, 16.0])
    """

    def __init__(self) -> None:
        self.windows_ms = np.empty(0, dtype=np.int64)
        self._ts = np.empty(16, dtype=np.int64)
        self._vals = np.full((0, 16), np.nan)
        self._lo = 0
        self._hi = 0

    def __len__(self) -> int:
        return len(self.windows_ms)

    def add_row(self, window_ms: int) -> int:
        """Add an aggregate with sliding window ``window_ms`` (past samples ``nan``)."""
        if window_ms <= 0:
            raise ValueError(f"window_ms must be > 0 ms, got {window_ms} ms")
        self.windows_ms = np.append(self.windows_ms, window_ms)
        self._vals = np.vstack([self._vals, np.full((1, self._vals.shape[1]), np.nan)])
        return len(self.windows_ms) - 1

    def remove_row(self, row: int) -> None:
        """Drop one aggregate (later rows shift down by one)."""
        self.windows_ms = np.delete(self.windows_ms, row)
        self._vals = np.delete(self._vals, row, axis=0)

    def record(self, ts_ms: int, column: ArrayLike) -> None:
        """Append ``A(ts_ms)`` of every row; ``ts_ms`` must increase."""
        if self._hi > self._lo and ts_ms <= self._ts[self._hi - 1]:
            raise ValueError(
                f"samples must move forward in time: got {ts_ms} ms after "
                f"{int(self._ts[self._hi - 1])} ms"
            )
        horizon = ts_ms - (int(self.windows_ms.max()) if len(self.windows_ms) else 0)
        self._lo += int(np.searchsorted(self._ts[self._lo : self._hi], horizon, side="left"))
        cap = len(self._ts)
        if self._hi == cap:  # compact, then grow if still more than half full
            n = self._hi - self._lo
            new_cap = cap * 2 if n > cap // 2 else cap
            ts = np.empty(new_cap, dtype=np.int64)
            vals = np.full((self._vals.shape[0], new_cap), np.nan)
            ts[:n], vals[:, :n] = self._ts[self._lo : self._hi], self._vals[:, self._lo : self._hi]
            self._ts, self._vals, self._lo, self._hi = ts, vals, 0, n
        self._ts[self._hi] = ts_ms
        self._vals[:, self._hi] = column
        self._hi += 1

    def view(self, row: int, now_ms: int) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """Samples of ``row`` in its window ``[now - w, now]`` (views, do not modify)."""
        ts = self._ts[self._lo : self._hi]
        a = int(np.searchsorted(ts, now_ms - self.windows_ms[row], side="left"))
        b = int(np.searchsorted(ts, now_ms, side="right"))
        return ts[a:b], self._vals[row, self._lo + a : self._lo + b]


def evaluate_extremum(
    spec: StandingQuery,
    row: int,
    series: WindowSeries,
    landmarks: LandmarkExtrema,
    now_ms: int,
    mu_a: float,
    sigma_a: float,
    max_dt: float,
) -> tuple[float, float, float]:
    """``(value, Δt, ε)`` of a MAX/MIN query (Theorem 1; Eq. 9 on the extremum), whose window
    samples are ``row`` of ``series`` (sliding) or of ``landmarks``."""
    if spec.window_ms is not None:
        ts, a = series.view(row, now_ms)
        if not np.isfinite(a).any():  # no stream value yet: try again next tick
            return np.nan, 0.0, spec.eps
        m = np.nanmax(a) if spec.kind == "max" else np.nanmin(a)
        e = float(relative_eps(m, spec.eps)) if spec.relative else spec.eps
        ans = sliding_extremum(
            ts, a, now_ms, spec.window_ms, e, spec.p, mu_a, sigma_a, kind=spec.kind, max_dt=max_dt
        )
        return ans.value, ans.dt_ms, e
    m = float(landmarks.value[row])
    e = float(relative_eps(m, spec.eps)) if spec.relative else spec.eps
    dt = landmarks.interval([row], e, spec.p, mu_a, sigma_a, max_dt=max_dt)
    return m, float(dt[0]), e  # Eq. 11-12: φ₂ alone
