"""A source far ahead of the others in event time (issue 16, "queues stay bounded"): the
coordinator's queue of its updates stays within the backlog (``[filters] backlog``, default
BACKLOG) records per series, folding the closest values into hulls, and the answers still
contain the exact aggregate as of the coordinator's time (BatchedRuntime, the reference Spark
must agree with batch for batch)."""

from __future__ import annotations

import bisect
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tsmon.engine.batched import BatchedRuntime
from tsmon.engine.settings import BACKLOG

SOURCE_OF = {"s0": "n0", "s1": "n1", "s2": "n2", "s3": "n2"}  # n2 runs ahead
QUERIES = """
QUERY total AS SUM(s0, s1, s2, s3) WITHIN {delta}
QUERY top AS MAX(s1, s2) WITHIN {delta}
"""
STEP_MS = 1_000  # event time per batch


def max_snapshot(backlog: int) -> int:
    """A bound on the coordinator's pickled state, whatever the run's length: ~8 KB with
    nothing queued, and at most ``backlog`` records per series (~140 B pickled each), twice
    while folded ones wait in the heap. Unbounded, the two series ahead would queue every
    update of the run."""
    return 8_000 + 2 * backlog * len(SOURCE_OF) * 160


def runtime(delta: float, backlog: int = BACKLOG) -> BatchedRuntime:
    return BatchedRuntime(
        1_000,
        0.1,
        0,
        queries=QUERIES.format(delta=delta),
        source_of=SOURCE_OF,
        max_future_ms=None,
        idle_timeout_ms=None,  # the others advance every batch: none is idle anyway
        backlog=backlog,
    )


def value_at(history: list[tuple[int, float]], t: int) -> float | None:
    """The series' value as of ``t``: its newest point at or before it."""
    n = bisect.bisect_right(history, (t, math.inf))
    return history[n - 1][1] if n else None


@st.composite
def runs(draw: st.DrawFn) -> tuple[float, int, list[list[tuple[str, str, int, float]]]]:
    delta = draw(st.sampled_from([0.5, 2.0, 10.0]))
    backlog = draw(st.sampled_from([2, 3, 8, BACKLOG]))  # small ones fold even a batch's skew
    # ahead by 3-40 batches, so that the coordinator's time passes through the folded stretch
    # within the run, or by 1 h to 10 days
    lead = draw(st.integers(3_000, 40_000) | st.integers(3_600_000, 10 * 86_400_000))
    batches = draw(st.integers(30, 70))
    jump = draw(st.integers(1, 10))
    # the points from a drawn seed: drawn one by one they overran Hypothesis's entropy budget
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    values = dict.fromkeys(SOURCE_OF, 0.0)
    out = []
    for b in range(batches):
        t = (b + 1) * STEP_MS
        batch = []
        for series, source in SOURCE_OF.items():
            ahead = lead if source == "n2" and b >= jump else 0
            for j in range(int(rng.integers(1, 9))):  # every source advances every batch
                values[series] += float(rng.uniform(-3, 3))
                batch.append((source, series, t + ahead + j * 100, values[series]))
        out.append(batch)
    return delta, backlog, out


@settings(max_examples=20, deadline=None)
@given(runs())
def test_a_source_far_ahead_keeps_answers_exact_and_the_queue_bounded(run) -> None:
    delta, backlog, batches = run
    rt = runtime(delta, backlog)
    part = rt.coordinator.part("bounded")
    history: dict[str, list[tuple[int, float]]] = {s: [] for s in SOURCE_OF}
    sizes = []
    for batch in batches:
        answers = rt.run_batch(batch)
        for _, series, ts, value in batch:
            history[series].append((ts, value))
        total, top = answers["total"], answers["top"]
        assert total.as_of_ms == top.as_of_ms
        exact = [value_at(history[s], total.as_of_ms) for s in SOURCE_OF]
        if math.isnan(total.value):  # not known yet: unbounded
            assert (total.lo, total.hi) == (-math.inf, math.inf)
        else:
            assert None not in exact
            assert total.lo - 1e-9 <= sum(exact) <= total.hi + 1e-9  # type: ignore[arg-type]
        if not math.isnan(top.value):
            assert top.lo - 1e-9 <= max(exact[1], exact[2]) <= top.hi + 1e-9  # type: ignore[type-var]
        queue = part.coordinator.queue
        assert len(queue) <= backlog * len(SOURCE_OF)
        assert len(queue._heap) <= 2 * backlog * len(SOURCE_OF)  # with the folded ones
        sizes.append(len(rt.coordinator.snapshot()))
    assert max(sizes) < max_snapshot(backlog)
    progress = part.progress()
    assert progress["queuedRecords"] == len(part.coordinator.queue)
    assert progress["mergedUpdates"] == part.coordinator.queue.merged


