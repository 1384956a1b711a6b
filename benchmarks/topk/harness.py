"""One pass over a workload for many ε: top-k monitoring, caching, exact oracle, lower bound.

For every ε of the sweep a :class:`TopKNetwork` (with the given :class:`Policy`, default
``Policy()``, Appendix C offloading with threshold θ = 20 unless told otherwise, bottom-k when
``Workload.bottom``) and two :class:`CachingNetwork` baselines see the same updates; messages
are counted from the first update on (the one-time initial gather is not counted; caching's
copies of the initial values are free as well).

Bottom-k runs everything on *keys* ``−V_i``: bottom-k of ``V`` is top-k of ``−V``, so the
oracle, the lower bound and caching (fed ``−Δ``; the initial objects start in its cache) are
the top-k ones, except that objects nobody reported are not candidates (no phantom at 0).

* Caching, paper threshold ``ε/m`` (§4.4; cached sums within ε, answers valid within 2ε) and
  strict threshold ``ε/(2m)`` (answers valid within ε, like the protocol).
* Oracle: exact ``V_i`` in a sorted list; the protocol's answer is checked for ε-validity
  (``min_{T} V_t + ε ≥ max_{∉T} V_s``, unseen objects 0; bottom-k:
  ``max_{T} V_t ≤ min_{∉T} V_s + ε``) after every ``check_every``-th update
  (1 = every update; O(k) per check), caching's every ``cache_check_every``-th update. A
  violation raises :class:`ValidityError`.
* Lower bound: the coordinator's answer changes only when a message reaches it, so every
  answer change costs ≥ 1 message. An object *must* be in every ε-valid answer while
  ``V_o > V_(k+1) + ε`` (IN) and *must not* be while ``V_o + ε < V_(k)`` (OUT; ``V_(i)`` is
  the i-th largest value). If an object is IN after update ``t1`` and next OUT after update
  ``t2`` (or vice versa), every ε-valid answer sequence changes in ``(t1, t2]``; the fewest
  changes hitting all such intervals (greedy by right end, optimal for interval stabbing) is
  the bound. At ε = 0 without ties it is the number of changes of the exact top-k set. The
  protocol's own answer changes are counted and checked to be ≥ the bound.
"""

from __future__ import annotations

import bisect
import os
import platform
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from workloads import Workload

from tsmon.protocols.topk import MessageCounts, Policy
from tsmon.sim.topk import CachingNetwork, TopKNetwork

IN, OUT, FREE = 1, -1, 0


def machine() -> str:
    """The machine a benchmark ran on, for its last line."""
    return (
        f"machine: {os.cpu_count()} cores, {platform.machine()}, Python "
        f"{platform.python_version()}, 1-min load {os.getloadavg()[0]:.2f}"
    )


class ValidityError(AssertionError):
    """An answer was not valid within its tolerance."""


NONE = -(10**18)  # "no such value" for bottom-k keys (no phantom at 0)


class Exact:
    """Exact sums kept sorted (``(key, obj)``, bisect); keys are ``V_i`` (top-k) or ``−V_i``
    (bottom-k, where unseen objects are no candidates)."""

    def __init__(self, bottom: bool = False) -> None:
        self.bottom = bottom
        self.floor = NONE if bottom else 0  # key of an object nobody reported
        self.values: dict[Hashable, int] = {}
        self.order: list[tuple[int, Any]] = []

    def apply(self, obj: Hashable, delta: int) -> None:
        old = self.values.get(obj)
        if old is not None:
            del self.order[bisect.bisect_left(self.order, (old, obj))]
            new = old + delta
        else:
            new = delta
        self.values[obj] = new
        bisect.insort(self.order, (new, obj))

    def largest(self, i: int) -> int:
        """The i-th largest key (``floor`` when fewer than ``i`` objects are known)."""
        return self.order[-i][0] if len(self.order) >= i else self.floor

    def slack(self, top: Iterable[Hashable], eps: int) -> int:
        """``min_T V_t + ε − max_{∉T} V_s`` on keys (≥ 0 iff ``top`` is valid within ε)."""
        top = frozenset(top)
        if not top:  # valid only while no object beats the unseen ones
            return -1 if self.order and self.largest(1) > self.floor else 0
        low = min(self.values.get(t, 0) for t in top)
        high = self.floor
        for value, obj in reversed(self.order):
            if obj not in top:
                high = max(value, self.floor)
                break
        return low + eps - high if high != NONE else eps

    def between(self, lo: int, hi: int) -> list[Hashable]:
        """Objects with ``lo ≤ V ≤ hi``."""
        a = bisect.bisect_left(self.order, (lo,))
        b = bisect.bisect_left(self.order, (hi + 1,))
        return [o for _, o in self.order[a:b]]


