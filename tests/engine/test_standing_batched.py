"""Standing queries in the batch runtime: stream models at the sources, queries in partitions.

Oracles: every evaluation over live streams equals the aggregate of the streams' newest values
as of the tick it is stamped with (recomputed from the points); the answers do not depend on
how many partitions hold the queries; MAX/MIN answers are the extremum of the recomputed
aggregate over the window's ticks. Live changes and bad input are checked by what they do.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tsmon.engine.batched import BatchedRuntime
from tsmon.engine.standing_settings import StandingSettings
from tsmon.kinds.standing.partition import PARTITION_PREFIX
from tsmon.query import parse_query

QUERIES = """
QUERY port AS SUM(0.3*a.x + 0.7*b.y) WITHIN 0.2 CONFIDENCE 0.9
QUERY mean AS AVG(a.x, b.y, c.z) WITHIN 5% CONFIDENCE 0.95
QUERY peak AS MAX OVER 2s OF AVG(a.x, c.z) WITHIN 0.3 CONFIDENCE 0.9
QUERY low AS MIN SINCE START OF SUM(b.y, -1*c.z) WITHIN 0.3 CONFIDENCE 0.9
"""
WEIGHTS = {
    "port": {"a.x": 0.3, "b.y": 0.7},
    "mean": {"a.x": 1 / 3, "b.y": 1 / 3, "c.z": 1 / 3},
    "peak": {"a.x": 0.5, "c.z": 0.5},
    "low": {"b.y": 1.0, "c.z": -1.0},
}
SOURCE = {"a.x": "n1", "b.y": "n2", "c.z": "n2"}


class Run:
    """A runtime fed random walks batch by batch, with the exact aggregates at every tick."""

    def __init__(self, partitions: int, seed: int, step_ms: int = 10, batch_ms: int = 100):
        self.rt = BatchedRuntime(
            1_000,
            0.1,
            0,
            queries=QUERIES,
            standing_settings=StandingSettings(tick_ms=batch_ms, partitions=partitions, k=20),
        )
        self.rng = np.random.default_rng(seed)
        self.value = dict.fromkeys(SOURCE, 10.0)
        self.step_ms, self.batch_ms = step_ms, batch_ms
        self.t = 0
        self.exact: dict[int, dict[str, float]] = {}  # job time -> aggregate of newest values
        self.history: list[tuple[int, dict[str, float]]] = []

    def batch(self, silent: frozenset[str] = frozenset()) -> None:
        points = []
        for t in range(self.t, self.t + self.batch_ms, self.step_ms):
            for s in SOURCE:
                if s in silent:
                    continue
                self.value[s] += float(self.rng.normal(0, 0.05))
                points.append((SOURCE[s], s, t, self.value[s]))
        self.t += self.batch_ms
        self.rt.run_batch(points)
        now = max(p[2] for p in points)
        agg = {q: sum(w * self.value[s] for s, w in ws.items()) for q, ws in WEIGHTS.items()}
        self.exact[now] = agg
        self.history.append((now, agg))


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), batches=st.integers(3, 30), partitions=st.integers(1, 4))
def test_linear_answers_equal_the_exact_aggregate_at_their_tick(seed, batches, partitions):
    run = Run(partitions, seed)
    seen = 0
    for _ in range(batches):
        run.batch()
        for name in ("port", "mean"):
            a = run.rt.answers("standing").get(name)
            if a is None:
                continue
            assert not a.interrupted
            assert a.value == pytest.approx(run.exact[a.ts_ms][name], abs=1e-9)
            assert a.next_due_ms > a.ts_ms
            seen += 1
    assert seen >= 2 * (batches - 2)  # every tick but the first answers (one batch behind)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), batches=st.integers(2, 25))
def test_partitioning_changes_no_answer(seed, batches):
    one, three = Run(1, seed), Run(3, seed)
    for _ in range(batches):
        one.batch()
        three.batch()
        assert one.rt.answers("standing") == three.rt.answers("standing")
    assert (
        one.rt.coordinator.part("standing").standing.totals()
        == three.rt.coordinator.part("standing").standing.totals()
    )


def test_extrema_match_the_recomputed_aggregate_over_their_window():
    run = Run(2, seed=7)
    for _ in range(60):
        run.batch()
        answers = run.rt.answers("standing")
        for name, window in (("peak", 2_000), ("low", None)):
            a = answers.get(name)
            if a is None:
                continue
            ticks = [
                agg[name]
                for t, agg in run.history
                if t <= a.ts_ms and (window is None or t >= a.ts_ms - window)  # [now − w, now]
            ]
            want = max(ticks) if name == "peak" else min(ticks)
            assert a.value == pytest.approx(want, abs=1e-9)
    assert {"peak", "low"} <= set(run.rt.answers("standing"))


def test_queries_are_spread_over_partitions_and_only_live_ones_get_ticks():
    run = Run(4, seed=1)
    run.batch()
    run.batch()
    keys = sorted(k for k in run.rt.nodes if k.startswith(PARTITION_PREFIX))
    assert len(keys) >= 2  # four queries over four partitions
    held = sum(len(run.rt.nodes[k].engine.query_names) for k in keys)
    assert held == 4


def test_a_silent_source_interrupts_its_streams_and_recovery_is_automatic():
    run = Run(2, seed=3)
    for _ in range(20):
        run.batch()
    for _ in range(6):  # n1 (a.x) stops sending; the job's time moves on with n2
        run.batch(silent=frozenset({"a.x"}))
    a = run.rt.answers("standing")["port"]
    assert a.interrupted and a.eps_intr > 0
    for _ in range(3):
        run.batch()
    a = run.rt.answers("standing")["port"]
    assert not a.interrupted
    assert a.value == pytest.approx(run.exact[a.ts_ms]["port"], abs=1e-9)


def test_live_add_alter_and_remove():
    run = Run(2, seed=5)
    for _ in range(5):
        run.batch()
    node = run.rt.coordinator
    node.add(parse_query("QUERY late AS SUM(a.*, c.z) WITHIN 1 CONFIDENCE 0.9"))
    run.batch()
    run.batch()
    late = run.rt.answers("standing")["late"]  # the glob expanded over the known a.x
    assert late.value == pytest.approx(run.exact[late.ts_ms]["peak"] * 2, abs=1e-9)
    node.alter_precision("PORT", 0.01)
    node.remove_query("mean")
    run.batch()
    run.batch()
    answers = run.rt.answers("standing")
    assert "mean" not in answers and answers["port"].eps == 0.01
    with pytest.raises(ValueError, match="exists"):
        node.add(parse_query("QUERY Port AS SUM(a.x) WITHIN 1 CONFIDENCE 0.9"))
    with pytest.raises(ValueError, match="counts points"):
        node.add(parse_query("QUERY w AS MAX OVER 10 points OF SUM(a.x) WITHIN 1 CONFIDENCE 0.9"))
    with pytest.raises(ValueError, match="matches no series"):
        node.add(parse_query("QUERY g AS SUM(zz.*) WITHIN 1 CONFIDENCE 0.9"))


def test_a_source_may_not_take_a_partition_key():
    rt = BatchedRuntime(1_000, 0.1, 0, queries=QUERIES)
    with pytest.raises(ValueError, match="query partition"):
        rt.run_batch([(PARTITION_PREFIX + "0", "a.x", 0, 1.0)])


def test_models_skip_points_not_newer_than_their_stream():
    rt = BatchedRuntime(1_000, 0.1, 0, queries=QUERIES)
    rt.run_batch([("n1", "a.x", 10, 1.0), ("n1", "a.x", 10, 2.0), ("n2", "b.y", 10, 1.0)])
    rt.run_batch([("n1", "a.x", 5, 3.0), ("n1", "a.x", 10, 4.0), ("n1", "a.x", 20, 6.0)])
    assert rt.nodes["n1"].stale == 1  # 5 ms after 10 ms: the node ignores it
    # the repeated 10 ms reached the node (keep_last) but the model had that instant already
    assert rt.coordinator.part("standing").standing.totals()["skipped"] == 1
    a = rt.coordinator.part("standing").standing.stream_of["a.x"]
    assert rt.coordinator.part("standing").standing.table["value"][a] == 6.0
    assert (
        rt.nodes["n1"].part("standing").standing.models.count[0] == 2
    )  # 10 ms (newest of the tie), 20 ms


def test_a_restored_coordinator_keeps_and_alters_its_standing_queries():
    """The driver snapshots the coordinator every batch (statements kept compactly)."""
    run = Run(2, seed=9)
    for _ in range(4):
        run.batch()
    node = run.rt.coordinator
    node.alter_precision("port", 0.05)
    copy = pickle.loads(node.snapshot())
    assert copy.part("standing").standing.names() == node.part("standing").standing.names()
    assert copy.part("standing").standing.texts() == node.part("standing").standing.texts()
    copy.alter_precision("mean", 0.02)  # parsed again from its text
    node.alter_precision("mean", 0.02)
    run.rt.coordinator = copy
    for _ in range(3):
        run.batch()
    answers = run.rt.answers("standing")
    assert answers["port"].eps == 0.05  # the earlier ALTER survived the snapshot
    assert answers["mean"].eps == pytest.approx(0.02 * abs(answers["mean"].value))  # relative
    a = answers["port"]
    assert a.value == pytest.approx(run.exact[a.ts_ms]["port"], abs=1e-9)
