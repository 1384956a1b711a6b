"""The embedded API: registers, shared windows and persistent queries in one process.

A :class:`Monitor` stores the points of many series (one register each), keeps the windows the
registered queries need (one per series and window shape, shared and reference-counted), and
evaluates every query triggered by a series each time a point of that series is stored, with
the windows as of that point (claim 1). Queries, series and windows can be added and removed at
any time; an inserted window is populated at once from history (claims 2 and 3).

A query's condition and payload read the windows of its trigger series only, so points of
different series are independent and each series' points are processed as one vectorized run.
"""

from __future__ import annotations

import fnmatch
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from tsmon.core.register import DuplicatePolicy, Register, RegisterConfig
from tsmon.core.units import parse_duration_ms
from tsmon.core.window_spec import WindowSpec
from tsmon.core.windows import STATS, Window, WindowView
from tsmon.engine.deadletters import DeadLetters, Reason
from tsmon.engine.events import Event, EventChunk, EventLog
from tsmon.engine.points import read_batch
from tsmon.engine.runs import regular_runs
from tsmon.query import CompiledQuery, compile_query, parse_expr, parse_queries
from tsmon.query.ast import Stat

_GLOB_CHARS = set("*?[")


@dataclass(frozen=True)
class IngestReport:
    """What one ``ingest`` call did with its points."""

    received: int
    accepted: int
    rejected: int
    events: int


class _Bindings:
    """Per-point values a compiled query reads: the trigger points and their windows."""

    def __init__(
        self,
        series: str,
        ts_ms: np.ndarray,
        value: np.ndarray,
        views: dict[WindowSpec, WindowView],
        mask: np.ndarray | None = None,
    ) -> None:
        self.series = series
        self.ts_ms = ts_ms if mask is None else ts_ms[mask]
        self.value = value if mask is None else value[mask]
        self._views = views
        self._mask = mask

    def stat(self, name: str, window: WindowSpec) -> np.ndarray:
        values = self._views[window].stat(name)
        return values if self._mask is None else values[self._mask]

    def subset(self, mask: np.ndarray) -> _Bindings:
        return _Bindings(self.series, self.ts_ms, self.value, self._views, mask)


