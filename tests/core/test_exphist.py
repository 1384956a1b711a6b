"""Exponential histograms (Datar et al.) against exact window counts/sums from prefix sums.

Every insert is followed by ``check_invariants`` (Invariant 2, the l-canonical shape, the
Theorem 1/5 bucket bound) and queries over windows ``n <= N`` whose relative error must not
exceed eps (Theorem 1 / Theorem 5).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tsmon.core.exphist import BasicCounting, WindowSum, bucket_bound, l_canonical

EPS = st.sampled_from([1.0, 0.5, 0.34, 0.25, 0.1, 0.05])


@st.composite
def bit_streams(draw: st.DrawFn) -> tuple[int, float, np.ndarray]:
    """Window N, eps and a bit stream of a drawn density, with bursts of 1s and of 0s."""
    n_items = draw(st.integers(1, 300))
    N = draw(st.integers(1, 80))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    p = draw(st.sampled_from([0.02, 0.3, 0.7, 1.0]))
    bits = (rng.random(n_items) < p).astype(np.int64)
    if draw(st.booleans()):  # a long run of 0s: the whole histogram expires
        start = draw(st.integers(0, n_items - 1))
        bits[start : start + N + 1] = 0
    return N, draw(EPS), bits


@st.composite
def int_streams(draw: st.DrawFn) -> tuple[int, float, int, np.ndarray]:
    """Window N, eps, bound R and integers in [0, R], many of them 0, R or small."""
    n_items = draw(st.integers(1, 300))
    N, R = draw(st.integers(1, 80)), draw(st.sampled_from([1, 2, 7, 255, 10**6]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kind = draw(st.sampled_from(["uniform", "sparse", "extremes"]))
    values = rng.integers(0, R + 1, n_items)
    if kind == "sparse":
        values[rng.random(n_items) < 0.8] = 0
    elif kind == "extremes":
        values = np.where(rng.random(n_items) < 0.5, 0, R)
    return N, draw(EPS), R, values


def windows_to_check(t: int, N: int, rng: np.random.Generator) -> np.ndarray:
    """Every n <= N at a few positions; N, 1 and a handful of random n elsewhere."""
    if t % 25 == 0 or N <= 8:
        return np.arange(0, N + 1)
    return np.unique(np.concatenate(([1, N], rng.integers(1, N + 1, 4))))


def assert_relative_error(est: float, err: float, true: int, eps: float, what: str) -> None:
    """Within eps of the exact value, and within the guaranteed error the histogram reports,
    itself no more than eps of the exact value (what an answer's ``bound`` exposes)."""
    if true == 0:
        assert est == 0 and err == 0, f"{what}: estimate {est} ± {err} for an empty window"
    else:
        assert abs(est - true) <= err + 1e-9, f"{what}: {est} ± {err} vs {true}"
        assert err <= eps * true + 1e-9, f"{what}: error {err} > eps * {true}, eps={eps}"


@settings(max_examples=60, deadline=None)
@given(bit_streams())
def test_basic_counting_error_and_invariants_after_every_insert(case) -> None:
    N, eps, bits = case
    eh = BasicCounting(N, eps)
    prefix = np.concatenate(([0], np.cumsum(bits)))
    rng = np.random.default_rng(0)
    for t, bit in enumerate(bits.tolist(), start=1):
        eh.update(bit)
        eh.check_invariants()
        assert eh.bucket_count <= bucket_bound(N, eps)
        for n in windows_to_check(t, N, rng).tolist():
            true = int(prefix[t] - prefix[max(t - n, 0)])
            assert_relative_error(eh.count(n), eh.error(n), true, eps, f"t={t} n={n}")


@settings(max_examples=60, deadline=None)
@given(int_streams())
def test_window_sum_error_and_invariants_after_every_insert(case) -> None:
    N, eps, R, values = case
    eh = WindowSum(N, eps, R)
    prefix = np.concatenate(([0], np.cumsum(values)))
    rng = np.random.default_rng(0)
    for t, v in enumerate(values.tolist(), start=1):
        eh.update(v)
        eh.check_invariants()
        assert eh.bucket_count <= bucket_bound(N, eps, R)
        assert eh.buffered < eh.buffer_size
        for n in windows_to_check(t, N, rng).tolist():
            true = int(prefix[t] - prefix[max(t - n, 0)])
            assert_relative_error(eh.sum(n), eh.error(n), true, eps, f"t={t} n={n}")


@settings(max_examples=40, deadline=None)
@given(bit_streams(), st.integers(1, 5))
def test_extend_equals_update_in_chunks(case, chunks: int) -> None:
    N, eps, bits = case
    one = BasicCounting(N, eps)
    for b in bits.tolist():
        one.update(b)
    bulk = BasicCounting(N, eps)
    for part in np.array_split(bits, chunks):
        bulk.extend(part)
    assert (bulk.time, bulk.buckets()) == (one.time, one.buckets())
    R = 9
    values = bits * np.arange(len(bits)) % (R + 1)
    s_one, s_bulk = WindowSum(N, eps, R), WindowSum(N, eps, R)
    for v in values.tolist():
        s_one.update(v)
    for part in np.array_split(values, chunks):
        s_bulk.extend(part)
    assert s_bulk.buckets() == s_one.buckets() and s_bulk.sum() == s_one.sum()


def test_paper_example_1_merge_cascade() -> None:
    """§2.1 Example 1: 32,16,8,8,4,4,2,1,1 -> +1 -> ...,2,2,1 -> +1 +1 -> 32,16,16,8,4,2,1.

    The example says k/2 = 2, but its merges happen at 3 equal sizes, i.e. at l + 2 for
    l = 1 (step 3's rule with k/2 = 2 would wait for 4), and its first state holds a single
    size-2 bucket, below k/2 = 2. So it is the algorithm with l = ceil(k/2) = 1 (eps = 0.5).
    """
    eh = BasicCounting(N=10_000, eps=0.5)
    eh.extend([1] * 76)  # the unique l-canonical state of 76 for l = 1
    assert [s for _, s in eh.buckets()] == [32, 16, 8, 8, 4, 4, 2, 1, 1]
    eh.update(1)
    assert [s for _, s in eh.buckets()] == [32, 16, 8, 8, 4, 4, 2, 2, 1]
    eh.extend([1, 1])
    assert [s for _, s in eh.buckets()] == [32, 16, 16, 8, 4, 2, 1]


def test_l_canonical_is_the_unique_shape_of_every_total() -> None:
    for half in (1, 2, 3, 5):
        for S in range(0, 600):
            counts = l_canonical(S, half)
            assert sum(c * 2**i for i, c in enumerate(counts)) == S
            assert all(half <= c <= half + 1 for c in counts[:-1])
            assert not counts or 1 <= counts[-1] <= half + 1


def test_bucket_bound_matches_theorem_1_for_even_k() -> None:
    for N in (1, 10, 1000, 10**6):
        for eps, k in ((0.5, 2), (0.1, 10), (0.01, 100)):
            paper = (k / 2 + 1) * (math.log2(2 * N / k + 1) + 1)
            assert bucket_bound(N, eps) == math.floor(paper)


def test_window_sum_memory_is_logarithmic_not_linear() -> None:
    N, eps, R = 100_000, 0.1, 1000
    values = np.random.default_rng(3).integers(0, R + 1, 3 * N)
    eh = WindowSum(N, eps, R).extend(values)
    true = int(values[-N:].sum())
    assert abs(eh.sum() - true) <= eps * true
    assert eh.bucket_count <= bucket_bound(N, eps, R) < 200  # vs 100,000 values held exactly
    eh.check_invariants()


@pytest.mark.parametrize(
    ("make", "bad", "message"),
    [
        (lambda: BasicCounting(10, 0.1), 2, "bit must be 0 or 1"),
        (lambda: WindowSum(10, 0.1, R=5), 6, "integer in \\[0, R=5\\]"),
        (lambda: WindowSum(10, 0.1, R=5), -1, "integer in \\[0, R=5\\]"),
    ],
)
def test_bad_values_are_rejected_before_any_change(make, bad, message) -> None:
    eh = make()
    eh.update(1)
    before = (eh.time, eh.buckets())
    with pytest.raises(ValueError, match=message):
        eh.update(bad)
    with pytest.raises(ValueError):
        eh.extend([1, bad])
    assert (eh.time, eh.buckets()) == before


@pytest.mark.parametrize(("N", "eps"), [(0, 0.1), (10, 0.0), (10, 1.5)])
def test_bad_parameters_name_the_fix(N: int, eps: float) -> None:
    with pytest.raises(ValueError, match="must be"):
        BasicCounting(N, eps)


def test_window_larger_than_N_is_refused() -> None:
    eh = BasicCounting(10, 0.1).extend([1] * 20)
    with pytest.raises(ValueError, match="window n must be in \\[0, N=10\\]"):
        eh.count(11)
