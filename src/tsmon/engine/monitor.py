"""The embedded API: every query kind over many series, in this process.

A :class:`Monitor` is a façade. Watch queries run in its
:class:`~tsmon.engine.store.SeriesStore` (registers, shared windows, each query evaluated as of
each point: claims 1-3); every other kind — bounded aggregates, standing queries, top-k,
summaries, summary readers (SWAT-ASR), a kind added to :mod:`tsmon.kinds` — in the batch host
the Spark job runs, with one source node and an instant transport
(:class:`~tsmon.engine.embedded.InstantHost`): one :meth:`Monitor.ingest` call is one batch of
the points its series received in order (one per ``standing_tick`` interval while standing
queries run), followed by every round trip it causes. Which host runs a statement, and how
points reach the hosts: :mod:`tsmon.engine.hosts`.
Query names are case-insensitive, as in query files.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from tsmon.core.timestamps import epoch_unit
from tsmon.core.window_spec import WindowSpec
from tsmon.engine.deadletters import Reason
from tsmon.engine.events import Event
from tsmon.engine.guard import future_limit
from tsmon.engine.hosts import MonitorHosts
from tsmon.engine.replicas import DEFAULT_PHASE_MS, SummaryReader
from tsmon.engine.settings import FilterSettings, millis, register_config
from tsmon.engine.standing_settings import StandingSettings, standing_settings
from tsmon.engine.store import SeriesStore
from tsmon.protocols.filters import MessageCounts


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
        Adjustment period ``T`` (default ``None``: chosen online by the coordinator from the updates
        it receives, 20 observed sampling intervals, longer for quiet streams, and told to the
        sources in its width messages; :mod:`tsmon.protocols.filters.tuning`), shrink percentage
        ``S``, growth allocation and tie-break seed of the adaptive filters behind bounded-aggregate
        queries (``QUERY q AS AVG(a, b) WITHIN 2``; answers as of the newest point:
        :mod:`tsmon.kinds.bounded`). Growth defaults to ``"capped"`` rather than the paper's greedy
        rule: with one query over many series the paper's rule grows a single series per period,
        which cost 7.6× more messages on a 200-source AVG; ``"capped"`` costs 4–12 % more on the
        paper's random-walk figures (``benchmarks/filters/bench_growth.py``).
    max_future
        Points stamped more than this after the clock of :meth:`ingest` are rejected as
        ``future_timestamp`` (``"1d"`` by default; None: no limit; docs/time.md).
    replica_phase
        Phase of the SWAT-ASR source sites that summary readers follow (:meth:`follow`).
    standing_tick, standing
        Event time between the evaluation ticks of standing queries (``... CONFIDENCE p``;
        ``"1s"`` by default: an ingest's points are cut at its boundaries, and each interval
        that holds points is one tick, at its newest point; :mod:`tsmon.kinds.standing`) and
        their other settings, the keys of a job file's ``[standing]``
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
        replica_phase: str | int = DEFAULT_PHASE_MS,
        max_future: str | int | None = "1d",
    ) -> None:
        if isinstance(series, str):
            raise TypeError(
                f"series must be a list of names or globs, got the string {series!r}; "
                f"pass [{series!r}]"
            )
        self.config = register_config(capacity_points, retention, allowed_lateness, duplicates)
        self._store = SeriesStore(self.config)
        self._max_future_ms = millis("max_future", max_future)
        period = millis("filter_period", filter_period)  # None: chosen online
        filters = FilterSettings(period, float(filter_shrink), int(seed), filter_growth)
        self._hosts = MonitorHosts(
            self._store,
            filters,
            standing_settings(standing, standing_tick),
            millis("replica_phase", replica_phase),  # type: ignore[arg-type]
        )
        for name in series:
            self.add_series(name)

    @property
    def now_ms(self) -> int | None:
        """The newest event time accepted, over all series."""
        return self._store.now_ms

    # -- series --------------------------------------------------------------------------------
    def add_series(self, name_or_glob: str, *, literal: bool = False) -> list[str]:
        """Accept a series, or every series matching a glob; return the series created.

        A name with ``*``, ``?`` or ``[`` is a glob unless ``literal`` is true.
        """
        return self._store.add_series(name_or_glob, literal=literal)

    def remove_series(self, name_or_glob: str) -> list[str]:
        """Drop the series matching a name or glob (their points and windows) and the glob.

        A series that a remaining glob accepts comes back, empty, with its next point.
        """
        return self._store.remove_series(name_or_glob)

    def series(self) -> list[str]:
        """Names of the registered series."""
        return list(self._store.nodes)

    # -- queries -------------------------------------------------------------------------------
    def add_query(self, text: str) -> list[str]:
        """Register the queries in ``text``; a ``SINCE`` query first runs over stored history.

        ``QUERY q AS AVG(...) WITHIN δ`` statements register bounded aggregates over the series
        that exist now (globs are expanded once); their answers are in :meth:`answers`.
        """
        return self._hosts.add(text)

    def alter_query(self, text: str) -> list[str]:
        """Replace existing queries by the same names, in place: they keep their rank among
        the queries, windows still needed are kept, and history is not replayed again.

        ``ALTER QUERY q WITHIN δ [IMMEDIATELY]`` changes a bounded aggregate's precision (§3.4
        of the adaptive-filters paper), a standing query's tolerance or a top-k query's ε;
        ``ALTER QUERY q TOP k`` a top-k query's k; a new ``QUERY q AS ...`` statement
        redefines a bounded aggregate.
        """
        return self._hosts.alter(text)

    def remove_query(self, name: str) -> None:
        """Unregister a query and release the windows only it used."""
        self._hosts.remove(name)

    def unmatched(self) -> dict[str, str]:
        """The queries of every kind that wait for series: name -> why, in the words of
        :mod:`tsmon.engine.waiting` (no series matches a watch query's ``ON`` patterns, or a
        series an aggregate or top-k query reads has sent no point yet). Asked after
        :meth:`add_query`, it says which new queries wait; a query leaves it once its series
        have sent points."""
        return self._hosts.unmatched()

    def queries(self) -> dict[str, str]:
        """The registered queries: name -> text."""
        return self._hosts.texts()

    def follow(self, reader: SummaryReader) -> None:
        """Serve a summary reader (SWAT-ASR, Bulut & Singh §3) of a series of this monitor:
        its queued requests go out with each :meth:`ingest` (or :meth:`flush`), and the
        source's messages, the arrival count and the time come back to it at once."""
        self._hosts.follow(reader)

    def flush(self) -> None:
        """Deliver the followed readers' queued requests now, with no points."""
        self._hosts.flush()

    def answers(self, kind: str = "bounded") -> Mapping[str, Any]:
        """The newest answer of every query of ``kind``, by the batch runtimes' kind names:

        * ``bounded``: every ``AS AGG(...) WITHIN δ`` query's ``value``, ``lo``, ``hi`` and
          ``as_of_ms``; unbounded (``lo = -inf``) until every series has a value;
        * ``standing``: the last evaluation of every ``... WITHIN ε CONFIDENCE p`` query:
          ``value`` at ``ts_ms`` with drift ``mu_a`` (extrapolate ``value + mu_a·(t − ts_ms)``,
          Eq. 8), ``eps``, ``next_due_ms``, and ``interrupted`` / ``eps_intr`` when a series
          went silent (§4.5);
        * ``summary``: every summary query's answer (``INNER``/``POINT``/``RANGE`` from a SWAT
          tree, ``APPROX COUNT|SUM`` from an exponential histogram, ``COUNT|SUM(x > AVG)``
          correlated aggregates) as of the last ingest;
        * ``topk``: every ``TOP|BOTTOM k`` query's members, valid within its ε;
        * any other kind of :mod:`tsmon.kinds`, as its part answers.
        """
        return self._hosts.answers(kind)

    def exact_answers(self) -> dict[str, float]:
        """The exact aggregate of every bounded query from the stored newest points."""
        return self._hosts.exact()

    def filter_messages(self) -> MessageCounts:
        """Messages the adaptive filters behind bounded aggregates sent, as if distributed
        (``stats()["bounded_points"]`` counts the points of the series they read)."""
        return self._hosts.messages()

    # -- ingest --------------------------------------------------------------------------------
    def ingest(
        self,
        series: object,
        ts: object,
        value: object,
        clock_ms: int | None = None,
        ts_unit: str = "ms",
    ) -> IngestReport:
        """Store a batch of points; each triggers its queries as of that point.

        ``series``, ``ts`` (epoch numbers in ``ts_unit``: ``"s"``, ``"ms"``, ``"us"`` or
        ``"ns"``, a fraction floored to the ms, a float's by its shortest text:
        :func:`~tsmon.core.timestamps.read_epoch_ms`; or ISO-8601 instants) and ``value`` are
        equal-length arrays. Points are taken in the order given; bad ones go to
        :meth:`dead_letters`, among them those stamped more than ``max_future`` after
        ``clock_ms`` (the wall clock by default).

        >>> mon = Monitor(["cpu"])
        >>> ts = [1_704_067_200, 1_704_067_200.001]  # time.time() floats too
        >>> mon.ingest(["cpu"] * 2, ts, [1.0, 2.0], ts_unit="s").accepted
        2
        >>> mon.points("cpu")["ts_ms"].tolist()
        [1704067200000, 1704067200001]
        """
        epoch_unit(ts_unit)  # an unknown unit is the caller's mistake, not a dead letter
        store = self._store
        before_events, before_dead = store.events.emitted, store.dead.total()
        clock = int(time.time() * 1000) if clock_ms is None else clock_ms
        latest = future_limit(clock, self._max_future_ms)
        batch = store.read(series, ts, value, latest, ts_unit)
        self._hosts.ingest(batch)
        rejected = store.dead.total() - before_dead
        return IngestReport(
            batch.received,
            batch.received - rejected,
            rejected,
            store.events.emitted - before_events,
        )

    def refuse(self, reason: str, details: Sequence[str]) -> None:
        """Count input rows that hold no point (a file's lines that are no records) as
        received and rejected with ``reason`` (a :class:`~tsmon.engine.deadletters.Reason`
        value, e.g. ``"malformed_line"``), one dead letter each with its detail: so received =
        accepted + rejected counts every row of a file, not only its records.

        Examples
        --------
        >>> mon = Monitor(["cpu"])
        >>> mon.refuse("malformed_line", ["x.csv:3: 3 fields, the header has 2"])
        >>> mon.stats()["rejected_by_reason"], mon.dead_letters()["detail"].tolist()
        ({'malformed_line': 1}, ['x.csv:3: 3 fields, the header has 2'])
        """
        self._store.refuse(Reason(reason), details)

    # -- outputs -------------------------------------------------------------------------------
    def events(self) -> list[Event]:
        """Return and forget the events produced since the last call, in processing order."""
        return self._store.events.drain()

    def dead_letters(self) -> pd.DataFrame:
        """Every rejected point (not taken by :meth:`take_dead_letters`): seq, series, ts_ms,
        value, reason, detail."""
        return self._store.dead.frame()

    @property
    def rejected_pending(self) -> int:
        """Rejected points that :meth:`take_dead_letters` would return (cheap to ask)."""
        return self._store.dead.pending()

    def take_dead_letters(self) -> pd.DataFrame:
        """Return and forget the rejected points since the last call; :meth:`stats` still
        counts them (a host that ships them out, such as a Spark source node)."""
        return self._store.dead.take()

    def points(self, series: str) -> pd.DataFrame:
        """The retained points of one series in time order: columns ``ts_ms`` and ``value``.

        A copy: later ingests do not change it. Raises ``KeyError`` for an unknown series.
        """
        reg = self._store.node(series).register
        return pd.DataFrame(
            {"ts_ms": reg.ts(reg.start, reg.end), "value": reg.values(reg.start, reg.end)},
            copy=True,
        )

    def window_stats(self, series: str, window: str | WindowSpec) -> dict[str, float]:
        """Every statistic of one window of a series as of its newest point."""
        return self._store.window_stats(series, window)

    def stats(self) -> dict[str, object]:
        """Counts: received = accepted + rejected; late inserts and replaced duplicates are
        among the accepted."""
        return self._hosts.stats()
