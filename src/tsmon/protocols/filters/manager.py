"""The precision manager of the stream coordinator (Olston, Jiang, Widom 2003, Fig. 1): the
width schedules it sends, period by period (§3.1, §3.2) and when queries change (§3.4).

Query changes while running (§3.4):

* adding a query re-initialises the bounds it reads so that every constraint holds at once:
  each object gets at most the uniform share of the new constraints (explicit shrink messages);
* weakening ``δ`` is absorbed by growth at the next boundary;
* strengthening ``δ`` suppresses growth and lets the period shrinks narrow the answer, or, with
  ``immediately=True`` (always when ``S = 0``), sends explicit shrink messages;
* removing a query frees its objects: objects left in no query get ``W = inf``;
* replacing a query (a query over globs that a new series joined) is adding it, except that
  the objects it keeps get no message where their schedules are within their new share.

A shrink is only assumed by the coordinator once the source confirms it (see
:mod:`~tsmon.protocols.filters.bounds`), so with latency a tightened or new query meets its
``δ`` one round trip later; its answer contains the exact value throughout.

:class:`PrecisionManager` is the base of :class:`~tsmon.protocols.filters.coordinator.Coordinator`,
which holds the state it reads (the bound cache, the queries, the period and the counts of
streamed updates) and moves time.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from tsmon.protocols.filters.messages import Growth, Shrink, WidthMessage
from tsmon.protocols.filters.precision import (
    LEFTOVER_RTOL,
    burden_scores,
    burden_targets,
    deviations,
    finite_burdens,
    grow_greedily,
    growth_caps,
)
from tsmon.protocols.filters.queries import Query
from tsmon.protocols.filters.system import System, build_system

if TYPE_CHECKING:  # pragma: no cover - typing only
    from tsmon.protocols.filters.bounds import BoundCache
    from tsmon.protocols.filters.tuning import SafetyNet

__all__ = ["PrecisionManager"]


class PrecisionManager:
    """Width messages: period growth (§3.2) and query changes (§3.4); see the module docstring."""

    cache: BoundCache
    queries: dict[str, Query]
    system: System
    safety: SafetyNet | None
    period_ms: int | None
    settled_ms: int | None
    latency_ms: int
    seq: int
    counts: np.ndarray
    escapes: np.ndarray
    fallback: bool
    growth: str
    factor: float
    rng: np.random.Generator
    padding: bool
    max_rates: dict[str, float]
    cost_of: dict[str, float]

    def _message(
        self, kind: type[Growth] | type[Shrink], i: int, width: float, adaptive: bool
    ) -> WidthMessage:
        self.seq += 1
        assert self.settled_ms is not None
        if self.safety is None:
            return kind(self.cache.objects[i], float(width), self.settled_ms, self.seq, adaptive)
        if self.period_ms is not None:
            self.safety.spend()
        # a chosen T travels with every width message: any one may be a source's first
        uniform = float(self.system.uniform[i])
        return kind(
            self.cache.objects[i],
            float(width),
            self.settled_ms,
            self.seq,
            adaptive,
            self.period_ms,
            uniform if math.isfinite(uniform) else None,
        )

    # ----------------------------------------------------------------- §3.1, §3.2

    def _on_period(self, boundary: int) -> list[WidthMessage]:
        assert self.period_ms is not None
        self.cache.set_period(boundary // self.period_ms)  # §3.1, in step with the sources
        sent, escapes = self.counts > 0, self.escapes.copy()
        counts = self.counts.copy()
        self.counts[:] = 0
        self.escapes[:] = np.inf
        multi = np.flatnonzero(self.system.multi)
        if (
            self.safety is not None
            and not self.fallback
            and self.safety.tripped(boundary, len(multi))
        ):
            self.fallback = True  # adapting costs clearly more: uniform static from now on
            self.system = self._build(self.queries)
            latest, _ = self.cache.latest_all()
            uniform = self.system.uniform
            # static at once, no wider than now: until a source confirms, the answers take
            # the wider of its old and new schedule, so widening one series while another's
            # narrowing is unconfirmed could exceed δ; :meth:`_widen_to_uniform` follows
            return [
                self._retarget(i, float(min(uniform[i], latest[i])), False, float(latest[i]))
                for i in multi
            ]
        if self.fallback:
            return self._widen_to_uniform(multi)
        sys_ = self.system
        kk = sys_.k[sys_.growth_rows]
        # beyond §3.2: an object that sent nothing this period cannot send less with more width
        candidates = np.flatnonzero(sys_.adaptive & self.cache.adaptive & sent)
        candidates = np.array([i for i in candidates if i not in self.cache.pending], dtype=int)
        if kk.shape[0] == 0 or len(candidates) == 0:
            return []
        widths = self.cache.assumed()
        costs = np.array([self.cost_of.get(o, 1.0) for o in self.cache.objects])
        burdens = finite_burdens(burden_scores(counts, widths, costs, self.period_ms))
        targets = burden_targets(kk, burdens)
        devs = deviations(kk, burdens, targets)
        caps = growth_caps(burdens, devs, widths) if self.growth == "capped" else None
        # nor by less than would have kept its nearest escape this period (inf when it sent
        # only a first value: no width avoids that)
        finite = np.isfinite(escapes)
        needs = np.full(len(widths), np.inf)
        needs[finite] = 2 * escapes[finite] - widths[finite]
        grown = grow_greedily(
            kk, sys_.budgets[sys_.growth_rows], widths, devs, candidates, self.rng, caps, needs
        )
        out: list[WidthMessage] = []
        for i in sorted(grown):
            self.cache.confirm_width(i, grown[i], adaptive=True)  # wider: safe before it lands
            out.append(self._message(Growth, i, grown[i], True))
        return out

    def _widen_to_uniform(self, multi: np.ndarray) -> list[WidthMessage]:
        """After the safety net tripped: once every source of a multi-object constraint has
        confirmed its static width, grow those below their uniform width to it (a growth is
        safe before it lands, and uniform widths meet every constraint)."""
        if any(int(i) in self.cache.pending for i in multi):
            return []
        latest, _ = self.cache.latest_all()
        uniform = self.system.uniform
        return [
            self._retarget(i, float(uniform[i]), False, float(latest[i]))
            for i in multi.tolist()
            if latest[i] < uniform[i]
        ]

    # ----------------------------------------------------------------- queries (§3.4)

    def add_query(self, query: Query) -> list[WidthMessage]:
        """Register ``query``; returns the width messages to send.

        Query changes happen at the coordinator's settled time (``wall − λ``), the time its
        width messages are stamped with, so that both sides shrink them at the same boundaries.
        """
        if query.name in self.queries:
            raise ValueError(f"query {query.name!r} exists; remove it first or alter its δ")
        return self._put(query)

    def _put(self, query: Query) -> list[WidthMessage]:
        new = {**self.queries, query.name: query}
        return self._change(new, tighten={query.name}, objects=query.objects)

    def replace_query(self, query: Query) -> list[WidthMessage]:
        """Register ``query`` in place of the one of its name (a query over globs that a new
        series joined); returns the width messages to send.

        As :meth:`add_query` (§3.4): where a constraint of ``query`` is broken or reads a new
        object, each object in it gets at most its uniform share; an object it keeps, on a
        schedule within that, gets no message: its filter is not shrunk again and its bound
        stays as confirmed. (Removing and adding the query would free every object, ``W = inf``
        confirmed at once, then shrink each one back, unbounded until every source replies.)
        """
        self._known(query.name)
        return self._put(query)

    def remove_query(self, name: str) -> list[WidthMessage]:
        """Unregister query ``name``; objects left in no query stop sending (``W = inf``)."""
        self._known(name)
        rest = {n: q for n, q in self.queries.items() if n != name}
        return self._change(rest, tighten=set())

    def alter_query(
        self, name: str, delta: float, *, immediately: bool = False
    ) -> list[WidthMessage]:
        """Change the precision constraint of ``name`` to ``delta`` (§3.4)."""
        query = self._known(name).with_delta(delta)
        # §3.4 relies on the period shrinks; with S = 0 (or 1 − S == 1.0) there are none
        tighten = {name} if immediately or self.factor == 1.0 else set()
        return self._change({**self.queries, name: query}, tighten=tighten)

    def _known(self, name: str) -> Query:
        try:
            return self.queries[name]
        except KeyError:
            raise KeyError(f"no query {name!r}; registered: {sorted(self.queries)!r}") from None

    def _change(
        self, queries: dict[str, Query], tighten: set[str], objects: Sequence[str] = ()
    ) -> list[WidthMessage]:
        """Make ``queries`` the registered ones; ``objects``: those of the new query, the
        others are known already."""
        if self.settled_ms is None:
            raise ValueError("start the coordinator's clock first: call start(now_ms) or advance")
        fresh = [o for o in objects if o not in self.cache.index]
        self._grow(fresh)
        try:
            system = self._build(queries)  # raises before any other state changes
        except Exception:  # the new objects stay known, as :meth:`set_objects` leaves them
            self.system = self._build(self.queries)
            raise
        self.queries = queries
        self.system = system
        rows = [system.rows_of[n] for n in tighten]
        return self._reconcile(np.concatenate(rows) if rows else np.empty(0, dtype=int))

    def _grow(self, objects: Iterable[str]) -> None:
        """Make ``objects`` known (``W = inf``); the system is not rebuilt."""
        for obj in objects:
            self.cache.add(obj)
        more = len(self.cache) - len(self.counts)
        if more:
            self.counts = np.concatenate([self.counts, np.zeros(more, dtype=np.int64)])
            self.escapes = np.concatenate([self.escapes, np.full(more, np.inf)])

    def _build(self, queries: Mapping[str, Query]) -> System:
        # static until T is chosen, and for good once the safety net tripped
        adapting = self.period_ms is not None and not self.fallback
        rates = self.max_rates if self.padding else None
        return build_system(queries, self.cache, adapting, rates, self.latency_ms)

    def _reconcile(self, tighten_rows: np.ndarray) -> list[WidthMessage]:
        """Width messages that make every constraint hold once they land, for the new system.

        Targets start from the schedules already sent; rows in ``tighten_rows`` that are
        violated, and rows with an unbounded object, drop to the uniform share (§3, App. B).
        """
        sys_ = self.system
        latest, latest_adaptive = self.cache.latest_all()
        target = np.where(sys_.multi, latest, sys_.cap)
        target[~sys_.queried] = np.inf
        k = sys_.k
        sums = np.asarray(k.sum(axis=1)).ravel()
        share = np.divide(sys_.budgets, sums, out=np.zeros_like(sums), where=sums > 0)
        finite = np.where(np.isinf(target), 0.0, target)
        over = k @ finite > sys_.budgets * (1 + LEFTOVER_RTOL)
        unbounded = np.asarray(k[:, np.isinf(target)].sum(axis=1)).ravel() > 0
        fix = np.zeros(k.shape[0], dtype=bool)
        fix[tighten_rows] = True
        fix = (fix & over) | unbounded
        coo = k[fix].tocoo()
        np.minimum.at(target, coo.col, share[fix][coo.row])
        out: list[WidthMessage] = []
        for i in range(len(self.cache)):
            adaptive = bool(sys_.adaptive[i])
            if target[i] != latest[i] or adaptive != latest_adaptive[i]:
                out.append(self._retarget(i, float(target[i]), adaptive, float(latest[i])))
        return out

    def _retarget(self, i: int, width: float, adaptive: bool, latest: float) -> WidthMessage:
        """One width message moving object ``i`` to ``(width, adaptive)``, booked in the cache."""
        if math.isinf(width):
            self.cache.clear_pending(i)
            self.cache.confirm_width(i, math.inf, False)  # wider than any schedule: safe at once
            return self._message(Growth, i, math.inf, False)
        if width < latest:
            message = self._message(Shrink, i, width, adaptive)
        else:
            message = self._message(Growth, i, width, adaptive)
        if (
            isinstance(message, Growth)
            and i not in self.cache.pending
            and (adaptive == self.cache.adaptive[i])
        ):
            self.cache.confirm_width(i, width, adaptive)  # same schedule, wider: safe at once
        else:
            self.cache.add_pending(i, message.seq, width, adaptive)  # assumed once confirmed
        return message
