"""Standing aggregates with deferred evaluation, hosted by a :class:`~tsmon.engine.monitor.Monitor`
(Zhu & Ravishankar 2004 through :mod:`tsmon.protocols.deferral`).

``QUERY port AS SUM(0.3*ibm.px + 0.7*msft.px) WITHIN 0.5 CONFIDENCE 0.9`` is evaluated only when
the drifting-Brownian-motion model of its series says ``|A(t) − A(t_eval)|`` may exceed 0.5 with
probability above 0.1; in between, the last answer stands (users may extrapolate it with its
drift ``μ_A``, Eq. 8).

Choices the paper leaves open
    * **Ticks.** The model's evaluations happen at ticks of event time, every ``tick_ms``
      (the Monitor's ``standing_tick``, default 1 s): the points of ``(b − tick, b]`` are fed
      at boundary ``b``, once a point at or after ``b`` has arrived (so an answer lags the
      newest point by less than one tick). A stretch of more than :data:`GAP_TICKS` ticks
      without points runs as one tick at its end (a jump in event time costs O(1)). Stream
      parameters are estimated from each series' own timestamps (irregular sampling included).
    * **Series** are read as their newest in-order value; late points (older than a series'
      newest) go to the registers and watch queries but not to the model, which assumes
      in-order delivery. Globs expand over the series that exist when the query is added,
      like bounded aggregates.
    * **AVG** divides by the number of distinct series. ``MAX|MIN OVER <duration>`` is the
      sliding-window extremum of Theorem 1; a count window (``OVER 100 points``) is refused
      (the model is in time). ``SINCE START`` is a landmark at the query's first tick.
    * ``ALTER QUERY q WITHIN w`` re-registers the query with the new tolerance (the per-stream
      models are kept, so nothing is re-learned).
    * **Drift test** (not in the paper): a stream's estimated drift is used only when it is
      significant, ``|μ̂| ≥ 2 σ̂/√span`` (:data:`DEFAULT_DRIFT_Z`). With ``k = 100`` items the
      paper's plain ``μ̂`` is noisy, and any nonzero drift shortens Eq. 7's interval, so fidelity
      lands 2-5 points above ``p`` on driftless walks; with the test it lands within half a
      point (``benchmarks/deferral/README.md``). Pass ``drift_test = false`` for the paper's rule.
    * **Caps in sampling intervals.** ``Δt`` is capped at ``max_dt`` (100) sampling intervals
      of a query's fastest series and Algorithm 2's ``t_max`` at ``reestimate`` (100) sampling
      intervals of each series, so both follow the data whatever ``tick`` is; either may be a
      duration instead. An interruption is flagged at the tick it is detected (a series silent
      for more than ``interrupt_after`` sampling intervals). All settings: :data:`SETTINGS_KEYS`
      (a Monitor's ``standing=`` option and a job file's ``[standing]`` section).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import numpy as np

from tsmon.core.window_spec import WindowKind, WindowSpec
from tsmon.engine.standing_settings import (
    DEFAULT_DRIFT_Z,
    SETTINGS_KEYS,
    StandingSettings,
    standing_settings,
)
from tsmon.engine.waiting import Groups
from tsmon.protocols.deferral import DeferralEngine, StandingQuery
from tsmon.protocols.deferral.snapshot import Answer, Counters
from tsmon.query import StandingDef, query_key
from tsmon.query.patterns import is_glob, series_matches

#: Empty ticks run one by one up to this many; a longer stretch without points is one tick at
#: its end, so a jump in event time costs O(1) ticks, not one per elapsed tick (issue 16).
GAP_TICKS = 100

__all__ = [
    "DEFAULT_DRIFT_Z",
    "SETTINGS_KEYS",
    "StandingAnswer",
    "StandingQueries",
    "StandingRegistry",
    "StandingSettings",
    "check_window",
    "series_weights",
    "standing_query",
    "standing_settings",
]

StandingAnswer = Answer


class StandingRegistry:
    """Standing statements by query key and their last evaluations; where the queries run
    is the subclass's business (:meth:`add`, :meth:`_drop`)."""

    def __init__(self) -> None:
        self.statements: dict[str, StandingDef] = {}  # by query key
        self.latest: dict[str, Answer] = {}  # by name: the last evaluation
        self.series_of: dict[str, tuple[str, ...]] = {}  # by name: the series it reads

    def defines(self, name: str) -> bool:
        return query_key(name) in self.statements

    def names(self) -> list[str]:
        return [s.name for s in self.statements.values()]

    def texts(self) -> dict[str, str]:
        return {s.name: s.text for s in self.statements.values()}

    def add(self, statement: StandingDef, series: Iterable[str]) -> None:
        raise NotImplementedError

    def _drop(self, statement: StandingDef) -> None:
        raise NotImplementedError

    def _statement(self, name: str) -> StandingDef:
        return self.statements[query_key(name)]

    def alter(self, name: str, eps: float, series: Iterable[str]) -> None:
        """A new tolerance: the query is registered again (stream models are kept)."""
        statement = self._statement(name)
        self.remove(name)
        self.add(dataclasses.replace(statement, eps=float(eps)), series)

    def remove(self, name: str) -> None:
        statement = self.statements.pop(query_key(name))
        self.latest.pop(statement.name, None)
        self.series_of.pop(statement.name, None)
        self._drop(statement)

    def reads(self) -> dict[str, Groups]:
        """Each series of each query (globs were expanded when it was added), for
        :mod:`tsmon.engine.waiting`."""
        return {name: tuple((s,) for s in series) for name, series in self.series_of.items()}

    def answers(self) -> dict[str, Answer]:
        """The last evaluation of every query (queries not evaluated yet are left out)."""
        names = [s.name for s in self.statements.values()]
        return {n: self.latest[n] for n in names if n in self.latest}


