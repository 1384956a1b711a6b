"""Next evaluation time (Eq. 7), one-sided φ₂ (Eq. 11), relative bounds (Eq. 9), Eq. 8.

The plug-back oracle is :mod:`scipy.stats.norm` (tails via ``sf``/``cdf``, not the module's own
formula): ``Δt`` solves Eq. 7 to 1e-9 relative iff ``F(Δt(1 - 1e-9)) ≥ p ≥ F(Δt(1 + 1e-9))``,
``F`` being decreasing.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.integrate import quad
from scipy.special import ndtri
from scipy.stats import norm

from tsmon.protocols.deferral.deferral import (
    extrapolate,
    next_interval,
    relative_eps,
    upper_exceed_interval,
)


def miss_probability(dt: float, mu: float, sigma: float, eps: float) -> float:
    """``1 - F(Δt)`` of Eq. 7 from scipy.stats: both tails of N(μΔt, σ²Δt) outside ±ε."""
    d = norm(loc=mu * dt, scale=sigma * np.sqrt(dt))
    return float(d.sf(eps) + d.cdf(-eps))


def log_uniform(lo: float, hi: float) -> st.SearchStrategy[float]:
    return st.floats(np.log10(lo), np.log10(hi)).map(lambda e: float(10**e))


signed_mu = st.one_of(
    st.just(0.0),
    st.tuples(st.sampled_from([-1.0, 1.0]), log_uniform(1e-5, 1e2)).map(lambda t: t[0] * t[1]),
)
params = st.tuples(
    signed_mu, log_uniform(1e-3, 1e2), log_uniform(1e-2, 1e2), st.floats(0.01, 0.999)
)


@settings(max_examples=300, deadline=None)
@given(params)
def test_solves_eq7_to_1e9_relative(prm: tuple[float, float, float, float]) -> None:
    mu, sigma, eps, p = prm
    dt = float(next_interval(mu, sigma, eps, p))
    assert 0 < dt < np.inf
    assert miss_probability(dt * (1 - 1e-9), mu, sigma, eps) <= 1 - p
    assert miss_probability(dt * (1 + 1e-9), mu, sigma, eps) >= 1 - p


@settings(max_examples=25, deadline=None)
@given(st.lists(params, min_size=70, max_size=120))
def test_vectorized_equals_scalar(grid: list[tuple[float, float, float, float]]) -> None:
    """≥ 64 roots take the vectorized solver, one at a time Brent: both to 1e-13."""
    mu, sigma, eps, p = map(np.array, zip(*grid, strict=True))
    vec = next_interval(mu, sigma, eps, p)
    one = np.array([float(next_interval(*row)) for row in grid])
    np.testing.assert_allclose(vec, one, rtol=1e-11)


def test_integral_form_of_eq7() -> None:
    mu, sigma, eps, p = 0.3, 1.3, 2.0, 0.8
    dt = float(next_interval(mu, sigma, eps, p))
    s2 = sigma**2 * dt
    f = quad(
        lambda x: np.exp(-((x - mu * dt) ** 2) / (2 * s2)) / np.sqrt(2 * np.pi * s2),
        -eps,
        eps,
        epsabs=1e-13,
        epsrel=1e-13,
    )[0]  # Eq. 7 as written
    assert f == pytest.approx(p, abs=1e-10)


@given(log_uniform(1e-3, 1e2), log_uniform(1e-2, 1e2), st.floats(0.01, 0.999))
def test_zero_drift_closed_form(sigma: float, eps: float, p: float) -> None:
    expect = (eps / (sigma * ndtri((1 + p) / 2))) ** 2
    assert float(next_interval(0.0, sigma, eps, p)) == pytest.approx(expect, rel=1e-14)


@given(params)
def test_drift_sign_symmetric_and_shorter(prm: tuple[float, float, float, float]) -> None:
    mu, sigma, eps, p = prm
    a, b, zero = next_interval([mu, -mu, 0.0], sigma, eps, p)
    assert a == pytest.approx(b, rel=1e-11)
    assert a <= zero * (1 + 1e-12)  # drift only moves A away sooner


def test_special_cases() -> None:
    dt = next_interval(
        mu=[0.0, 2.0, 0.5, 1.0, 0.0, 0.0],
        sigma=[0.0, 0.0, np.nan, 1.0, 1.0, 1e-9],
        eps=[1.0, 1.0, 1.0, 0.0, 1.0, 1.0],
        p=0.9,
        max_dt=500.0,
    )
    assert dt.tolist()[:4] == [500.0, 0.5, 0.0, 0.0]  # never due; ε/|μ|; unknown σ; ε = 0
    assert dt[4] == pytest.approx(1 / ndtri(0.95) ** 2)
    assert dt[5] == 500.0  # huge Δt capped
    assert np.isinf(next_interval(0.0, 0.0, 1.0, 0.9))
    with pytest.raises(ValueError, match=r"p must be in \(0, 1\), got 1.0"):
        next_interval(0.0, 1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="eps must be >= 0"):
        next_interval(0.0, 1.0, -1.0, 0.5)


@settings(max_examples=200, deadline=None)
@given(signed_mu, log_uniform(1e-3, 1e2), log_uniform(1e-2, 1e2), st.floats(0.05, 0.999))
def test_upper_exceed_is_first_crossing(mu: float, sigma: float, h: float, p: float) -> None:
    """φ₂: the first τ where Pr[A(t+τ) - A(t) ≤ h] = p, or never (then the minimum is above p)."""
    tau = float(upper_exceed_interval(mu, sigma, h, p))
    if np.isfinite(tau):
        below = norm(mu * tau, sigma * np.sqrt(tau)).cdf(h)
        assert below == pytest.approx(p, abs=1e-9)
        grid = tau * np.linspace(1e-3, 1 - 1e-6, 200)  # still above p before the root
        assert (norm(mu * grid, sigma * np.sqrt(grid)).cdf(h) >= p - 1e-12).all()
    else:
        # min of Pr over τ is at τ = h/|μ| (μ < 0) or τ → ∞ (μ = 0, Pr → 1/2)
        assert mu < 0 or p <= 0.5
        if mu < 0:
            t_min = h / abs(mu)
            assert norm(mu * t_min, sigma * np.sqrt(t_min)).cdf(h) > p - 1e-12


def test_relative_bound_eq9() -> None:
    a, mu, sigma, p = np.array([100.0, -20.0, 0.0]), 0.1, 1.0, 0.9
    eps = relative_eps(a, 0.05)
    assert eps.tolist() == [5.0, 1.0, 0.0]
    dt = next_interval(mu, sigma, eps, p)
    assert dt[2] == 0.0  # A = 0: any change breaks a relative bound
    for e, d in zip(eps[:2], dt[:2], strict=True):
        assert miss_probability(d, mu, sigma, e) == pytest.approx(1 - p, abs=1e-9)


def test_extrapolation_eq8_monte_carlo() -> None:
    """A(t+Δt) - (A(t) + μΔt) is N(0, σ²Δt): the μ = 0 interval then holds with belief p."""
    rng = np.random.default_rng(2)
    mu, sigma, eps, p, n = 0.4, 0.8, 3.0, 0.9, 100_000
    dt = float(next_interval(0.0, sigma, eps, p))  # users extrapolate: solve with μ_A = 0
    a_next = 10.0 + mu * dt + sigma * np.sqrt(dt) * rng.standard_normal(n)
    err = np.abs(a_next - extrapolate(10.0, mu, 0, dt))
    hit = (err <= eps).mean()
    assert abs(hit - p) < 4 * np.sqrt(p * (1 - p) / n)
    assert ((np.abs(a_next - 10.0) <= eps).mean()) < p - 0.05  # without Eq. 8 it would miss
