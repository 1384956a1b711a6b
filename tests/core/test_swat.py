"""SWAT (Bulut & Singh 2003, §2) against exact answers recomputed from the raw stream.

Oracle: the test keeps every value; position ``p`` (back in time) after ``c`` arrivals is
``x[c - 1 - p]``. Every node's blocks, every answer and every bound is checked against numpy.
"""

from __future__ import annotations

import copy
import itertools
import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tsmon.core.swat import SWAT
from tsmon.core.swat_copy import SwatCopy
from tsmon.core.swat_nodes import KINDS
from tsmon.core.swat_query import exponential_query_bound, linear_query_bound
from tsmon.core.wavelets import haar_forward, haar_inverse, merge_blocks

FAST = settings(max_examples=60, deadline=None)


@st.composite
def trees(draw: st.DrawFn) -> tuple[SWAT, np.ndarray]:
    """A SWAT of random shape fed a bounded random stream, and that stream."""
    window = draw(st.sampled_from([4, 8, 16, 32, 64, None]))
    k = draw(st.sampled_from([1, 1, 2, 4, 8]))
    n_levels = None if window is None else window.bit_length() - 1
    levels = None if window is None else draw(st.none() | st.integers(1, n_levels))
    basis = draw(st.sampled_from(["haar", "box"]))
    n = draw(st.integers(1, 300))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kind = draw(st.sampled_from(["noise", "walk", "ramp", "steps"]))
    if kind == "noise":
        x = rng.uniform(-100, 100, n)
    elif kind == "walk":
        x = np.clip(np.cumsum(rng.normal(0, 3, n)), -1000, 1000)
    elif kind == "ramp":
        x = draw(st.floats(-5, 5)) * np.arange(n) + draw(st.floats(-100, 100))
    else:
        x = np.round(rng.uniform(-3, 3, n)) * 10
    return SWAT(window, k, levels, basis).extend(x), x


def window_of(tree: SWAT, x: np.ndarray) -> np.ndarray:
    """Raw values the tree answers for, most recent first."""
    c = tree.count
    return x[:c][::-1][: c if tree.window is None else tree.window]


def tol(*scales: float) -> float:
    return 1e-9 * (1.0 + sum(abs(s) for s in scales))


