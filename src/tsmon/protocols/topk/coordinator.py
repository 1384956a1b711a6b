"""Coordinator ``N_0`` of distributed top-k monitoring (Babcock & Olston 2003, §3, §4.3, App. B).

Exact arithmetic, all integers
    Partial values are integer counts and ε must be a non-negative integer (scale the counts
    for a fractional ε). Algorithm 3.1 splits each leeway ``λ_i`` into shares ``F_j λ_i``; with
    rational ``F_j`` the denominators of ``δ_ij`` would multiply at every resolution, so instead
    the share of node ``N_j`` is an integer ``a_j(λ_i)`` from :func:`apportion`: exactly
    ``Σ_j a_j(λ) = λ`` (Invariant 1 is then exact) and every ``a_j`` is non-decreasing in ``λ``
    (which is all Appendix B uses of ``F_j λ``: Lemma B.3 gives ``λ_t ≥ λ_s`` and ``λ_t ≥ 0``, and
    Theorem B.4 / Invariant 2 need ``a_j(λ_t) ≥ a_j(λ_s)`` and ``a_j(λ_t) ≥ 0``). ``a_j`` is
    within one unit of ``F_j λ``'s D'Hondt share per block of ``M = Σ weights`` units.

Objects nobody reported
    Every object without an entry at node ``N_j`` has adjusted value ``d_j`` there (``d_0`` at
    the coordinator), zero until changed; the :data:`PHANTOM` object stands for all of them, is
    always outside ``T`` and, as real objects, obeys ``Σ_j d_j = 0`` (Invariant 1) and
    ``δ_t0 + ε ≥ d_0`` (Invariant 2). A node that sees the phantom beat a top-k object (possible
    only after partial values fell) cannot name the objects involved, so the coordinator runs a
    *full refresh*: Phase 3 over every object any node or the coordinator holds plus the
    phantom (then ``U − R`` is empty), which also re-sets every ``d_j``. The initial top-k is
    computed the same way from one gather of all partial values (§3).

Nonnegativity
    Partial values never go below zero (counts; cancelling updates undo earlier ones), so every
    ``V_i ≥ 0 = V_phantom`` and the phantom never needs a place in ``T``.
"""

from __future__ import annotations

import functools
import heapq
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction

from tsmon.protocols.topk.messages import (
    Install,
    Obj,
    ResolutionRequest,
    ValueReply,
    ValueRequest,
)


class _Phantom:
    """Every object a node holds no entry for (adjusted value ``d_j`` at ``N_j``)."""

    def __repr__(self) -> str:
        return "PHANTOM"


PHANTOM: Obj = _Phantom()


