"""The §4 baselines: Adaptive Precision Setting's width rules, Divergence Caching's cost model,
and the per-item caches they drive; plus the simulation helpers they share with SWAT-ASR."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tsmon.protocols.replication import (
    AdaptivePrecision,
    DivergenceCaching,
    ItemClient,
    ItemServer,
    MessageCounts,
    ReadRequest,
    Refresh,
    dc_costs,
)
from tsmon.sim.replication import ItemNetwork, ReplicationWorkload, binary_tree, depths


def test_aps_widths_with_the_papers_parameters():
    aps = AdaptivePrecision(alpha=1, tau_inf=math.inf, tau_0=2, p=1)
    w = aps.read_width(1, 0, math.inf, 0)  # first read: tau_0
    seq = [w]
    for _ in range(3):  # value-initiated refreshes double the width
        w = aps.value_width(1, 0, w, 0)
        seq.append(w)
    for _ in range(4):  # query-initiated refreshes halve it, below tau_0 it is exact
        w = aps.read_width(1, 0, w, 0)
        seq.append(w)
    assert seq == [2.0, 4.0, 8.0, 16.0, 8.0, 4.0, 2.0, 0.0]
    assert aps.value_width(1, 0, 0.0, 0) == 2.0  # an exact copy grows back to tau_0


def test_aps_cost_factor_and_upper_threshold():
    aps = AdaptivePrecision(alpha=1, tau_inf=10, tau_0=2, p=4, seed=1)
    assert aps.value_width(1, 0, 8.0, 0) == math.inf  # 16 > tau_inf: uncached
    shrinks = [aps.read_width(1, 0, 8.0, 0) for _ in range(400)]  # with probability 1/p
    assert set(shrinks) == {4.0, 8.0} and 0.15 < shrinks.count(4.0) / 400 < 0.35
    with pytest.raises(ValueError, match="tau_0 <= tau_inf"):
        AdaptivePrecision(tau_0=5, tau_inf=1)


def test_dc_costs_match_the_closed_forms_of_section_4_1():
    rng = np.random.default_rng(0)
    for _ in range(20):
        m = int(rng.integers(2, 30))
        lam_w, reads, w = rng.uniform(0, 3), rng.uniform(0, 2, m + 1), rng.uniform(0.5, 2)
        cost = dc_costs(lam_w, reads, w)
        assert cost[0] == pytest.approx(lam_w)
        assert cost[m] == pytest.approx((w + 1) * reads[:m].sum())
        for k in range(1, m):
            r = reads[:k].sum()
            assert cost[k] == pytest.approx(r * (1 + w) + (m - k) / m * lam_w)


def test_dc_picks_the_widest_interval_its_reads_accept_when_writes_are_frequent():
    dc = DivergenceCaching(max_range=50)
    for t in range(0, 23_000, 1000):
        dc.on_write(t)
    dc.on_reads(1, 0, [(t, 6.0) for t in range(500, 23_000, 2000)])  # tolerance: width 6
    assert dc.read_width(1, 0, math.inf, 23_000) == 6.0
    dc.on_reads(1, 1, [(t, 0.0) for t in range(0, 23_000, 100)])  # many exact reads
    assert dc.read_width(1, 1, math.inf, 23_000) == 0.0
    assert dc.value_width(1, 2, 3.0, 23_000) == math.inf  # never read: k = M, not cached


def test_item_cache_refreshes_the_largest_contributions_only():
    c = ItemClient(1, window=4)
    c.width[:] = [0.0, 8.0, 2.0, math.inf]
    c.center[:] = [1.0, 2.0, 3.0, 4.0]
    req = c.query([0, 1, 2, 3], [1.0, 1.0, 1.0, 0.0], delta=1.0, count=4, now_ms=0).messages[0]
    assert req.items == (1,)  # 4 + 1 > 1; without item 1: 1 <= 1; weight 0 needs nothing
    done = c.on_message(Refresh(0, 1, item=1, count=4, value=2.5, width=4.0, qid=req.qid), 0)
    assert done.answers[0].value == 1.0 + 2.5 + 3.0 and done.answers[0].bound == 1.0


def test_item_server_sends_a_value_initiated_refresh_only_when_the_value_leaves():
    srv = ItemServer([1, 2], window=2, policy=AdaptivePrecision())
    for v in (10.0, 10.0):
        srv.on_value(v, 0)
    srv.on_message(ReadRequest(1, 0, (1, 0), count=2, items=(0, 1)), 0)  # width 2 at client 1
    assert srv.on_value(11.0, 0).messages == ()  # 11 in [9, 11], 10 in [9, 11]
    out = srv.on_value(13.0, 0).messages  # position 0: 13, position 1: 11
    assert [(m.receiver, m.item, m.width) for m in out] == [(1, 0, 4.0)]
    with pytest.raises(ValueError, match="zero-latency"):
        srv.on_message(ReadRequest(1, 0, (1, 1), count=3, items=(0,)), 0)


def test_item_network_counts_each_link_and_each_message_once():
    net = ItemNetwork(binary_tree(6), window=4, policy=AdaptivePrecision())
    for t, v in enumerate([1.0, 2.0, 3.0, 4.0]):
        net.arrive(v, t)
    net.query(6, [0, 1, 2], [1.0, 1.0, 1.0], delta=0.0, now_ms=5)  # 1 request + 3 refreshes
    assert (net.counts.end_to_end, net.counts.total, net.counts.packets) == (4, 8, 4)
    net.check()


def test_sim_helpers():
    assert depths({1: 0, 2: 1, 3: 2}) == {1: 1, 2: 2, 3: 3}
    with pytest.raises(ValueError, match="no path to the source"):
        depths({1: 2, 2: 1})
    with pytest.raises(ValueError, match="at least one client"):
        binary_tree(0)
    wl = ReplicationWorkload(
        np.arange(100.0),
        binary_tree(3),
        window=8,
        data_period_ms=1000,
        query_period_ms=1000,
        tolerance=2.0,
        phase_ms=5000,
    )
    tol = wl.tolerances()
    assert sorted(tol.values()) == pytest.approx([1.0, 2.0, 4.0]) and wl.max_range == 99
    times = [e.time_ms for e in wl.events()]
    assert times == sorted(times)
    with pytest.raises(ValueError, match="must be > 0 ms"):
        ReplicationWorkload(np.arange(10.0), {1: 0}, 8, 0, 1000, 1.0, 1000)
    a, b = MessageCounts(5, 4, 3, 10, {"updates": 5}), MessageCounts(2, 2, 1, 4, {"updates": 2})
    assert a - b == MessageCounts(3, 2, 2, 6, {"updates": 3})