def test_the_queue_folds_only_beyond_the_backlog_and_answers_return_to_exact() -> None:
    """A source 6 h ahead for 40 batches, then the others catch up (they jump 6 h too): the
    folds are counted, and once the coordinator's time passes the folded stretch the answer
    is as narrow as the filters' widths make it again, with nothing left queued."""
    rt = runtime(2.0)
    lead = 6 * 3_600_000
    for b in range(60):
        t = (b + 1) * STEP_MS
        catch_up = lead if b >= 40 else 0
        points = []
        for series, source in SOURCE_OF.items():
            ahead = lead if source == "n2" and b >= 5 else catch_up
            points += [
                (source, series, t + ahead + j * 250, math.sin(t / 3_000 + j) * 5 + len(series))
                for j in range(4)
            ]
        answers = rt.run_batch(points)
    part = rt.coordinator.part("bounded")
    assert part.coordinator.queue.merged > 0
    assert len(part.coordinator.queue) <= len(SOURCE_OF)  # the last batch's, not yet due
    assert answers["total"].width <= 2.0 + 1e-9
    assert not part.coordinator.cache.spread.any()


def test_a_smaller_backlog_folds_sooner_and_its_answers_still_hold_the_truth() -> None:
    """One source 5 s ahead (20 updates per series queued): within the default backlog
    nothing is folded and every answer meets δ; with ``backlog = 4`` the folds are counted
    (progress ``mergedUpdates``), the queue holds at most 4 records per series, and every
    answer still contains the exact SUM, wider than δ while the coordinator's time passes a
    folded stretch (docs/time.md, "A source far ahead")."""
    delta, lead = 2.0, 5 * STEP_MS
    batches = []
    for b in range(40):
        t = (b + 1) * STEP_MS
        batches.append(
            [
                (source, series, t + (lead if source == "n2" and b >= 5 else 0) + j * 250, v)
                for series, source in SOURCE_OF.items()
                for j in range(4)
                for v in [math.sin(t / 2_000 + j + len(series)) * 7]
            ]
        )
    widths = {}
    for backlog in (BACKLOG, 4):
        rt = runtime(delta, backlog)
        part = rt.coordinator.part("bounded")
        history: dict[str, list[tuple[int, float]]] = {s: [] for s in SOURCE_OF}
        widths[backlog] = []
        for batch in batches:
            total = rt.run_batch(batch)["total"]
            for _, series, ts, value in batch:
                history[series].append((ts, value))
            if math.isnan(total.value):
                continue
            exact = sum(value_at(history[s], total.as_of_ms) for s in SOURCE_OF)  # type: ignore[misc]
            assert total.lo - 1e-9 <= exact <= total.hi + 1e-9
            assert len(part.coordinator.queue) <= backlog * len(SOURCE_OF)
            widths[backlog].append(total.width)
        merged = part.progress()["mergedUpdates"]
        assert merged == part.coordinator.queue.merged
        assert (merged > 0) == (backlog == 4)
    assert max(widths[BACKLOG]) <= delta + 1e-9
    assert max(widths[4]) > delta  # the price of the smaller bound
    assert len(widths[4]) == len(widths[BACKLOG]) >= 30
