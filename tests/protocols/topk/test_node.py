"""Monitor node: the two-heap constraint check equals the all-pairs check (§3, footnote 1)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tsmon.protocols.topk.messages import Install
from tsmon.protocols.topk.node import MonitorNode

OBJECTS = list(range(8))


def brute_holds(node: MonitorNode) -> bool:
    """Every pair (O_t ∈ T, O_s ∉ T), the phantom (adjusted value d_j) among the O_s."""
    tops = [node.adjusted(o) for o in node.top]
    rest = [node.adjusted(o) for o in node.deltas if o not in node.top] + [node.default]
    return all(t >= s for t in tops for s in rest)


def brute_border(node: MonitorNode, resolution: set[int]) -> int:
    rest = [node.adjusted(o) for o in node.deltas if o not in resolution] + [node.default]
    tops = [node.adjusted(o) for o in node.top]
    return min([*tops, max(rest)])


def test_install_ends_waiting_and_rechecks() -> None:
    node = MonitorNode(1)
    node.install(Install(1, {"a": 0, "b": 0}, top=frozenset({"a"})))
    assert node.update("b", 2) is not None and node.update("b", 1) is None
    again = node.on_message(Install(1, {}, epoch=1))  # nothing fixed: it asks anew
    assert again is not None and again.version == 2 and again.epoch == 1
    assert node.on_message(Install(1, {"a": 3, "b": -3})) is None


ops = st.one_of(
    st.tuples(st.just("update"), st.sampled_from(OBJECTS), st.integers(-5, 9)),
    st.tuples(
        st.just("install"),
        st.frozensets(st.sampled_from(OBJECTS), max_size=4),
        st.dictionaries(st.sampled_from(OBJECTS), st.integers(-20, 20), max_size=5),
        st.one_of(st.none(), st.integers(-5, 5)),
    ),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(ops, max_size=80))
def test_heap_check_equals_all_pairs(program: list[tuple]) -> None:
    node = MonitorNode(1)
    for op in program:
        if op[0] == "update":
            _, obj, delta = op
            if node.values.get(obj, 0) + delta < 0:
                with pytest.raises(ValueError):
                    node.update(obj, delta)
                continue
            new = obj not in node.deltas and not node.top  # a new object while |T| < k = 1
            request = node.update(obj, delta)
            assert (request is None) == (brute_holds(node) and not new)
            if request is not None:
                assert request.new == new and node.awaiting
                assert node.update(obj, 0) is None  # awaiting the coordinator's answer
                low = min((node.adjusted(o) for o in node.top), default=None)
                violators = {
                    o
                    for o in node.deltas
                    if o not in node.top and low is not None and node.adjusted(o) > low
                }
                assert set(request.values) == set(node.top) | violators | ({obj} if new else set())
                assert request.border == brute_border(node, set(request.values))
                assert request.phantom == (low is not None and low < node.default)
                assert all(request.values[o] == node.entry(o) for o in request.values)
                node.awaiting = False  # as if the coordinator had answered
                node.fresh.clear()
        else:
            _, top, deltas, default = op
            node.install(Install(1, deltas, top=top or None, default=default))
        assert node.constraints_hold() == brute_holds(node)
        resolution = set(node.top) | {0, 1}
        assert node.border(resolution) == brute_border(node, resolution)


def test_phantom_unseen_object_counts_as_outside_top() -> None:
    node = MonitorNode(2)
    node.install(Install(2, {"a": -4}, top=frozenset({"a"})))
    assert not node.constraints_hold()  # V_a + δ_a = -4 < 0 = adjusted value of unseen objects
    request = node.update("a", 3)
    assert request is not None and request.phantom and set(request.values) == {"a"}
    assert node.update("a", 1) is None


def test_negative_partial_value_rejected() -> None:
    node = MonitorNode(1)
    node.update("a", 2)
    with pytest.raises(ValueError, match="below 0"):
        node.update("a", -3)
    assert node.values["a"] == 2


def test_heaps_stay_bounded_under_many_updates() -> None:
    node = MonitorNode(1)
    node.install(Install(1, {o: 0 for o in range(4)}, top=frozenset({0, 1})))
    for i in range(5000):
        node.update(i % 4, 1)
    assert len(node._top_heap) + len(node._rest_heap) <= 2 * len(node.deltas) + 33
