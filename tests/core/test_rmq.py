"""Window maxima from running maxima about a cut, against the sparse table, bit for bit."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tsmon.core.rmq import crossing_max, range_max

# few distinct values: many ties, zeros of both signs, NaN and infinities
VALUES = st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.5, np.nan, np.inf, -np.inf]) | st.floats(
    -1e6, 1e6
)


@st.composite
def segments(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Values of segments end to end; per segment a cut and ranges from it on, each starting
    before the cut: (values, lo, cut, count)."""
    values, lo, cut, count = [], [], [], []
    for _ in range(draw(st.integers(1, 5))):
        held, new = draw(st.integers(1, 30)), draw(st.integers(1, 30))
        base = len(values)
        values += draw(st.lists(VALUES, min_size=held + new, max_size=held + new))
        cut.append(base + held)
        count.append(new)
        lo += draw(st.lists(st.integers(base, base + held - 1), min_size=new, max_size=new))
    return (np.array(values), np.array(lo), np.array(cut), np.array(count))


@settings(max_examples=300, deadline=None)
@given(case=segments(), rows=st.integers(1, 2))
def test_crossing_max_equals_the_sparse_table_bit_for_bit(case, rows: int) -> None:
    values, lo, cut, count = case
    table = np.stack([values, -values][:rows])
    hi = np.concatenate([c + np.arange(k) for c, k in zip(cut, count, strict=True)])
    expected = range_max(table, lo, hi)
    assert crossing_max(table, lo, cut, count).tobytes() == expected.tobytes()
