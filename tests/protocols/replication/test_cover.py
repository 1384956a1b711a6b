"""Window segments, data ranges and query decomposition against the raw stream (§3, Fig. 8a).

Oracle: the raw stream ``x``; position ``p`` at count ``c`` is ``x[c - 1 - p]``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tsmon.core.swat import SWAT
from tsmon.protocols.replication import Approx, Segment, decompose

FAST = settings(max_examples=60, deadline=None)


@st.composite
def trees(draw: st.DrawFn) -> tuple[SWAT, np.ndarray]:
    """A SWAT (window 8..32, k 1..4) fed a random stream at least a window long."""
    window = draw(st.sampled_from([8, 16, 32]))
    k = draw(st.sampled_from([1, 1, 2, 4]))
    n = draw(st.integers(window, 4 * window + 7))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kind = draw(st.sampled_from(["noise", "walk", "ramp", "steps"]))
    if kind == "noise":
        x = rng.uniform(0, 100, n)
    elif kind == "walk":
        x = np.cumsum(rng.normal(0, 3, n))
    elif kind == "ramp":
        x = draw(st.floats(-5, 5)) * np.arange(n)
    else:
        x = np.round(rng.uniform(-3, 3, n)) * 10
    return SWAT(window, k).extend(x), x


def raw(x: np.ndarray, count: int, positions) -> np.ndarray:
    return x[count - 1 - np.asarray(positions)]


@FAST
@given(trees())
def test_segments_are_the_swat_slots_and_their_ranges_hold_the_values(case):
    tree, x = case
    c = tree.count
    for node in tree.nodes():
        seg = Segment(node.level, node.kind)
        assert seg.positions(c) == node.segment(c) and seg.size == node.size
        approx = Approx.of_node(node)
        start, end = seg.positions(c)
        values = raw(x, c, np.arange(start, end + 1))
        blocks = values.reshape(approx.entries, -1)
        assert (blocks.min(axis=1) >= np.array(approx.lo)).all()
        assert (blocks.max(axis=1) <= np.array(approx.hi)).all()
        assert approx.encloses(approx)


@settings(max_examples=100, deadline=None)
@given(trees(), st.data())
def test_decomposition_is_within_its_bound_and_never_misses_a_feasible_cover(case, data):
    tree, x = case
    c, window = tree.count, tree.window
    nodes = tree.nodes()
    keep = data.draw(st.lists(st.booleans(), min_size=len(nodes), max_size=len(nodes)))
    rows = {}
    for node, kept in zip(nodes, keep, strict=True):
        if kept:  # a replica may be wider than the source's range (§3)
            a = Approx.of_node(node)
            grow = data.draw(st.floats(0, 5))
            rows[Segment(node.level, node.kind)] = Approx(
                tuple(v - grow for v in a.lo), tuple(v + grow for v in a.hi)
            )
    m = data.draw(st.integers(1, window))
    p = np.array(data.draw(st.lists(st.integers(0, window - 1), min_size=m, max_size=m)))
    w = np.array(data.draw(st.lists(st.floats(-3, 3), min_size=m, max_size=m)))
    delta = data.draw(st.none() | st.floats(0, 500))
    d = decompose(rows, c, p, w, delta)
    tight = decompose(rows, c, p, w, None)
    exact = float(w @ raw(x, c, p))
    if math.isfinite(d.bound):
        assert abs(d.value - exact) <= d.bound + 1e-9 * (1 + np.abs(w).sum() * 200)
    if delta is not None:
        assert d.satisfied == (d.bound <= delta)
        assert d.satisfied or tight.bound > delta  # nothing feasible was missed
        assert tight.bound <= d.bound + 1e-9
    # the tightest cover: each position by its narrowest covering block
    best = 0.0
    for pi, wi in zip(p.tolist(), w.tolist(), strict=True):
        if wi == 0:
            continue
        hws = []
        for seg, a in rows.items():
            s = seg.start(c)
            if s <= pi < s + seg.size:
                hws.append(a.half_widths()[(pi - s) // (seg.size // a.entries)])
        best += abs(wi) * min(hws, default=math.inf)
    assert tight.bound == pytest.approx(best, rel=1e-12, abs=1e-12) or best == tight.bound
    used = [s for s in d.used]
    for pi in p[w != 0].tolist():
        if math.isfinite(d.bound):
            assert any(s.start(c) <= pi < s.start(c) + s.size for s in used)


@pytest.mark.parametrize(
    ("count", "used"),
    [(96, [Segment(4, "R")]), (100, [Segment(2, "R"), Segment(4, "R")])],
)
def test_the_coarsest_adequate_segments_are_read(count, used):
    tree = SWAT(window=32).extend(np.full(count, 7.0))  # constant: every segment is exact
    rows = {Segment(n.level, n.kind): Approx.of_node(n) for n in tree.nodes()}
    d = decompose(rows, tree.count, np.arange(32), np.ones(32), delta=0.0)
    assert d.satisfied and d.value == 7.0 * 32
    assert list(d.used) == used  # at 100, R_4 starts 4 back: positions 0..3 from R_2


def test_empty_directory_and_zero_weights():
    assert not decompose({}, 10, [0], [1.0], 5.0).satisfied
    assert decompose({}, 10, [0], [0.0], 0.0) == decompose({}, 10, [], [], 0.0)
    with pytest.raises(ValueError, match="equal length"):
        decompose({}, 10, [0, 1], [1.0], 1.0)
    with pytest.raises(ValueError, match="delta must be a precision"):
        decompose({Segment(0, "R"): Approx((0.0,), (1.0,))}, 10, [0], [1.0], -1.0)
