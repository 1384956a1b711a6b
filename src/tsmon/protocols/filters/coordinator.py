"""The stream coordinator: bound cache, CQ evaluator and precision manager (§1.2.3, §3)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import scipy.sparse as sp

from tsmon.protocols.filters.bounds import BoundCache
from tsmon.protocols.filters.messages import Growth, StreamedUpdate
from tsmon.protocols.filters.precision import (
    burden_scores,
    burden_targets,
    deviations,
    grow_greedily,
    initial_widths,
)
from tsmon.protocols.filters.queries import Query


class Coordinator:
    """Keeps every query's bounded answer within its δ while adapting filter widths.

    Every adjustment period ``T`` (event time, ``period_ms``) it shrinks the widths of adaptive
    objects by ``S`` in step with the sources (§3.1), then grows the most overburdened bounds
    into the leftover width (§3.2) and returns the growth messages to send.

    Parameters
    ----------
    objects
        All object ids.
    queries
        The registered queries.
    period_ms
        Adjustment period ``T`` in milliseconds.
    shrink
        Shrink percentage ``S`` in ``[0, 1)``.
    rng
        Random generator for the tie-break among equal deviations.
    costs
        Message cost ``C_i`` per object (default 1).

    Examples
    --------
    >>> coord = Coordinator(["a", "b"], [Query.avg("q", ["a", "b"], 1.0)], 1_000, 0.1,
    ...                     np.random.default_rng(0))
    >>> coord.widths()
    {'a': 1.0, 'b': 1.0}
    >>> coord.on_update(StreamedUpdate("a", 2.0, 10))
    >>> coord.on_update(StreamedUpdate("b", 4.0, 20))
    >>> coord.on_update(StreamedUpdate("a", 3.0, 30))
    >>> coord.answers()
    {'q': (3.0, 4.0)}
    >>> coord.on_period(1_000)    # a was busier: it takes the leftover 0.2
    [Growth(object_id='a', width=1.1, ts_ms=1000)]
    """

    def __init__(
        self,
        objects: Sequence[str],
        queries: Sequence[Query],
        period_ms: int,
        shrink: float,
        rng: np.random.Generator,
        costs: Mapping[str, float] | None = None,
    ) -> None:
        if period_ms <= 0:
            raise ValueError(f"period_ms T must be > 0, got {period_ms} ms; e.g. pass 10_000")
        if not 0 <= shrink < 1:
            raise ValueError(f"shrink S must be in [0, 1), got {shrink}; e.g. pass 0.05")
        self.period_ms = int(period_ms)
        self.shrink = float(shrink)
        self.rng = rng
        self.queries = {q.name: q for q in queries}
        if len(self.queries) != len(queries):
            raise ValueError("query names must be distinct")
        index = {obj: i for i, obj in enumerate(objects)}
        rows, cols, data, budgets = [], [], [], []
        for q in queries:
            for absk, budget in q.constraints():
                for obj, k in absk.items():
                    if obj not in index:
                        raise ValueError(f"query {q.name!r} reads unknown object {obj!r}")
                    rows.append(len(budgets))
                    cols.append(index[obj])
                    data.append(k)
                budgets.append(budget)
        self.k = sp.csr_matrix((data, (rows, cols)), shape=(len(budgets), len(index)))
        self.budgets = np.array(budgets, dtype=float)
        sizes = np.diff(self.k.indptr)
        multi = self.k[sizes > 1]
        # §3: only objects in some query over several objects adapt; the rest keep their width
        self.adaptive = np.asarray(multi.sum(axis=0)).ravel() > 0
        touches = np.asarray((self.k[:, self.adaptive] != 0).sum(axis=1)).ravel() > 0
        self._k_adaptive = self.k[touches]
        self._budgets_adaptive = self.budgets[touches]
        self.cache = BoundCache(list(index), initial_widths(self.k, self.budgets))
        self.costs = np.ones(len(index))
        for obj, c in (costs or {}).items():
            if obj not in index or not c > 0:
                raise ValueError(f"cost C_i of {obj!r} must be > 0 for a known object, got {c}")
            self.costs[index[obj]] = c
        self.counts = np.zeros(len(index), dtype=np.int64)  # N_i in the current period

    def widths(self) -> dict[str, float]:
        """Current width ``W_i`` of every object."""
        return dict(zip(self.cache.objects, self.cache.widths.tolist(), strict=True))

    def is_adaptive(self, object_id: str) -> bool:
        """Whether ``object_id``'s width shrinks and grows (it is in a multi-object query)."""
        return bool(self.adaptive[self.cache.index[object_id]])

    def on_update(self, message: StreamedUpdate) -> None:
        """A streamed update: re-centre the cached bound and count it in ``N_i``."""
        self.cache.recentre(message.object_id, message.value)
        self.counts[self.cache.index[message.object_id]] += 1

    def on_period(self, period_ts_ms: int) -> list[Growth]:
        """Period boundary: shrink (§3.1), then allocate growth (§3.2); returns growth messages."""
        widths = self.cache.widths
        widths[self.adaptive] = widths[self.adaptive] * (1 - self.shrink)  # §3.1
        burdens = burden_scores(self.counts, widths, self.costs, self.period_ms)
        self.counts[:] = 0
        kk = self._k_adaptive
        if kk.shape[0] == 0:
            return []
        targets = burden_targets(kk, burdens)
        devs = deviations(kk, burdens, targets)
        grown = grow_greedily(
            kk, self._budgets_adaptive, widths, devs, np.flatnonzero(self.adaptive), self.rng
        )
        messages = []
        for i in sorted(grown):
            widths[i] = grown[i]
            messages.append(Growth(self.cache.objects[i], grown[i], period_ts_ms))
        return messages

    def answer(self, name: str) -> tuple[float, float]:
        """Bounded answer ``(lo, hi)`` of query ``name``; unbounded until every object reported."""
        q = self.queries[name]
        if not all(self.cache.has_value(o) for o in q.weights):
            return -np.inf, np.inf
        centres = {o: float(self.cache.centres[self.cache.index[o]]) for o in q.weights}
        widths = {o: self.cache.width(o) for o in q.weights}
        return q.answer(centres, widths)

    def answers(self) -> dict[str, tuple[float, float]]:
        """Bounded answer of every query."""
        return {name: self.answer(name) for name in self.queries}
