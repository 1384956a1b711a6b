"""Precision manager pieces: burden targets (§3.2.1, App. B), growth, source filter."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from tsmon.protocols.filters import (
    burden_targets,
    deviations,
    grow_greedily,
    initial_widths,
)
from tsmon.protocols.filters.precision import LEFTOVER_RTOL, PrecisionPlan, growth_caps, plan_for


def test_burden_targets_without_overlap_are_the_average_burden() -> None:
    k = sp.csr_matrix(np.array([[1, 1, 1, 0, 0], [0, 0, 0, 1, 1]], dtype=float))
    b = np.array([1.0, 2.0, 6.0, 0.5, 0.0])
    np.testing.assert_allclose(burden_targets(k, b), [3.0, 0.25])


def overlap_system(k: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The App. B system written out term by term, as a dense oracle."""
    m, n = k.shape
    a = np.zeros((m, m))
    rhs = np.zeros(m)
    for j in range(m):
        members = [i for i in range(n) if k[j, i] != 0]
        a[j, j] = len(members)
        for i in members:
            rhs[j] += b[i] / k[j, i]
            for q in range(m):
                if q != j:
                    a[j, q] += k[q, i] / k[j, i]
    return a, rhs


@pytest.mark.parametrize("seed", range(5))
def test_burden_targets_with_overlap_match_a_dense_solve(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m, n = 4, 9
    k = np.zeros((m, n))
    for j in range(m):
        members = rng.choice(n, size=4, replace=False)
        k[j, members] = rng.choice([0.5, 1.0, 2.0, 3.0], size=4)
    b = rng.exponential(1.0, n)
    a, rhs = overlap_system(k, b)
    expected = np.linalg.solve(a, rhs)
    np.testing.assert_allclose(burden_targets(sp.csr_matrix(k), b), expected, rtol=1e-6)


def test_burden_targets_of_identical_queries_are_finite() -> None:
    k = sp.csr_matrix(np.ones((2, 3)))
    targets = burden_targets(k, np.array([1.0, 2.0, 3.0]))
    assert np.isfinite(targets).all()
    np.testing.assert_allclose(targets.sum(), 2.0)  # B_i = T_1 + T_2 on average


def test_growth_never_violates_a_constraint() -> None:
    k = sp.csr_matrix(np.array([[1.0, 2.0, 0.0], [0.0, 1.0, 1.0], [1.0, 0.0, 0.0]]))
    budgets = np.array([6.0, 3.0, 2.5])
    widths = initial_widths(k, budgets) * 0.5
    grown = grow_greedily(
        k, budgets, widths, np.array([1.0, 2.0, 0.0]), np.arange(3), np.random.default_rng(0)
    )
    new = widths.copy()
    new[list(grown)] = list(grown.values())
    assert (k @ new <= budgets + 1e-12).all()
    assert 1 in grown  # the most overburdened object grows first


@st.composite
def overlapping_queries(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    """A dense ``|K|`` of overlapping queries (some repeated: a singular App. B system) and
    burdens ``B_i``."""
    n = draw(st.integers(2, 8))
    m = draw(st.integers(1, 6))
    weight = st.sampled_from([0.5, 1.0, 2.0, 3.0])
    k = np.zeros((m, n))
    for j in range(m):
        if j and draw(st.booleans()) and draw(st.booleans()):
            k[j] = k[draw(st.integers(0, j - 1))]  # the same query twice
            continue
        members = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True))
        k[j, members] = [draw(weight) for _ in members]
    b = np.array(draw(st.lists(st.floats(0.0, 10.0), min_size=n, max_size=n)))
    return k, b


@settings(max_examples=300, deadline=None)
@given(overlapping_queries())
def test_burden_targets_are_the_least_squares_solution_of_app_b(
    case: tuple[np.ndarray, np.ndarray],
) -> None:
    k, b = case
    a, rhs = overlap_system(k, b)
    expected = np.linalg.lstsq(a, rhs, rcond=None)[0]  # minimum norm when singular
    scale = max(1.0, float(np.abs(expected).max()))
    targets = burden_targets(sp.csr_matrix(k), b)
    np.testing.assert_allclose(targets, expected, rtol=1e-7, atol=1e-9 * scale)


@settings(max_examples=100, deadline=None)
@given(overlapping_queries())
def test_gmres_solver_solves_the_same_system(case: tuple[np.ndarray, np.ndarray]) -> None:
    k, b = case
    a, rhs = overlap_system(k, b)
    exact = np.linalg.lstsq(a, rhs, rcond=None)[0]
    best = np.linalg.norm(a @ exact - rhs)  # > 0 only for an inconsistent singular system
    plan = PrecisionPlan(sp.csr_matrix(k), solver="gmres")
    scale = max(1.0, float(np.abs(rhs).max()))
    for x0 in (None, exact + 0.5):  # cold, and warm-started from a nearby guess
        targets = plan.targets(b, x0=x0)
        assert np.linalg.norm(a @ targets - rhs) <= best + 1e-6 * scale


def test_singular_system_of_repeated_queries_matches_lstsq() -> None:
    k = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 0, 0], [0, 0, 1, 1, 1]], dtype=float)
    b = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    a, rhs = overlap_system(k, b)
    assert np.linalg.matrix_rank(a) == 2
    targets = burden_targets(sp.csr_matrix(k), b)
    np.testing.assert_allclose(targets, np.linalg.lstsq(a, rhs, rcond=None)[0], atol=1e-12)
    np.testing.assert_allclose(targets[0], targets[1])  # minimum norm splits the load evenly


def test_burden_targets_accept_dense_and_csc_matrices() -> None:
    k = np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]])
    b = np.array([3.0, 4.0, 1.0])
    for given_k in (k, sp.csc_matrix(k), sp.csr_matrix(k)):
        np.testing.assert_allclose(burden_targets(given_k, b), [3.0, 1.0])


