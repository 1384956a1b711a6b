"""Window statistics against a from-scratch recomputation, on hypothesis-generated streams."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.oracle import observed_coverage, tolerance, window_index, window_stats
from tsmon.core.register import Register, RegisterConfig
from tsmon.core.rmq import crossing_max
from tsmon.core.window_spec import WindowSpec
from tsmon.core.windows import STATS, advance_many, open_window

MOMENT_AND_ORDER_STATS = [s for s in STATS if s != "coverage"]


@st.composite
def streams(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    """Irregular timestamps, values around a possibly huge offset, with occasional outliers."""
    n = draw(st.integers(1, 160))
    if draw(st.booleans()):
        gaps = draw(st.lists(st.integers(1, 400_000), min_size=n, max_size=n))
    else:  # bursts 1 ms apart between long gaps: short windows far from the previous anchor
        burst_gap = st.sampled_from([1, 1, 1, 2, 3]) | st.integers(10_000, 400_000)
        gaps = draw(st.lists(burst_gap, min_size=n, max_size=n))
    ts = 1_700_000_000_000 + np.cumsum(np.array(gaps, dtype=np.int64))
    offset = draw(st.sampled_from([0.0, 1e9, -3.5e6, 1e-3]))
    kind = draw(st.sampled_from(["noise", "walk", "steps"]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    noise = rng.normal(0.0, draw(st.sampled_from([1e-3, 1.0, 50.0])), n)
    if kind == "walk":
        noise = np.cumsum(noise)
    elif kind == "steps":
        noise = np.round(noise)  # many ties for min/max
    return ts, offset + noise


@st.composite
def specs(draw: st.DrawFn, ts: np.ndarray) -> WindowSpec:
    kind = draw(st.sampled_from(["count", "time", "landmark"]))
    if kind == "count":
        return WindowSpec.count(draw(st.integers(1, 40)), before=draw(st.booleans()))
    if kind == "time":
        span = draw(st.integers(1, 5) | st.integers(1, 3_000_000))
        return WindowSpec.time(span, before=draw(st.booleans()))
    return WindowSpec.landmark(int(draw(st.sampled_from(ts.tolist()))) + draw(st.integers(-5, 5)))


def split_points(draw: st.DrawFn, n: int) -> list[int]:
    cuts = draw(st.lists(st.integers(1, max(n - 1, 1)), max_size=8))
    return sorted({0, n, *[c for c in cuts if 0 < c < n]})


def assert_matches(
    name: str, got: np.ndarray, ts: np.ndarray, values: np.ndarray, spec, first: int
):
    expected = np.array(
        [
            window_stats(ts[idx], values[idx])[name]
            for idx in (window_index(ts, j, spec) for j in range(first, first + len(got)))
        ]
    )
    rtol, atol = tolerance(name, values, ts)
    np.testing.assert_allclose(
        got, expected, rtol=rtol, atol=atol, equal_nan=True, err_msg=f"{name} of window {spec}"
    )


@settings(max_examples=150, deadline=None)
@given(data=st.data(), stream=streams())
def test_every_statistic_matches_recomputation(data: st.DataObject, stream) -> None:
    ts, values = stream
    spec = data.draw(specs(ts))
    bounds = split_points(data.draw, len(ts))
    reg = Register("s", RegisterConfig(retention_ms=None))
    window = open_window(spec, reg)
    got = {name: [] for name in MOMENT_AND_ORDER_STATS}
    for lo, hi in itertools.pairwise(bounds):
        p0, p1 = reg.append(ts[lo:hi], values[lo:hi])
        view = window.advance(p0, p1, STATS)
        for name in got:
            got[name].append(view.stat(name))
        expected = [observed_coverage(ts, j, spec) for j in range(lo, hi)]
        np.testing.assert_allclose(view.stat("coverage"), expected, rtol=1e-15)
    for name, parts in got.items():
        assert_matches(name, np.concatenate(parts), ts, values, spec, 0)


@settings(max_examples=100, deadline=None)
@given(data=st.data(), stream=streams())
def test_window_inserted_mid_stream_equals_recomputation(data: st.DataObject, stream) -> None:
    """Claim 3: a window created while running is populated from history at once."""
    ts, values = stream
    spec = data.draw(specs(ts))
    insert_at = data.draw(st.integers(0, len(ts) - 1))
    reg = Register("s", RegisterConfig(retention_ms=None))
    reg.append(ts[:insert_at], values[:insert_at])
    window = open_window(spec, reg)
    p0, p1 = reg.append(ts[insert_at:], values[insert_at:])
    view = window.advance(p0, p1, STATS)
    for name in MOMENT_AND_ORDER_STATS:
        assert_matches(name, view.stat(name), ts, values, spec, insert_at)


def advance_in_batches(
    spec: WindowSpec, ts: np.ndarray, values: np.ndarray, bounds: list[int]
) -> dict[str, np.ndarray]:
    """Every statistic of ``spec``'s window over the stream, appended in batches."""
    reg = Register("s", RegisterConfig(retention_ms=None))
    window = open_window(spec, reg)
    views = []
    for lo, hi in itertools.pairwise(bounds):
        p0, p1 = reg.append(ts[lo:hi], values[lo:hi])
        views.append(window.advance(p0, p1, STATS))
    return {name: np.concatenate([v.stat(name) for v in views]) for name in STATS}


