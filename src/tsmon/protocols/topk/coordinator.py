"""Coordinator ``N_0`` of distributed top-k monitoring (Babcock & Olston 2003, §3, §4.3, App. B).

Exact arithmetic, all integers
    Partial values are integer counts and ε must be a non-negative integer (scale the counts
    for a fractional ε); reallocation (Algorithm 3.1) is in :mod:`.allocation`.

Probing before Phase 3 (a choice the paper leaves open)
    When the Phase 2 validation test fails and there are at least ``Policy.probe_min`` nodes,
    the coordinator first asks only the ``Policy.probe`` other nodes that reported the most
    updates (proportional allocation gives them the largest shares, so they hold the most
    slack) and repeats the test over
    ``N = {N_0, N_f} ∪ S``: ``V_{t,N} + ε ≥ V_{s,N}`` for every ``O_t ∈ T``, ``O_s ∈ R − T``.
    The constraints of the nodes outside ``N`` hold, so with Invariant 1 this proves
    ``V_t + ε ≥ V_s`` as Phase 2 does for ``N = {N_0, N_f}`` (Lemma B.1); ``T`` stays, and
    Algorithm 3.1 over ``N`` meets Correctness Criteria 1-2 by the proofs of Appendix B, which
    take any ``N`` when ``T' = T``. That costs ``3|S| + 2`` messages instead of ``3m − 1``. If
    the test fails the coordinator asks the other nodes and finishes Phase 3 with every reply:
    the same ``3m − 1`` messages in all, one round trip later. ``Policy.paper()`` does not probe.
    A probe re-centres only the nodes it asks, so the slack the others gathered waits for the
    next Phase 3: with few nodes (4 or 8 in ``benchmarks/topk``) that cost more than the few
    messages a probe saves, hence ``probe_min`` (default 9).

Objects nobody reported
    Every object without an entry at node ``N_j`` has adjusted value ``d_j`` there (``d_0`` at
    the coordinator), zero until changed; the :data:`PHANTOM` object stands for all of them, is
    always outside ``T`` and, as real objects, obeys ``Σ_j d_j = 0`` (Invariant 1) and
    ``δ_t0 + ε ≥ d_0`` (Invariant 2). A node that sees the phantom beat a top-k object (possible
    only after partial values fell) cannot name the objects involved, so the coordinator runs a
    *full refresh*: Phase 3 over every object any node or the coordinator holds plus the
    phantom (then ``U − R`` is empty), which also re-sets every ``d_j``. The initial top-k is
    computed the same way from one gather of all partial values (§3).

Folded resolutions (a choice the paper leaves open)
    Appendix A serializes resolutions. Requests taken up together (every request queued while
    a Phase 3 ran, or a host's micro-batch: :meth:`Coordinator.on_requests`) each try Phase 2
    in turn; those that fail are *folded* into one Phase 3 over the union of their resolution
    sets, ``R = T ∪ F_f1 ∪ F_f2 ∪ …``, in which every node whose Phase 1 values do not cover
    ``R`` (the requesters too) reports ``V_ij``, ``δ_ij`` of ``R`` and its border ``B_j`` with
    respect to ``R``. That is the paper's Phase 3 (§3.1) with a larger resolution set: Lemma B.3
    needs only ``T ⊆ R`` and ``B_j ≤ V_tj + δ_tj`` for ``O_t ∈ T``, and Theorem B.4 needs
    ``B_j ≥ V_sj + δ_sj`` for ``O_s ∈ U − R``, which a border taken over ``U − R`` gives. ``n``
    requests then cost one round of control instead of ``n`` (201 micro-batches for 100
    sources starting at once, 3 after). A fold probes as one request does, over
    ``N = {N_0} ∪ F ∪ S`` (the requesters re-asked for ``R`` with the probe); a full-refresh
    request among them folds in the others (it gathers every object).

Nonnegativity
    Partial values never go below zero (counts; cancelling updates undo earlier ones), so every
    ``V_i ≥ 0 = V_phantom`` and the phantom never needs a place in ``T``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tsmon.protocols.topk.allocation import Policy, reallocate
from tsmon.protocols.topk.messages import (
    Install,
    Obj,
    ResolutionRequest,
    ToNode,
    ValueReply,
    ValueRequest,
)


class _Phantom:
    """Every object a node holds no entry for (adjusted value ``d_j`` at ``N_j``)."""

    def __repr__(self) -> str:
        return "PHANTOM"


PHANTOM: Obj = _Phantom()


@dataclass
class _Resolution:
    """A Phase 3 (or full refresh) under way: the resolution set ``R``, the requesters, and the
    values ``(V_ij, δ_ij)`` of ``R`` and borders ``B_j`` known so far (§3.1)."""

    objects: frozenset[Obj]  # R
    requesters: frozenset[int]  # the nodes N_f whose Phase 1 requests it resolves
    entries: dict[int, Mapping[Obj, tuple[int, int]]]  # requesters whose values cover R
    borders: dict[int, int]  # B_j of those
    new: bool  # names an object some node may hold no entry for: no probe (Phase 3)
    phantom: bool = False  # a full refresh


class Coordinator:
    """Coordinator ``N_0``: top-k set ``T``, adjustment factors ``δ_i0`` and resolution (§3.1).

    Driven by messages: :meth:`initialize` with the one-time gather, :meth:`on_requests` with
    the Phase 1 requests taken up together (returns the Phase 2 :class:`Install` messages, then
    the :class:`ValueRequest` list of their folded Phase 3 or full refresh), :meth:`on_replies`
    with the replies (returns the installs, or after a probe that failed the requests to the
    other nodes).
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
        # resolutions ended by Phase 2, by a probe, by Phase 3, by a full refresh
        self.phases = {"phase2": 0, "probe": 0, "phase3": 0, "refresh": 0}
        self._pending: _Resolution | None = None
        self._probing = False  # the probed nodes' replies are awaited
        self._probed: list[ValueReply] = []  # their replies, while the others' are awaited

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

    def on_requests(self, requests: Sequence[ResolutionRequest]) -> list[ToNode]:
        """Phase 1 requests taken up together, in this order: each tries Phase 2 (§3.1), and
        those that fail are folded into one Phase 3 (module docstring). Returns the Phase 2
        installs, then the requests of the Phase 3 (none when it needs no other node)."""
        for r in requests:
            self.update_counts[r.node] += r.updates
            # V_i ≥ V_if (partial values are ≥ 0): a running estimate of the largest value (§4.3)
            self.max_value = max(self.max_value, 0, *(abs(v) for v, _ in r.values.values()))
        if any(r.phantom for r in requests):  # a full refresh resolves every object
            self.phases["refresh"] += 1
            nodes = frozenset(r.node for r in requests)
            self._pending = _Resolution(frozenset(), nodes, {}, {}, new=True, phantom=True)
            return list(self.full_request())
        out: list[ToNode] = []
        failed = []
        for r in requests:
            resolution = set(r.values)
            # validation test, §3.1 Phase 2 (a new object must reach every node: Phase 3)
            if not r.new and self._valid(resolution, {r.node: r.values}):
                self.phases["phase2"] += 1
                borders = {0: self._coordinator_border(resolution), r.node: r.border}
                out += self._finish(self.top, resolution, borders, {r.node: r.values})
            else:
                failed.append(r)
        if not failed:
            return out
        objects = frozenset(o for r in failed for o in r.values)  # R = T ∪ F_f1 ∪ F_f2 ∪ …
        cover = [r for r in failed if frozenset(r.values) == objects]
        self._pending = _Resolution(
            objects,
            frozenset(r.node for r in failed),
            {r.node: r.values for r in cover},
            {r.node: r.border for r in cover},
            new=any(r.new for r in failed),
        )
        return out + self._ask(set())

    def _ask(self, asked: set[int]) -> list[ToNode]:
        """The next nodes a Phase 3 asks: the requesters whose values do not cover ``R`` (a
        fold's) and the busiest other nodes not ``asked`` yet, up to the next size in
        ``Policy.probe``, while that leaves a node unasked; else all the rest."""
        p = self._pending
        assert p is not None
        known = {*p.entries, *asked}
        need = sorted(p.requesters - known)
        others = [j for j in range(1, self.m + 1) if j not in known and j not in p.requesters]
        done = len(asked - p.requesters)
        sizes = [q for q in self.policy.probe if done < q < done + len(others)]
        if sizes and self.m >= self.policy.probe_min and not p.new:
            self._probing = True
            busiest = sorted(others, key=lambda j: (-self.update_counts[j], j))
            ask = sorted([*need, *busiest[: sizes[0] - done]])
            return [ValueRequest(j, p.objects) for j in ask]
        self._probing = False
        self.phases["phase3"] += 1
        return [ValueRequest(j, p.objects) for j in sorted([*need, *others])]

    def _valid(
        self, resolution: set[Obj], entries: Mapping[int, Mapping[Obj, tuple[int, int]]]
    ) -> bool:
        """Validation test (§3.1 Phase 2) over ``N = {N_0} ∪ entries``: ``V_{t,N} + ε ≥ V_{s,N}``
        for every ``O_t ∈ T``, ``O_s ∈ R − T``."""
        v_n = {i: self.d0(i) + sum(sum(e[i]) for e in entries.values()) for i in resolution}
        others = [v_n[s] for s in resolution - self.top]
        return not others or min(v_n[t] for t in self.top) + self.eps >= max(others)

    def on_replies(self, replies: list[ValueReply]) -> list[ToNode]:
        """Phase 3 (§3.1) or full refresh: new top-k from the gathered values, reallocation.
        After a probe: the installs of the nodes probed if the validation test passes over
        them, else the requests to the other nodes (whose replies end Phase 3)."""
        p = self._pending
        if p is None:
            raise RuntimeError("no resolution under way")
        if p.phantom:
            self._pending = None
            return list(self._refresh(replies))
        resolution = set(p.objects)
        gathered = [*self._probed, *replies]
        entries: dict[int, Mapping[Obj, tuple[int, int]]] = dict(p.entries)
        borders = {0: self._coordinator_border(resolution), **p.borders}
        for r in replies:
            self.update_counts[r.node] += r.updates
        for r in gathered:
            assert r.border is not None
            entries[r.node], borders[r.node] = r.values, r.border
        if self._probing and self._valid(resolution, entries):  # T stays (Lemma B.1, App. B)
            self.phases["probe"] += 1
            self._pending, self._probing, self._probed = None, False, []
            return list(self._finish(self.top, resolution, borders, entries))
        if self._probing:
            self._probed = gathered
            return self._ask(set(entries) - set(p.entries))
        self._probed = []
        self._pending = None
        totals = {i: sum(entries[j][i][0] for j in entries) for i in resolution}  # V_i
        self.max_value = max(self.max_value, *map(abs, totals.values()))
        return list(self._finish(self._rank(totals), resolution, borders, entries))

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
