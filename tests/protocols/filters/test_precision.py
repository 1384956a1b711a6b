"""Precision manager pieces: burden targets (§3.2.1, App. B), growth, source filter."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from tsmon.protocols.filters import (
    Growth,
    SourceFilter,
    StreamedUpdate,
    burden_targets,
    grow_greedily,
    initial_widths,
)


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


def test_source_applies_growth_at_its_boundary_without_shrinking_twice() -> None:
    f = SourceFilter("a", 2.0, 0.5)
    assert f.observe(0, 1.0) == StreamedUpdate("a", 1.0, 0)
    assert f.apply(Growth("a", 3.0, 10)) is None
    assert f.on_period(10) is None
    assert f.width == 3.0
    assert f.on_period(20) is None and f.width == 1.5
    with pytest.raises(ValueError, match="older than"):
        f.apply(Growth("a", 3.0, 10))