@FAST
@given(trees())
def test_every_node_summarises_its_raw_segment(case):
    tree, x = case
    for node in tree.nodes(pending=True):
        seg = x[node.newest - node.size + 1 : node.newest + 1][::-1]
        assert len(seg) == node.size and node.newest < tree.count
        blocks = seg.reshape(len(node.coefficients), -1)
        np.testing.assert_allclose(node.blocks(), blocks.mean(axis=1), atol=tol(*seg))
        np.testing.assert_array_equal(node.block_min, blocks.min(axis=1))
        np.testing.assert_array_equal(node.block_max, blocks.max(axis=1))
        start, end = node.segment(tree.count)
        np.testing.assert_allclose(
            node.values(), np.repeat(node.blocks(), node.size // len(blocks))
        )
        assert end - start + 1 == node.size
        if node.kind != "P":  # a level-l node spans 2**(l+1) values (§2.2)
            assert node.size == 2 << node.level
            assert len(node.coefficients) == min(tree.k, node.size)


@FAST
@given(trees())
def test_reconstruction_is_within_each_points_bound(case):
    tree, x = case
    raw = window_of(tree, x)
    rec = tree.reconstruct()
    assert rec.shape == raw.shape
    for p in range(len(raw)):
        r = tree.point(p)
        assert r.value == rec[p]
        err = abs(r.value - raw[p])
        assert err <= r.range_bound + tol(raw[p]) and err <= r.eps_bound + tol(raw[p])
        assert r.lower - tol(raw[p]) <= raw[p] <= r.upper + tol(raw[p])


@pytest.mark.parametrize("window", [4, 16, 64])
def test_reconstruction_is_exact_with_one_coefficient_per_value(window):
    x = np.random.default_rng(window).normal(size=5 * window)
    for c in range(1, len(x)):
        tree = SWAT(window, k=window).extend(x[:c])
        np.testing.assert_allclose(tree.reconstruct(), window_of(tree, x[:c]), rtol=1e-12)


def raw_bound(tree: SWAT, x: np.ndarray, idx: np.ndarray, w: np.ndarray, start: int) -> float:
    """The §2.6 bound of Fig. 3b's answer from ``start`` up, recomputed from the raw stream:
    each position takes the first node covering it (levels ``start`` up, ``R -> S -> L``, then
    finer levels down to the pending pieces), whose block's raw values give the range bound;
    the eps bound uses ``eps = max |x_t - x_(t-1)|``."""
    c = tree.count
    eps = float(np.abs(np.diff(x[:c])).max()) if c > 1 else 0.0
    nodes = sorted(
        tree.nodes(pending=True),
        key=lambda n: (
            n.level < start,
            -n.level if n.level < start else n.level,
            KINDS.index(n.kind),
        ),
    )
    total_range = total_eps = 0.0
    for p, wi in zip(idx.tolist(), w.tolist(), strict=True):
        node = next(n for n in nodes if n.segment(c)[0] <= p <= n.segment(c)[1])
        seg = x[node.newest - node.size + 1 : node.newest + 1][::-1]
        m = node.size // len(node.coefficients)
        rel = p - node.segment(c)[0]
        block, j = seg[rel // m * m : rel // m * m + m], rel % m
        avg = block.mean()
        total_range += abs(wi) * max(avg - block.min(), block.max() - avg)
        total_eps += abs(wi) * eps / m * (j * (j + 1) / 2 + (m - 1 - j) * (m - j) / 2)
    return min(total_range, total_eps)


@settings(max_examples=100, deadline=None)
@given(trees(), st.data())
def test_inner_product_is_within_returned_bounds(case, data):
    tree, x = case
    raw = window_of(tree, x)
    m = data.draw(st.integers(1, len(raw)))
    idx = np.array(data.draw(st.lists(st.integers(0, len(raw) - 1), min_size=m, max_size=m)))
    w = np.array(data.draw(st.lists(st.floats(-10, 10), min_size=m, max_size=m)))
    bounds = {lv: raw_bound(tree, x, idx, w, lv) for lv in tree.levels}
    near = st.sampled_from(sorted(bounds.values())).flatmap(  # a delta that splits the levels
        lambda b: st.sampled_from([0.5, 0.97, 1.03, 2.0]).map(lambda f: b * f)
    )
    delta = data.draw(st.none() | st.floats(0, 1e4) | near)
    r = tree.inner_product(idx, w, delta=delta)
    exact = float(w @ raw[idx])
    t = tol(*(w * raw[idx]), *w)
    err = abs(r.value - exact)
    assert err <= r.range_bound + t and err <= r.eps_bound + t and r.bound <= r.range_bound
    assert r.lower - t <= exact <= r.upper + t
    if delta is not None and r.satisfied:
        assert err <= delta + t
    # satisfied against the exact bounds: some start level's bound meets delta, the coarsest
    # such answers (Fig. 3b from the finest when none does, or when no delta is given)
    t_b = tol(*(w * raw[idx]), *w, *bounds.values())
    met = [lv for lv in tree.levels if delta is not None and bounds[lv] <= delta - t_b]
    if delta is None or all(abs(b - delta) > t_b for b in bounds.values()):
        assert r.satisfied == (delta is None or bool(met))
        chosen = max(met) if met else tree.levels[0]
        assert r.start_level == chosen and r.bound == pytest.approx(bounds[chosen], abs=t_b)


def test_a_loose_precision_is_answered_from_coarser_nodes():
    tree = SWAT(window=256).extend(np.sin(np.arange(1000) / 20))
    idx, w = np.arange(256), np.ones(256)
    finest = tree.inner_product(idx, w)
    loose = tree.inner_product(idx, w, delta=math.inf)
    assert loose.start_level == tree.levels[-1] and finest.start_level == tree.levels[0]
    assert loose.bound >= finest.bound and max(n[0] for n in loose.nodes) == tree.levels[-1]
    mid = tree.inner_product(idx, w, delta=(finest.bound + loose.bound) / 2)
    assert mid.satisfied and mid.bound <= (finest.bound + loose.bound) / 2


@FAST
@given(trees(), st.floats(-120, 120), st.floats(0, 50))
def test_range_query_brackets_the_exact_positions(case, value, radius):
    tree, x = case
    raw = window_of(tree, x)
    res = tree.range_query(value, radius)
    assert res.possible.tolist() == tree.snapshot().range_query(value, radius).possible.tolist()
    low, high = value - radius, value + radius  # the §2.4 rectangle's value side
    exact = set(np.flatnonzero((raw >= low) & (raw <= high)).tolist())
    assert set(res.certain.tolist()) <= exact <= set(res.possible.tolist())
    rec = tree.reconstruct()
    assert res.matches.tolist() == np.flatnonzero((rec >= low) & (rec <= high)).tolist()
    sub = tree.range_query(value, radius, start=len(raw) // 3, end=len(raw) - 1)
    assert set(sub.possible.tolist()) == {p for p in res.possible.tolist() if p >= len(raw) // 3}


@FAST
@given(trees(), st.lists(st.integers(1, 70), min_size=1, max_size=30))
def test_extend_equals_repeated_update(case, chunks):
    bulk, x = case
    one = SWAT(bulk.window, bulk.k, len(bulk.levels) if bulk.window else None, "box")
    for v in x.tolist():
        one.update(v)
    split = SWAT(bulk.window, bulk.k, len(bulk.levels) if bulk.window else None, "box")
    cuts = np.cumsum(chunks)
    for part in np.split(x, cuts[cuts < len(x)]):
        split.extend(part)
    for other in (one, split):
        assert other.count == bulk.count and other.max_step == bulk.max_step
        assert other.levels == bulk.levels
        a, b = bulk.nodes(pending=True), other.nodes(pending=True)
        assert [(n.level, n.kind, n.newest, n.size) for n in a] == [
            (n.level, n.kind, n.newest, n.size) for n in b
        ]
        for u, v in zip(a, b, strict=True):
            np.testing.assert_allclose(u.blocks(), v.blocks(), rtol=1e-12, atol=1e-9)
            np.testing.assert_array_equal(u.block_min, v.block_min)
            np.testing.assert_array_equal(u.block_max, v.block_max)


@pytest.mark.parametrize("k", [1, 2, 8])
def test_memory_is_logarithmic_and_constant_over_time(k):
    for n in range(2, 17):
        window = 1 << n
        tree = SWAT(window, k).extend(np.zeros(3 * window))
        assert tree.n_nodes == 3 * n - 2  # §2.6
        assert tree.n_coefficients <= k * (3 * n - 2)
        if k == 1:
            assert tree.n_coefficients == 3 * n - 2
        before = tree.n_coefficients
        tree.extend(np.ones(5 * window + 3))
        assert tree.n_coefficients == before and len(tree.nodes()) == 3 * n - 2


def test_whole_stream_mode_grows_levels_logarithmically():
    tree = SWAT(window=None)
    x = np.random.default_rng(3).normal(size=5000)
    for c in [1, 2, 3, 7, 64, 100, 1000, 4095, 4096, 5000]:
        tree.extend(x[tree.count : c])
        assert tree.levels[-1] == max(0, int(math.log2(c)) - 1)
        assert len(tree.reconstruct()) == c
        r = tree.inner_product(np.arange(c), np.ones(c))
        assert abs(r.value - x[:c].sum()) <= r.bound + 1e-9 * c


def test_level_l_is_updated_every_2_to_the_l_arrivals():
    tree, window = SWAT(window=32), 32
    x = np.random.default_rng(4).normal(size=200)
    seen: dict[int, int] = {}
    for c, v in enumerate(x, start=1):
        tree.update(v)
        for node in tree.nodes():
            if node.kind == "R":  # Fig. 3a: R_l := DWT(R_{l-1}, L_{l-1}) when due
                assert (node.newest + 1) % (1 << node.level) == 0
                if seen.get(node.level) != node.newest:
                    assert c % (1 << node.level) == 0 and c == node.newest + 1
                    seen[node.level] = node.newest
    assert set(seen) == set(range(window.bit_length() - 1))


@pytest.mark.parametrize("count", [300, 301, 306, 333])
def test_fewer_levels_kept_trades_space_for_error(count):
    n = 6  # N = 64
    x = np.random.default_rng(count).normal(size=count).cumsum()
    ramp = 0.5 * np.arange(count)
    idx, w = np.arange(64), np.ones(64)
    eps_bounds, ramp_bounds, spaces = [], [], []
    for levels in range(1, n + 1):  # §2.5: keep the top `levels` levels
        tree = SWAT(64, levels=levels).extend(x)
        eps_bounds.append(tree.inner_product(idx, w).eps_bound / tree.max_step)
        spaces.append(tree.n_coefficients)
        ramp_bounds.append(SWAT(64, levels=levels).extend(ramp).inner_product(idx, w).range_bound)
    assert all(a >= b - 1e-9 for a, b in itertools.pairwise(eps_bounds))
    assert all(a >= b - 1e-9 for a, b in itertools.pairwise(ramp_bounds))
    assert all(a < b for a, b in itertools.pairwise(spaces))
    full = SWAT(64).extend(x).inner_product(idx, w)
    assert eps_bounds[-1] == pytest.approx(full.eps_bound / np.abs(np.diff(x)).max())


@pytest.mark.parametrize("slope", [0.25, -1.0, 3.0])
def test_paper_error_bounds_on_ramps(slope):
    """§2.6 assumes d_{i+1} - d_i = eps; Eq. (2) and (3) bound exponential/linear queries."""
    window = 128
    x = 10 + slope * np.arange(3 * window)
    tree = SWAT(window)
    for c, v in enumerate(x, start=1):
        tree.update(v)
        if c < window:
            continue
        raw = window_of(tree, x[:c])
        for m in (2, 7, 64, window):
            exp_w, lin_w = 0.5 ** np.arange(m), (m - np.arange(m)) / m
            for w, eq in ((exp_w, exponential_query_bound), (lin_w, linear_query_bound)):
                r = tree.inner_product(np.arange(m), w)
                err = abs(r.value - w @ raw[:m])
                assert err <= eq(m, abs(slope)) and err <= r.eps_bound + 1e-9 * c


@FAST
@given(trees(), st.data())
def test_a_full_copy_answers_like_the_tree(case, data):
    tree, x = case
    raw = window_of(tree, x)
    clone = tree.snapshot()
    p = data.draw(st.integers(0, len(raw) - 1))
    idx = np.arange(p + 1)
    w = np.linspace(1, 0.1, p + 1)
    delta = data.draw(st.none() | st.floats(0, 200))  # the copy searches levels one by one
    a, b = tree.inner_product(idx, w, delta), clone.inner_product(idx, w, delta)
    assert b.value == pytest.approx(a.value, abs=tol(*raw)) and b.nodes == a.nodes
    assert b.bound == pytest.approx(a.bound, abs=tol(*raw)) and b.satisfied == a.satisfied
    assert abs(b.value - w @ raw[idx]) <= b.bound + tol(*raw)


def test_a_partial_copy_answers_what_it_covers_and_defers_the_rest():
    tree = SWAT(window=64).extend(np.random.default_rng(5).normal(size=1001))
    coarse = [n for n in tree.nodes() if n.level >= 3]
    clone = SwatCopy(coarse, tree.count, tree.max_step, tree.window)
    covered = clone.covers(np.arange(64))
    assert covered[-1] and not covered[0]  # level 3 was last updated 1001 % 8 arrivals ago
    raw = window_of(tree, np.random.default_rng(5).normal(size=1001))
    p = int(np.flatnonzero(covered)[0])
    r = clone.point(p)
    assert abs(r.value - raw[p]) <= r.bound + 1e-9
    with pytest.raises(LookupError, match="forward the query to the parent"):
        clone.point(0)
    empty = SwatCopy([], count=tree.count, window=64)
    assert not empty.covers([0, 5]).any()
    with pytest.raises(LookupError, match="not covered by the 0 cached nodes"):
        empty.inner_product([0, 5], [1.0, 1.0], delta=1.0)
    for node in coarse:  # a cached node stays truthful: absolute indices, immutable values
        clone.count = tree.count + 10
        assert node.segment(clone.count)[0] == node.segment(tree.count)[0] + 10


@given(st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=64), st.integers(0, 6))
def test_haar_merge_equals_truncated_transform_of_the_parent(values, log_k):
    n = 1 << (len(values) - 1).bit_length()
    x = np.resize(np.asarray(values), 2 * n)
    k = min(1 << log_k, 2 * n)
    np.testing.assert_allclose(haar_inverse(haar_forward(x)), x, atol=1e-9)
    recent, older = x[:n], x[n:]
    kc = max(k // 2, 1)
    blocks = merge_blocks(recent.reshape(kc, -1).mean(1), older.reshape(kc, -1).mean(1), k)
    np.testing.assert_allclose(haar_forward(blocks), haar_forward(x)[:k], atol=1e-9)
    np.testing.assert_allclose(
        haar_inverse(haar_forward(x)[:k], 2 * n), np.repeat(blocks, 2 * n // k), atol=1e-9
    )


def test_bad_arguments_say_what_to_do():
    with pytest.raises(ValueError, match="power of two >= 4"):
        SWAT(window=100)
    with pytest.raises(ValueError, match="k must be a power of two"):
        SWAT(k=3)
    with pytest.raises(ValueError, match=r"levels must be in \[1, log2\(window\)\]"):
        SWAT(window=16, levels=5)
    with pytest.raises(ValueError, match="keeps every level"):
        SWAT(window=None, levels=2)
    tree = SWAT(window=8)
    with pytest.raises(ValueError, match="finite"):
        tree.update(math.nan)
    with pytest.raises(ValueError, match="finite"):
        tree.extend([1.0, math.inf])
    tree.extend(np.arange(20.0))
    with pytest.raises(ValueError, match=r"positions must lie in \[0, 7\]"):
        tree.point(8)
    with pytest.raises(ValueError, match="equal length"):
        tree.inner_product([0, 1], [1.0])
    with pytest.raises(ValueError, match="delta must be"):
        tree.point(0, delta=-1.0)
    with pytest.raises(ValueError, match="start <= end"):
        tree.range_query(1.0, 1.0, start=5, end=2)


def test_repr_pickle_and_deepcopy():
    tree = SWAT(window=16, k=2)
    assert "count=0" in repr(tree) and tree.nodes() == []
    tree.extend(np.arange(40.0))
    for other in (pickle.loads(pickle.dumps(tree)), copy.deepcopy(tree)):
        np.testing.assert_array_equal(other.reconstruct(), tree.reconstruct())
        other.update(1.0)
        assert other.count == tree.count + 1