class Monitor:
    """Monitor many time series with persistent queries, in this process.

    Parameters
    ----------
    series
        Series names or glob patterns to accept (more with :meth:`add_series`); points of any
        other series are rejected as ``unknown_series``.
    capacity_points, retention
        Retention of each register: at most this many points and/or this much event time
        (``"1d"`` by default). Windows keep the points they still cover in any case.
    allowed_lateness
        Points up to this much older than their series' newest point are inserted in order;
        older ones are rejected as ``too_late``.
    duplicates
        ``"keep_last"`` (a point at an existing timestamp replaces it) or ``"keep_first"``.

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
    ) -> None:
        self.config = RegisterConfig(
            capacity_points=capacity_points,
            retention_ms=_millis(retention),
            allowed_lateness_ms=_millis(allowed_lateness, allow_zero=True) or 0,
            duplicates=DuplicatePolicy(duplicates),
        )
        self._registers: dict[str, Register] = {}
        self._patterns: list[str] = []
        self._windows: dict[str, dict[WindowSpec, Window]] = {}
        self._queries: dict[str, CompiledQuery] = {}
        self._attached: dict[str, set[str]] = {}  # query -> series whose windows it holds
        self._plans: dict[str, dict[WindowSpec, frozenset[str]]] = {}  # series -> stats wanted
        self._dead = DeadLetters()
        self._events = EventLog()
        self._counts: Counter[str] = Counter()
        self._epoch = 0
        self.now_ms: int | None = None  # the newest event time accepted, over all series
        for name in series:
            self.add_series(name)

    # -- series --------------------------------------------------------------------------------
    def add_series(self, name_or_glob: str) -> list[str]:
        """Accept a series, or every series matching a glob; return the registers created."""
        if _GLOB_CHARS & set(name_or_glob):
            if name_or_glob not in self._patterns:
                self._patterns.append(name_or_glob)
            return []
        if name_or_glob in self._registers:
            return []
        self._registers[name_or_glob] = Register(name_or_glob, self.config)
        self._windows[name_or_glob] = {}
        for query in self._queries.values():
            if query.matches(name_or_glob):
                self._attach(query, name_or_glob)
        return [name_or_glob]

    def remove_series(self, name_or_glob: str) -> list[str]:
        """Drop the series matching a name or glob (their points and windows) and the glob."""
        self._patterns = [p for p in self._patterns if p != name_or_glob]
        gone = [s for s in self._registers if fnmatch.fnmatchcase(s, name_or_glob)]
        for name in gone:
            for window in self._windows.pop(name).values():
                window.close()
            del self._registers[name]
            self._plans.pop(name, None)
            for attached in self._attached.values():
                attached.discard(name)
        return gone

    def series(self) -> list[str]:
        """Names of the registered series."""
        return list(self._registers)

    def _accepts(self, name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, p) for p in self._patterns)

    # -- queries -------------------------------------------------------------------------------
    def add_query(self, text: str) -> list[str]:
        """Register the queries in ``text``; a ``SINCE`` query first runs over stored history."""
        compiled = [compile_query(q) for q in parse_queries(text)]
        for query in compiled:
            if query.name in self._queries:
                raise ValueError(
                    f"query {query.name!r} already exists; use alter_query to change it "
                    "or remove_query first"
                )
        for query in compiled:
            self._install(query)
        return [q.name for q in compiled]

    def alter_query(self, text: str) -> list[str]:
        """Replace existing queries by the same names; windows still needed are kept."""
        compiled = [compile_query(q) for q in parse_queries(text)]
        for query in compiled:
            if query.name not in self._queries:
                raise KeyError(f"no query named {query.name!r}; use add_query to create it")
        for query in compiled:
            old_attached = self._attached.pop(query.name)
            old = self._queries.pop(query.name)
            self._install(query)
            for name in old_attached:
                self._release(name, old.windows)
        return [q.name for q in compiled]

    def remove_query(self, name: str) -> None:
        """Unregister a query and release the windows only it used."""
        if name not in self._queries:
            raise KeyError(f"no query named {name!r}; registered: {sorted(self._queries)}")
        query = self._queries.pop(name)
        for series in self._attached.pop(name):
            self._release(series, query.windows)

    def queries(self) -> dict[str, str]:
        """The registered queries: name -> text."""
        return {name: q.text for name, q in self._queries.items()}

    def _install(self, query: CompiledQuery) -> None:
        self._queries[query.name] = query
        self._attached[query.name] = set()
        for name in list(self._registers):
            if query.matches(name):
                self._attach(query, name)
        if query.since_ms is not None and self.now_ms is not None:
            self._replay(query, self.now_ms - query.since_ms)

    def _attach(self, query: CompiledQuery, name: str) -> None:
        windows = self._windows[name]
        for spec in query.windows:
            if spec not in windows:
                windows[spec] = Window(spec, self._registers[name])  # populated from history
            windows[spec].refcount += 1
        self._attached[query.name].add(name)
        self._plans.pop(name, None)

    def _release(self, name: str, specs: Iterable[WindowSpec]) -> None:
        windows = self._windows.get(name)
        if windows is None:
            return
        for spec in specs:
            window = windows[spec]
            window.refcount -= 1
            if window.refcount == 0:
                window.close()
                del windows[spec]
        self._plans.pop(name, None)

    def _triggered(self, name: str) -> list[CompiledQuery]:
        return [q for q in self._queries.values() if name in self._attached[q.name]]

    def _plan(self, name: str) -> dict[WindowSpec, frozenset[str]]:
        """The statistics each window of a series must produce for the queries it triggers."""
        plan = self._plans.get(name)
        if plan is None:
            plan = self._plans[name] = _wanted_stats(self._triggered(name), self._windows[name])
        return plan

    # -- ingest --------------------------------------------------------------------------------
    def ingest(self, series: object, ts: object, value: object) -> IngestReport:
        """Store a batch of points; each triggers its queries as of that point.

        ``series``, ``ts`` (epoch ms or ISO-8601) and ``value`` are equal-length arrays. Points
        are taken in the order given; bad ones go to :meth:`dead_letters`.
        """
        before_events, before_dead = self._events.emitted, self._dead.total()
        first_seq = self._counts["received"]
        batch = read_batch(series, ts, value, first_seq, self._dead)
        received = first_seq + len(np.asarray(series, dtype=object).reshape(-1))
        self._counts["received"] = received
        self._epoch += 1
        codes, names = pd.factorize(batch.series, sort=False, use_na_sentinel=False)
        small = np.uint16 if len(names) < 2**16 else np.int64  # stable sort of uint16 is radix
        order = np.argsort(codes.astype(small), kind="stable")
        bounds = np.searchsorted(codes[order], np.arange(len(names) + 1))
        for code, name in enumerate(names):
            take = order[bounds[code] : bounds[code + 1]]
            problem = self._admit(name)
            if problem is not None:
                self._dead.add(
                    batch.seq[take],
                    batch.series[take],
                    batch.ts_ms[take],
                    batch.values[take],
                    *problem,
                )
                continue
            self._ingest_series(name, batch.seq[take], batch.ts_ms[take], batch.values[take])
        rejected = self._dead.total() - before_dead
        self._counts["accepted"] = received - self._dead.total()
        return IngestReport(
            received - first_seq,
            received - first_seq - rejected,
            rejected,
            self._events.emitted - before_events,
        )

    def _admit(self, name: object) -> tuple[Reason, str] | None:
        """Why points of series ``name`` cannot be stored, or None (registering the series
        when a declared glob accepts it)."""
        if not isinstance(name, str) or not name:
            return Reason.BAD_SERIES, f"series name {name!r} is not a non-empty string"
        if name in self._registers or (self._accepts(name) and self.add_series(name)):
            return None
        return (
            Reason.UNKNOWN_SERIES,
            f"unknown series {name!r}; declare it with Monitor.add_series "
            "(a name or a glob) before sending its points",
        )

    def _ingest_series(self, name: str, seq: np.ndarray, ts: np.ndarray, vals: np.ndarray) -> None:
        reg = self._registers[name]
        for lo, hi, regular in regular_runs(ts, reg.last_ts):
            if regular:
                p0, p1 = reg.append(ts[lo:hi], vals[lo:hi])
                plan = self._plan(name)
                views = {
                    spec: w.advance(p0, p1, plan[spec]) for spec, w in self._windows[name].items()
                }
                self._evaluate(name, seq[lo:hi], ts[lo:hi], vals[lo:hi], views)
                self._note_time(int(ts[hi - 1]))
            else:
                for i in range(lo, hi):
                    self._irregular(name, reg, int(seq[i]), int(ts[i]), float(vals[i]))
            reg.evict()

    def _irregular(self, name: str, reg: Register, seq: int, ts: int, value: float) -> None:
        """A point not newer than its series' newest: a duplicate or a late point."""
        pos = reg.position_of(ts)
        last = reg.last_ts if reg.last_ts is not None else ts
        reject = None
        if pos is not None and self.config.duplicates is DuplicatePolicy.KEEP_FIRST:
            stored = float(reg.values(pos, pos + 1)[0])
            reject = (
                Reason.DUPLICATE,
                f"timestamp {ts} ms already holds {stored!r}; "
                "policy keep_first keeps the stored value",
            )
        elif pos is None and last - ts > self.config.allowed_lateness_ms:
            reject = (
                Reason.TOO_LATE,
                f"point is {last - ts} ms older than the newest point of "
                f"{name!r}; allowed lateness is {self.config.allowed_lateness_ms} ms",
            )
        elif pos is None and reg.complete_from_ts is not None and ts < reg.complete_from_ts:
            reject = (
                Reason.TOO_LATE,
                f"point at {ts} ms is older than the retained history "
                f"of {name!r} (complete from {reg.complete_from_ts} ms)",
            )
        if reject is not None:
            self._dead.add(
                np.array([seq]),
                np.array([name], dtype=object),
                np.array([ts]),
                np.array([value], dtype=object),
                *reject,
            )
            return
        if pos is None:
            pos = reg.insert(ts, value)
            self._counts["late_inserted"] += 1
        else:
            reg.replace(pos, value)
            self._counts["duplicates_replaced"] += 1
        for window in self._windows[name].values():
            window.populate(reg.end)
        views = self._views_as_of(name, pos, pos + 1, self._plan(name))
        self._evaluate(name, np.array([seq]), np.array([ts]), np.array([value]), views)

    def _views_as_of(
        self, name: str, p0: int, p1: int, plan: dict[WindowSpec, frozenset[str]]
    ) -> dict[WindowSpec, WindowView]:
        """Per-point statistics of points ``[p0, p1)`` from fresh windows built on history."""
        views = {}
        for spec, wanted in plan.items():
            window = Window(spec, self._registers[name])
            window.populate(p0)
            views[spec] = window.advance(p0, p1, wanted)
            window.close()
        return views

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
        bindings = _Bindings(name, ts, vals, views)
        for rank, query in enumerate(self._queries.values()):
            wanted = name in self._attached[query.name] if replay_of is None else query is replay_of
            if not wanted:
                continue
            fired = np.asarray(query.condition(bindings), dtype=bool)
            if not fired.any():
                continue
            hit = bindings.subset(fired)
            coverage = np.ones(int(fired.sum()))
            for spec in query.windows:
                coverage = np.minimum(coverage, hit.stat("coverage", spec))
            self._events.add(
                EventChunk(
                    epoch=self._epoch,
                    order=seq[fired],
                    rank=rank,
                    query=query.name,
                    series=name,
                    ts_ms=hit.ts_ms,
                    values=hit.value,
                    payload={label: evaluate(hit) for label, evaluate in query.payload},
                    coverage=coverage,
                    replayed=replay_of is not None,
                )
            )

    def _replay(self, query: CompiledQuery, from_ts: int) -> None:
        """Evaluate a new query over stored history since ``from_ts`` (``SINCE``)."""
        self._epoch += 1
        for name in sorted(self._attached[query.name]):
            reg = self._registers[name]
            p0 = int(reg.search(from_ts, side="left"))
            if p0 >= reg.end:
                continue
            views = self._views_as_of(name, p0, reg.end, _wanted_stats([query], query.windows))
            ts = np.array(reg.ts(p0, reg.end))
            values = np.array(reg.values(p0, reg.end))
            self._evaluate(name, ts, ts, values, views, replay_of=query)

    def _note_time(self, ts: int) -> None:
        self.now_ms = ts if self.now_ms is None else max(self.now_ms, ts)

    # -- outputs -------------------------------------------------------------------------------
    def events(self) -> list[Event]:
        """Return and forget the events produced since the last call, in processing order."""
        return self._events.drain()

    def dead_letters(self) -> pd.DataFrame:
        """Every rejected point: seq, series, ts_ms, value, reason, detail."""
        return self._dead.frame()

    def points(self, series: str) -> pd.DataFrame:
        """The retained points of one series in time order: columns ``ts_ms`` and ``value``.

        A copy: later ingests do not change it. Raises ``KeyError`` for an unknown series.
        """
        reg = self._registers.get(series)
        if reg is None:
            raise KeyError(
                f"unknown series {series!r}; Monitor.series() lists the "
                f"{len(self._registers)} registered series"
            )
        return pd.DataFrame(
            {"ts_ms": reg.ts(reg.start, reg.end), "value": reg.values(reg.start, reg.end)},
            copy=True,
        )

    def window_stats(self, series: str, window: str | WindowSpec) -> dict[str, float]:
        """Every statistic of one window of a series as of its newest point."""
        spec = _parse_window(window) if isinstance(window, str) else window
        reg = self._registers.get(series)
        if reg is None:
            raise KeyError(f"unknown series {series!r}; registered: {len(self._registers)}")
        if reg.end == reg.start:
            raise ValueError(f"series {series!r} holds no points yet")
        views = self._views_as_of(series, reg.end - 1, reg.end, {spec: frozenset(STATS)})
        return {name: float(views[spec].stat(name)[0]) for name in STATS}

    def stats(self) -> dict[str, object]:
        """Counts: received = accepted + rejected; late inserts and replaced duplicates are
        among the accepted."""
        return {
            "received": self._counts["received"],
            "accepted": self._counts["accepted"],
            "rejected": self._dead.total(),
            "rejected_by_reason": self._dead.counts(),
            "late_inserted": self._counts["late_inserted"],
            "duplicates_replaced": self._counts["duplicates_replaced"],
            "events": self._events.emitted,
            "series": len(self._registers),
            "windows": sum(len(w) for w in self._windows.values()),
            "queries": len(self._queries),
            "points_stored": sum(len(r) for r in self._registers.values()),
        }


def _wanted_stats(
    queries: Iterable[CompiledQuery], specs: Iterable[WindowSpec]
) -> dict[WindowSpec, frozenset[str]]:
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


def _millis(value: str | int | None, allow_zero: bool = False) -> int | None:
    """A duration given as ``"5m"`` or as int milliseconds; ``"0ms"`` only if ``allow_zero``."""
    if value is None or isinstance(value, int):
        return value
    return parse_duration_ms(value, allow_zero=allow_zero)
