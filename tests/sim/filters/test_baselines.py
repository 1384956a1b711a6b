"""Static baselines: uniform and optimized widths (App. F), fixed-width replay == SourceFilter."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import nnls

from tsmon.protocols.filters import Growth, Query, SourceFilter, initial_widths
from tsmon.sim.filters import (
    OptimizationWarning,
    Workload,
    constraint_matrix,
    fig3_workload,
    fig4_workload,
    filter_scan,
    grid_workload,
    model_cost,
    no_filtering_cost,
    optimized_static_widths,
    run_static,
    uniform_static_widths,
)

# ---------------------------------------------------------------- random workloads

KINDS = ("avg", "sum", "min", "max")
WEIGHTS = (1.0, -1.0, 2.0, -0.5, 3.0)


@st.composite
def query_sets(draw: st.DrawFn, objects: list[str], kinds: tuple[str, ...] = KINDS) -> tuple:
    queries = []
    for j in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(kinds))
        members = draw(st.lists(st.sampled_from(objects), min_size=1, max_size=6, unique=True))
        delta = draw(st.sampled_from([0.25, 0.5, 1.0, 2.0, 3.0, 7.5]))
        if kind in ("avg", "sum"):
            weights = {o: draw(st.sampled_from(WEIGHTS)) for o in members}
            queries.append((Query.avg if kind == "avg" else Query.sum)(f"q{j}", weights, delta))
        else:
            queries.append((Query.min if kind == "min" else Query.max)(f"q{j}", members, delta))
    return tuple(queries)


@st.composite
def workloads(draw: st.DrawFn, kinds: tuple[str, ...] = KINDS) -> Workload:
    """Walks on a grid of quarter units, so values often sit exactly on a bound's edge."""
    n = draw(st.integers(1, 6))
    objects = [f"o{i}" for i in range(n)]
    steps = draw(st.integers(1, 60))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    moves = rng.integers(-3, 4, (steps, n)) * 0.25 * (rng.random((steps, n)) < 0.7)
    values = np.cumsum(moves, axis=0) + rng.integers(-8, 8, n)
    step_sizes = np.array(
        draw(st.lists(st.sampled_from([0.0, 0.1, 0.5, 1.0, 4.0, 9.0]), min_size=n, max_size=n))
    )
    return grid_workload(
        objects,
        {o: f"s{i % 2}" for i, o in enumerate(objects)},
        values,
        queries=draw(query_sets(objects, kinds)),
        step_sizes=step_sizes,
    )


# ---------------------------------------------------------------- not filtering, uniform


def test_no_filtering_counts_every_update_or_every_change() -> None:
    w = grid_workload(["a", "b"], {"a": "s", "b": "s"}, np.array([[1.0, 2], [1, 3], [2, 3]]))
    assert no_filtering_cost(w) == 6
    assert no_filtering_cost(w, changes_only=True) == 4  # a: 1, 2; b: 2, 3
    assert no_filtering_cost(w, changes_only=True) == run_static(w, np.zeros(2)).streamed


def test_constraint_matrix_rows_follow_query_constraints() -> None:
    queries = [
        Query.avg("a", {"x": 2.0, "z": -1.0}, 1.0),
        Query.min("m", ["y", "z"], 0.5),
        Query.sum("s", ["y"], 3.0),
    ]
    k, budgets = constraint_matrix(queries, ["x", "y", "z"])
    assert k.toarray().tolist() == [[2, 0, 1], [0, 1, 0], [0, 0, 1], [0, 1, 0]]
    assert budgets.tolist() == [2.0, 0.5, 0.5, 3.0]
    with pytest.raises(ValueError, match="unknown object 'w'"):
        constraint_matrix([Query.avg("bad", ["w"], 1.0)], ["x"])


@given(workloads())
@settings(max_examples=60, deadline=None)
def test_uniform_is_the_narrowest_per_query_share(w: Workload) -> None:
    widths = uniform_static_widths(w)
    expected = np.full(len(w.objects), np.inf)
    for q in w.queries:
        for absk, budget in q.constraints():  # App. B: each query shares β_j uniformly
            share = budget / sum(absk.values())
            for o in absk:
                expected[w.index[o]] = min(expected[w.index[o]], share)
    np.testing.assert_allclose(widths, expected, rtol=1e-12)
    result = run_static(w, widths)
    assert max(result.width_excess.values()) <= 1e-12


# ---------------------------------------------------------------- optimized static (App. F)


