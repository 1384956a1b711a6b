"""A larger deterministic run: 20,000 updates, Zipf over 2,000 objects, 8 nodes (§4.4)."""

from __future__ import annotations

import pytest

from tests.protocols.topk.streams import Oracle, check_invariants, stream
from tsmon.sim.topk.caching import CachingNetwork
from tsmon.sim.topk.network import TopKNetwork

M, K, N, STEPS = 8, 4, 2000, 20_000


@pytest.mark.parametrize(("eps", "window"), [(0, 5000), (0, None), (20, 5000)])
def test_valid_at_every_update_and_cheaper_than_caching(eps: int, window: int | None) -> None:
    net = TopKNetwork(M, K, eps, initial=[{o: 0 for o in range(K)}] + [{}] * (M - 1))
    cache = CachingNetwork(M, K, eps)
    oracle = Oracle()
    for step, (node, obj, delta) in enumerate(stream(7, M, N, STEPS, 1.0, window)):
        net.update(node, obj, delta)
        cache.update(node, obj, delta)
        oracle.apply(obj, delta)
        assert oracle.valid(net.answer(), eps), step
        if step % 2000 == 0:
            check_invariants(net)
    check_invariants(net)
    c = net.counts
    print(
        f"\neps={eps} window={window}: top-k {c.total} messages vs caching "
        f"{cache.counts.total}; phases {net.coordinator.phases}; entries/message "
        f"mean {c.mean_entries:.2f} max {c.max_entries}"
    )
    assert c.total < cache.counts.total
    if eps == 0:
        assert cache.counts.total == STEPS  # caching at ε = 0 forwards every update
        assert 5 * c.total < cache.counts.total
