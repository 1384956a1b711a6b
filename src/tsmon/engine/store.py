"""Registers, shared windows and watch queries over many series, in one process.

A :class:`SeriesStore` stores the points of many series (one register each), keeps the windows
the registered watch queries need (one per series and window shape, shared and
reference-counted), and evaluates every query triggered by a series each time a point of that
series is stored, with the windows as of that point (claim 1). Queries, series and windows can
be added and removed at any time; an inserted window is populated at once from history (claims
2 and 3). A query's condition and payload read the windows of its trigger series only, so points
of different series are independent: the series of a batch that trigger the same queries (hence
have the same windows) advance their windows and evaluate those queries together, each step
vectorized over all their points (:func:`~tsmon.engine.series.advance_together`).

It is the watch-query engine of :class:`~tsmon.engine.monitor.Monitor` and of every source
node's local part (:mod:`tsmon.kinds.local`). Query names are case-insensitive.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from functools import partial

import numpy as np

from tsmon.core.register import RegisterConfig
from tsmon.core.window_spec import WindowSpec
from tsmon.core.windows import STATS, WindowView
from tsmon.engine.deadletters import DeadLetters, Reason
from tsmon.engine.evaluation import ViewBindings, fire
from tsmon.engine.events import EventLog
from tsmon.engine.points import Batch, bad_series, read_batch
from tsmon.engine.runs import PendingRuns, increasing_groups, regular_runs, series_groups
from tsmon.engine.series import Plan, SeriesNode, advance_together, pack_nodes, unpack_nodes
from tsmon.query import CompiledQuery, Stat, parse_expr, query_key
from tsmon.query.patterns import is_glob, no_match, series_matches

__all__ = ["Accepted", "SeriesStore"]

#: Called with the points of one series the store accepted: ``(series, seq, ts, values,
#: in_order)``; ``in_order`` runs are newer than every stored point of the series, the others
#: were inserted late or replaced a point.
Accepted = Callable[[str, np.ndarray, np.ndarray, np.ndarray, bool], None]


class SeriesStore:
    """Series (names and globs), their registers and windows, and the watch queries."""

    def __init__(self, config: RegisterConfig) -> None:
        self.config = config
        self.nodes: dict[str, SeriesNode] = {}
        self.patterns: list[str] = []
        self.queries: dict[str, CompiledQuery] = {}  # by query_key, in registration order
        self._attached: dict[str, set[str]] = {}  # query key -> series whose windows it holds
        self._plans: dict[str, Plan] = {}  # series -> statistics its windows must produce
        self.dead = DeadLetters()
        self.events = EventLog()
        self.counts: Counter[str] = Counter()
        self._epoch = 0
        self.now_ms: int | None = None  # the newest event time accepted, over all series

    def __getstate__(self) -> dict:
        """Its attributes, the series packed (:func:`~tsmon.engine.series.pack_nodes`)."""
        return {**self.__dict__, "nodes": pack_nodes(self.nodes)}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state, nodes=unpack_nodes(state["nodes"]))

    # -- series --------------------------------------------------------------------------------
    def add_series(self, name_or_glob: str, *, literal: bool = False) -> list[str]:
        """Accept a series, or every series matching a glob; return the series created."""
        if not literal and is_glob(name_or_glob):
            if name_or_glob not in self.patterns:
                self.patterns.append(name_or_glob)
            return []
        if name_or_glob in self.nodes:
            return []
        self._create_series(name_or_glob)
        return [name_or_glob]

    def remove_series(self, name_or_glob: str) -> list[str]:
        """Drop the series matching a name or glob (their points and windows) and the glob."""
        self.patterns = [p for p in self.patterns if p != name_or_glob]
        gone = [s for s in self.nodes if series_matches(s, [name_or_glob])]
        for name in gone:
            self.nodes.pop(name).close()
            self._plans.pop(name, None)
            for attached in self._attached.values():
                attached.discard(name)
        return gone

    def _create_series(self, name: str) -> None:
        self.nodes[name] = SeriesNode(name, self.config)
        for query in self.queries.values():
            if query.matches(name):
                self._attach(query, name)

    def _admit(self, name: object) -> tuple[Reason, str] | None:
        """Why points of series ``name`` cannot be stored, or None (registering the series
        when a declared glob accepts it)."""
        unnamed = bad_series(name)
        if unnamed is not None:
            return Reason.BAD_SERIES, unnamed
        if name not in self.nodes and series_matches(name, self.patterns):
            self._create_series(name)
        if name in self.nodes:
            return None
        return (
            Reason.UNKNOWN_SERIES,
            f"unknown series {name!r}; declare it with Monitor.add_series "
            "(a name or a glob) before sending its points",
        )

    def node(self, series: str) -> SeriesNode:
        """The node of ``series``; a ``KeyError`` naming how many series exist if unknown."""
        node = self.nodes.get(series)
        if node is None:
            raise KeyError(
                f"unknown series {series!r}; Monitor.series() lists the "
                f"{len(self.nodes)} registered series"
            )
        return node

    def newest(self, series: str) -> tuple[int, float] | None:
        """The newest stored point ``(ts_ms, value)`` of ``series``, or None."""
        reg = self.nodes[series].register
        if reg.end == reg.start:
            return None
        return int(reg.ts(reg.end - 1, reg.end)[0]), float(reg.values(reg.end - 1, reg.end)[0])

    # -- watch queries -------------------------------------------------------------------------
    def add(self, query: CompiledQuery) -> None:
        """Register a watch query; with ``SINCE`` it first runs over stored history."""
        self.queries[query_key(query.name)] = query
        self._attach_everywhere(query)
        if query.since_ms is not None and self.now_ms is not None:
            self._replay(query, self.now_ms - query.since_ms)

    def replace(self, query: CompiledQuery) -> None:
        """Redefine a watch query in place (its rank kept, windows still needed kept)."""
        key = query_key(query.name)
        old, old_attached = self.queries[key], self._attached[key]
        self.queries[key] = query
        self._attach_everywhere(query)
        for name in old_attached:
            self._release(name, old.windows)

    def remove(self, name: str) -> None:
        """Unregister a watch query and release the windows only it used."""
        key = query_key(name)
        query = self.queries.pop(key)
        for series in self._attached.pop(key):
            self._release(series, query.windows)

    def _attach_everywhere(self, query: CompiledQuery) -> None:
        self._attached[query_key(query.name)] = set()
        for name in list(self.nodes):
            if query.matches(name):
                self._attach(query, name)

    def _attach(self, query: CompiledQuery, name: str) -> None:
        self.nodes[name].acquire(query.windows)  # new windows are populated from history
        self._attached[query_key(query.name)].add(name)
        self._plans.pop(name, None)

    def _release(self, name: str, specs: Iterable[WindowSpec]) -> None:
        node = self.nodes.get(name)
        if node is not None:
            node.release(specs)
            self._plans.pop(name, None)

    def _plan(self, name: str) -> Plan:
        """The statistics each window of a series must produce for the queries it triggers."""
        plan = self._plans.get(name)
        if plan is None:
            triggered = [q for k, q in self.queries.items() if name in self._attached[k]]
            plan = _wanted_stats(triggered, self.nodes[name].windows)
            self._plans[name] = plan
        return plan

    # -- ingest --------------------------------------------------------------------------------
    def read(
        self,
        series: object,
        ts: object,
        value: object,
        latest_ms: int | None = None,
        ts_unit: str = "ms",
    ) -> Batch:
        """Read equal-length arrays of points (epoch numbers in ``ts_unit`` or ISO-8601
        timestamps) into a batch numbered after the previous ones; unreadable points, and
        those stamped after ``latest_ms``, go to :attr:`dead`."""
        seq = self.counts["seq"]
        batch = read_batch(series, ts, value, seq, self.dead, latest_ms, ts_unit)
        self.counts["seq"] += batch.received
        self.counts["received"] += batch.received - len(batch.seq)  # rejected while reading
        return batch

    def refuse(self, reason: Reason, details: Sequence[str]) -> None:
        """Count input rows that hold no point (a file's malformed lines) as received and
        rejected with ``reason``, one detail each, numbered after the points read so far."""
        n, none = len(details), np.full(len(details), None, dtype=object)
        seq = np.arange(self.counts["seq"], self.counts["seq"] + n, dtype=np.int64)
        self.dead.add(seq, none, none, none, reason, list(details))
        self.counts["seq"] += n
        self.counts["received"] += n

    def ingest(
        self,
        batch: Batch,
        accepted: Accepted | None = None,
        grouped: tuple[list[str], np.ndarray, list[int]] | None = None,
    ) -> None:
        """Store a read batch, each series' points in the order given; each point triggers
        its queries as of that point. Rejected points go to :attr:`dead`; ``accepted`` hears
        of the others. ``grouped``: the points read grouped by series as
        :func:`~tsmon.engine.runs.series_groups` does (a source node's,
        :attr:`~tsmon.kinds.base.Points.groups`), used when reading rejected none."""
        self._epoch += 1
        runs = PendingRuns()
        try:
            if grouped is None or len(grouped[1]) != len(batch.seq):
                grouped = series_groups(batch.series)  # or points were rejected: not the batch's
            names, order, bounds = grouped
            seq, ts, values = (a.take(order) for a in (batch.seq, batch.ts_ms, batch.values))
            increasing = increasing_groups(ts, bounds)
            for name, lo, hi, up in zip(names, bounds[:-1], bounds[1:], increasing, strict=True):
                try:
                    problem = self._admit(name)
                    if problem is not None:  # kept: copies, not views of the whole batch
                        b, take = batch, order[lo:hi]
                        self.dead.add(
                            b.seq[take], b.series[take], b.ts_ms[take], b.values[take], *problem
                        )
                    else:
                        self._ingest_series(
                            name, seq[lo:hi], ts[lo:hi], values[lo:hi], accepted, runs, up
                        )
                finally:  # counted even if a bug raises, so received = accepted + rejected
                    self.counts["received"] += hi - lo
        finally:  # the points stored so far trigger their queries whatever happens next
            runs.flush(partial(self._advance_runs, runs=runs))

    def _ingest_series(
        self,
        name: str,
        seq: np.ndarray,
        ts: np.ndarray,
        vals: np.ndarray,
        accepted: Accepted | None,
        runs: PendingRuns,
        increasing: bool,
    ) -> None:
        node = self.nodes[name]
        attached = self._attached
        triggered = tuple(k for k in self.queries if name in attached[k]) if attached else ()
        last = node.register.last_ts
        if increasing and (last is None or int(ts[0]) > last):  # the usual run: one append
            if self._append(node, triggered, seq, ts, vals, accepted, runs):
                self._advance_runs(triggered, runs)
            return
        for lo, hi, regular in regular_runs(ts, last):
            if not regular:
                for i in range(lo, hi):
                    self._late(node, seq[i : i + 1], ts[i : i + 1], vals[i : i + 1], accepted)
                continue
            self._append(node, triggered, seq[lo:hi], ts[lo:hi], vals[lo:hi], accepted, runs)
            self._advance_runs(triggered, runs)  # a late point needs the windows as of these

    def _append(
        self,
        node: SeriesNode,
        triggered: tuple[str, ...],
        seq: np.ndarray,
        ts: np.ndarray,
        vals: np.ndarray,
        accepted: Accepted | None,
        runs: PendingRuns,
    ) -> bool:
        """Append a run of points newer than the series' stored ones; whether its windows
        must advance now (:meth:`PendingRuns.add`)."""
        if accepted is not None:
            accepted(node.name, seq, ts, vals, True)
        span = node.register.append(ts, vals, checked=True)  # read_batch checked the values
        newest = int(ts[-1])
        self.now_ms = newest if self.now_ms is None else max(self.now_ms, newest)
        return runs.add(triggered, (node, seq, ts, vals, span))

    def _late(
        self,
        node: SeriesNode,
        seq: np.ndarray,
        ts: np.ndarray,
        vals: np.ndarray,
        accepted: Accepted | None,
    ) -> None:
        """A point not newer than its series' newest: rejected, inserted or replacing."""
        problem = node.rejection(int(ts[0]))
        if problem is not None:
            names = np.array([node.name], dtype=object)
            self.dead.add(seq, names, ts, vals.astype(object), *problem)
            return
        pos, replaced = node.store_late(int(ts[0]), float(vals[0]))
        if accepted is not None:
            accepted(node.name, seq, ts, vals, False)
        self.counts["duplicates_replaced" if replaced else "late_inserted"] += 1
        views = node.views_as_of(pos, pos + 1, self._plan(node.name))
        triggered = [k for k in self.queries if node.name in self._attached[k]]
        self._evaluate(np.array([node.name], dtype=object), seq, ts, vals, views, triggered)
        node.register.evict()

    def _advance_runs(self, triggered: tuple[str, ...], runs: PendingRuns) -> None:
        """Advance the windows of the series that trigger the queries ``triggered`` (hence
        have the same windows) over their pending runs, and evaluate those queries, all series
        at once."""
        group = runs.take(triggered)
        nodes = [run[0] for run in group]
        views = advance_together(nodes, [run[4] for run in group], self._plan(nodes[0].name))
        if not triggered:
            return
        names = np.array([node.name for node in nodes], dtype=object)
        series = np.repeat(names, [len(run[2]) for run in group])
        seq, ts, vals = (np.concatenate([run[i] for run in group]) for i in (1, 2, 3))
        self._evaluate(series, seq, ts, vals, views, triggered)

    def _evaluate(
        self,
        series: np.ndarray,
        seq: np.ndarray,
        ts: np.ndarray,
        vals: np.ndarray,
        views: dict[WindowSpec, WindowView],
        triggered: Iterable[str],
        replayed: bool = False,
    ) -> None:
        """Evaluate the queries ``triggered`` (keys) over the points (``series``: the name of
        each), each query's events ranked by its registration order."""
        bindings = ViewBindings(series, ts, vals, views)
        ranks = {key: rank for rank, key in enumerate(self.queries)}
        for key in triggered:
            chunk = fire(self.queries[key], bindings, seq, self._epoch, ranks[key], replayed)
            if chunk is not None:
                self.events.add(chunk)

    def _replay(self, query: CompiledQuery, from_ts: int) -> None:
        """Evaluate a new query over stored history since ``from_ts`` (``SINCE``): the newest
        time over all series minus the query's span, the same instant for every series."""
        self._epoch += 1
        for name in sorted(self._attached[query_key(query.name)]):
            node = self.nodes[name]
            reg = node.register
            p0 = int(reg.search(from_ts, side="left"))
            if p0 >= reg.end:
                continue
            views = node.views_as_of(p0, reg.end, _wanted_stats([query], query.windows))
            ts = np.array(reg.ts(p0, reg.end))
            series, values = np.full(len(ts), name, dtype=object), np.array(reg.values(p0, reg.end))
            self._evaluate(series, ts, ts, values, views, [query_key(query.name)], True)

    # -- reading -------------------------------------------------------------------------------
    def unmatched(self) -> dict[str, str]:
        """The watch queries no stored series triggers yet: name -> why (their ``ON`` patterns
        and some of the series there are)."""
        notes = {
            q.name: no_match(q.triggers, self.nodes)
            for key, q in self.queries.items()
            if not self._attached[key]
        }
        return {name: note for name, note in notes.items() if note is not None}

    def window_stats(self, series: str, window: str | WindowSpec) -> dict[str, float]:
        """Every statistic of one window of a series as of its newest point."""
        spec = _parse_window(window) if isinstance(window, str) else window
        node = self.node(series)
        reg = node.register
        if reg.end == reg.start:
            raise ValueError(f"series {series!r} holds no points yet")
        views = node.views_as_of(reg.end - 1, reg.end, {spec: frozenset(STATS)})
        return {name: float(views[spec].stat(name)[0]) for name in STATS}

    def stats(self) -> dict[str, object]:
        """Counts: received = accepted + rejected; late inserts and replaced duplicates are
        among the accepted."""
        received, rejected = self.counts["received"], self.dead.total()
        return {
            "received": received,
            "accepted": received - rejected,
            "rejected": rejected,
            "rejected_by_reason": self.dead.counts(),
            "late_inserted": self.counts["late_inserted"],
            "duplicates_replaced": self.counts["duplicates_replaced"],
            "events": self.events.emitted,
            "series": len(self.nodes),
            "windows": sum(len(node.windows) for node in self.nodes.values()),
            "queries": len(self.queries),
            "points_stored": sum(len(node.register) for node in self.nodes.values()),
        }


def _wanted_stats(queries: Iterable[CompiledQuery], specs: Iterable[WindowSpec]) -> Plan:
    """The statistics each window must produce for these queries (coverage always)."""
    wanted: dict[WindowSpec, set[str]] = {spec: {"coverage"} for spec in specs}
    for query in queries:
        for stat, spec in query.needs:
            wanted[spec].add(stat)
    return {spec: frozenset(stats) for spec, stats in wanted.items()}


def _parse_window(text: str) -> WindowSpec:
    """Read a window written as in a query (``5m``, ``100 points``, ``since ...``)."""
    expr = parse_expr(f"count({text})")
    if not isinstance(expr, Stat):
        raise ValueError(f"{text!r} is not a window; write e.g. '5m' or '100 points'")
    return expr.window