class StandingQueries(StandingRegistry):
    """The standing queries of one Monitor: statements, stream ids and the deferral engine.

    Examples
    --------
    >>> from tsmon.query import parse_query
    >>> sq = StandingQueries(StandingSettings(tick_ms=1_000))
    >>> sq.add(parse_query("QUERY s AS SUM(a.x, b.x) WITHIN 1 CONFIDENCE 0.9"), ["a.x", "b.x"])
    >>> for t in range(0, 3_001, 500):
    ...     sq.stage("a.x", np.array([t]), np.array([1.0]))
    ...     sq.stage("b.x", np.array([t]), np.array([2.0]))
    >>> sq.flush()
    >>> sq.answers()["s"].value
    3.0
    """

    def __init__(self, settings: StandingSettings | None = None) -> None:
        super().__init__()
        self.settings = settings or StandingSettings()
        self.tick_ms = self.settings.tick_ms
        self.engine = DeferralEngine(
            interrupt_factor=self.settings.interrupt_factor,
            models=self.settings.models(),
            **self.settings.partition_options(),  # type: ignore[arg-type]
        )
        self.stream_of: dict[str, int] = {}  # series -> stream id
        self._staged: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (ids, ts, values)
        self._tick: int | None = None  # the last boundary fed
        self._pending: dict[str, StandingQuery] = {}  # SINCE START: added at the first tick

    # -- queries -------------------------------------------------------------------------

    def add(self, statement: StandingDef, series: Iterable[str]) -> None:
        """Register ``statement`` over the existing ``series`` (globs expanded now)."""
        check_window(statement)
        by_series = series_weights(statement, series)
        weights = {self._stream(s): w for s, w in by_series.items()}
        self.statements[query_key(statement.name)] = statement
        self.series_of[statement.name] = tuple(by_series)
        if statement.since_start and self._tick is None:  # its landmark is the first tick
            self._pending[statement.name] = standing_query(statement, weights, landmark_ms=0)
            return
        self.engine.add_query(standing_query(statement, weights, self._tick))

    def _stream(self, series: str) -> int:
        return self.stream_of.setdefault(series, len(self.stream_of))

    def _drop(self, statement: StandingDef) -> None:
        if self._pending.pop(statement.name, None) is None:
            self.engine.remove_query(statement.name)

    # -- data ----------------------------------------------------------------------------

    def tracks(self, series: str) -> bool:
        return series in self.stream_of

    def stage(self, series: str, ts: np.ndarray, values: np.ndarray) -> None:
        """In-order points of one series, fed at the next tick boundaries they reach."""
        if series in self.stream_of and len(ts):
            ids = np.full(len(ts), self.stream_of[series], dtype=np.int64)
            self._staged.append((ids, np.asarray(ts, np.int64), np.asarray(values, float)))

    def flush(self) -> None:
        """Run every tick boundary the staged points have passed."""
        if not self._staged or not self.statements:
            return
        ids, ts, values = (np.concatenate(parts) for parts in zip(*self._staged, strict=True))
        order = np.argsort(ts, kind="stable")
        ids, ts, values = ids[order], ts[order], values[order]
        tick = self.tick_ms
        first = (int(ts[0]) // tick) * tick if self._tick is None else self._tick + tick
        last = (int(ts[-1]) // tick) * tick  # boundaries reached by a point
        fed, boundary = 0, first
        while boundary <= last:
            feeds = -(-int(ts[fed]) // tick) * tick  # the boundary that feeds the next point
            if feeds - boundary > GAP_TICKS * tick:  # a long empty stretch: one tick at its end
                boundary = feeds - tick
            upto = int(np.searchsorted(ts, boundary, side="right"))
            self._run_tick(boundary, ids[fed:upto], ts[fed:upto], values[fed:upto])
            fed, boundary = upto, boundary + tick
        self._staged = [(ids[fed:], ts[fed:], values[fed:])] if fed < len(ts) else []

    def _run_tick(self, now: int, ids: np.ndarray, ts: np.ndarray, values: np.ndarray) -> None:
        self._tick = now
        for spec in self._pending.values():
            self.engine.add_query(dataclasses.replace(spec, landmark_ms=now))
        self._pending = {}
        for answer in self.engine.tick(now, ids, ts, values):
            self.latest[answer.name] = answer

    @property
    def counters(self) -> Counters:
        """Evaluations, missed deadlines, penalty and estimations so far."""
        return self.engine.counters


def check_window(statement: StandingDef) -> None:
    """Refuse a MAX/MIN window counted in points: the deferral model is in time."""
    if statement.window is not None and not _duration_ms(statement.window):
        raise ValueError(
            f"query {statement.name!r}: MAX/MIN OVER {statement.window} counts points; the "
            "deferral model is in time, so give a duration (e.g. OVER 30m)"
        )


def series_weights(statement: StandingDef, series: Iterable[str]) -> dict[str, float]:
    """The weight ``a_i`` of each series in the aggregate (Eq. 2): globs expanded over
    ``series``, repeated series pooled, zero weights left out, AVG divided by ``|S|``."""
    known = list(series)
    pooled: dict[str, float] = {}
    for term in statement.terms:
        names = (
            [s for s in known if series_matches(s, [term.series])]
            if is_glob(term.series)
            else [term.series]
        )
        if not names:
            raise ValueError(
                f"query {statement.name!r}: {term.series!r} matches no series; add the "
                "series first (globs expand when the query is added)"
            )
        for name in names:
            pooled[name] = pooled.get(name, 0.0) + term.coefficient
    pooled = {s: w for s, w in pooled.items() if w != 0.0}
    if not pooled:
        raise ValueError(f"query {statement.name!r}: the weights sum to 0 for every series")
    scale = 1.0 / len(pooled) if statement.aggregate == "avg" else 1.0  # AVG over |S|
    return {s: w * scale for s, w in pooled.items()}


def standing_query(
    s: StandingDef, weights: dict[int, float], landmark_ms: int | None
) -> StandingQuery:
    """The protocol query of ``s`` over stream ids; ``landmark_ms`` is its first tick when it
    runs ``SINCE START``."""
    landmark = landmark_ms if s.since_start else s.landmark_ms
    return StandingQuery(
        s.name,
        weights,
        s.eps,
        s.confidence,
        kind=s.extremum or "linear",  # type: ignore[arg-type]
        window_ms=None if s.window is None else _duration_ms(s.window),
        landmark_ms=landmark,
        relative=s.relative,
    )


def _duration_ms(window: WindowSpec) -> int | None:
    """Milliseconds of a duration window (``30m``), ``None`` for a count (``100 points``)."""
    return window.size if window.kind is WindowKind.TIME else None