def test_plan_is_reused_until_the_matrix_changes_in_place() -> None:
    k = sp.csr_matrix(np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]]))
    b = np.array([3.0, 4.0, 1.0])
    assert plan_for(k) is plan_for(sp.csr_matrix(k.toarray()))  # same entries, same plan
    before = burden_targets(k, b)
    k.data[:] = 2.0
    after = burden_targets(k, b)
    np.testing.assert_allclose(after, PrecisionPlan(k).targets(b))
    np.testing.assert_allclose(after, before / 2)  # B_i = Σ_j |K_i,j|·T_j with |K| doubled


def test_plan_rejects_an_unknown_solver() -> None:
    with pytest.raises(ValueError, match="'auto', 'svd' or 'gmres'"):
        PrecisionPlan(sp.csr_matrix(np.ones((1, 2))), solver="lu")


def greedy_in_order(
    k: np.ndarray, budgets: np.ndarray, widths: np.ndarray, order: np.ndarray
) -> dict[int, float]:
    """§3.2 written out densely for a given order: each object takes the most its
    constraints' leftover allows (App. B), leftover is updated, residue below the
    tolerance counts as none."""
    leftover = budgets - sp.csr_matrix(k) @ widths  # summed in the same order as the code
    tiny = LEFTOVER_RTOL * budgets
    leftover[leftover <= tiny] = 0.0
    grown = {}
    for i in order:
        rows = np.flatnonzero(k[:, i])
        if len(rows) == 0:
            continue
        delta_w = float(np.min(leftover[rows] / k[rows, i]))
        if delta_w <= 0.0:
            continue
        grown[int(i)] = float(widths[i] + delta_w)
        leftover[rows] -= k[rows, i] * delta_w
        leftover[rows[leftover[rows] <= tiny[rows]]] = 0.0
    return grown


@st.composite
def growth_case(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Overlapping constraints, widths inside them (some constraints full), distinct
    deviations."""
    k, _ = draw(overlapping_queries())
    m, n = k.shape
    budgets = np.array(draw(st.lists(st.floats(0.5, 20.0), min_size=m, max_size=m)))
    scale = draw(st.lists(st.sampled_from([1.0, 0.9, 0.5, 0.1]), min_size=n, max_size=n))
    widths = initial_widths(sp.csr_matrix(k), budgets)
    widths = np.where(np.isfinite(widths), widths * np.array(scale), 1.0)
    devs = np.array(draw(st.permutations(range(n)))) * 0.25  # distinct: order is determined
    return k, budgets, widths, devs


@settings(max_examples=300, deadline=None)
@given(growth_case(), st.integers(0, 2**32 - 1))
def test_growth_is_greedy_in_decreasing_deviation_and_never_violates(
    case: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], seed: int
) -> None:
    k, budgets, widths, devs = case
    candidates = np.arange(k.shape[1])
    grown = grow_greedily(
        sp.csr_matrix(k), budgets, widths, devs, candidates, np.random.default_rng(seed)
    )
    assert grown == greedy_in_order(k, budgets, widths, np.argsort(-devs))
    new = widths.copy()
    new[list(grown)] = list(grown.values())
    assert (k @ new <= budgets * (1 + 1e-9)).all()
    assert all(new[i] > widths[i] for i in grown)
    # maximal: every constrained object ends with one of its constraints full
    full = k @ new >= budgets * (1 - 1e-9)
    assert all(full[np.flatnonzero(k[:, i])].any() for i in candidates if k[:, i].any())


def test_growth_breaks_ties_at_random() -> None:
    k = sp.csr_matrix(np.array([[1.0, 1.0]]))
    winners = {
        next(iter(grow_greedily(k, np.array([4.0]), np.ones(2), np.zeros(2), np.arange(2), rng)))
        for rng in map(np.random.default_rng, range(20))
    }
    assert winners == {0, 1}


def test_deviations_match_the_plan() -> None:
    k = sp.csr_matrix(np.array([[1.0, 2.0, 0.0], [0.0, 1.0, 1.0]]))
    b, t = np.array([3.0, 4.0, 1.0]), np.array([1.0, 0.5])
    np.testing.assert_allclose(deviations(k, b, t), [2.0, 1.5, 0.5])
    np.testing.assert_allclose(PrecisionPlan(k).deviations(b, t), deviations(k, b, t))


def test_capped_growth_spreads_the_leftover_before_the_paper_pass() -> None:
    """One AVG over three objects: the paper gives all leftover to the most burdened one."""
    k = sp.csr_matrix(np.ones((1, 3)))
    budgets, widths = np.array([6.0]), np.array([1.0, 1.0, 1.0])
    burdens, devs = np.array([8.0, 2.0, 1.0]), np.array([7.0, 1.0, 0.0])
    caps = growth_caps(burdens, devs, widths)
    # App. C with p = 2: W' = W·(B/(B − D))^(1/3)
    assert caps.tolist() == pytest.approx([1.0, 2 ** (1 / 3) - 1, 0.0])
    paper = grow_greedily(k, budgets, widths, devs, np.arange(3), np.random.default_rng(0))
    capped = grow_greedily(k, budgets, widths, devs, np.arange(3), np.random.default_rng(0), caps)
    assert paper == {0: 4.0}
    assert capped[1] == pytest.approx(2 ** (1 / 3))  # its cap, then the paper pass:
    assert capped[0] == pytest.approx(6.0 - 1.0 - 2 ** (1 / 3))  # the rest to the top one
    assert sum(capped.values()) + 1.0 == pytest.approx(6.0)  # nothing left over, none violated
