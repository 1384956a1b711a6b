"""The embedded API: registers, shared windows and persistent queries in one process.

A :class:`Monitor` stores the points of many series (one register each), keeps the windows the
registered queries need (one per series and window shape, shared and reference-counted), and
evaluates every query triggered by a series each time a point of that series is stored, with
the windows as of that point (claim 1). Queries, series and windows can be added and removed at
any time; an inserted window is populated at once from history (claims 2 and 3).

A query's condition and payload read the windows of its trigger series only, so points of
different series are independent and each series' points are processed as one vectorized run.
Query names are case-insensitive, as in query files.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from numbers import Integral
from typing import Any

import numpy as np
import pandas as pd

from tsmon.core.register import DuplicatePolicy, RegisterConfig
from tsmon.core.units import parse_duration_ms
from tsmon.core.window_spec import WindowSpec
from tsmon.core.windows import STATS, WindowView
from tsmon.engine.bounded import BoundedQueries, FilterSettings
from tsmon.engine.deadletters import DeadLetters, Reason
from tsmon.engine.evaluation import ViewBindings, fire
from tsmon.engine.events import Event, EventLog
from tsmon.engine.guard import future_limit
from tsmon.engine.points import read_batch
from tsmon.engine.runs import regular_runs, series_groups
from tsmon.engine.series import Plan, SeriesNode
from tsmon.engine.standing import StandingQueries, standing_settings
from tsmon.engine.standing_settings import StandingSettings
from tsmon.engine.summaries import SummaryQueries
from tsmon.protocols.filters import MessageCounts
from tsmon.query import CompiledQuery, Stat, compile_query, parse_expr, parse_queries, query_key
from tsmon.query.patterns import is_glob, no_match, series_matches


@dataclass(frozen=True)
class IngestReport:
    """What one ``ingest`` call did with its points."""

    received: int
    accepted: int
    rejected: int
    events: int


class Monitor:
    """Monitor many time series with persistent queries, in this process.

    Parameters
    ----------
    series
        Series names or glob patterns to accept (more with :meth:`add_series`); points of any
        other series are rejected as ``unknown_series``.
    capacity_points, retention
        Retention of each register: at most this many points and/or this much event time
        (``"1d"`` by default). Windows keep the points they still cover, and registers the
        points within the allowed lateness, in any case.
    allowed_lateness
        Points up to this much older than their series' newest point are inserted in order (or
        replace the value at their timestamp); older ones are rejected as ``too_late``.
    duplicates
        ``"keep_last"`` (a point at an existing timestamp replaces it) or ``"keep_first"``.
    filter_period, filter_shrink, filter_growth, seed
        Adjustment period ``T`` (default ``None``: chosen online, 10 observed sampling
        intervals as the paper's ``T = 10`` time units, longer for quiet streams), shrink
        percentage ``S``, growth allocation and tie-break seed of the adaptive filters behind
        bounded-aggregate queries (``QUERY q AS AVG(a, b) WITHIN 2``); see
        :mod:`tsmon.engine.bounded`. Growth defaults to ``"capped"`` rather than the paper's
        greedy rule: with one query over many series the paper's rule grows a single series
        per period, which cost 7.6× more messages on a 200-source AVG; ``"capped"`` costs
        4–12 % more on the paper's random-walk figures (``benchmarks/filters/bench_growth.py``).
    max_future
        Points stamped more than this after the clock of :meth:`ingest` are rejected as
        ``future_timestamp`` (``"1d"`` by default; None: no limit; docs/time.md).
    standing_tick, standing
        Event time between the evaluation ticks of standing queries (``... CONFIDENCE p``;
        ``"1s"`` by default) and their other settings, the keys of a job file's ``[standing]``
        section as a mapping, e.g. ``{"max_dt": 100, "interrupt_after": 3}``
        (:data:`tsmon.engine.standing_settings.SETTINGS_KEYS`); a bad one is a ``ValueError``.

    Examples
    --------
    >>> mon = Monitor(["cpu.*"])
    >>> mon.add_query("QUERY hot ON cpu.* WHEN mean(3 points) > 0.8 EMIT series, max(3 points)")
    ['hot']
    >>> mon.ingest(["cpu.a"] * 4, [0, 1000, 2000, 3000], [0.7, 0.9, 0.95, 0.2])
    IngestReport(received=4, accepted=4, rejected=0, events=1)
    >>> [(e.ts_ms, e.payload["max(3 points)"]) for e in mon.events()]
    [(2000, 0.95)]
    """

    def __init__(
        self,
        series: Iterable[str] = (),
        *,
        capacity_points: int | None = None,
        retention: str | int | None = "1d",
        allowed_lateness: str | int = 0,
        duplicates: str = "keep_last",
        filter_period: str | int | None = None,
        filter_shrink: float = 0.05,
        filter_growth: str = "capped",
        seed: int = 0,
        standing_tick: str | int | None = None,
        standing: Mapping[str, object] | StandingSettings | None = None,
        max_future: str | int | None = "1d",
    ) -> None:
        if isinstance(series, str):
            raise TypeError(
                f"series must be a list of names or globs, got the string {series!r}; "
                f"pass [{series!r}]"
            )
        self.config = RegisterConfig(
            capacity_points=capacity_points,
            retention_ms=_millis("retention", retention),
            allowed_lateness_ms=_millis("allowed_lateness", allowed_lateness, allow_zero=True) or 0,
            duplicates=DuplicatePolicy(duplicates),
        )
        self._nodes: dict[str, SeriesNode] = {}
        self._patterns: list[str] = []
        self._queries: dict[str, CompiledQuery] = {}  # by query_key, in registration order
        self._attached: dict[str, set[str]] = {}  # query key -> series whose windows it holds
        self._plans: dict[str, Plan] = {}  # series -> statistics its windows must produce
        self._max_future_ms = _millis("max_future", max_future)
        self._dead = DeadLetters()
        self._events = EventLog()
        self._counts: Counter[str] = Counter()
        period = _millis("filter_period", filter_period)  # None: chosen online
        self._bounded = BoundedQueries(
            FilterSettings(period, float(filter_shrink), int(seed), filter_growth)
        )
        # CONFIDENCE queries (deferred evaluation)
        self._standing = StandingQueries(standing_settings(standing, standing_tick))
        self._summaries = SummaryQueries()  # INNER/POINT/RANGE, APPROX, correlated aggregates
        self._epoch = 0
        self.now_ms: int | None = None  # the newest event time accepted, over all series
        for name in series:
            self.add_series(name)

    # -- series --------------------------------------------------------------------------------
    def add_series(self, name_or_glob: str, *, literal: bool = False) -> list[str]:
        """Accept a series, or every series matching a glob; return the series created.

        A name with ``*``, ``?`` or ``[`` is a glob unless ``literal`` is true.
        """
        if not literal and is_glob(name_or_glob):
            if name_or_glob not in self._patterns:
                self._patterns.append(name_or_glob)
            return []
        if name_or_glob in self._nodes:
            return []
        self._create_series(name_or_glob)
        return [name_or_glob]

    def remove_series(self, name_or_glob: str) -> list[str]:
        """Drop the series matching a name or glob (their points and windows) and the glob.

        A series that a remaining glob accepts comes back, empty, with its next point.
        """
        self._patterns = [p for p in self._patterns if p != name_or_glob]
        gone = [s for s in self._nodes if series_matches(s, [name_or_glob])]
        for name in gone:
            self._nodes.pop(name).close()
            self._plans.pop(name, None)
            for attached in self._attached.values():
                attached.discard(name)
        return gone

    def series(self) -> list[str]:
        """Names of the registered series."""
        return list(self._nodes)

    def _create_series(self, name: str) -> None:
        self._nodes[name] = SeriesNode(name, self.config)
        for query in self._queries.values():
            if query.matches(name):
                self._attach(query, name)

    def _admit(self, name: object) -> tuple[Reason, str] | None:
        """Why points of series ``name`` cannot be stored, or None (registering the series
        when a declared glob accepts it)."""
        if not isinstance(name, str) or not name:
            return Reason.BAD_SERIES, f"series name {name!r} is not a non-empty string"
        if name not in self._nodes and series_matches(name, self._patterns):
            self._create_series(name)
        if name in self._nodes:
            return None
        return (
            Reason.UNKNOWN_SERIES,
            f"unknown series {name!r}; declare it with Monitor.add_series "
            "(a name or a glob) before sending its points",
        )

    # -- queries -------------------------------------------------------------------------------
    def add_query(self, text: str) -> list[str]:
        """Register the queries in ``text``; a ``SINCE`` query first runs over stored history.

        ``QUERY q AS AVG(...) WITHIN δ`` statements register bounded aggregates over the series
        that exist now (globs are expanded once); their answers are in :meth:`answers`.
        """
        statements = parse_queries(text)
        kinds = _by_kind(statements, "add_query")
        compiled = [compile_query(q) for q in kinds.pop("watch", [])]
        for name in [q.name for q in compiled] + [s.name for ss in kinds.values() for s in ss]:
            if self._defines(name):
                raise ValueError(
                    f"query {name!r} already exists (names ignore case); use alter_query "
                    "to change it or remove_query first"
                )
        self._bounded.register(kinds.get("bounded", []), self._nodes, self._newest, self.now_ms)
        for statement in kinds.get("standing", []):
            self._standing.add(statement, self._nodes)
        for statement in kinds.get("summary", []):
            self._node(statement.series)  # a KeyError naming the series if it is unknown
            self._summaries.add(statement)
        for query in compiled:
            key = query_key(query.name)
            self._queries[key] = query
            self._attach_everywhere(query)
            if query.since_ms is not None and self.now_ms is not None:
                self._replay(query, self.now_ms - query.since_ms)
        return [s.name for s in statements]

    def _newest(self, series: str) -> tuple[int, float] | None:
        reg = self._nodes[series].register
        if reg.end == reg.start:
            return None
        return int(reg.ts(reg.end - 1, reg.end)[0]), float(reg.values(reg.end - 1, reg.end)[0])

    def alter_query(self, text: str) -> list[str]:
        """Replace existing queries by the same names, in place: they keep their rank among
        the queries, windows still needed are kept, and history is not replayed again.

        ``ALTER QUERY q WITHIN δ [IMMEDIATELY]`` changes a bounded aggregate's precision (§3.4
        of the adaptive-filters paper) or a standing query's tolerance; a new ``QUERY q AS
        ...`` statement redefines a bounded aggregate.
        """
        statements = parse_queries(text)
        kinds = _by_kind(statements, "alter_query")
        compiled = [compile_query(q) for q in kinds.pop("watch", [])]
        for query in compiled:
            if query_key(query.name) not in self._queries:
                raise KeyError(f"no query named {query.name!r}; use add_query to create it")
        alters, redefined = kinds.pop("alter", []), kinds.pop("bounded", [])
        for other in kinds.values():  # standing and summary queries: no redefinition in place
            raise ValueError(f"query {other[0].name!r}: remove it and add it again to redefine it")
        standing = [s for s in alters if self._standing.defines(s.name)]
        bounded = [s for s in alters if not self._standing.defines(s.name)]
        self._bounded.change(redefined, bounded, self._nodes, self._newest, self.now_ms)
        for s in standing:
            self._standing.alter(s.name, s.delta, self._nodes)
        for query in compiled:
            key = query_key(query.name)
            old, old_attached = self._queries[key], self._attached[key]
            self._queries[key] = query
            self._attach_everywhere(query)
            for name in old_attached:
                self._release(name, old.windows)
        return [s.name for s in statements]

    def remove_query(self, name: str) -> None:
        """Unregister a query and release the windows only it used."""
        key = query_key(name)
        if self._bounded.defines(name):
            self._bounded.unregister(name)
            return
        if self._standing.defines(name):
            self._standing.remove(name)
            return
        if self._summaries.defines(name):
            self._summaries.remove(name)
            return
        if key not in self._queries:
            raise KeyError(f"no query named {name!r}; registered: {sorted(self.queries())}")
        query = self._queries.pop(key)
        for series in self._attached.pop(key):
            self._release(series, query.windows)

    def unmatched(self) -> dict[str, str]:
        """The watch queries no stored series triggers yet: name -> why (their ``ON`` patterns
        and some of the series there are). Asked after :meth:`add_query`, it says which new
        queries wait for series; a query leaves it when a series it matches appears."""
        notes = {
            q.name: no_match(q.triggers, self._nodes)
            for key, q in self._queries.items()
            if not self._attached[key]
        }
        return {name: note for name, note in notes.items() if note is not None}

    def queries(self) -> dict[str, str]:
        """The registered queries: name -> text."""
        texts = {q.name: q.text for q in self._queries.values()}
        return texts | self._bounded.texts() | self._standing.texts() | self._summaries.texts()

    def _defines(self, name: str) -> bool:
        key = query_key(name)
        return (
            key in self._queries
            or self._bounded.defines(name)
            or self._standing.defines(name)
            or self._summaries.defines(name)
        )

    def answers(self, kind: str = "bounded") -> Mapping[str, Any]:
        """The newest answer of every query of ``kind`` (as on the batch runtimes):

        * ``bounded``: every ``AS AGG(...) WITHIN δ`` query's ``value``, ``lo``, ``hi`` and
          ``as_of_ms``; unbounded (``lo = -inf``) until every series has a value;
        * ``standing``: the last evaluation of every ``... WITHIN ε CONFIDENCE p`` query:
          ``value`` at ``ts_ms`` with drift ``mu_a`` (extrapolate ``value + mu_a·(t − ts_ms)``,
          Eq. 8), ``eps``, ``next_due_ms``, and ``interrupted`` / ``eps_intr`` when a series
          went silent (§4.5);
        * ``summary``: every summary query's answer (``INNER``/``POINT``/``RANGE`` from a SWAT
          tree, ``APPROX COUNT|SUM`` from an exponential histogram, ``COUNT|SUM(x > AVG)``
          correlated aggregates) from the summaries' current state.
        """
        hosts = {"bounded": self._bounded, "standing": self._standing, "summary": self._summaries}
        if kind not in hosts:
            raise ValueError(f"a Monitor answers {sorted(hosts)} queries, not {kind!r}")
        return hosts[kind].answers()

    def exact_answers(self) -> dict[str, float]:
        """The exact aggregate of every bounded query from the stored newest points."""
        return self._bounded.exact(self._newest)

    def filter_messages(self) -> MessageCounts:
        """Messages the adaptive filters behind bounded aggregates sent, as if distributed
        (``stats()["bounded_points"]`` counts the points of the series they read)."""
        return self._bounded.messages()

    def _attach_everywhere(self, query: CompiledQuery) -> None:
        self._attached[query_key(query.name)] = set()
        for name in list(self._nodes):
            if query.matches(name):
                self._attach(query, name)

    def _attach(self, query: CompiledQuery, name: str) -> None:
        self._nodes[name].acquire(query.windows)  # new windows are populated from history
        self._attached[query_key(query.name)].add(name)
        self._plans.pop(name, None)

    def _release(self, name: str, specs: Iterable[WindowSpec]) -> None:
        node = self._nodes.get(name)
        if node is not None:
            node.release(specs)
            self._plans.pop(name, None)

    def _triggered(self, name: str) -> list[CompiledQuery]:
        return [q for key, q in self._queries.items() if name in self._attached[key]]

    def _plan(self, name: str) -> Plan:
        """The statistics each window of a series must produce for the queries it triggers."""
        plan = self._plans.get(name)
        if plan is None:
            plan = _wanted_stats(self._triggered(name), self._nodes[name].windows)
            self._plans[name] = plan
        return plan

    # -- ingest --------------------------------------------------------------------------------
    def ingest(
        self, series: object, ts: object, value: object, clock_ms: int | None = None
    ) -> IngestReport:
        """Store a batch of points; each triggers its queries as of that point.

        ``series``, ``ts`` (epoch ms or ISO-8601) and ``value`` are equal-length arrays. Points
        are taken in the order given; bad ones go to :meth:`dead_letters`, among them those
        stamped more than ``max_future`` after ``clock_ms`` (the wall clock by default).
        """
        before_events, before_dead = self._events.emitted, self._dead.total()
        clock = int(time.time() * 1000) if clock_ms is None else clock_ms
        latest = future_limit(clock, self._max_future_ms)
        batch = read_batch(series, ts, value, self._counts["seq"], self._dead, latest)
        self._counts["seq"] += batch.received
        self._counts["received"] += batch.received - len(batch.seq)  # rejected while reading
        self._epoch += 1
        for name, take in series_groups(batch.series):
            try:
                problem = self._admit(name)
                if problem is not None:
                    self._dead.add(
                        batch.seq[take],
                        batch.series[take],
                        batch.ts_ms[take],
                        batch.values[take],
                        *problem,
                    )
                else:
                    self._ingest_series(
                        name, batch.seq[take], batch.ts_ms[take], batch.values[take]
                    )
            finally:  # counted even if a bug raises, so received = accepted + rejected holds
                self._counts["received"] += len(take)
        self._bounded.flush()
        self._standing.flush()
        rejected = self._dead.total() - before_dead
        return IngestReport(
            batch.received,
            batch.received - rejected,
            rejected,
            self._events.emitted - before_events,
        )

    def _ingest_series(self, name: str, seq: np.ndarray, ts: np.ndarray, vals: np.ndarray) -> None:
        node = self._nodes[name]
        for lo, hi, regular in regular_runs(ts, node.register.last_ts):
            if regular:
                self._bounded.stage(name, seq[lo:hi], ts[lo:hi], vals[lo:hi])
                self._standing.stage(name, ts[lo:hi], vals[lo:hi])
                self._summaries.feed(name, vals[lo:hi])
                views = node.append(ts[lo:hi], vals[lo:hi], self._plan(name))
                self._evaluate(name, seq[lo:hi], ts[lo:hi], vals[lo:hi], views)
                newest = int(ts[hi - 1])
                self.now_ms = newest if self.now_ms is None else max(self.now_ms, newest)
            else:
                for i in range(lo, hi):
                    self._late(node, int(seq[i]), int(ts[i]), float(vals[i]))

    def _late(self, node: SeriesNode, seq: int, ts: int, value: float) -> None:
        """A point not newer than its series' newest: rejected, inserted or replacing."""
        problem = node.rejection(ts)
        if problem is not None:
            self._dead.add(
                np.array([seq]),
                np.array([node.name], dtype=object),
                np.array([ts]),
                np.array([value], dtype=object),
                *problem,
            )
            return
        pos, replaced = node.store_late(ts, value)
        self._bounded.stage(node.name, np.array([seq]), np.array([ts]), np.array([value]))
        self._counts["duplicates_replaced" if replaced else "late_inserted"] += 1
        views = node.views_as_of(pos, pos + 1, self._plan(node.name))
        self._evaluate(node.name, np.array([seq]), np.array([ts]), np.array([value]), views)
        node.register.evict()

    def _evaluate(
        self,
        name: str,
        seq: np.ndarray,
        ts: np.ndarray,
        vals: np.ndarray,
        views: dict[WindowSpec, WindowView],
        replay_of: CompiledQuery | None = None,
    ) -> None:
        """Evaluate the queries the series triggers (or just ``replay_of``) over its points."""
        bindings = ViewBindings(name, ts, vals, views)
        for rank, (key, query) in enumerate(self._queries.items()):
            wanted = name in self._attached[key] if replay_of is None else query is replay_of
            if not wanted:
                continue
            chunk = fire(query, bindings, seq, self._epoch, rank, replayed=replay_of is not None)
            if chunk is not None:
                self._events.add(chunk)

    def _replay(self, query: CompiledQuery, from_ts: int) -> None:
        """Evaluate a new query over stored history since ``from_ts`` (``SINCE``): the newest
        time over all series minus the query's span, the same instant for every series."""
        self._epoch += 1
        for name in sorted(self._attached[query_key(query.name)]):
            node = self._nodes[name]
            reg = node.register
            p0 = int(reg.search(from_ts, side="left"))
            if p0 >= reg.end:
                continue
            views = node.views_as_of(p0, reg.end, _wanted_stats([query], query.windows))
            ts = np.array(reg.ts(p0, reg.end))
            self._evaluate(name, ts, ts, np.array(reg.values(p0, reg.end)), views, replay_of=query)

    # -- outputs -------------------------------------------------------------------------------
    def events(self) -> list[Event]:
        """Return and forget the events produced since the last call, in processing order."""
        return self._events.drain()

    def dead_letters(self) -> pd.DataFrame:
        """Every rejected point (not taken by :meth:`take_dead_letters`): seq, series, ts_ms,
        value, reason, detail."""
        return self._dead.frame()

    @property
    def rejected_pending(self) -> int:
        """Rejected points that :meth:`take_dead_letters` would return (cheap to ask)."""
        return self._dead.pending()

    def take_dead_letters(self) -> pd.DataFrame:
        """Return and forget the rejected points since the last call; :meth:`stats` still
        counts them (a host that ships them out, such as a Spark source node)."""
        return self._dead.take()

    def points(self, series: str) -> pd.DataFrame:
        """The retained points of one series in time order: columns ``ts_ms`` and ``value``.

        A copy: later ingests do not change it. Raises ``KeyError`` for an unknown series.
        """
        reg = self._node(series).register
        return pd.DataFrame(
            {"ts_ms": reg.ts(reg.start, reg.end), "value": reg.values(reg.start, reg.end)},
            copy=True,
        )

    def window_stats(self, series: str, window: str | WindowSpec) -> dict[str, float]:
        """Every statistic of one window of a series as of its newest point."""
        spec = _parse_window(window) if isinstance(window, str) else window
        node = self._node(series)
        reg = node.register
        if reg.end == reg.start:
            raise ValueError(f"series {series!r} holds no points yet")
        views = node.views_as_of(reg.end - 1, reg.end, {spec: frozenset(STATS)})
        return {name: float(views[spec].stat(name)[0]) for name in STATS}

    def stats(self) -> dict[str, object]:
        """Counts: received = accepted + rejected; late inserts and replaced duplicates are
        among the accepted."""
        received, rejected = self._counts["received"], self._dead.total()
        return {
            "received": received,
            "accepted": received - rejected,
            "rejected": rejected,
            "rejected_by_reason": self._dead.counts(),
            "late_inserted": self._counts["late_inserted"],
            "duplicates_replaced": self._counts["duplicates_replaced"],
            "events": self._events.emitted,
            "series": len(self._nodes),
            "windows": sum(len(node.windows) for node in self._nodes.values()),
            "queries": len(self._queries),
            "points_stored": sum(len(node.register) for node in self._nodes.values()),
            "bounded_queries": len(self._bounded.names()),
            "bounded_points": self._bounded.points,
            "standing_queries": len(self._standing.names()),
            "standing_evaluations": self._standing.counters.evaluations,
            "summary_queries": len(self._summaries.names()),
        }

    def _node(self, series: str) -> SeriesNode:
        node = self._nodes.get(series)
        if node is None:
            raise KeyError(
                f"unknown series {series!r}; Monitor.series() lists the "
                f"{len(self._nodes)} registered series"
            )
        return node


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


