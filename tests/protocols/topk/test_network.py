"""Top-k monitoring end to end: after every update the answer is valid within ε (§1.3) and
the adjustment factor invariants (§3) hold exactly."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.protocols.topk.streams import Oracle, check_invariants, stream
from tsmon.protocols.topk.coordinator import Policy
from tsmon.sim.topk.caching import CachingNetwork
from tsmon.sim.topk.network import TopKNetwork


@st.composite
def scenarios(draw: st.DrawFn) -> dict:
    k = draw(st.integers(1, 4))
    return {
        "m": draw(st.integers(2, 6)),
        "k": k,
        "n": draw(st.integers(k, 30)),
        "eps": draw(st.sampled_from([0, 0, 1, 3, 50, 200])),
        "zipf": draw(st.sampled_from([0.0, 1.0, 1.5])),
        "window": draw(st.sampled_from([None, 5, 40])),
        "max_delta": draw(st.sampled_from([1, 4])),
        "steps": draw(st.integers(1, 250)),
        "seed": draw(st.integers(0, 2**32 - 1)),
        "policy": draw(
            st.sampled_from(
                [
                    Policy.paper(),
                    Policy(0, False),
                    Policy(1, True),
                    Policy(None, True),
                    Policy(probe=(1, 3), probe_min=1),
                    Policy(probe=()),
                ]
            )
        ),
        "initial": draw(st.sampled_from(["zero", "random"])),
    }


def run(s: dict) -> tuple[TopKNetwork, CachingNetwork]:
    m, k, eps = s["m"], s["k"], s["eps"]
    rng = random.Random(s["seed"] ^ 0x5EED)
    initial = [{} for _ in range(m)]
    oracle = Oracle()
    for o in range(k):  # the initial gather names at least k objects
        j = rng.randrange(m)
        v = 0 if s["initial"] == "zero" else rng.randint(0, 5)
        initial[j][o] = v
        oracle.apply(o, v)
    net = TopKNetwork(m, k, eps, s["policy"], initial=initial)
    cache = CachingNetwork(m, k, eps)
    for j, values in enumerate(initial, start=1):
        for o, v in values.items():
            cache.update(j, o, v)
    check_invariants(net)
    assert oracle.valid(net.answer(), eps)
    # a probe of q nodes that ends the resolution: request, q asks, q replies, q + 1 installs
    probes = [3 * q + 2 for q in s["policy"].probe if q < m - 1 and m >= s["policy"].probe_min]
    for node, obj, delta in stream(
        s["seed"], m, s["n"], s["steps"], s["zipf"], s["window"], s["max_delta"]
    ):
        before = net.counts.total
        net.update(node, obj, delta)
        cache.update(node, obj, delta)
        oracle.apply(obj, delta)
        assert net.counts.total - before in (0, 2, 3 * m - 1, 3 * m + 1, *probes)
        assert oracle.valid(net.answer(), eps, k), (net.answer(), oracle.totals)
        if len(cache.answer()) == k:  # caching ranks only the objects it was sent
            assert oracle.valid(cache.answer(), 2 * eps)
        check_invariants(net)
    c = net.coordinator.phases
    assert net.counts.requests == net.resolutions == sum(c.values())
    return net, cache


@settings(max_examples=200, deadline=None)
@given(scenarios())
def test_answer_valid_and_invariants_exact(s: dict) -> None:
    run(s)


def test_phase2_resolution_between_node_and_coordinator() -> None:
    # §3.2.2-like: coordinator slack (large ε, F_0 = 1) absorbs a violation at N_2 in 2 messages
    net = TopKNetwork(3, 1, 10, Policy(1, False), initial=[{"a": 20}, {"b": 0}, {}])
    before = net.counts.total
    net.update(2, "b", 4)
    assert net.coordinator.phases["phase2"] == 1
    assert net.counts.total - before == 2
    assert net.answer() == frozenset({"a"})
    check_invariants(net)


def test_phase3_changes_top_and_costs_3m_minus_1() -> None:
    net = TopKNetwork(3, 1, 0, initial=[{"a": 5}, {"b": 4}, {}])
    before = net.counts.total
    net.update(2, "b", 2)  # V_b = 6 > 5 = V_a
    assert net.answer() == frozenset({"b"})
    assert net.coordinator.phases["phase3"] == 1
    assert net.counts.total - before == 3 * 3 - 1
    check_invariants(net)


# F_0 = 0: Phase 2 never passes, a probe of one node might
PROBE_ONE = Policy(0, False, probe=(1,), probe_min=1)


def probe_net() -> TopKNetwork:
    """V_a = 20 (10 at N_1 and N_3), V_b = 0 at N_2, N_4 empty; N_4 reported the most updates."""
    net = TopKNetwork(4, 1, 0, PROBE_ONE, initial=[{"a": 10}, {"b": 0}, {"a": 10}, {}])
    net.coordinator.update_counts[4] = 9
    return net


@pytest.mark.parametrize(
    ("delta", "top", "phase", "messages", "installed"),
    [
        (9, "a", "probe", 3 * 1 + 2, [0, 1, 0, 1]),  # N_4's slack proves V_a ≥ V_b: T stays
        (12, "a", "phase3", 3 * 4 - 1, [1, 1, 1, 1]),  # not enough: the others are asked
        (25, "b", "phase3", 3 * 4 - 1, [1, 1, 1, 1]),  # V_b = 25 > 20 = V_a
    ],
)
def test_probe_asks_the_busiest_node_first(delta, top, phase, messages, installed) -> None:
    net = probe_net()
    before, versions = net.counts.total, [n.version for n in net.nodes]
    net.update(2, "b", delta)
    assert net.answer() == frozenset({top})
    assert {p: n for p, n in net.coordinator.phases.items() if n} == {phase: 1}
    assert net.counts.total - before == messages
    assert [n.version - v for n, v in zip(net.nodes, versions, strict=True)] == installed
    check_invariants(net)


@pytest.mark.parametrize(("m", "phase", "messages"), [(8, "phase3", 3 * 8 - 1), (9, "probe", 8)])
def test_default_probes_two_nodes_from_nine_nodes_on(m, phase, messages) -> None:
    initial = [{"a": 10}, {"b": 0}, {"a": 10}, *([{}] * (m - 3))]
    net = TopKNetwork(m, 1, 0, Policy(0, False), initial=initial)
    before = net.counts.total
    net.update(2, "b", 5)  # V_b = 5 < 20 = V_a; N_1 and N_3 (ties: lowest numbers) prove it
    assert net.answer() == frozenset({"a"})
    assert {p: n for p, n in net.coordinator.phases.items() if n} == {phase: 1}
    assert net.counts.total - before == messages
    check_invariants(net)


def test_probe_sizes_checked() -> None:
    with pytest.raises(ValueError, match="increasing"):
        Policy(probe=(3, 2))
    with pytest.raises(ValueError, match="increasing"):
        Policy(probe=(0,))


def test_fewer_than_k_objects_then_new_ones_join() -> None:
    net = TopKNetwork(2, 3, 0, initial=[{"a": 1}, {}])
    assert net.answer() == frozenset({"a"})
    net.update(2, "b", 1)  # a new object while |T| < k: resolved, joins T
    net.update(1, "c", 4)
    assert net.answer() == frozenset({"a", "b", "c"})
    net.update(2, "d", 5)  # now |T| = k: d beats a and b
    assert net.answer() == frozenset({"c", "d", "b"}) or net.answer() == frozenset({"c", "d", "a"})
    check_invariants(net)


def test_negative_eps_refused() -> None:
    with pytest.raises(ValueError, match="non-negative integer"):
        TopKNetwork(2, 1, -1, initial=[{"a": 1}, {}])  # type: ignore[arg-type]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 3), st.integers(0, 4), st.integers(0, 3)), max_size=60),
    st.sampled_from([0, 1, 3]),
)
def test_caching_sends_nothing_for_zero_updates(updates: list, eps: int) -> None:
    """Δ = 0 moves no partial value: no message at any ε; at ε = 0 every other update is one
    message and the cached sums are exact."""
    cache, twin = CachingNetwork(3, 2, eps), CachingNetwork(3, 2, eps)
    exact: dict[int, int] = {}
    for node, obj, delta in updates:
        cache.update(node, obj, delta)
        if delta:
            twin.update(node, obj, delta)
        exact[obj] = exact.get(obj, 0) + delta
    assert cache.counts == twin.counts and cache.cache == twin.cache
    if eps == 0:
        assert cache.counts.total == sum(1 for _, _, d in updates if d)
        assert {o: v for o, v in cache.cache.items() if v} == {o: v for o, v in exact.items() if v}