class LowerBound:
    """Interval-stabbing lower bound on ε-valid answer changes (see the module docstring)."""

    def __init__(self, exact: Exact, k: int, eps: int) -> None:
        self.exact, self.k, self.eps = exact, k, eps
        self.state: dict[Hashable, int] = {}
        self.last: dict[Hashable, tuple[int, int]] = {}  # (definite state, last time in it)
        self.zero_out_time: int | None = None  # last time an unseen object (V = 0) was OUT
        self.count = 0
        self.last_stab = -1
        self._bounds = self._thresholds()
        for o in exact.values:
            self.state[o] = self._state(exact.values[o])
        self._note_zero(0)

    def _thresholds(self) -> tuple[int, int]:
        return self.exact.largest(self.k + 1) + self.eps, self.exact.largest(self.k) - self.eps

    def _state(self, v: int) -> int:
        hi, lo = self._bounds
        return IN if v > hi else OUT if v < lo else FREE

    def _note_zero(self, t: int) -> None:
        if not self.exact.bottom and self._state(0) == OUT:
            self.zero_out_time = t

    def after(self, t: int, obj: Hashable, old_bounds: tuple[int, int]) -> None:
        """Update ``t`` (1, 2, …) changed ``obj``; call after :meth:`Exact.apply`."""
        self._bounds = new = self._thresholds()
        cand = [obj]
        if obj not in self.state:  # first seen: it was OUT whenever V = 0 was
            self.state[obj] = FREE
            if self.zero_out_time is not None:
                self.last[obj] = (OUT, self.zero_out_time)
        if new[0] != old_bounds[0]:
            cand += self.exact.between(min(new[0], old_bounds[0]), max(new[0], old_bounds[0]) + 1)
        if new[1] != old_bounds[1]:
            cand += self.exact.between(min(new[1], old_bounds[1]) - 1, max(new[1], old_bounds[1]))
        values, state, last = self.exact.values, self.state, self.last
        for o in cand:
            s = self._state(values[o])
            prev = state.get(o, FREE)
            if s == prev:
                continue
            if prev != FREE:
                last[o] = (prev, t - 1)
            if s != FREE:
                before = last.get(o)
                if before is not None and before[0] == -s and self.last_stab <= before[1]:
                    self.count += 1
                    self.last_stab = t
            state[o] = s
        self._note_zero(t)

    @property
    def bounds(self) -> tuple[int, int]:
        return self._bounds


@dataclass
class Result:
    """Costs for one (workload, ε, seed)."""

    workload: str
    eps: int
    seed: int
    updates: int
    topk: int
    entries_mean: float
    entries_max: int
    resolutions: int
    phase2: int
    probe: int
    phase3: int
    refresh: int
    offloads: int
    theta: int | None
    caching: int
    caching_strict: int
    lower_bound: int
    answer_changes: int
    checks: int
    max_value: int
    f0: str
    proportional: bool

    def row(self) -> dict[str, Any]:
        return dict(self.__dict__)


