"""Standing queries ``(A, ε, p)`` and when to re-evaluate them (§4, §4.2, Eq. 3, 7, 8, 9).

After evaluating ``A`` at ``t``, the next evaluation is due at the smallest ``Δt`` with
``F(Δt) = Pr[|A(t + Δt) - A(t)| ≤ ε] = p``, where ``ΔA ~ N(μ_A Δt, σ_A² Δt)`` (Eq. 6-7).

Solving Eq. 7
    Writing ``Δt = τ ε² / σ²`` leaves one shape parameter ``c = |μ| ε / σ²``:
    ``1 - F = Φ((cτ - 1) / √τ) + Φ((-1 - cτ) / √τ)``. ``F`` is strictly decreasing in ``τ``
    (``dF/dτ ∝ -[φ(g₊)(1 + cτ) + φ(g₋)(1 - cτ)]`` and ``φ(g₊) / φ(g₋) = e^{2c} ≥ 1``), so the root
    is unique. Closed-form brackets: ``F`` is at most ``Pr[X ≤ ε]`` and at most the driftless
    ``2Φ(1/√τ) - 1`` (upper end), and at least ``1 - 2Φ((cτ - 1)/√τ)`` (lower end); both ends
    coincide at ``c = 0`` (the analytic ``μ = 0`` case). Then
    :func:`scipy.optimize.elementwise.find_root` refines all queries at once to ``1e-13``
    relative (batches under 64 roots use :func:`scipy.optimize.brentq`, cheaper to set up).

Special cases: ``ε = 0`` or unknown ``σ`` (``nan``) → ``0`` (due at once); ``σ = 0`` →
``ε / |μ|``; ``σ = μ = 0`` → never due (``inf``). Every result is capped at ``max_dt``.
Time units are whatever ``μ`` and ``σ`` use; tsmon uses milliseconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import ndtr, ndtri

_VECTOR_MIN = 64  # batches at least this large use scipy.optimize.elementwise.find_root


def _check_p(p: NDArray) -> None:
    if not ((p > 0) & (p < 1)).all():
        bad = p[~((p > 0) & (p < 1))].ravel()[0]
        raise ValueError(f"belief threshold p must be in (0, 1), got {bad}; pass e.g. 0.9")


def within_bound_probability(
    dt: ArrayLike, mu: ArrayLike, sigma: ArrayLike, eps: ArrayLike
) -> NDArray[np.float64]:
    """``F(Δt) = Pr[|A(t + Δt) - A(t)| ≤ ε]`` under the DBM model (Eq. 3, 7), vectorized.

    Examples
    --------
    >>> from scipy.stats import norm
    >>> round(float(within_bound_probability(4.0, 0.0, 1.0, 2.0)), 6)  # |N(0, 4)| ≤ 2
    0.682689
    >>> round(float(norm(0.5 * 4, 2.0).cdf(2) - norm(2.0, 2.0).cdf(-2)), 6)
    0.477250
    >>> round(float(within_bound_probability(4.0, 0.5, 1.0, 2.0)), 6)
    0.47725
    """
    dt, mu, sigma, eps = np.broadcast_arrays(
        *(np.asarray(x, dtype=np.float64) for x in (dt, mu, sigma, eps))
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        sd = sigma * np.sqrt(dt)
        f = ndtr((eps - mu * dt) / sd) - ndtr((-eps - mu * dt) / sd)  # Eq. 7 via erf
    exact = np.where(np.abs(mu * dt) <= eps, 1.0, 0.0)  # σ√Δt = 0: the increment is μΔt
    return np.where(sd == 0, exact, f)


def _tau_root(c: NDArray, p: NDArray) -> NDArray:
    """Dimensionless root ``τ`` of ``1 - F(τ; c) = 1 - p`` (see module docstring)."""
    z0 = ndtri((1 + p) / 2)  # driftless: 2Φ(1/√τ) - 1 = p
    hi = 1.0 / z0**2
    zp = ndtri(p)  # one-sided: Φ((1 - cτ)/√τ) = p ⇔ cu² + zp·u - 1 = 0, u = √τ
    root = np.sqrt(zp**2 + 4 * c)
    with np.errstate(divide="ignore", invalid="ignore"):  # stable form for either sign of zp
        u = np.where(zp >= 0, 2.0 / (zp + root), (root - zp) / (2 * c))
    hi = np.minimum(hi, np.where(np.isfinite(u), u**2, np.inf))
    lo = (2.0 / (z0 + np.sqrt(z0**2 + 4 * c))) ** 2  # 1 - 2Φ((cτ - 1)/√τ) = p
    closed = c == 0  # the bounds meet: τ = 1 / z0² exactly
    lo, hi = np.minimum(lo, hi) * (1 - 1e-6), hi * (1 + 1e-6)  # slack for rounding in the bounds
    q = 1.0 - p

    def g(tau: NDArray, c: NDArray, q: NDArray) -> NDArray:
        r = np.sqrt(tau)
        return ndtr((c * tau - 1) / r) + ndtr((-1 - c * tau) / r) - q  # 1 - F - (1 - p)

    tau = np.where(closed, 1.0 / z0**2, np.nan)
    todo = np.flatnonzero(~closed)
    from scipy.optimize import brentq, elementwise  # ~0.1 s to import: not in source nodes

    if len(todo) >= _VECTOR_MIN:  # one vectorized Chandrupatla run for the whole batch
        res = elementwise.find_root(
            g,
            (lo[todo], hi[todo]),
            args=(c[todo], q[todo]),
            tolerances={"xrtol": 1e-13, "xatol": 0.0, "fatol": 0.0, "frtol": 0.0},
        )
        tau[todo] = res.x
    else:  # few roots: scalar Brent is cheaper than the vectorized solver's set-up
        for i in todo:
            tau[i] = brentq(g, lo[i], hi[i], args=(c[i], q[i]), xtol=1e-300, rtol=1e-13)
    return tau


def next_interval(
    mu: ArrayLike, sigma: ArrayLike, eps: ArrayLike, p: ArrayLike, *, max_dt: float = np.inf
) -> NDArray[np.float64]:
    """Smallest ``Δt`` with ``Pr[|A(t + Δt) - A(t)| ≤ ε] = p`` (Eq. 7), capped at ``max_dt``.

    Parameters
    ----------
    mu, sigma : array_like
        ``μ_A`` and ``σ_A`` (Eq. 6) per query; ``nan`` σ means unknown (result 0).
    eps : array_like
        Absolute error bound ``ε ≥ 0`` (see :func:`relative_eps` for Eq. 9).
    p : array_like
        Belief threshold in ``(0, 1)``.
    max_dt : float
        Cap, also returned for queries that are never due (``σ = μ = 0``).

    Examples
    --------
    >>> from scipy.special import ndtri
    >>> float(next_interval(0.0, 1.0, 2.0, 0.9))   # analytic μ = 0: (ε / (σ z))²
    1.4784
    >>> float((2.0 / ndtri(0.95)) ** 2)
    1.4784
    >>> dt = next_interval([0.0, 0.5, 0.0], [0.0, 0.0, 1.0], 2.0, 0.9, max_dt=100.0)
    >>> dt.tolist()[:2]                            # never due → cap; σ = 0 → ε / |μ|
    [100.0, 4.0]
    >>> float(within_bound_probability(next_interval(0.3, 1.0, 2.0, 0.9), 0.3, 1.0, 2.0))
    0.9
    """
    mu, sigma, eps, p = np.broadcast_arrays(
        *(np.asarray(x, dtype=np.float64) for x in (mu, sigma, eps, p))
    )
    _check_p(p)
    if (eps < 0).any():
        raise ValueError(f"error bound eps must be >= 0, got {eps[eps < 0].ravel()[0]}")
    if (sigma < 0).any():
        raise ValueError(f"sigma must be >= 0, got {sigma[sigma < 0].ravel()[0]}")
    amu = np.abs(np.nan_to_num(mu))
    out = np.empty(mu.shape)
    unknown = np.isnan(sigma) | np.isnan(eps)
    zero_eps = ~unknown & (eps == 0)
    still = ~unknown & ~zero_eps & (sigma == 0) & (amu == 0)
    drift_only = ~unknown & ~zero_eps & (sigma == 0) & (amu > 0)
    gen = ~(unknown | zero_eps | still | drift_only)
    out[unknown | zero_eps] = 0.0
    out[still] = np.inf
    with np.errstate(divide="ignore", over="ignore"):
        out[drift_only] = eps[drift_only] / amu[drift_only]  # σ = 0: |μΔt| reaches ε
        if gen.any():
            s, e = sigma[gen], eps[gen]
            c = amu[gen] * e / s**2
            scale = (e / s) ** 2  # Δt = τ ε² / σ²
            tau = np.where(np.isinf(c), np.nan, _tau_root(np.where(np.isinf(c), 0.0, c), p[gen]))
            out[gen] = np.where(np.isinf(c), e / amu[gen], tau * scale)
    return np.minimum(out, max_dt)


def upper_exceed_interval(
    mu: ArrayLike, sigma: ArrayLike, headroom: ArrayLike, p: ArrayLike, *, max_dt: float = np.inf
) -> NDArray[np.float64]:
    """Smallest ``τ`` with ``Pr[A(t + τ) - A(t) ≤ h] = p`` (``φ₂`` of Theorem 1, Eq. 11).

    In closed form: ``(h - μτ) / (σ√τ) = z_p`` is ``μu² + z_p σ u - h = 0`` with ``u = √τ``; its
    smallest positive root is ``u = 2h / (z_p σ + √(z_p² σ² + 4μh))`` (computed as
    ``(√(·) - z_p σ) / 2μ`` when ``z_p < 0``, to avoid cancellation). With ``μ < 0`` or
    ``p ≤ 1/2`` the probability may never fall to ``p``: then ``max_dt`` (never due).

    Examples
    --------
    >>> from scipy.special import ndtr
    >>> tau = float(upper_exceed_interval(0.2, 1.0, 3.0, 0.9))
    >>> round(float(ndtr((3.0 - 0.2 * tau) / tau ** 0.5)), 12)
    0.9
    >>> float(upper_exceed_interval(-1.0, 1.0, 3.0, 0.9, max_dt=50.0))  # drifting away
    50.0
    """
    mu, sigma, h, p = np.broadcast_arrays(
        *(np.asarray(x, dtype=np.float64) for x in (mu, sigma, headroom, p))
    )
    _check_p(p)
    z = ndtri(p)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # a huge u: τ = inf
        zs = z * sigma
        disc = zs**2 + 4 * mu * h
        root = np.sqrt(disc)
        # same root, two forms: each avoids cancellation for its sign of z_p σ
        u = np.where(zs >= 0, 2 * h / (zs + root), (root - zs) / (2 * mu))
        ok = (disc >= 0) & np.where(zs >= 0, zs + root > 0, mu > 0)
        tau = np.where(ok, u**2, np.inf)
    tau = np.where(h <= 0, 0.0, tau)  # already at or above the bound: due at once
    tau = np.where(np.isnan(sigma), 0.0, tau)
    return np.minimum(tau, max_dt)


def relative_eps(a: ArrayLike, eps_r: ArrayLike) -> NDArray[np.float64]:
    """Absolute bound for a relative one, ``ε = ε_r · |A(t)|`` (Eq. 9); ``ε_r`` as a fraction.

    Examples
    --------
    >>> relative_eps([200.0, -50.0], 0.01).tolist()
    [2.0, 0.5]
    """
    return np.asarray(eps_r, dtype=np.float64) * np.abs(np.asarray(a, dtype=np.float64))


def extrapolate(
    a: ArrayLike, mu_a: ArrayLike, t_eval_ms: ArrayLike, t_ms: ArrayLike
) -> NDArray[np.float64]:
    """Expected ``A`` at ``t`` from an answer ``(A(t_eval), μ_A)``: ``A + μ_A (t - t_eval)``, Eq. 8.

    Examples
    --------
    >>> float(extrapolate(10.0, 0.5, 1_000, 1_004))
    12.0
    """
    a, mu = np.asarray(a, dtype=np.float64), np.asarray(mu_a, dtype=np.float64)
    return a + mu * (np.asarray(t_ms, dtype=np.float64) - np.asarray(t_eval_ms, np.float64))


@dataclass(frozen=True)
class StandingQuery:
    """A standing query ``(A, ε, p)`` with ``A = Σ a_i S_i`` (Eq. 2), or MAX/MIN of ``A``.

    ``kind="max"``/``"min"`` needs exactly one of ``window_ms`` (sliding, Eq. 10) or
    ``landmark_ms`` (Eq. 12). ``relative=True`` reads ``eps`` as a fraction of ``|A|`` (Eq. 9).
    ``extrapolate=True`` means users extrapolate answers with ``μ_A`` (Eq. 8), so the next time
    is solved with ``μ_A = 0``. ``cost`` is the evaluation's cost in scheduler units.
    """

    name: str
    weights: Mapping[int, float]
    eps: float
    p: float
    kind: Literal["linear", "max", "min"] = "linear"
    window_ms: int | None = None
    landmark_ms: int | None = None
    relative: bool = False
    extrapolate: bool = False
    cost: float = 1.0

    def __post_init__(self) -> None:
        if not 0 < self.p < 1:
            raise ValueError(f"query {self.name!r}: p must be in (0, 1), got {self.p}")
        if not self.eps >= 0:
            raise ValueError(f"query {self.name!r}: eps must be >= 0, got {self.eps}")
        if not self.weights or min(self.weights) < 0:
            raise ValueError(f"query {self.name!r}: weights must map stream ids >= 0 to a_i")
        if self.cost <= 0:
            raise ValueError(f"query {self.name!r}: cost must be > 0 units, got {self.cost}")
        windows = (self.window_ms is not None) + (self.landmark_ms is not None)
        if self.kind == "linear" and windows:
            raise ValueError(f"query {self.name!r}: window_ms/landmark_ms need kind max or min")
        if self.kind in ("max", "min") and windows != 1:
            raise ValueError(
                f"query {self.name!r}: kind {self.kind} needs exactly one of "
                f"window_ms or landmark_ms"
            )
        if self.kind not in ("linear", "max", "min"):
            raise ValueError(f"query {self.name!r}: kind must be linear, max or min")
