"""Leeway reallocation (Babcock & Olston 2003, Algorithm 3.1 of §3.2.1) and its policy (§4.3).

Exact arithmetic, all integers
    Algorithm 3.1 splits each leeway ``λ_i`` into shares ``F_j λ_i``; with rational ``F_j`` the
    denominators of ``δ_ij`` would multiply at every resolution, so instead the share of node
    ``N_j`` is an integer ``a_j(λ_i)`` from :func:`apportion`: exactly ``Σ_j a_j(λ) = λ``
    (Invariant 1 is then exact) and every ``a_j`` is non-decreasing in ``λ`` (which is all
    Appendix B uses of ``F_j λ``: Lemma B.3 gives ``λ_t ≥ λ_s`` and ``λ_t ≥ 0``, and Theorem B.4 /
    Invariant 2 need ``a_j(λ_t) ≥ a_j(λ_s)`` and ``a_j(λ_t) ≥ 0``). ``a_j`` is within one unit of
    ``F_j λ``'s D'Hondt share per block of ``M = Σ weights`` units.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction

from tsmon.protocols.topk.messages import Obj


def _seats(weights: tuple[int, ...], rho: int) -> list[int]:
    """Seats of each party among the first ``rho`` D'Hondt seats of a house of ``M = Σ weights``
    (``0 ≤ rho ≤ M``; quotients ``w_j/s`` taken largest first, ties to the lower ``j``).

    For ``rho > 0``, every quotient ``≥ M/rho`` is among the first ``rho`` (there are
    ``Σ ⌊w_j·rho/M⌋ ≤ rho`` of them), so party ``j`` holds at least ``⌊w_j·rho/M⌋`` seats; the
    fewer than ``len(weights)`` seats left go by the largest next quotients, O(n log n) for n
    parties however large ``M``.
    A quotient ``w/d`` is ranked by the integer ``⌊w·K/d⌋``, ``K`` at least the square of every
    divisor ``d`` used: distinct quotients differ by ``≥ 1/d²``, so the ranks keep their order
    exactly, and equal quotients get equal ranks.
    """
    house = sum(weights)
    seats = [w * rho // house for w in weights]
    left = rho - sum(seats)
    scale = (max(seats) + left + 1) ** 2  # K
    heap = [
        (-(w * scale // (s + 1)), j)
        for j, (w, s) in enumerate(zip(weights, seats, strict=True))
        if w
    ]
    heapq.heapify(heap)
    for _ in range(left):
        _, j = heapq.heappop(heap)
        seats[j] += 1
        heapq.heappush(heap, (-(weights[j] * scale // (seats[j] + 1)), j))
    return seats


def apportion(lam: int, weights: Iterable[int]) -> list[int]:
    """Split the integer leeway ``lam`` into integer shares ``≈ F_j λ`` with ``F_j ∝ weights``.

    ``λ = qM + ρ`` (``M = Σ weights``, ``0 ≤ ρ < M``): share ``q·w_j`` plus ``w_j``'s seats among
    the first ``ρ`` D'Hondt seats of a house of ``M`` (which are exactly ``w`` at ``ρ = M``).
    Shares sum to ``lam`` and each is non-decreasing in ``lam`` (negative ``lam`` too).

    Examples
    --------
    >>> apportion(10, [1, 1]), apportion(7, [1, 0, 3]), apportion(-3, [1, 1])
    ([5, 5], [2, 0, 5], [-1, -2])
    """
    w = tuple(weights)
    if any(x < 0 for x in w) or sum(w) == 0:
        raise ValueError(f"weights must be non-negative with a positive sum, got {w}")
    q, rho = divmod(lam, sum(w))
    return [q * wj + bj for wj, bj in zip(w, _seats(w, rho), strict=True)]


def reallocate(
    new_top: frozenset[Obj],
    resolution: Iterable[Obj],
    borders: Mapping[int, int],
    entries: Mapping[int, Mapping[Obj, tuple[int, int]]],
    eps: int,
    weights: Mapping[int, int],
) -> dict[int, dict[Obj, int]]:
    """Algorithm 3.1 (§3.2.1): new ``δ'_ij`` for ``O_i ∈ R`` and the participating ``N_j ∈ N``.

    ``borders[j] = B_j``, ``entries[j][i] = (V_ij, δ_ij)`` (``V_i0 = 0``), ``weights[j] ∝ F_j``;
    the nodes ``N`` are the keys of ``borders`` (0 = coordinator).

    Examples
    --------
    >>> new = reallocate(frozenset({"a"}), ["a", "b"], {0: 0, 1: 5},
    ...                  {0: {"a": (0, 0), "b": (0, 0)}, 1: {"a": (9, 0), "b": (5, 0)}},
    ...                  eps=0, weights={0: 1, 1: 1})
    >>> new
    {0: {'a': 2, 'b': 0}, 1: {'a': -2, 'b': 0}}
    """
    nodes = sorted(borders)
    b_sum = sum(borders.values())  # B_N
    w = [weights.get(j, 0) for j in nodes]
    out: dict[int, dict[Obj, int]] = {j: {} for j in nodes}
    for i in resolution:
        v_n = sum(entries[j][i][0] + entries[j][i][1] for j in nodes)  # V_{i,N}
        lam = v_n - b_sum + (eps if i in new_top else 0)  # λ_i, Alg. 3.1 step 1
        for j, share in zip(nodes, apportion(lam, w), strict=True):
            minus = eps if (i in new_top and j == 0) else 0
            out[j][i] = borders[j] - entries[j][i][0] + share - minus  # Alg. 3.1 step 2
    return out


@dataclass(frozen=True)
class Policy:
    """Resolution policy: leeway allocation (§4.3: ``F_0`` and even or proportional
    ``F_1..F_m``) and ``probe``, the sizes of the groups of busiest nodes a Phase 3 asks first
    when there are at least ``probe_min`` nodes (``()``: all at once, as in the paper; see
    :mod:`.coordinator`).

    The default is ``F_0 = 1/2`` with proportional allocation at every ε, chosen by data
    (``benchmarks/topk/README.md``: 4.2x fewer messages than :meth:`paper` summed over the five
    workloads and eight ε of ``cost.py``; fewer or as many in 33 of the 40 cells, at most 1.44x
    more in the others, six of them at ε ≥ 50). :meth:`paper`
    is the paper's: ``F_0 = 1/2`` with proportional allocation when ε is small, ``F_0 = 0`` with
    even allocation when ε is large; the cutoff is ε = (largest value seen)/1000. The largest
    value seen starts at 0, so early in a run every ε counts as large and every resolution is a
    Phase 3 (up to 14x the messages at ε = 1-20 on the popular-documents workload). ``None``
    for a field means "by the §4.3 cutoff".

    Examples
    --------
    >>> Policy().choose(eps=10, max_value=0)
    (Fraction(1, 2), True)
    >>> Policy.paper().choose(eps=1, max_value=5000)
    (Fraction(1, 2), True)
    >>> Policy.paper().choose(eps=10, max_value=5000)
    (Fraction(0, 1), False)
    >>> Policy(f0=Fraction(1, 4), proportional=None).choose(eps=10, max_value=5000)
    (Fraction(1, 4), False)
    """

    f0: Fraction | None = Fraction(1, 2)  # None: by the §4.3 cutoff
    proportional: bool | None = True
    probe: tuple[int, ...] = (2,)
    probe_min: int = 9  # probe only with at least this many monitor nodes

    def __post_init__(self) -> None:
        if any(q < 1 for q in self.probe) or list(self.probe) != sorted(set(self.probe)):
            raise ValueError(f"probe sizes must be increasing and ≥ 1, got {self.probe}")

    @classmethod
    def paper(cls) -> Policy:
        return cls(None, None, probe=())

    def choose(self, eps: int, max_value: int) -> tuple[Fraction, bool]:
        small = 1000 * eps <= max_value  # §4.3 cutoff: ε ≈ max value / 1000
        f0 = self.f0 if self.f0 is not None else (Fraction(1, 2) if small else Fraction(0))
        prop = self.proportional if self.proportional is not None else small
        if not 0 <= f0 <= 1:
            raise ValueError(f"F_0 must be in [0, 1], got {f0}")
        return Fraction(f0), prop