@given(
    st.lists(st.floats(0.01, 10.0), min_size=1, max_size=12),
    st.lists(st.floats(0.2, 5.0), min_size=12, max_size=12),
    st.lists(st.sampled_from([1.0, 2.0, 0.5, 3.0]), min_size=12, max_size=12),
    st.floats(0.01, 100.0),
)
@settings(max_examples=60, deadline=None)
def test_single_avg_matches_the_lagrange_closed_form(
    steps: list[float], costs: list[float], weights: list[float], delta: float
) -> None:
    n = len(steps)
    objects = [f"o{i}" for i in range(n)]
    s, c, k = np.array(steps), np.array(costs[:n]), np.array(weights[:n])
    w = Workload(
        tuple(objects),
        {o: o for o in objects},
        [],
        [],
        [],
        queries=(Query.avg("q", dict(zip(objects, k.tolist(), strict=True)), delta),),
        step_sizes=s,
    )
    result = optimized_static_widths(w, c)
    # App. C: 2 C_i (2 s_i)² / W_i³ = λ K_i, so W_i ∝ (C_i s_i² / K_i)^(1/3), Σ K_i W_i = δ·n
    shape = np.cbrt(c * s**2 / k)
    oracle = delta * n * shape / (k @ shape)
    assert result.converged and result.kkt_residual <= 1e-4
    np.testing.assert_allclose(result.widths, oracle, rtol=1e-4)
    assert k @ result.widths <= delta * n * (1 + 1e-9)
    assert result.model_cost == pytest.approx(model_cost(oracle, s, c), rel=1e-8)


@given(workloads(), st.lists(st.floats(0.1, 10.0), min_size=6, max_size=6))
@settings(max_examples=80, deadline=None)
def test_optimized_beats_uniform_and_satisfies_kkt(w: Workload, cost_list: list[float]) -> None:
    costs = np.array(cost_list[: len(w.objects)])
    with warnings.catch_warnings():
        warnings.simplefilter("error", OptimizationWarning)
        result = optimized_static_widths(w, costs)
    uniform = uniform_static_widths(w)
    s = w.step_sizes
    assert result.model_cost <= model_cost(uniform, s, costs) * (1 + 1e-9)
    k, budgets = constraint_matrix(w.queries, w.objects)
    widths = result.widths
    queried = np.asarray(k.sum(axis=0)).ravel() > 0
    assert np.array_equal(np.isinf(widths), ~queried)  # App. F: objects in no query: inf
    finite = np.where(queried, widths, 0.0)
    usage = (k @ finite) / budgets
    assert usage.max() <= 1 + 1e-9
    # KKT of the convex problem: 2 a_i / W_i³ = Σ_j λ_j |K_j,i|, λ >= 0 on tight constraints
    a = costs * (2 * s) ** 2
    live = queried & (a > 0)
    if live.any():
        assert np.all(widths[live] > 0)
        grad = 2 * a[live] / widths[live] ** 3
        tight = usage >= 1 - 1e-6
        kt = (k[tight][:, live].toarray() / budgets[tight][:, None]).T
        _, residual = nnls(kt, grad)
        assert residual <= 1e-4 * np.linalg.norm(grad), (residual, np.linalg.norm(grad))
    run = run_static(w, widths)
    assert max(run.width_excess.values(), default=0.0) <= 1e-9


def test_zero_step_objects_get_what_is_left() -> None:
    q1 = Query.avg("q1", ["a", "b"], 1.0)  # a moves: it takes all of q1's budget 2
    q2 = Query.sum("q2", ["b", "c"], 3.0)  # b, c never move: they share q2, b capped by q1
    w = Workload(
        ("a", "b", "c", "d"),
        dict.fromkeys("abcd", "s"),
        [],
        [],
        [],
        queries=(q1, q2),
        step_sizes=[1.0, 0.0, 0.0, 5.0],
    )
    result = optimized_static_widths(w)
    np.testing.assert_allclose(result.widths[:3], [2.0, 0.0, 1.5], atol=1e-9)
    assert math.isinf(result.widths[3])  # d is in no query


def test_optimized_needs_step_sizes_and_valid_costs() -> None:
    w = fig3_workload(1.0, steps=5).with_step_sizes(None)
    with pytest.raises(ValueError, match="step sizes"):
        optimized_static_widths(w)
    w = fig3_workload(1.0, steps=5)
    with pytest.raises(ValueError, match="costs C_i"):
        optimized_static_widths(w, np.zeros(10))
    with pytest.raises(ValueError, match="unknown object"):
        optimized_static_widths(w, {"nope": 1.0})


def test_non_convergence_is_reported_and_the_widths_stay_feasible() -> None:
    w = fig4_workload(2.0, steps=5, seed=3)
    with pytest.warns(OptimizationWarning, match="did not converge"):
        result = optimized_static_widths(w, maxiter=1)
    assert not result.converged
    k, budgets = constraint_matrix(w.queries, w.objects)
    assert np.all(k @ result.widths <= budgets * (1 + 1e-9))


def test_optimized_static_sends_less_on_fig4_with_room_to_filter() -> None:
    w = fig4_workload(16.0, steps=5_000, seed=1)
    uniform = run_static(w, uniform_static_widths(w))
    optimized = run_static(w, optimized_static_widths(w).widths)
    assert optimized.streamed < uniform.streamed < no_filtering_cost(w)


# ---------------------------------------------------------------- fixed-width replay