def test_short_window_after_a_long_gap_is_not_rounding_noise() -> None:
    """A batch ends with a one-point window 42 s after the time anchor: its time moments are
    the cancellation noise (~1e-12 s^2) of terms of ~1800 s^2, and used to be carried as they
    were. Rebased to the next batch they looked like tiny, well-conditioned sums, and the slope
    of two points 1 ms apart (centred time moment 5e-7 s^2) came out 1.8e-6 off. The exact
    slope of a two-point window is (v1 - v0) / 0.001."""
    offsets = [*range(1, 24), 509, 510, 511, 667, 43138, 43139, 43140, 43141]
    ts = 1_700_000_000_000 + np.array(offsets, dtype=np.int64)
    values = np.array([
        0.0001257302210933933, -0.00013210486329130188, 0.0006404226504432821,
        0.00010490011715303971, -0.000535669373161111, 0.00036159505490948477,
        0.0013040000451301373, 0.0009470809631292422, -0.0007037352358069926,
        -0.0012654214710460525, -0.0006232744625373522, 4.13259793472436e-05,
        -0.0023250307746388345, -0.00021879166393254574, -0.0012459109472530653,
        -0.0007322673547034516, -0.0005442589828573099, -0.00031630015636915454,
        0.00041163053637413284, 0.0010425133694426775, -0.00012853466294403428,
        0.0013664634705496859, -0.0006651946734866135, 0.00035151007009301974,
        0.0009034701816518086, 9.401229776087457e-05, -0.0007434992493538084,
        -0.0009217253762584195, -0.00045772582566733916, 0.0002201951234700494,
        -0.001009618183538736,
    ])  # fmt: skip
    spec = WindowSpec.time(2)
    got = advance_in_batches(spec, ts, values, [0, 25, 28, 31])
    for name in MOMENT_AND_ORDER_STATS:
        assert_matches(name, got[name], ts, values, spec, 0)
    pairs = np.flatnonzero(np.diff(ts) == 1) + 1  # two-point windows
    exact = np.diff(values)[pairs - 1] / 1e-3
    np.testing.assert_allclose(got["slope"][pairs], exact, rtol=1e-9)


def test_short_window_after_batches_far_apart_is_exact() -> None:
    """The window carried out of the second batch holds two points ~1300 s after the first
    ones (well-conditioned, centred 2 s^2); the third batch's last window, two points 10 ms
    apart (5e-5 s^2), must not inherit rounding of the ~3.4e6 s^2 terms before it (it used to,
    when the sums were carried from batch to batch)."""
    offsets = [0, 1, 1_311_894, 1_314_717, 1_317_867, 1_317_877]
    ts = 1_700_000_000_000 + np.array(offsets, dtype=np.int64)
    values = np.array([0.3, -0.2, 1.1, 0.4, -0.7, 0.9])
    spec = WindowSpec.time(3140)
    got = advance_in_batches(spec, ts, values, [0, 2, 4, 6])
    for name in MOMENT_AND_ORDER_STATS:
        assert_matches(name, got[name], ts, values, spec, 0)
    np.testing.assert_allclose(got["slope"][-1], (0.9 + 0.7) / 0.01, rtol=1e-9)


