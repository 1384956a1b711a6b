"""Algorithm 3.1 and its integer allocation: Correctness Criteria 1 and 2 (§3.2, App. B)."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from tsmon.protocols.topk.allocation import Policy, _seats, apportion, reallocate

weights = st.lists(st.integers(0, 6), min_size=1, max_size=6).filter(lambda w: sum(w) > 0)


@settings(max_examples=300, deadline=None)
@given(weights, st.integers(-500, 500), st.integers(0, 60))
def test_apportion_exact_and_monotone(w: list[int], lam: int, step: int) -> None:
    low, high = apportion(lam, w), apportion(lam + step, w)
    assert sum(low) == lam and sum(high) == lam + step
    assert all(a <= b for a, b in zip(low, high, strict=True))
    assert all(a == 0 for a, wj in zip(low, w, strict=True) if wj == 0)
    total = sum(w)
    assert all(abs(a - wj * lam / total) <= total for a, wj in zip(low, w, strict=True))
    assert _seats(tuple(w), sum(w)) == w


def _dhondt(weights: list[int], rho: int) -> list[int]:
    """The oracle: ``rho`` D'Hondt seats handed out one by one (largest ``w_j/(s_j+1)``, ties
    to the lower ``j``)."""
    seats = [0] * len(weights)
    for _ in range(rho):
        _, j = min(
            (-Fraction(w, s + 1), j)
            for j, (w, s) in enumerate(zip(weights, seats, strict=True))
            if w
        )
        seats[j] += 1
    return seats


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(0, 40), min_size=1, max_size=12).filter(lambda w: sum(w) > 0), st.data()
)
def test_seats_are_the_first_dhondt_seats(w: list[int], data: st.DataObject) -> None:
    rho = data.draw(st.integers(0, sum(w)))
    assert _seats(tuple(w), rho) == _dhondt(w, rho)


def _fraction_seats(weights: list[int], rho: int) -> list[int]:
    """The oracle for large houses: the lower quota, then the seats left one by one over
    ``Fraction`` quotients (what ``_seats`` ranks by integers instead)."""
    house = sum(weights)
    seats = [w * rho // house for w in weights]
    for _ in range(rho - sum(seats)):
        ranked = [
            (-Fraction(w, s + 1), j)
            for j, (w, s) in enumerate(zip(weights, seats, strict=True))
            if w
        ]
        seats[min(ranked)[1]] += 1
    return seats


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 10**9), min_size=1, max_size=8).filter(lambda w: sum(w) > 0), st.data()
)
def test_seats_rank_large_quotients_exactly(w: list[int], data: st.DataObject) -> None:
    rho = data.draw(st.integers(0, sum(w)))
    assert _seats(tuple(w), rho) == _fraction_seats(w, rho)


@st.composite
def resolutions(draw: st.DrawFn) -> dict:
    """A state meeting both invariants, a resolution set R ⊇ T and all nodes participating."""
    m = draw(st.integers(1, 4))
    n = draw(st.integers(2, 7))
    k = draw(st.integers(1, n - 1))
    eps = draw(st.sampled_from([0, 1, 5]))
    objs = list(range(n))
    values = {j: {i: draw(st.integers(0, 30)) for i in objs} for j in range(1, m + 1)}
    delta = {j: {i: draw(st.integers(-10, 10)) for i in objs} for j in range(1, m + 1)}
    delta[0] = {i: -sum(delta[j][i] for j in range(1, m + 1)) for i in objs}  # Invariant 1
    totals = {i: sum(values[j][i] for j in values) for i in objs}
    new_top = frozenset(sorted(objs, key=lambda i: -totals[i])[:k])
    w = {j: draw(st.integers(0, 4)) for j in range(m + 1)}
    if not sum(w.values()):
        w[0] = 1
    return {"m": m, "eps": eps, "values": values, "delta": delta, "top": new_top, "w": w}


@settings(max_examples=300, deadline=None)
@given(resolutions())
def test_reallocation_over_all_objects_meets_criteria(s: dict) -> None:
    # R = U, N = all nodes, B_j = min over the (new = old) top-k of adjusted values
    m, eps, top = s["m"], s["eps"], s["top"]
    objs = list(s["values"][1])
    entries = {j: {i: (s["values"][j][i], s["delta"][j][i]) for i in objs} for j in s["values"]}
    entries[0] = {i: (0, s["delta"][0][i]) for i in objs}
    borders = {j: min(sum(entries[j][t]) for t in top) for j in entries if j}
    borders[0] = min(s["delta"][0][t] for t in top) + eps
    if any(s["delta"][0][t] + eps < s["delta"][0][o] for t in top for o in objs if o not in top):
        return  # Invariant 2 does not hold on the input
    new = reallocate(top, objs, borders, entries, eps, s["w"])
    for i in objs:  # Invariant 1
        assert sum(new[j][i] for j in new) == 0
    for t in top:  # Invariant 2 and every constraint (Criterion 2)
        for o in objs:
            if o in top:
                continue
            assert new[0][t] + eps >= new[0][o]
            for j in range(1, m + 1):
                assert s["values"][j][t] + new[j][t] >= s["values"][j][o] + new[j][o]


def test_policy_cutoff_at_max_value_over_1000() -> None:
    assert Policy.paper().choose(0, 0)[1] is True
    assert Policy.paper().choose(2, 2000)[0] == 0.5
    assert Policy.paper().choose(3, 2000)[0] == 0
