"""Summary readers against the batch runtime: SWAT-ASR source sites in the source nodes, readers
downstream, requests through the coordinator's control and messages out with the node rows.
Every answer, local or forwarded, lies within its bound of the exact inner product over the
raw window at the answer's arrival count, or says it expired (a forwarded query reaches the
source two batches later: positions that left the window by then get ``nan`` within ``inf``);
the readers' caches serve most reads."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tsmon.engine.batched import BatchedRuntime
from tsmon.engine.replicas import SummaryReader, phase_ends

N, PHASE_MS, BATCH = 64, 2_000, 8


def run(
    seed: int, readers: int, batches: int, delta: float, reads: int = 1
) -> tuple[int, int, int]:
    """Requests sent, answers from caches, answers from the source, with ``reads`` queries
    per reader and batch."""
    rng = np.random.default_rng(seed)
    rt = BatchedRuntime(1_000, 0.1, 0, replica_phase_ms=PHASE_MS)
    x = 50.0 + np.cumsum(rng.normal(0, 1, batches * BATCH))
    subs = [SummaryReader(f"r{i}", "temp.v", N) for i in range(readers)]
    for r in subs:
        r.subscribe()
    start: int | None = None  # values the node had before the source site began
    sent = local = forwarded = 0
    last_ms: int | None = None
    asked: dict[tuple[str, int], tuple] = {}
    for b in range(batches):
        for r in subs:
            for request in r.drain():
                rt.coordinator.part("replica").request(request)
                sent += 1
        ts = range(b * BATCH * 125, (b + 1) * BATCH * 125, 125)
        rt.run_batch([("n1", "temp.v", t, float(x[t // 125])) for t in ts])
        clock = rt.coordinator.part("replica").clock.get(("temp.v", N, 1))
        if clock is None:
            continue
        count, now = clock
        if start is None:
            start = (b + 1) * BATCH - count
        for r in subs:
            for a in r.deliver(rt.coordinator.part("replica").out, count, now):
                forwarded += _check(a, asked.pop((r.name, a.qid)), x[start:])
            for end in phase_ends(last_ms, now, PHASE_MS):
                r.end_phase(end)
            held = min(count, N)
            for _ in range(reads if held >= 4 else 0):
                indices = sorted(rng.choice(held, 3, replace=False).tolist())
                weights = rng.normal(0, 1, 3).tolist()
                a = r.query(indices, weights, delta)
                asked[(r.name, r.last_qid)] = (indices, weights, delta)
                if a is not None:
                    local += _check(a, asked.pop((r.name, a.qid)), x[start:])
        last_ms = now
    return sent, local, forwarded


def _check(answer, asked, values: np.ndarray) -> int:
    """1 for an answer within its bound, 0 for an expired one."""
    indices, weights, delta = asked
    if math.isinf(answer.bound):
        assert math.isnan(answer.value) and not answer.local
        assert max(indices) + 2 * BATCH >= N  # its positions left the window
        return 0
    newest = answer.count - 1
    exact = float(np.dot(weights, values[newest - np.asarray(indices)]))
    assert abs(answer.value - exact) <= answer.bound + 1e-9
    assert answer.bound <= delta
    return 1


@settings(max_examples=15, deadline=None)
@given(
    st.integers(0, 10_000),
    st.integers(1, 3),
    st.integers(4, 25),
    st.sampled_from([0.5, 4.0, 50.0]),
)
def test_every_reader_answer_is_within_its_bound(seed, readers, batches, delta) -> None:
    sent, _, _ = run(seed, readers, batches, delta)
    assert sent >= readers  # every reader joined


def test_read_heavy_readers_are_served_by_their_caches() -> None:
    # 16 reads per reader and batch of 8 values: reads outnumber writes, segments expand
    sent, local, forwarded = run(seed=1, readers=3, batches=40, delta=200.0, reads=16)
    assert local >= 2 * forwarded  # measured 1,348 from caches, 436 from the source
    assert sent <= 0.35 * (local + forwarded)  # measured 521 requests for 1,784 answers