def test_larger_window_keeps_history_for_an_inserted_one() -> None:
    """The register keeps only 10 points itself; a 100-point window pins what it holds, so a
    50-point window inserted later is full and exact. Without it, coverage says 10/50."""
    ts = np.arange(300, dtype=np.int64) * 1000
    values = np.sin(np.arange(300) / 7.0) * 100 + 1e9
    for with_larger in (True, False):
        reg = Register("s", RegisterConfig(capacity_points=10, retention_ms=None))
        larger = open_window(WindowSpec.count(100), reg) if with_larger else None
        for lo in range(0, 200, 37):
            hi = min(lo + 37, 200)
            p0, p1 = reg.append(ts[lo:hi], values[lo:hi])
            if larger is not None:
                larger.advance(p0, p1, {"mean"})
            reg.evict()
        inserted = open_window(WindowSpec.count(50), reg)
        p0, p1 = reg.append(ts[200:201], values[200:201])
        view = inserted.advance(p0, p1, STATS)
        if with_larger:
            assert view.stat("coverage")[0] == 1.0
            assert_matches("mean", view.stat("mean"), ts, values, WindowSpec.count(50), 200)
            assert_matches("max", view.stat("max"), ts, values, WindowSpec.count(50), 200)
        else:
            assert view.stat("coverage")[0] == pytest.approx(11 / 50)
            assert view.stat("count")[0] == 11


def test_time_window_coverage_grows_until_span_observed() -> None:
    ts = np.arange(0, 100_000, 1000, dtype=np.int64)
    reg = Register("s", RegisterConfig(capacity_points=5, retention_ms=None))
    reg.append(ts[:50], np.ones(50))
    reg.evict()  # keeps ts 45_000 .. 49_000: history complete from 44_001
    window = open_window(WindowSpec.time(20_000), reg)
    p0, p1 = reg.append(ts[50:], np.ones(50))
    coverage = window.advance(p0, p1, {"coverage"}).stat("coverage")
    expected = np.clip((ts[50:] - 44_001 + 1) / 20_000, 0, 1)
    np.testing.assert_allclose(coverage, expected)
    assert coverage[0] < 1 and coverage[-1] == 1


def test_sliding_window_pins_only_what_it_holds() -> None:
    reg = Register("s", RegisterConfig(capacity_points=1, retention_ms=None))
    window = open_window(WindowSpec.time(10_000), reg)
    p0, p1 = reg.append(np.arange(0, 60_000, 1000, dtype=np.int64), np.arange(60.0))
    window.advance(p0, p1, {"mean"})
    reg.evict()
    assert reg.ts(reg.start, reg.end).tolist() == list(range(50_000, 60_000, 1000))
    window.close()
    reg.evict()
    assert len(reg) == 1


def test_advance_rejects_positions_it_does_not_follow() -> None:
    reg = Register("s", RegisterConfig(retention_ms=None))
    window = open_window(WindowSpec.count(3), reg)
    reg.append(np.array([1, 2]), np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="advance with the positions"):
        window.advance(1, 2, {"mean"})


@settings(max_examples=60, deadline=None)
@given(data=st.data(), stream=streams())
def test_window_forked_at_a_past_point_equals_recomputation(data: st.DataObject, stream) -> None:
    """A late point is evaluated with its windows as of itself: ``fork(p)`` then advancing
    over the stored points from ``p`` gives each its window as of that point (a window before
    the point included: it forks the sliding window one point behind)."""
    ts, values = stream
    spec = data.draw(specs(ts))
    at = data.draw(st.integers(0, len(ts) - 1))
    reg = Register("s", RegisterConfig(retention_ms=None))
    live = open_window(spec, reg)
    live.advance(*reg.append(ts, values), STATS)
    forked = live.fork(at)
    view = forked.advance(at, len(ts), STATS)
    forked.close()
    for name in MOMENT_AND_ORDER_STATS:
        assert_matches(name, view.stat(name), ts, values, spec, at)
    expected = [observed_coverage(ts, j, spec) for j in range(at, len(ts))]
    np.testing.assert_allclose(view.stat("coverage"), expected, rtol=1e-15)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), streams_=st.lists(streams(), min_size=2, max_size=4))
