"""Bounded-aggregate queries (``QUERY q AS AVG(a.x, b.x) WITHIN 2``) hosted in this process.

Each series read by such a query is an object with its own source filter; the coordinator keeps
every answer an interval ``[lo, hi]`` of width at most ``δ`` holding the exact aggregate of the
series' current values (Olston, Jiang & Widom 2003). In one process no network is saved, but
the protocol runs exactly as it would distributed — zero message latency — and every message is
counted, so :meth:`BoundedQueries.messages` shows what a distributed deployment would send.

Choices (documented here because the paper is silent):

* a series' *current value* is its newest point by timestamp; a late point older than the
  newest changes nothing, a replacement at the newest timestamp does;
* the host's clock is the newest timestamp fed so far, over all series; a point older than the
  clock (another series ran ahead) is applied at the clock, so answers are as of the clock;
* a glob in a query is expanded once, against the series that exist when it is registered.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from tsmon.engine.filter_network import FilterNetwork
from tsmon.engine.waiting import Groups
from tsmon.protocols.filters import Answer, MessageCounts, Query
from tsmon.query import AggregateDef, AlterPrecision, query_key
from tsmon.query.aggregate import ResolvedAggregate, resolve_aggregate

#: The newest point ``(ts_ms, value)`` of a series, or ``None`` if it holds none.
NewestPoint = Callable[[str], tuple[int, float] | None]

_MAKERS = {"avg": Query.avg, "sum": Query.sum, "min": Query.min, "max": Query.max}


@dataclass(frozen=True)
class FilterSettings:
    """Algorithm parameters: adjustment period ``T`` (ms; ``None``, the default: chosen online,
    ten observed sampling intervals, see ``protocols.filters.tuning``), shrink percentage
    ``S``, seed, and the growth allocation (``"paper"`` or ``"capped"``, see
    ``protocols.filters.Coordinator``)."""

    period_ms: int | None = None
    shrink: float = 0.05
    seed: int = 0
    growth: str = "capped"

    def __post_init__(self) -> None:
        if self.period_ms is not None and not (
            isinstance(self.period_ms, int) and self.period_ms > 0
        ):
            raise ValueError(f"filter period T must be a positive duration, got {self.period_ms}")
        if not 0 <= self.shrink < 1:
            raise ValueError(f"filter shrink S must be in [0, 1), got {self.shrink}; e.g. 0.05")
        if self.growth not in ("paper", "capped"):
            raise ValueError(f"filter growth must be 'paper' or 'capped', got {self.growth!r}")


def to_query(resolved: ResolvedAggregate) -> Query:
    """The protocol query of a resolved ``AS AGG(...) WITHIN δ`` statement."""
    make = _MAKERS[resolved.aggregate]
    if resolved.aggregate in ("min", "max"):
        return make(resolved.name, list(resolved.weights), resolved.delta)
    return make(resolved.name, dict(resolved.weights), resolved.delta)


class BoundedQueries:
    """The adaptive-filter protocol over the series some bounded-aggregate query reads.

    Examples
    --------
    >>> host = BoundedQueries(FilterSettings(period_ms=1_000))
    >>> host.add(Query.avg("q", ["a", "b"], 1.0), {"a": (0, 1.0), "b": (0, 3.0)}, now_ms=0)
    >>> host.feed(np.array([10]), ["a"], np.array([1.2]))
    >>> host.answers()["q"]
    Answer(value=2.0, lo=1.5, hi=2.5, as_of_ms=10)
    """

    def __init__(self, settings: FilterSettings) -> None:
        self.settings = settings
        self._net: FilterNetwork | None = None
        self._latest: dict[str, int] = {}  # object -> timestamp of its current value
        self._defs: dict[str, AggregateDef] = {}  # statements, by query key
        self._waiting: dict[str, Query] = {}  # registered before any point: no time yet
        self._pending: list[tuple[np.ndarray, np.ndarray, np.ndarray, str]] = []
        self.points = 0  # points of tracked series fed to their source filters

    # -- statements ------------------------------------------------------------------------------
    def defines(self, name: str) -> bool:
        """Whether a bounded aggregate named ``name`` (ignoring case) is registered."""
        return query_key(name) in self._defs

    def texts(self) -> dict[str, str]:
        """Registered statements: name -> text."""
        return {d.name: d.text for d in self._defs.values()}

    def register(
        self,
        defns: list[AggregateDef],
        series: Iterable[str],
        newest: NewestPoint,
        now_ms: int | None,
    ) -> None:
        """Resolve every statement against ``series`` (all or none registered), then add them."""
        names = list(series)
        queries = [to_query(resolve_aggregate(d, names)) for d in defns]
        for defn, query in zip(defns, queries, strict=True):
            self._define(defn, query, newest, now_ms)

    def _define(self, defn: AggregateDef, query: Query, newest: NewestPoint, now_ms: int) -> None:
        current = {o: p for o in query.objects if (p := newest(o)) is not None}
        self.add(query, current, now_ms)
        self._defs[query_key(defn.name)] = defn

    def change(
        self,
        redefined: list[AggregateDef],
        alters: list[AlterPrecision],
        series: Iterable[str],
        newest: NewestPoint,
        now_ms: int,
    ) -> None:
        """Apply redefinitions of registered names and ``ALTER QUERY q WITHIN δ`` statements."""
        for s in [*redefined, *alters]:
            if not self.defines(s.name):
                raise KeyError(f"no query named {s.name!r}; use add_query to create it")
        names = list(series)
        queries = [(s, to_query(resolve_aggregate(s, names))) for s in redefined]
        for s in alters:
            self.alter(self._defs[query_key(s.name)].name, s.delta, immediately=s.immediately)
        for defn, query in queries:
            self.unregister(defn.name)
            self._define(defn, query, newest, now_ms)

    def unregister(self, name: str) -> None:
        """Remove the bounded aggregate ``name`` (ignoring case)."""
        self.remove(self._defs.pop(query_key(name)).name)

    # -- protocol --------------------------------------------------------------------------------

    def tracks(self, series: str) -> bool:
        """Whether ``series`` is read by a query (now or before)."""
        return series in self._latest

    def _network(self, now_ms: int) -> FilterNetwork:
        if self._net is None:
            s = self.settings
            self._net = FilterNetwork(
                [],
                [],
                s.period_ms,
                s.shrink,
                np.random.default_rng(s.seed),
                start_ms=now_ms,
                growth=s.growth,
            )
        return self._net

    def add(self, query: Query, current: dict[str, tuple[int, float]], now_ms: int | None) -> None:
        """Register ``query`` at ``now_ms``; ``current`` gives series' newest points, if any.

        With no time yet (no point seen) the query waits, and the protocol starts at the first
        point's time: starting it at 0 would run every period from 1970 on at the first point.
        """
        if self._net is None and now_ms is None:
            self._waiting[query.name] = query
            for obj in query.objects:
                self._latest.setdefault(obj, np.iinfo(np.int64).min)
            return
        assert now_ms is not None
        net = self._network(now_ms)
        net.advance(max(net.now_ms, now_ms))
        for obj in query.objects:
            if obj in net.sources:
                continue
            ts, value = current.get(obj, (np.iinfo(np.int64).min, None))
            self._latest[obj] = max(ts, self._latest.get(obj, ts))
            net.add_object(obj, net.now_ms, value)
        net.add_query(query)

    def alter(self, name: str, delta: float, *, immediately: bool) -> None:
        """Change the precision constraint of ``name`` (§3.4)."""
        if name in self._waiting:
            self._waiting[name] = self._waiting[name].with_delta(delta)
            return
        self._require().alter_query(name, delta, immediately=immediately)

    def remove(self, name: str) -> None:
        """Unregister ``name``; its series stop sending once no query reads them."""
        if self._waiting.pop(name, None) is None:
            self._require().remove_query(name)

    def names(self) -> list[str]:
        """Registered query names."""
        running = [] if self._net is None else list(self._net.coordinator.queries)
        return list(self._waiting) + running

    def reads(self) -> dict[str, Groups]:
        """Each series of each query (globs were expanded when it was added), for
        :mod:`tsmon.engine.waiting`."""
        return {name: tuple((o,) for o in self.query(name).objects) for name in self.names()}

    def query(self, name: str) -> Query:
        """The registered query ``name``."""
        if name in self._waiting:
            return self._waiting[name]
        return self._require().coordinator.queries[name]

    def _require(self) -> FilterNetwork:
        if self._net is None:
            raise KeyError("no bounded-aggregate query is registered")
        return self._net

    def stage(self, series: str, seq: np.ndarray, ts: np.ndarray, values: np.ndarray) -> None:
        """Keep accepted points of a tracked series until :meth:`flush` feeds them in order."""
        if self.tracks(series):
            self._pending.append((seq, ts, values, series))

    def flush(self) -> None:
        """Feed the staged points in ``(ts, seq)`` order (one ingest call's worth)."""
        if not self._pending:
            return
        seq = np.concatenate([p[0] for p in self._pending])
        ts = np.concatenate([p[1] for p in self._pending])
        vals = np.concatenate([p[2] for p in self._pending])
        names = np.concatenate([np.full(len(p[0]), p[3], dtype=object) for p in self._pending])
        self._pending = []
        order = np.lexsort((seq, ts))
        self.feed(ts[order], names[order].tolist(), vals[order])

    def feed(self, ts: np.ndarray, series: list[str], values: np.ndarray) -> None:
        """New points of tracked series, in ``(ts, arrival)`` order."""
        if self._net is None and self._waiting and len(ts):
            waiting, self._waiting = list(self._waiting.values()), {}
            for query in waiting:  # the protocol starts at the first point's time
                self.add(query, {}, int(ts[0]))
        net = self._net
        if net is None:
            return
        for t, name, v in zip(ts.tolist(), series, values.tolist(), strict=True):
            if name not in self._latest or t < self._latest[name]:
                continue  # not tracked, or older than the series' current value
            self._latest[name] = t
            self.points += 1
            net.update(max(net.now_ms, t), name, v)

    def answers(self) -> dict[str, Answer]:
        """The bounded answer of every query."""
        waiting = {n: Answer(math.nan, -math.inf, math.inf, None) for n in self._waiting}
        return waiting | ({} if self._net is None else self._net.answers())

    def exact(self, newest: NewestPoint) -> dict[str, float]:
        """The exact aggregate of every query from the series' newest points (``nan`` while one
        has none): what the bounded answers approximate, for checking and display."""
        out = {}
        for name in self.names():
            query = self.query(name)
            points = [newest(o) for o in query.objects]
            if any(p is None for p in points):
                out[name] = float("nan")
            else:
                out[name] = query.exact(
                    {o: p[1] for o, p in zip(query.objects, points, strict=True)}
                )
        return out

    def messages(self) -> MessageCounts:
        """Messages a distributed deployment would have sent so far."""
        return MessageCounts() if self._net is None else self._net.counts
