"""DBM estimators (Eq. 15-17), the stream buffers, Algorithm 2 and Eq. 6.

Unbiasedness is checked on many simulated replications at once: with ``N`` replications the
sample mean of ``μ̂`` has standard error ``sqrt(mean(σ²/T)/N)`` (``Var μ̂ = σ²/T`` with ``T`` the
buffer's time span) and that of ``σ̂²`` is ``σ² sqrt(2/(k-2)/N)`` (``(k-2) σ̂²/σ² ~ χ²_{k-2}``), so a
4-standard-error tolerance fails a correct estimator with probability below 1e-4.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from tsmon.protocols.deferral.model import (
    StreamModels,
    aggregate_params,
    aggregate_values,
    estimate_params,
)


def simulate_dbm(
    rng: np.random.Generator, n: int, k: int, mu: float, sigma: float, irregular: bool
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` independent DBM paths sampled at ``k`` increasing integer-ms times."""
    gaps = rng.integers(1, 50, size=(n, k - 1)) if irregular else np.full((n, k - 1), 10)
    ts = np.concatenate([np.zeros((n, 1), np.int64), np.cumsum(gaps, axis=1)], axis=1)
    incr = mu * gaps + sigma * np.sqrt(gaps) * rng.standard_normal((n, k - 1))  # Eq. 5
    vals = np.concatenate([np.full((n, 1), 5.0), 5.0 + np.cumsum(incr, axis=1)], axis=1)
    return ts, vals


@pytest.mark.parametrize("irregular", [False, True], ids=["regular", "irregular"])
@pytest.mark.parametrize(("mu", "sigma", "k"), [(0.02, 0.3, 10), (-0.5, 2.0, 30), (0.0, 1.0, 3)])
def test_estimators_unbiased(mu: float, sigma: float, k: int, irregular: bool) -> None:
    rng = np.random.default_rng(1234 + k)
    n = 20_000
    ts, vals = simulate_dbm(rng, n, k, mu, sigma, irregular)
    mu_hat, s2_hat = estimate_params(ts, vals)
    span = (ts[:, -1] - ts[:, 0]).astype(float)
    se_mu = np.sqrt(np.mean(sigma**2 / span) / n)
    se_s2 = sigma**2 * np.sqrt(2 / (k - 2) / n)
    assert abs(mu_hat.mean() - mu) < 4 * se_mu
    assert abs(s2_hat.mean() - sigma**2) < 4 * se_s2
    # the ML estimator (footnote 2) is biased low by (k - 2) / (k - 1): detectable here
    ml = s2_hat * (k - 2) / (k - 1)
    assert sigma**2 - ml.mean() > 4 * se_s2 or k > 20


def test_constant_rate_matches_eq17() -> None:
    rng = np.random.default_rng(7)
    ts, vals = simulate_dbm(rng, 50, 12, 0.1, 0.5, irregular=False)
    mu_hat, s2_hat = estimate_params(ts, vals)
    y, h = np.diff(vals, axis=1), 10.0
    np.testing.assert_allclose(mu_hat, y.mean(axis=1) / h, rtol=1e-12)  # Eq. 17
    np.testing.assert_allclose(s2_hat, y.var(axis=1, ddof=1) / h, rtol=1e-12)


def test_matches_maximum_likelihood_of_eq14() -> None:
    rng = np.random.default_rng(3)
    ts, vals = simulate_dbm(rng, 1, 15, 0.05, 0.7, irregular=True)
    y, d = np.diff(vals[0]), np.diff(ts[0]).astype(float)

    def nll(theta: np.ndarray) -> float:  # -log L of Eq. 14
        m, log_s = theta
        s2 = np.exp(2 * log_s)
        return float(np.sum(0.5 * np.log(2 * np.pi * s2 * d) + (y - m * d) ** 2 / (2 * s2 * d)))

    fit = minimize(
        nll,
        x0=[0.0, 0.0],
        method="Nelder-Mead",
        options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 10_000},
    )
    mu_hat, s2_hat = estimate_params(ts, vals)
    k = ts.shape[1]
    assert fit.x[0] == pytest.approx(mu_hat[0], rel=1e-5)
    assert np.exp(2 * fit.x[1]) == pytest.approx(s2_hat[0] * (k - 2) / (k - 1), rel=1e-5)


