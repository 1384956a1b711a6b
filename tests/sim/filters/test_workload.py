"""Workload: validation errors, the exact-value oracle, slicing, random query sets."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tsmon.protocols.filters import Query
from tsmon.sim.filters import Workload, grid_workload, random_avg_queries

OBJ = ("a", "b")
SRC = {"a": "s0", "b": "s1"}


def make(**changes: object) -> Workload:
    args: dict[str, object] = {
        "objects": OBJ,
        "source_of": SRC,
        "ts_ms": [0, 0, 1000],
        "obj": [0, 1, 0],
        "values": [1.0, 2.0, 3.0],
    }
    args.update(changes)
    return Workload(**args)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"objects": ()}, "non-empty"),
        ({"objects": "ab"}, "non-empty sequence"),
        ({"objects": ("a", "a"), "source_of": {"a": "s"}}, "distinct; repeated: \\['a'\\]"),
        ({"source_of": {"a": "s0"}}, "missing \\['b'\\]"),
        ({"source_of": {**SRC, "c": "s2"}}, "unknown \\['c'\\]"),
        ({"ts_ms": [0.0, 0.5, 1.0]}, "ts_ms must hold integers, got dtype float64"),
        ({"obj": [0.0, 1.0, 0.0]}, "obj must hold integers"),
        ({"ts_ms": [0, 0]}, "lengths 2, 3, 3"),
        ({"values": [1.0, 2.0]}, "lengths 3, 3, 2"),
        ({"ts_ms": [[0, 0, 1000]]}, "one-dimensional"),
        ({"ts_ms": [0, 1000, 999]}, "update 2 at 999 ms follows 1000 ms"),
        ({"obj": [0, 2, 0]}, "update 1 has 2"),
        ({"obj": [0, -1, 0]}, "update 1 has -1"),
        ({"values": [1.0, np.nan, 3.0]}, "update 1 \\('b' at 0 ms\\) is nan"),
        ({"values": [1.0, 2.0, np.inf]}, "update 2 \\('a' at 1000 ms\\) is inf"),
        ({"queries": (Query.avg("q", ["a", "zz"], 1.0),)}, "query 'q' reads unknown .*'zz'"),
        (
            {"queries": (Query.avg("q", ["a"], 1.0), Query.sum("q", ["b"], 1.0))},
            "names must be distinct",
        ),
        ({"step_sizes": [1.0]}, "one finite s_i >= 0 per object \\(2\\)"),
        ({"step_sizes": [1.0, -0.5]}, "one finite s_i >= 0"),
        ({"time_unit_ms": 0}, "time_unit_ms must be an int > 0"),
        ({"time_unit_ms": 1.5}, "time_unit_ms must be an int > 0"),
    ],
)
def test_validation_errors_say_what_and_where(changes: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        make(**changes)


def test_queries_must_be_query_objects() -> None:
    with pytest.raises(TypeError, match="Query objects"):
        make(queries=("q",))


def test_arrays_are_copied_and_read_only() -> None:
    values = np.array([1.0, 2.0, 3.0])
    w = make(values=values)
    values[0] = 99.0
    assert w.values[0] == 1.0
    with pytest.raises(ValueError, match="read-only"):
        w.values[0] = 5.0
    assert w.ts_ms.dtype == np.int64 and w.obj.dtype == np.int64
    with pytest.raises(TypeError):
        w.source_of["a"] = "x"  # type: ignore[index]


def test_empty_update_stream_is_allowed() -> None:
    w = make(ts_ms=[], obj=[], values=[])
    assert len(w) == 0 and w.time_units == 0.0 and w.update_counts().tolist() == [0, 0]


@st.composite
def workloads(draw: st.DrawFn) -> Workload:
    n = draw(st.integers(1, 5))
    size = draw(st.integers(0, 40))
    gaps = draw(st.lists(st.integers(0, 3), min_size=size, max_size=size))
    obj = draw(st.lists(st.integers(0, n - 1), min_size=size, max_size=size))
    values = draw(st.lists(st.integers(-5, 5), min_size=size, max_size=size))
    objects = tuple(f"o{i}" for i in range(n))
    return Workload(
        objects,
        {o: "src" for o in objects},
        np.cumsum(gaps, dtype=np.int64) * 500,
        obj,
        np.array(values, dtype=float),
        time_unit_ms=500,
    )


@given(workloads())
@settings(max_examples=60, deadline=None)
def test_exact_values_at_matches_the_replay(w: Workload) -> None:
    for k, current in w.iter_exact_values():
        np.testing.assert_array_equal(w.exact_values_at(k), current)


@given(workloads(), st.integers(0, 60), st.integers(0, 60))
@settings(max_examples=60, deadline=None)
def test_slice_time_with_carry_keeps_the_state(w: Workload, a: int, b: int) -> None:
    start, stop = min(a, b) * 250, max(a, b) * 250
    sliced = w.slice_time(start, stop, carry=True)
    plain = w.slice_time(start, stop)
    inside = (w.ts_ms >= start) & (w.ts_ms < stop)
    np.testing.assert_array_equal(plain.values, w.values[inside])
    assert np.all((sliced.ts_ms >= start) & (sliced.ts_ms < max(stop, start + 1)))
    last = np.flatnonzero(w.ts_ms < stop)
    if len(sliced) and len(last):
        np.testing.assert_array_equal(
            sliced.exact_values_at(len(sliced) - 1), w.exact_values_at(int(last[-1]))
        )


def test_with_queries_validates_and_keeps_updates() -> None:
    w = make()
    q = Query.avg("q", ["a", "b"], 1.0)
    assert w.with_queries([q]).queries == (q,)
    assert w.with_queries([q]).values is w.values
    with pytest.raises(ValueError, match="unknown objects"):
        w.with_queries([Query.avg("bad", ["c"], 1.0)])


def test_estimate_step_sizes_of_an_exact_walk() -> None:
    grid = np.array([[0.0, 5.0], [1.5, 5.0], [0.0, 5.0], [-1.5, 5.0]])
    w = grid_workload(["a", "b"], SRC, grid, time_unit_ms=10)
    np.testing.assert_allclose(w.estimate_step_sizes(), [1.5, 0.0])
    assert np.isnan(make(ts_ms=[0], obj=[0], values=[1.0]).estimate_step_sizes()).all()


def test_to_frame_and_grid_order() -> None:
    w = grid_workload(["a", "b"], SRC, np.arange(6.0).reshape(3, 2), start_ms=7)
    frame = w.to_frame()
    assert frame["series"].tolist() == ["a", "b"] * 3
    assert frame["ts"].tolist() == [7, 7, 1007, 1007, 2007, 2007]
    assert frame["value"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    with pytest.raises(ValueError, match="shape \\(steps, 2 objects\\)"):
        grid_workload(["a", "b"], SRC, np.zeros((3, 3)))


@given(st.integers(0, 2**32 - 1), st.floats(1e-6, 1e6), st.integers(1, 8))
@settings(max_examples=50, deadline=None)
def test_random_avg_queries_sizes_and_deltas(seed: int, delta_max: float, m: int) -> None:
    objects = [f"o{i}" for i in range(10)]
    qs = random_avg_queries(objects, m, (2, 5), delta_max, np.random.default_rng(seed))
    assert len(qs) == m and len({q.name for q in qs}) == m
    for q in qs:
        assert 2 <= len(q.weights) <= 5
        assert set(q.weights) <= set(objects)
        assert 0 < q.delta <= delta_max


class _ZeroRng:
    """A generator whose uniform draw hits 0: δ must still be > 0 (δmax itself)."""

    def __init__(self) -> None:
        self.inner = np.random.default_rng(0)

    def integers(self, *args: object, **kwargs: object) -> int:
        return self.inner.integers(*args, **kwargs)

    def choice(self, *args: object, **kwargs: object) -> np.ndarray:
        return self.inner.choice(*args, **kwargs)

    def random(self) -> float:
        return 0.0


def test_random_avg_queries_never_draw_a_zero_delta() -> None:
    qs = random_avg_queries(list("abcde"), 3, (2, 3), 2.5, _ZeroRng())  # type: ignore[arg-type]
    assert [q.delta for q in qs] == [2.5, 2.5, 2.5]


def test_random_avg_queries_reject_bad_sizes() -> None:
    with pytest.raises(ValueError, match="1 <= low <= high <= 3"):
        random_avg_queries(list("abc"), 1, (2, 5), 1.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="delta_max"):
        random_avg_queries(list("abc"), 1, (1, 2), 0.0, np.random.default_rng(0))