@functools.lru_cache(maxsize=512)
def _seat_prefix(weights: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """Seats of each party among the first ρ D'Hondt seats, ρ = 0..Σ weights."""
    seats = [0] * len(weights)
    prefix = [tuple(seats)]
    heap = [(-Fraction(w), j) for j, w in enumerate(weights) if w > 0]
    heapq.heapify(heap)
    for _ in range(sum(weights)):
        _, j = heapq.heappop(heap)
        seats[j] += 1
        prefix.append(tuple(seats))
        heapq.heappush(heap, (-Fraction(weights[j], seats[j] + 1), j))
    return tuple(prefix)


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
    return [q * wj + bj for wj, bj in zip(w, _seat_prefix(w)[rho], strict=True)]


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
    """Leeway allocation policy (§4.3): ``F_0`` and even or proportional ``F_1..F_m``.

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

    @classmethod
    def paper(cls) -> Policy:
        return cls(None, None)

    def choose(self, eps: int, max_value: int) -> tuple[Fraction, bool]:
        small = 1000 * eps <= max_value  # §4.3 cutoff: ε ≈ max value / 1000
        f0 = self.f0 if self.f0 is not None else (Fraction(1, 2) if small else Fraction(0))
        prop = self.proportional if self.proportional is not None else small
        if not 0 <= f0 <= 1:
            raise ValueError(f"F_0 must be in [0, 1], got {f0}")
        return Fraction(f0), prop


class Coordinator:
    """Coordinator ``N_0``: top-k set ``T``, adjustment factors ``δ_i0`` and resolution (§3.1).

    Driven by messages: :meth:`initialize` with the one-time gather, :meth:`on_request` with a
    Phase 1 request (returns the Phase 2 :class:`Install` or the Phase 3 / full-refresh
    :class:`ValueRequest` list), :meth:`on_replies` with the replies (returns the installs).
    """

    def __init__(
        self, m: int, k: int, eps: int, policy: Policy | None = None, bottom: bool = False
    ) -> None:
        if m < 0 or k < 1:
            raise ValueError(f"need m ≥ 0 and k ≥ 1, got m={m}, k={k}")
        if not isinstance(eps, int) or eps < 0:
            raise ValueError(f"ε must be a non-negative integer, got {eps!r}")
        self.m, self.k, self.eps, self.bottom = m, k, eps, bottom
        self.policy = policy or Policy()
        self.top: frozenset[Obj] = frozenset()
        self.epoch = 0  # raised whenever T changes (Appendix A)
        self.delta0: dict[Obj, int] = {}  # δ_i0 different from d_0
        self.default0 = 0  # d_0
        self.max_value = 0  # largest |V_i| seen (the §4.3 cutoff)
        self.known: set[Obj] = set()  # every object resolved so far
        self.update_counts = [0] * (m + 1)  # updates reported by each node (proportional)
        self.phases = {"phase2": 0, "phase3": 0, "refresh": 0}
        self._pending: ResolutionRequest | None = None

    # -- helpers ---------------------------------------------------------------------------

    def d0(self, obj: Obj) -> int:
        """``δ_i0``."""
        return self.default0 if obj is PHANTOM else self.delta0.get(obj, self.default0)

    def _set_d0(self, obj: Obj, value: int) -> None:
        if obj is PHANTOM:
            return
        if value == self.default0:
            self.delta0.pop(obj, None)
        else:
            self.delta0[obj] = value

    def _weights(self, nodes: list[int]) -> dict[int, int]:
        """Integer weights ∝ ``F_j`` for the participating nodes (0 = coordinator), §4.3."""
        f0, prop = self.policy.choose(self.eps, self.max_value)
        monitors = [j for j in nodes if j != 0]
        if prop:
            total = sum(self.update_counts[j] for j in monitors)
            scale = 16 * len(monitors)
            w = {j: 1 + (self.update_counts[j] * scale // total if total else 0) for j in monitors}
        else:
            w = dict.fromkeys(monitors, 1)
        p, q = f0.numerator, f0.denominator
        out = {j: wj * (q - p) for j, wj in w.items()}
        out[0] = p * sum(w.values())
        return out

    def _coordinator_border(self, resolution: set[Obj]) -> int:
        """``B_0 = max_{O_i∈U−R} δ_i0`` (§3.2.1), the phantom ``d_0`` included, capped at
        ``min_{O_t∈T} δ_t0 + ε`` (equal by Invariant 2; defined when ``U − R`` is empty)."""
        cap = min(self.d0(t) for t in self.top) + self.eps if self.top else None
        if PHANTOM in resolution:
            assert cap is not None
            return cap
        rest = [d for o, d in self.delta0.items() if o not in resolution]
        if not self.bottom:  # the phantom is in U − R
            rest.append(self.default0)
        elif self.known - resolution - set(self.delta0):
            rest.append(self.default0)  # known objects whose δ_i0 is d_0
        if not rest:
            return 0 if cap is None else cap
        return max(rest) if cap is None else min(cap, max(rest))

    def _rank(self, totals: Mapping[Obj, int]) -> frozenset[Obj]:
        """Top-k of ``totals`` (ties keep members of the current ``T``; fewer than ``k`` while
        fewer objects are known)."""
        real = [o for o in totals if o is not PHANTOM]
        # ties: members of T first, then by name, so no set's hash order decides (replays in
        # another process must agree)
        real.sort(key=lambda o: (-totals[o], o not in self.top, type(o).__name__, repr(o)))
        return frozenset(real[: self.k])

    def _finish(
        self,
        new_top: frozenset[Obj],
        resolution: set[Obj],
        borders: dict[int, int],
        entries: dict[int, Mapping[Obj, tuple[int, int]]],
    ) -> list[Install]:
        self.known |= resolution - {PHANTOM}
        changed = new_top != self.top
        if changed:
            self.epoch += 1
        if not new_top:  # nothing known yet: no constraints, nothing to reallocate
            self.top = new_top
            return [Install(j, {}, epoch=self.epoch) for j in sorted(borders) if j != 0]
        entries[0] = {i: (0, self.d0(i)) for i in resolution}
        new = reallocate(
            new_top, resolution, borders, entries, self.eps, self._weights(sorted(borders))
        )
        mine = new.pop(0)
        if PHANTOM in mine:  # full refresh: every known object is in R, so d_0 may change
            self.default0 = mine.pop(PHANTOM)
            self.delta0 = {o: x for o, x in self.delta0.items() if x != self.default0}
        for i, d in mine.items():
            self._set_d0(i, d)
        self.top = new_top
        installs = []
        for j in sorted(new):
            deltas = new[j]
            default = deltas.pop(PHANTOM, None)
            top = new_top if changed else None
            installs.append(Install(j, deltas, top=top, default=default, epoch=self.epoch))
        return installs

    @property
    def resolving(self) -> bool:
        """A Phase 3 (or full refresh) awaits the nodes' replies."""
        return self._pending is not None

    # -- protocol --------------------------------------------------------------------------

    def add_node(self) -> int:
        """A new monitor node ``N_{m+1}`` with every ``V_ij = 0`` and ``δ_ij = 0`` (so both
        invariants still hold); returns its number."""
        self.m += 1
        self.update_counts.append(0)
        return self.m

    def full_request(self) -> list[ValueRequest]:
        """Ask every node for every value (initial gather, §3; full refresh)."""
        return [ValueRequest(j, None) for j in range(1, self.m + 1)]

    def initialize(self, replies: list[ValueReply]) -> list[Install]:
        """Initial top-k from one gather of all partial values (§3), then reallocation."""
        return self._refresh(replies)

    def on_request(self, request: ResolutionRequest) -> list[Install] | list[ValueRequest]:
        """Phase 2 (§3.1): validation test with ``δ_i0`` and ε; else ask for Phase 3."""
        self.update_counts[request.node] += request.updates
        # V_i ≥ V_if (partial values are ≥ 0): a running estimate of the largest value (§4.3)
        self.max_value = max(self.max_value, *(abs(v) for v, _ in request.values.values()))
        self._pending = request
        if request.phantom:
            self.phases["refresh"] += 1
            return self.full_request()
        f = request.node
        resolution = set(request.values)
        v_n = {i: sum(request.values[i]) + self.d0(i) for i in resolution}  # V_{i,N}, N={N0,Nf}
        others = [v_n[s] for s in resolution - self.top]
        # validation test, §3.1 Phase 2 (a new object must reach every node: Phase 3)
        if not request.new and (
            not others or min(v_n[t] for t in self.top) + self.eps >= max(others)
        ):
            self.phases["phase2"] += 1
            self._pending = None
            borders = {0: self._coordinator_border(resolution), f: request.border}
            return self._finish(self.top, resolution, borders, {f: request.values})
        self.phases["phase3"] += 1
        objects = frozenset(resolution)
        return [ValueRequest(j, objects) for j in range(1, self.m + 1) if j != f]

    def on_replies(self, replies: list[ValueReply]) -> list[Install]:
        """Phase 3 (§3.1) or full refresh: new top-k from the gathered values, reallocation."""
        request, self._pending = self._pending, None
        if request is None:
            raise RuntimeError("no resolution under way")
        if request.phantom:
            return self._refresh(replies)
        resolution = set(request.values)
        entries: dict[int, Mapping[Obj, tuple[int, int]]] = {request.node: request.values}
        borders = {0: self._coordinator_border(resolution), request.node: request.border}
        for r in replies:
            self.update_counts[r.node] += r.updates
            assert r.border is not None
            entries[r.node], borders[r.node] = r.values, r.border
        totals = {i: sum(entries[j][i][0] for j in entries) for i in resolution}  # V_i
        self.max_value = max(self.max_value, *map(abs, totals.values()))
        return self._finish(self._rank(totals), resolution, borders, entries)

    def _refresh(self, replies: list[ValueReply]) -> list[Install]:
        """Phase 3 over every known object and the phantom (``U − R = ∅``)."""
        nodes = [r.node for r in replies]
        if len(set(nodes)) != len(nodes) or not set(nodes) <= set(range(1, self.m + 1)):
            raise ValueError(f"a full refresh needs one reply per node, got nodes {nodes}")
        resolution: set[Obj] = {*self.delta0, *self.top, *self.known}
        if not self.bottom:
            resolution.add(PHANTOM)
        for r in replies:
            self.update_counts[r.node] += r.updates
            resolution.update(r.values)
        entries: dict[int, Mapping[Obj, tuple[int, int]]] = {}
        for r in replies:
            assert r.default is not None
            entries[r.node] = {i: r.values.get(i, (0, r.default)) for i in resolution}
        totals = {i: sum(entries[j][i][0] for j in entries) for i in resolution}
        self.max_value = max(self.max_value, *map(abs, totals.values()), 0)
        new_top = self._rank(totals)
        old = self.top or new_top  # Lemma B.3 needs B_j ≤ V_nj + δ_nj for O_n ∈ old T
        if not old:
            return self._finish(new_top, resolution, dict.fromkeys([0, *entries], 0), entries)
        borders = {j: min(sum(entries[j][t]) for t in old) for j in entries}
        borders[0] = min(self.d0(t) for t in old) + self.eps
        return self._finish(new_top, resolution, borders, entries)