def test_partial_buffers_use_last_items() -> None:
    ts = np.array([[0, 0, 3, 5, 9], [1, 2, 3, 4, 5]])
    vals = np.array([[9.0, 9.0, 1.0, 2.0, 4.0], [0.0, 1.0, 1.0, 3.0, 2.0]])
    mu, s2 = estimate_params(ts, vals, counts=[3, 2])
    mu3, s23 = estimate_params(ts[0, 2:], vals[0, 2:])
    assert mu[0] == mu3 and s2[0] == s23
    assert np.isnan(mu[1]) and np.isnan(s2[1])  # fewer than 3 items


items = st.lists(
    st.tuples(st.integers(0, 3), st.integers(1, 5), st.floats(-100, 100)), min_size=1, max_size=60
)


@settings(max_examples=60, deadline=None)
@given(items, st.integers(3, 6), st.lists(st.integers(1, 6), min_size=1, max_size=10))
def test_buffers_hold_last_k_items(raw: list, k: int, cuts: list[int]) -> None:
    """Items sent in batches of any size equal a per-stream Python list's last k items."""
    oracle: dict[int, list[tuple[int, float]]] = {}
    clock: dict[int, int] = {}
    rows = []
    for sid, gap, v in raw:
        clock[sid] = clock.get(sid, 0) + gap
        rows.append((sid, clock[sid], v))
        oracle.setdefault(sid, []).append((clock[sid], v))
    m = StreamModels(k=k)
    start = 0
    for c in cuts * 20:
        batch = rows[start : start + c][::-1]  # reversed: order within a call does not matter
        if not batch:
            break
        m.observe(*zip(*batch, strict=True))
        start += c
    if rows[start:]:
        m.observe(*zip(*rows[start:], strict=True))
    m.reestimate(now_ms=10**6)
    for sid, seq in oracle.items():
        ts, vals, cnt = m.chronological([sid])
        last = seq[-k:]
        assert cnt[0] == len(last)
        assert ts[0, k - len(last) :].tolist() == [t for t, _ in last]
        assert vals[0, k - len(last) :].tolist() == [v for _, v in last]
        assert m.value[sid] == last[-1][1] and m.last_ts[sid] == last[-1][0]
        gaps = np.diff([t for t, _ in last])
        if len(last) >= 2:
            assert m.period_ms()[sid] == pytest.approx(gaps.mean())
        if len(last) >= 3:  # the ring buffer path gives Eq. 15-16 of exactly these items
            mu, s2 = estimate_params([t for t, _ in last], [v for _, v in last])
            assert m.mu[sid] == pytest.approx(mu, abs=1e-9)
            assert m.sigma[sid] ** 2 == pytest.approx(s2, rel=1e-9, abs=1e-9)


def test_late_item_rejected_without_change() -> None:
    m = StreamModels(k=4)
    m.observe([0, 1], [10, 10], [1.0, 2.0])
    before = (m.buf_ts.copy(), m.value.copy())
    with pytest.raises(ValueError, match=r"stream 1: timestamps must strictly increase, got 5 ms"):
        m.observe([0, 1], [11, 5], [3.0, 4.0])
    assert (m.buf_ts == before[0]).all() and (m.value == before[1]).all()
    with pytest.raises(ValueError, match="stream 0"):
        m.observe([0, 0], [12, 12], [1.0, 1.0])  # duplicate timestamp in one call


