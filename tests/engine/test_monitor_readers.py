"""Summary readers (SWAT-ASR) following a Monitor's series: the Monitor runs the source sites in
its batch host with an instant transport, so a forwarded query is answered within the same
:meth:`Monitor.flush`. Every answer, from a cache or from the source, lies within its bound of
the exact inner product over the raw window at the answer's arrival count."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tsmon.engine.monitor import Monitor
from tsmon.engine.replicas import SummaryReader

N, PHASE_MS, BATCH = 64, 2_000, 8


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 3), st.integers(4, 25), st.sampled_from([0.5, 50.0]))
def test_every_answer_of_a_followed_reader_is_within_its_bound(seed, readers, batches, delta):
    rng = np.random.default_rng(seed)
    monitor = Monitor(["temp.v"], replica_phase=PHASE_MS)
    subs = [SummaryReader(f"r{i}", "temp.v", N) for i in range(readers)]
    for r in subs:
        monitor.follow(r)
        r.subscribe()
    monitor.flush()  # the joins reach the source before its first point
    x = 50.0 + np.cumsum(rng.normal(0, 1, batches * BATCH))
    answered = 0
    for b in range(batches):
        ts = np.arange(b * BATCH, (b + 1) * BATCH) * 125
        monitor.ingest(["temp.v"] * BATCH, ts, x[b * BATCH : (b + 1) * BATCH])
        for r in subs:
            held = min(r.count, N)
            if held < 4:
                continue
            assert r.count == (b + 1) * BATCH  # the cache reflects every point so far
            indices = sorted(rng.choice(held, 3, replace=False).tolist())
            weights = rng.normal(0, 1, 3).tolist()
            answer = r.query(indices, weights, delta)
            if answer is None:  # forwarded: answered by the source within the flush
                monitor.flush()
                answer = r.answers[r.last_qid]
                assert not answer.local
            newest = answer.count - 1
            exact = float(np.dot(weights, x[newest - np.asarray(indices)]))
            assert abs(answer.value - exact) <= answer.bound + 1e-9
            assert answer.bound <= delta
            answered += 1
    assert answered >= readers * (batches - 1)


def test_a_reader_of_an_unknown_series_is_refused() -> None:
    with pytest.raises(KeyError, match="unknown series 'nope'"):
        Monitor(["a"]).follow(SummaryReader("r", "nope", N))
