"""The stream coordinator: bound cache, CQ evaluator and precision manager (§1.2.3, §3, §4).

Time is an argument everywhere. The coordinator's *logical* time is the wall time it is given
minus the latency tolerance ``λ`` (§4, serializing queue), or the wall time itself when bounds
are *padded* instead (§4.1). Period boundaries are event-time multiples of ``T``; at each one the
coordinator shrinks its copies of the widths (§3.1), as the sources do without being told, and
grows the most overburdened bounds into the leftover width (§3.2).

The precision manager's width messages (§3.1, §3.2 period adjustment, §3.4 query changes) are
:class:`~tsmon.protocols.filters.manager.PrecisionManager`, this class's base.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from tsmon.protocols.filters.bounds import BoundCache
from tsmon.protocols.filters.manager import PrecisionManager
from tsmon.protocols.filters.messages import StreamedUpdate, WidthMessage
from tsmon.protocols.filters.queries import Query
from tsmon.protocols.filters.serializing import Queued, SerializingQueue
from tsmon.protocols.filters.source import check_period
from tsmon.protocols.filters.tuning import PeriodChooser, SafetyNet

#: ``next_boundary_ms`` while no period is chosen: no boundary ever comes.
NEVER_MS = 1 << 62


@dataclass(frozen=True)
class Answer:
    """A bounded answer: the exact aggregate lies in ``[lo, hi]`` as of ``as_of_ms``.

    ``value`` is the midpoint, ``nan`` while some object has not reported yet.
    """

    value: float
    lo: float
    hi: float
    as_of_ms: int | None

    @property
    def width(self) -> float:
        """``hi − lo``."""
        return self.hi - self.lo


class Coordinator(PrecisionManager):
    """Keeps every query's bounded answer within its δ while adapting filter widths.

    Parameters
    ----------
    period_ms
        Adjustment period ``T`` in milliseconds (event time); ``None`` chooses it online
        (:mod:`~tsmon.protocols.filters.tuning`): static uniform widths until the sampling
        interval is seen, then every width message carries the chosen ``T`` to its source,
        and a safety net (:class:`~tsmon.protocols.filters.tuning.SafetyNet`) falls back to
        uniform static widths if adapting costs clearly more.
    shrink
        Shrink percentage ``S`` in ``[0, 1)``.
    rng
        Random generator for the tie-break among equal deviations (§3.2).
    latency_ms
        Latency tolerance ``λ`` (§4); 0 for instant delivery.
    max_rates
        With this, bounds are *padded* (§4.1) instead of serialized: object → maximum change
        rate ``R_i`` in value units per second; every queried object needs one. Answers are then
        as of the current time, padded by ``φ_i = 2·R_i·λ``, and widths are allocated against
        reduced constraints ``δ′`` so that padded answers still meet ``δ``.
    costs
        Message cost ``C_i`` per object (default 1).
    growth
        ``"paper"`` (default): each object in decreasing deviation takes all the leftover it
        can (§3.2). ``"capped"`` (beyond the paper): a first pass grows each overburdened
        object only until its modelled burden meets its target (:func:`growth_caps`), then
        the paper's pass hands out the rest — robust when one query spans many objects.
    backlog
        With this, the serializing queue holds at most this many records per object, folding
        the closest ones into a hull of their values beyond it (beyond §4: a source far ahead
        of the coordinator's time; :mod:`~tsmon.protocols.filters.serializing`); None (the
        paper's): every update is held on its own.

    Examples
    --------
    >>> coord = Coordinator(1_000, 0.1, np.random.default_rng(0))
    >>> coord.start(0)
    >>> coord.add_query(Query.avg("q", ["a", "b"], 1.0))
    [Shrink(object_id='a', width=1.0, ts_ms=0, seq=1, adaptive=True), \
Shrink(object_id='b', width=1.0, ts_ms=0, seq=2, adaptive=True)]
    >>> for ts, obj, v in [(10, "a", 2.0), (20, "b", 4.0), (30, "a", 2.5)]:
    ...     coord.receive(StreamedUpdate(obj, v, ts, width_seq=coord.seq), arrival_ms=ts)
    >>> _ = coord.advance(30)
    >>> coord.answer("q")
    Answer(value=3.25, lo=2.75, hi=3.75, as_of_ms=30)
    >>> coord.advance(1_000)    # a was busier: it takes the leftover 0.2
    [Growth(object_id='a', width=1.1, ts_ms=1000, seq=3, adaptive=True)]
    """

    def __init__(
        self,
        period_ms: int | None,
        shrink: float,
        rng: np.random.Generator,
        *,
        latency_ms: int = 0,
        max_rates: Mapping[str, float] | None = None,
        costs: Mapping[str, float] | None = None,
        growth: str = "paper",
        backlog: int | None = None,
    ) -> None:
        self.period_ms = None if period_ms is None else check_period(period_ms)
        self.chooser = PeriodChooser() if period_ms is None else None
        self.safety = SafetyNet() if period_ms is None else None
        self.fallback = False  # the safety net tripped: uniform static widths from then on
        if not 0 <= shrink < 1:
            raise ValueError(f"shrink S must be in [0, 1), got {shrink}; e.g. pass 0.05")
        if not isinstance(rng, np.random.Generator):
            raise TypeError(
                f"rng must be a numpy Generator, got {type(rng).__name__}; "
                "pass np.random.default_rng(seed)"
            )
        if growth not in ("paper", "capped"):
            raise ValueError(f"growth must be 'paper' or 'capped', got {growth!r}")
        self.growth = growth
        self.factor = 1.0 - float(shrink)
        self.rng = rng
        self.queue = SerializingQueue(latency_ms, backlog)
        self.padding = max_rates is not None
        self.max_rates = {str(o): float(r) for o, r in (max_rates or {}).items()}
        for obj, r in self.max_rates.items():
            if not (math.isfinite(r) and r >= 0):
                raise ValueError(f"max change rate R of {obj!r} must be finite and >= 0, got {r}")
        self.cost_of = {str(o): float(c) for o, c in (costs or {}).items()}
        for obj, c in self.cost_of.items():
            if not (math.isfinite(c) and c > 0):
                raise ValueError(f"message cost C of {obj!r} must be finite and > 0, got {c}")
        self.cache = BoundCache(self.factor)
        self.queries: dict[str, Query] = {}
        self.counts = np.zeros(0, dtype=np.int64)  # N_i in the current period (§3.2)
        self.escapes = np.zeros(0)  # per object, the smallest |V − centre| streamed this period
        self.seq = 0
        self.now_ms: int | None = None  # answers are as of this time
        self.settled_ms: int | None = None  # boundaries and width messages are up to this time
        self.next_boundary_ms: int | None = None
        self._confirms: list[tuple[int, int, int]] = []  # (ts, object, width_seq) to confirm
        self.system = self._build(self.queries)

    # ----------------------------------------------------------------- time and messages

    @property
    def latency_ms(self) -> int:
        """Latency tolerance ``λ``."""
        return self.queue.latency_ms

    def receive(self, update: StreamedUpdate, arrival_ms: int) -> None:
        """An update reached the coordinator at wall time ``arrival_ms``; call :meth:`advance`."""
        self.cache.i(update.object_id)  # unknown: refuse now, not half-way through advance
        self.queue.push(update, arrival_ms)

    def advance(self, wall_ms: int) -> list[WidthMessage]:
        """Process updates and period boundaries up to wall time ``wall_ms``, in time order.

        Boundaries, and confirmations of narrower widths, take effect at ``wall_ms − λ``: the
        sources may still use the wider bounds of the last ``λ`` (§4). Updates are released at
        ``wall_ms − λ`` through the serializing queue, or at once when padding (§4.1), where
        answers are as of ``wall_ms``. Returns the growth messages decided at the boundaries.
        """
        settled = wall_ms - self.latency_ms
        horizon = wall_ms if self.padding else settled
        if self.settled_ms is None:
            self.start(settled)
        assert self.settled_ms is not None and self.next_boundary_ms is not None
        if settled < self.settled_ms:
            return []
        out: list[WidthMessage] = []
        while self.next_boundary_ms <= settled:
            boundary = self.next_boundary_ms
            for update in self.queue.release(horizon, before_ms=boundary):
                self._apply(update)
            self.settled_ms = boundary
            self._confirm(boundary)
            out += self._on_period(boundary)
            self.next_boundary_ms = self._next_busy(boundary, settled, horizon)
        for update in self.queue.release(horizon):
            self._apply(update)
        self.queue.trim()  # what still waits, within the backlog (beyond §4)
        self.settled_ms = settled
        self._confirm(settled)
        self.now_ms = max(horizon, self.now_ms or horizon)
        if self.period_ms is None and self.chooser is not None:
            out += self._choose_period()
        return out

    def _choose_period(self) -> list[WidthMessage]:
        """Fix ``T`` once the sampling interval is known; the series in multi-object queries
        then adapt (a width message each, carrying ``T``; see :mod:`.tuning`)."""
        assert self.chooser is not None and self.settled_ms is not None
        period = self.chooser.choose(np.flatnonzero(self.system.multi).tolist())
        if period is None:
            return []
        self.period_ms = period
        self.cache.set_period(self.settled_ms // period)
        self.next_boundary_ms = (self.settled_ms // period + 1) * period
        self.counts[:] = 0
        self.escapes[:] = np.inf
        self.system = self._build(self.queries)
        return self._reconcile(np.empty(0, dtype=int))

    def _next_busy(self, boundary: int, settled: int, horizon: int) -> int:
        """The next boundary to run after ``boundary``: a boundary with no update counted
        before it only shrinks (no growth without a burden, see :meth:`_on_period`), so a run
        of such boundaries is skipped to its last one in O(1) (the shrinks are in closed form,
        :meth:`BoundCache.set_period`): an event-time jump of any length does not spin."""
        t = self.period_ms
        assert t is not None
        following = boundary + t
        if self.counts.any():
            return following
        nxt = self.queue.next_ts()
        limit = settled if nxt is None or nxt > horizon else min(settled, nxt)
        return max(following, limit // t * t)

    def start(self, now_ms: int) -> None:
        """Start the coordinator's clock at ``now_ms``; the first boundary is the next multiple
        of ``T``. :meth:`advance` starts it too, at its first call."""
        if self.settled_ms is not None:
            raise ValueError(f"the coordinator started already, at {self.settled_ms} ms or before")
        self.settled_ms = self.now_ms = int(now_ms)
        if self.period_ms is None:
            self.next_boundary_ms = NEVER_MS
            return
        self.next_boundary_ms = (self.settled_ms // self.period_ms + 1) * self.period_ms
        self.cache.set_period(self.settled_ms // self.period_ms)

    def _apply(self, record: Queued) -> None:
        """One record of the serializing queue: an update, or a hull of several (§4 and
        beyond: :mod:`~tsmon.protocols.filters.serializing`)."""
        i = self.cache.i(record.object_id)
        if self.safety is not None and self.period_ms is not None:
            self.safety.spend(record.updates)
            self.safety.see(i, record.shadow, record.shadow_ts)
        if record.streamed:
            self.counts[i] += record.streamed
            if self.chooser is not None and self.period_ms is None:
                self.chooser.see(i, record.ts_ms, record.streamed, record.gap, record.last_ts)
            escape = record.escape
            if not record.forced:
                first = abs(record.first - self.cache.centres[i])  # nan before a first value
                escape = first if first < escape else escape
            if escape < self.escapes[i]:
                self.escapes[i] = escape
        self.cache.recentre(i, record.value, record.last_ts, record.last_seq, record.spread)
        if record.width_seq is not None and i in self.cache.pending:
            heapq.heappush(self._confirms, (record.ts_ms, i, record.width_seq))

    def _confirm(self, settled_ms: int) -> None:
        """Confirm the narrower widths the sources applied by ``settled_ms`` (see ``advance``)."""
        while self._confirms and self._confirms[0][0] <= settled_ms:
            _, i, width_seq = heapq.heappop(self._confirms)
            self.cache.confirm(i, width_seq)

    # ----------------------------------------------------------------- answers

    def answer(self, name: str) -> Answer:
        """Bounded answer of query ``name``; unbounded until every object has reported."""
        return self._answer(self._known(name), self._widths())

    def answers(self) -> dict[str, Answer]:
        """Bounded answer of every query."""
        widths = self._widths()
        return {name: self._answer(q, widths) for name, q in self.queries.items()}

    def _widths(self) -> np.ndarray:
        """Per object, the width of the interval the answers take: the widest bound the source
        may be on, padded (§4.1), widened by a folded value span (:mod:`.serializing`)."""
        return self.cache.assumed() + self.system.phi + self.cache.spread

    def _answer(self, query: Query, widths: np.ndarray) -> Answer:
        idx = self.system.index_of[query.name]
        centres = self.cache.centres[idx]
        if np.isnan(centres).any():
            return Answer(math.nan, -math.inf, math.inf, self.now_ms)
        lo, hi = query.answer_arrays(centres, widths[idx])
        return Answer((lo + hi) / 2, lo, hi, self.now_ms)

    def widths(self) -> dict[str, float]:
        """Width ``W_i`` the answers assume, per object."""
        return dict(zip(self.cache.objects, self.cache.assumed().tolist(), strict=True))

    def set_objects(self, objects: Iterable[str]) -> None:
        """Make ``objects`` known (``W = inf``) before any query reads them."""
        self._grow(objects)
        self.system = self._build(self.queries)