def source_filter_sends(ts: np.ndarray, values: np.ndarray, width: float) -> list[bool]:
    """Drive a real SourceFilter with a fixed, non-adaptive width."""
    f = SourceFilter("o", period_ms=2**62, shrink=0.0)
    if not math.isinf(width):  # the filter starts at W = inf; one growth message sets W
        f.apply(Growth("o", width, int(ts[0]), seq=1, adaptive=False), int(ts[0]))
    return [bool(f.observe(int(t), float(v))) for t, v in zip(ts, values, strict=True)]


def naive_scan(values: np.ndarray, width: float) -> list[bool]:
    out, centre = [], None
    for v in values.tolist():
        inside = math.isinf(width) or (
            centre is not None and centre - width / 2 <= v <= centre + width / 2
        )
        out.append(not inside)
        centre = centre if inside else v
    return out


widths_st = st.one_of(
    st.sampled_from([0.0, 0.25, 0.5, 1.0, 1.5, 2.0, math.inf]), st.floats(1e-3, 50.0)
)


@given(
    st.lists(st.sampled_from([-1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0, 0.1, 0.3]), max_size=300),
    widths_st,
    st.floats(-10.0, 10.0),
)
@settings(max_examples=200, deadline=None)
def test_filter_scan_equals_source_filter(moves: list[float], width: float, start: float) -> None:
    values = start + np.cumsum(moves) if moves else np.array([])
    ts = np.arange(len(values), dtype=np.int64) * 10
    got = filter_scan(values, width).tolist()
    assert got == naive_scan(values, width)
    if len(values):
        assert got == source_filter_sends(ts, values, width)


def test_filter_scan_long_quiet_stretches() -> None:
    values = np.concatenate([np.zeros(100_000), [5.0], np.zeros(3), np.full(70_000, 5.0), [0.0]])
    sends = [0, 100_000, 100_001, 100_004, 170_004]
    assert np.flatnonzero(filter_scan(values, 1.0)).tolist() == sends
    assert filter_scan(values, 1.0).tolist() == naive_scan(values, 1.0)


@given(workloads(), st.data())
@settings(max_examples=60, deadline=None)
def test_run_static_counts_equal_source_filter_per_object(w: Workload, data: st.DataObject) -> None:
    widths = np.array([data.draw(widths_st) for _ in w.objects])
    result = run_static(w, widths)
    for i, o in enumerate(w.objects):
        pos = w.object_updates(i)
        expected = source_filter_sends(w.ts_ms[pos], w.values[pos], float(widths[i]))
        assert result.sent[pos].tolist() == expected, o
        assert result.per_object[i] == sum(expected)
    assert result.streamed == int(result.sent.sum()) == result.per_object.sum()
    assert result.max_violation <= 0 or math.isinf(result.max_violation)


def check_answers(w: Workload, widths: np.ndarray) -> int:
    """Replay cached centres; count updates where an answer misses the exact aggregate or δ."""
    result = run_static(w, widths)
    width_of = dict(zip(w.objects, widths.tolist(), strict=True))
    centres: dict[str, float] = {}
    scale = 1 + float(np.abs(w.values).max()) * 10
    misses = 0
    for k, current in w.iter_exact_values():
        obj = w.objects[w.obj[k]]
        if result.sent[k]:
            centres[obj] = float(w.values[k])
        exact_values = dict(zip(w.objects, current.tolist(), strict=True))
        for q in w.queries:
            if not all(o in centres for o in q.weights):
                continue
            lo, hi = q.answer(centres, width_of)
            exact = q.exact(exact_values)
            tol = 1e-9 * scale
            if not (lo - tol <= exact <= hi + tol) or hi - lo > q.delta + tol:
                misses += 1
    assert result.max_violation <= 0
    return misses


@given(workloads())
@settings(max_examples=60, deadline=None)
def test_static_widths_keep_every_answer_exact_within_delta(w: Workload) -> None:
    assert check_answers(w, uniform_static_widths(w)) == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OptimizationWarning)
        optimized = optimized_static_widths(w).widths
    assert check_answers(w, optimized) == 0


def test_widths_breaking_a_constraint_show_in_width_excess() -> None:
    w = fig3_workload(1.0, steps=50)
    result = run_static(w, np.full(10, 1.5))
    assert result.width_excess["avg"] == pytest.approx(0.5)
    mapped = run_static(w, {o: 1.0 for o in w.objects})
    assert mapped.width_excess["avg"] == pytest.approx(0.0)
    assert mapped.per_time_unit == mapped.streamed / 50


def test_run_static_rejects_bad_widths() -> None:
    w = fig3_workload(1.0, steps=5)
    with pytest.raises(ValueError, match="one width W_i >= 0 per object"):
        run_static(w, np.ones(3))
    with pytest.raises(ValueError, match="one width W_i >= 0"):
        run_static(w, np.full(10, -1.0))
    with pytest.raises(ValueError, match="widths missing"):
        run_static(w, {"w0": 1.0})


def test_initial_widths_is_reused_not_reimplemented() -> None:
    w = fig4_workload(3.0, steps=2, seed=11)
    k, budgets = constraint_matrix(w.queries, w.objects)
    assert isinstance(k, sp.csr_matrix)
    np.testing.assert_array_equal(uniform_static_widths(w), initial_widths(k, budgets))