def test_windows_advanced_together_equal_each_advanced_alone(
    data: st.DataObject, streams_: list
) -> None:
    """A bank of series (``advance_many``: each segment's window starts searched in its own
    timestamps, however far apart the series' times) gives every series exactly the
    statistics of its window advanced alone, bit for bit."""
    spec = data.draw(st.sampled_from(["count", "time"]))
    if spec == "count":
        spec = WindowSpec.count(data.draw(st.integers(1, 40)), before=data.draw(st.booleans()))
    else:
        span = data.draw(st.integers(1, 5) | st.integers(1, 3_000_000))
        spec = WindowSpec.time(span, before=data.draw(st.booleans()))
    shifts = data.draw(st.lists(st.sampled_from([0, 10**15, -(10**12)]), min_size=4, max_size=4))
    series = [(ts + shift, values) for (ts, values), shift in zip(streams_, shifts, strict=False)]
    cuts = [split_points(data.draw, len(ts)) for ts, _ in series]
    alone = [
        advance_in_batches(spec, ts, x, bounds)
        for (ts, x), bounds in zip(series, cuts, strict=True)
    ]
    regs = [Register(f"s{i}", RegisterConfig(retention_ms=None)) for i in range(len(series))]
    windows = [open_window(spec, reg) for reg in regs]
    got: list[list[dict[str, np.ndarray]]] = [[] for _ in series]
    for step in range(max(len(c) for c in cuts) - 1):  # the series with a batch at this step
        moving = [i for i, c in enumerate(cuts) if step + 1 < len(c)]
        spans = [
            regs[i].append(*(a[cuts[i][step] : cuts[i][step + 1]] for a in series[i]))
            for i in moving
        ]
        view = advance_many([windows[i] for i in moving], spans, STATS)
        at = np.cumsum([0] + [p1 - p0 for p0, p1 in spans])
        for i, lo, hi in zip(moving, at[:-1], at[1:], strict=True):
            got[i].append({name: view.stat(name)[lo:hi] for name in STATS})
    for i, parts in enumerate(got):
        for name in STATS:
            mine = np.concatenate([part[name] for part in parts])
            assert np.array_equal(mine, alone[i][name], equal_nan=True), (i, name, spec)


@settings(max_examples=25, deadline=None)
@given(
    data=st.data(),
    long=st.sampled_from([WindowSpec.count(3_000), WindowSpec.time(2_500_000)]),
    n_series=st.integers(1, 3),
)
def test_long_windows_over_small_batches_take_exact_extremes(
    data: st.DataObject, long: WindowSpec, n_series: int
) -> None:
    """Windows far longer than the batches (their maxima from running maxima about each
    series' first new point, ``core/rmq.crossing_max``) give every point's exact min and max:
    random walks, walks rounded to steps (ties, ``0.0`` and ``-0.0``) and all ``-0.0``. Equal
    as numbers: a window holding both zeros has either as its extreme, by the order of the
    comparisons (``test_rmq`` checks the bits against the sparse table)."""
    import tsmon.core.sliding as sliding

    calls = []

    def counted(*args):
        calls.append(1)
        return crossing_max(*args)

    held = 4_000
    series = []
    for _ in range(n_series):
        new = data.draw(st.lists(st.integers(1, 40), min_size=1, max_size=4))
        n = held + sum(new)
        gaps = np.array(data.draw(st.lists(st.integers(1, 2_000), min_size=8, max_size=8)))
        ts = 1_700_000_000_000 + np.cumsum(np.resize(gaps, n))
        steps = data.draw(st.sampled_from([0.0, 0.5, 1.0]))
        rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
        values = np.round(np.cumsum(rng.normal(0.0, 1.0, n)) * steps) if steps else -np.zeros(n)
        series.append((ts, values, list(itertools.accumulate([held, *new]))))
    regs = [Register(f"s{i}", RegisterConfig(retention_ms=None)) for i in range(n_series)]
    windows = [open_window(long, reg) for reg in regs]
    got: list[list[np.ndarray]] = [[] for _ in series]
    with pytest.MonkeyPatch.context() as patch:  # counts the calls of the real function
        patch.setattr(sliding, "crossing_max", counted)
        for step in range(max(len(cuts) for *_, cuts in series)):
            moving = [i for i, (*_, cuts) in enumerate(series) if step < len(cuts)]
            spans = []
            for i in moving:
                ts, values, cuts = series[i]
                lo = cuts[step - 1] if step else 0
                spans.append(regs[i].append(ts[lo : cuts[step]], values[lo : cuts[step]]))
            view = advance_many([windows[i] for i in moving], spans, ("min", "max"))
            at = np.cumsum([0] + [p1 - p0 for p0, p1 in spans])
            for i, lo, hi in zip(moving, at[:-1], at[1:], strict=True):
                if step:  # the small batches after the history
                    got[i].append(np.stack([view.stat(s)[lo:hi] for s in ("min", "max")]))
    assert calls, "no window took its maxima from running maxima"
    for (ts, values, _), parts in zip(series, got, strict=True):
        if not parts:
            continue
        mine = np.concatenate(parts, axis=1)
        rows = range(held, held + mine.shape[1])
        picked = [values[window_index(ts, j, long)] for j in rows]
        expected = np.array([[p.min() for p in picked], [p.max() for p in picked]])
        assert np.array_equal(mine, expected), long