def test_algorithm2_schedule() -> None:
    """After the warm-up, t_estm = now + min(σ(t_last)/σ(now)·(now - t_last), t_max)."""
    rng = np.random.default_rng(5)
    k, t_max = 20, 400
    m = StreamModels(k=k, t_max_ms=t_max, initial_interval_ms=50, t_interrupt_ms=30)
    sig = np.where(np.arange(4) < 2, 0.2, 1.0)
    x = np.zeros(4)
    checked = 0
    for t in range(0, 3_000, 5):
        if t == 1_500:
            sig = sig[::-1]  # volatility switch: σ ratio far from 1 both ways
        x = x + sig * np.sqrt(5) * rng.standard_normal(4)
        m.observe(np.arange(4), np.full(4, t), x)
        due_before = m.next_est_ms.copy()
        s_old, t_old = m.sigma.copy(), m.est_ts.copy()
        full_before = m.count >= k
        ids = m.reestimate(t)
        for i in ids:
            if full_before[i] and due_before[i] > -(2**62):  # Algorithm 2 proper
                assert due_before[i] <= t
                step = min(s_old[i] / m.sigma[i] * (t - t_old[i]), t_max)
                assert m.next_est_ms[i] == t + max(int(step), 1)
                checked += 1
    assert checked > 20
    assert m.n_estimates > checked


def test_algorithm2_interrupted_keeps_params() -> None:
    m = StreamModels(k=5, t_max_ms=100, initial_interval_ms=20, t_interrupt_ms=30)
    m.observe([0] * 5, [0, 10, 20, 30, 40], [0.0, 1.0, 0.5, 2.0, 1.0])
    m.reestimate(40)
    mu, sigma = m.mu[0], m.sigma[0]
    assert m.next_est_ms[0] == 60
    assert m.reestimate(60, interrupted=[True]).size == 0
    assert (m.mu[0], m.sigma[0], m.next_est_ms[0], m.est_ts[0]) == (mu, sigma, 90, 60)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.integers(1, 8), st.integers(0, 2**32 - 1))
def test_aggregate_params_eq6(n_queries: int, n_streams: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    dense = rng.normal(size=(n_queries, n_streams)) * (rng.random((n_queries, n_streams)) < 0.5)
    mu, sigma, vals = rng.normal(size=n_streams), rng.random(n_streams), rng.normal(size=n_streams)
    mu_a, sigma_a = aggregate_params(sp.csr_array(dense), mu, sigma)
    np.testing.assert_allclose(mu_a, dense @ mu, atol=1e-12)
    np.testing.assert_allclose(sigma_a, np.sqrt(((dense * sigma) ** 2).sum(axis=1)), atol=1e-12)
    np.testing.assert_allclose(aggregate_values(sp.csr_array(dense), vals), dense @ vals)


def test_aggregate_increment_distribution_monte_carlo() -> None:
    """ΔA of independent DBMs is N(μ_A Δt, σ_A² Δt) (Eq. 6): mean and variance within 4 SE."""
    rng = np.random.default_rng(11)
    w = np.array([[0.5, -1.0, 2.0]])
    mu, sigma, dt, n = np.array([0.1, 0.3, -0.2]), np.array([1.0, 0.5, 0.2]), 4.0, 200_000
    incr = mu * dt + sigma * np.sqrt(dt) * rng.standard_normal((n, 3))
    da = incr @ w[0]
    mu_a, sigma_a = aggregate_params(sp.csr_array(w), mu, sigma)
    var = sigma_a[0] ** 2 * dt
    assert abs(da.mean() - mu_a[0] * dt) < 4 * np.sqrt(var / n)
    assert abs(da.var() - var) < 4 * var * np.sqrt(2 / n)


def test_unknown_sigma_only_poisons_its_queries() -> None:
    w = sp.csr_array([[1.0, 0.0], [0.0, 1.0]])
    _, sigma_a = aggregate_params(w, [0.0, 0.0], [np.nan, 2.0])
    assert np.isnan(sigma_a[0]) and sigma_a[1] == 2.0


@pytest.mark.parametrize("z", [1.0, 2.0])
def test_drift_test_zeroes_insignificant_drift_at_its_level(z: float) -> None:
    """With ``μ = 0`` the test statistic ``μ̂ √span / σ̂`` is about standard normal (a t with
    k − 2 degrees of freedom), so a fraction near ``P(|T| ≥ z)`` keeps its estimate."""
    from scipy.stats import t as student

    rng = np.random.default_rng(5)
    n, k = 4_000, 50
    ts, vals = simulate_dbm(rng, n, k, mu=0.0, sigma=1.0, irregular=True)
    models = StreamModels(k, t_max_ms=10**6, drift_z=z)
    order = np.argsort(ts[0])
    for j in order:
        models.observe(np.arange(n), ts[:, j], vals[:, j])
    models.reestimate(int(ts.max()))
    kept = float((models.mu != 0).mean())
    want = 2 * student.sf(z, k - 2)
    assert abs(kept - want) <= 4 * np.sqrt(want * (1 - want) / n)


def test_drift_test_keeps_real_drift_and_sigma() -> None:
    rng = np.random.default_rng(6)
    ts, vals = simulate_dbm(rng, 200, 100, mu=0.05, sigma=0.3, irregular=False)
    plain, tested = StreamModels(100, t_max_ms=10**6), StreamModels(100, t_max_ms=10**6, drift_z=2)
    for m in (plain, tested):
        for j in range(100):
            m.observe(np.arange(200), ts[:, j], vals[:, j])
        m.reestimate(int(ts.max()))
    # a drift of 0.05 per ms over 990 ms is ~5 standard errors: the test keeps it
    assert (tested.mu == plain.mu).mean() > 0.99
    np.testing.assert_array_equal(tested.sigma, plain.sigma)
    with pytest.raises(ValueError, match="drift_z"):
        StreamModels(10, drift_z=-1.0)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 50), st.integers(3, 8), st.floats(0.5, 20.0))