def _millis(option: str, value: object, allow_zero: bool = False) -> int | None:
    """A duration given as ``"5m"`` or as whole milliseconds; ``0`` only if ``allow_zero``."""
    if value is None or isinstance(value, str):
        return None if value is None else parse_duration_ms(value, allow_zero=allow_zero)
    if isinstance(value, Integral) and not isinstance(value, bool):
        return int(value)
    raise TypeError(
        f"{option} must be a duration like '5m' or whole milliseconds, got {value!r}; "
        "pass e.g. '1h' or 3600000"
    )


def _by_kind(statements: list, call: str) -> dict[str, list]:
    """Definitions grouped by kind name and alter statements under ``"alter"``; refuses kinds
    a Monitor cannot run (top-k ranks objects over many sources, which a Monitor does not have)
    and, for ``add_query``, alter statements."""
    from tsmon.kinds import kind_of  # the kinds' node parts host Monitors: import when used

    out: dict[str, list] = {}
    for s in statements:
        kind = kind_of(s)
        if call == "add_query" and not kind.defines(s):
            raise ValueError("ALTER QUERY changes a registered query; pass it to alter_query")
        if kind.name == "topk":
            raise ValueError(
                f"query {s.name!r} is a TOP/BOTTOM query: it ranks objects over many sources, "
                "which a Monitor does not have; run it in a job (tsmon run) or in "
                "tsmon.engine.batched.BatchedRuntime(queries=...)"
            )
        out.setdefault(kind.name if kind.defines(s) else "alter", []).append(s)
    return out