def run(
    w: Workload,
    eps_values: Sequence[int],
    seed: int,
    policy: Policy | None = None,
    check_every: int = 1,
    cache_check_every: int = 5_000,
    baselines: bool = True,
    theta: int | None = 20,
) -> list[Result]:
    """All ε in one pass over ``w.updates``; raises :class:`ValidityError` on a bad answer.
    ``theta``: Appendix C threshold (``None``: no offloading)."""
    m, k, bottom = w.m, w.k, w.bottom
    sign = -1 if bottom else 1  # keys: V (top-k) or −V (bottom-k)
    nets = []
    caches: list[tuple[CachingNetwork, CachingNetwork]] = []
    exact = Exact(bottom)
    for values in w.initial:
        for o, v in values.items():
            exact.apply(o, sign * v)
    for eps in eps_values:
        net = TopKNetwork(m, k, eps, policy, initial=w.initial, bottom=bottom, theta=theta)
        net.counts = MessageCounts()  # count the stream only
        nets.append(net)
        if baselines:
            pair = (CachingNetwork(m, k, eps), CachingNetwork(m, k, eps, Fraction(eps, 2 * m)))
            for c in pair:
                for j, values in enumerate(w.initial, start=1):
                    for o, v in values.items():
                        c.update(j, o, sign * v)
                        if bottom:
                            c.cache.setdefault(o, 0)  # known objects are candidates
                c.counts = MessageCounts()
            caches.append(pair)
    bounds = [LowerBound(exact, k, eps) for eps in eps_values]
    answers = [net.answer() for net in nets]
    changes = [0] * len(nets)
    checks = 0
    max_value = max((abs(v) for v in exact.values.values()), default=0)
    for t, (node, obj, delta) in enumerate(w.updates, start=1):
        old = [lb.bounds for lb in bounds]
        exact.apply(obj, sign * delta)
        if abs(exact.values[obj]) > max_value:
            max_value = abs(exact.values[obj])
        check = t % check_every == 0
        cache_check = baselines and t % cache_check_every == 0
        for i, net in enumerate(nets):
            net.update(node, obj, delta)
            bounds[i].after(t, obj, old[i])
            a = net.answer()
            if a != answers[i]:
                changes[i] += 1
                answers[i] = a
            if check:
                checks += 1
                if exact.slack(a, net.eps) < 0:
                    raise ValidityError(
                        f"{w.name} seed {seed} ε={net.eps}: top-k answer {sorted(a, key=str)} "
                        f"invalid after update {t} (slack {exact.slack(a, net.eps)})"
                    )
            if baselines:
                paper, strict = caches[i]
                paper.update(node, obj, sign * delta)
                strict.update(node, obj, sign * delta)
                if cache_check:
                    for c, tol in ((paper, 2 * net.eps), (strict, net.eps)):
                        if exact.slack(c.answer(), tol) < 0:
                            raise ValidityError(
                                f"{w.name} seed {seed} ε={net.eps}: caching (threshold "
                                f"{c.threshold}) invalid within {tol} after update {t}"
                            )
    w.max_value = max_value
    out = []
    for i, net in enumerate(nets):
        if changes[i] < bounds[i].count:
            raise ValidityError(
                f"{w.name} ε={net.eps}: {changes[i]} answer changes < lower bound "
                f"{bounds[i].count} (bound or check broken)"
            )
        c, ph = net.counts, net.coordinator.phases
        f0, prop = net.coordinator.policy.choose(net.eps, net.coordinator.max_value)
        out.append(
            Result(
                workload=w.name,
                eps=net.eps,
                seed=seed,
                updates=len(w.updates),
                topk=c.total,
                entries_mean=c.mean_entries,
                entries_max=c.max_entries,
                resolutions=net.resolutions,
                phase2=ph["phase2"],
                probe=ph["probe"],
                phase3=ph["phase3"],
                refresh=ph["refresh"],
                offloads=c.offloads,
                theta=theta,
                caching=caches[i][0].counts.total if baselines else 0,
                caching_strict=caches[i][1].counts.total if baselines else 0,
                lower_bound=bounds[i].count,
                answer_changes=changes[i],
                checks=checks // max(1, len(nets)),
                max_value=max_value,
                f0=str(f0),
                proportional=prop,
            )
        )
    return out