def test_algorithm2_t_max_in_sampling_intervals(period: int, k: int, periods: float) -> None:
    """``t_max_periods`` caps Algorithm 2 at that many of each stream's sampling intervals,
    whatever ``t_max_ms`` is; the first interval after the warm-up defaults to that cap."""
    m = StreamModels(k=k, t_max_ms=10**9, t_max_periods=periods)
    rng = np.random.default_rng(period * 100 + k)
    x = np.cumsum(rng.normal(size=(4 * k, 2)), axis=0)
    ts = np.arange(4 * k) * period
    for j, t in enumerate(ts.tolist()):
        m.observe([0, 1], [t, t], x[j])
        before = m.next_est_ms.copy()
        for i in m.reestimate(t).tolist():
            if m.count[i] < k:  # warm-up: re-estimated on new items
                continue
            cap = max(int(periods * period), 1)
            assert m.next_est_ms[i] - t <= cap
            if m.count[i] == k and before[i] == -(2**63):  # first estimate with a full buffer
                assert m.next_est_ms[i] - t == cap


@settings(max_examples=60, deadline=None)
@given(items, st.integers(3, 6), st.lists(st.integers(1, 6), min_size=1, max_size=10))
def test_pickled_between_batches_equals_never_pickled(raw: list, k: int, cuts: list[int]) -> None:
    """A model pickled after any batch (a Spark host pickles its node each batch) observes,
    re-estimates and reports exactly as one never pickled: every array, dtype and shape."""
    clock: dict[int, int] = {}
    rows = []
    for sid, gap, v in raw:
        clock[sid] = clock.get(sid, 0) + gap
        rows.append((sid, clock[sid], v))
    plain = StreamModels(k=k, t_max_ms=50, t_max_periods=3.0, drift_z=1.0)
    pickled = pickle.loads(pickle.dumps(plain, protocol=5))  # empty, too: settings only
    assert _arrays(pickled) == _arrays(plain)
    start, now = 0, 0
    for c in cuts * 20:
        batch = rows[start : start + c]
        if not batch:
            break
        start += c
        now = max(now, max(t for _, t, _ in batch))
        ids = [m.observe(*zip(*batch, strict=True)) or m.reestimate(now) for m in (plain, pickled)]
        assert ids[0].tolist() == ids[1].tolist()
        assert _arrays(pickled) == _arrays(plain)
        pickled = pickle.loads(pickle.dumps(pickled, protocol=5))
        assert _arrays(pickled) == _arrays(plain) and repr(pickled) == repr(plain)


def _arrays(m: StreamModels) -> list:
    """Every attribute, arrays as dtype, shape and bytes (NaN-aware, exact)."""
    return [
        (name, (v.dtype, v.shape, v.tobytes()) if isinstance(v, np.ndarray) else v)
        for name, v in sorted(vars(m).items())
    ]
