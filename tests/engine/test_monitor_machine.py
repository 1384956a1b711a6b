"""Looks for a sequence of query, series and ingest operations (late, too-late, duplicate and bad
points included) after which the monitor's counts, shared windows, stored points or window
statistics disagree with a plain model recomputed from scratch."""

from __future__ import annotations

import math
from collections import Counter
from fnmatch import fnmatchcase

import numpy as np
import pytest
from hypothesis import Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from tests.oracle import observed_coverage, tolerance, window_index, window_stats
from tsmon import Monitor
from tsmon.core.window_spec import WindowSpec
from tsmon.query import CompiledQuery, compile_query

T0 = 1_700_000_000_000  # 2023-11-14T22:13:20Z
LATENESS_MS = 3000
LANDMARK = "since 2023-11-14T22:13:25Z"  # T0 + 5 s

QUERY_POOL = (
    "QUERY {name} ON m.* WHEN mean(3 points) > 0 EMIT max(5s), count(3 points)",
    "QUERY {name} ON m.a WHEN last >= min(5s) EMIT stddev(10s), slope(10s)",
    f"QUERY {{name}} ON m.a, m.b EMIT first({LANDMARK}), mean(2 points) SINCE -5s",
    f"QUERY {{name}} ON m.* WHEN count(5s) > 1 EMIT rate(5s), sum({LANDMARK}) SINCE -20s",
    "QUERY {name} ON m.c EMIT var(4 points), last",
    "QUERY {name} ON m.b",
    "QUERY {name} ON m.* WHEN max(3 points) > 50 OR min(10s) < -50 SINCE -3s",
)
QUERY_NAMES = ("q0", "q1", "q2")
SERIES = ("m.a", "m.b", "m.c")
SERIES_TARGETS = ("m.*", "m.a", "m.b", "m.c", "m.[ab]")
# how a point's timestamp is drawn relative to the model; repeats weigh the choice
TS_KINDS = ("next",) * 6 + ("late", "late", "dup", "too_late", "bad_ts")
VALUES = st.one_of(
    st.integers(-50, 50).map(float),
    st.integers(-5, 5),
    st.floats(-1e3, 1e3).map(lambda x: round(x, 6)),  # no subnormal variances
    st.sampled_from([math.nan, math.inf, -math.inf, "abc", "2.5", None, 1e9 + 0.25, 1e9 - 0.5]),
)
POINTS = st.lists(
    st.tuples(st.sampled_from(SERIES), st.sampled_from(TS_KINDS), st.integers(1, 1500), VALUES),
    min_size=1,
    max_size=20,
)


def read_value(value: object) -> tuple[float, str | None]:
    """The model's reading of one offered value: the float, or why it is rejected."""
    if value is None:
        return math.nan, "missing"
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return math.nan, "not_numeric"
    else:
        number = float(value)
    if math.isnan(number):
        return number, "nan"
    if math.isinf(number):
        return number, "infinite"
    return number, None


def assert_window_exact(
    got: dict[str, float], ts: np.ndarray, vals: np.ndarray, spec: WindowSpec, where: str
) -> None:
    """``got`` equals the statistics of ``spec`` as of the newest of ``ts``, from scratch."""
    idx = window_index(ts, len(ts) - 1, spec)
    want = window_stats(ts[idx], vals[idx])
    for name, value in want.items():
        rtol, atol = tolerance(name, vals, ts)
        np.testing.assert_allclose(
            got[name], value, rtol=rtol, atol=atol, equal_nan=True, err_msg=f"{where} {name}"
        )


class MonitorMachine(RuleBasedStateMachine):
    """A monitor over ``m.*`` beside a model: stored points, patterns, queries and counts."""

    capacity_points: int | None = None

    def __init__(self) -> None:
        super().__init__()
        self.mon = Monitor(
            ["m.*"],
            capacity_points=self.capacity_points,
            retention=None,
            allowed_lateness=LATENESS_MS,
        )
        self.patterns = ["m.*"]
        self.points: dict[str, dict[int, float]] = {}  # registered series -> ts -> value
        self.queries: dict[str, CompiledQuery] = {}  # lower-case name -> compiled query
        self.counts: Counter[str] = Counter()
        self.rejected: Counter[str] = Counter()
        self.clock = T0
        self.drained = 0
        self.dead_checked_at = 0

    # -- model -----------------------------------------------------------------------------
    def _timestamp(self, series: str, kind: str, delta: int) -> int | str:
        stored = sorted(self.points.get(series, {}))
        last = stored[-1] if stored else self.clock
        if kind == "next":
            self.clock += delta
            return self.clock
        if kind == "late":
            return last - 2 * delta % (LATENESS_MS + 1)  # up to the lateness, boundary included
        if kind == "dup":
            return stored[-1 - delta % len(stored)] if stored else last
        if kind == "too_late":
            return last - LATENESS_MS - delta
        return "not a time"

    def _offer(self, series: str, ts: int | str, value: object) -> None:
        """Classify one offered point by the README's rules and store it if accepted."""
        self.counts["sent"] += 1
        if isinstance(ts, str):
            self.rejected["bad_timestamp"] += 1
            return
        number, reason = read_value(value)
        if reason is not None:
            self.rejected[reason] += 1
            return
        if series not in self.points:
            if not any(fnmatchcase(series, p) for p in self.patterns):
                self.rejected["unknown_series"] += 1
                return
            self.points[series] = {}
        stored = self.points[series]
        last = max(stored) if stored else None
        if last is None or ts > last:
            stored[ts] = number
        elif last - ts > LATENESS_MS:
            self.rejected["too_late"] += 1
        else:
            self.counts["duplicates_replaced" if ts in stored else "late_inserted"] += 1
            stored[ts] = number

    def arrays(self, series: str) -> tuple[np.ndarray, np.ndarray]:
        stored = self.points[series]
        ts = np.array(sorted(stored), dtype=np.int64)
        return ts, np.array([stored[t] for t in ts.tolist()], dtype=np.float64)

    def live_windows(self) -> set[tuple[str, WindowSpec]]:
        """The (series, window) pairs the registered queries need on the registered series."""
        return {
            (s, w)
            for s in self.points
            for q in self.queries.values()
            if q.matches(s)
            for w in q.windows
        }

    # -- rules -----------------------------------------------------------------------------
    @precondition(lambda self: len(self.queries) < len(QUERY_NAMES))
    @rule(data=st.data(), template=st.sampled_from(QUERY_POOL))
    def add_query(self, data, template: str) -> None:
        name = data.draw(st.sampled_from([n for n in QUERY_NAMES if n not in self.queries]))
        text = template.format(name=name)
        assert self.mon.add_query(text) == [name]
        self.queries[name] = compile_query(text)

    @precondition(lambda self: self.queries)
    @rule(data=st.data(), template=st.sampled_from(QUERY_POOL), upper=st.booleans())
    def alter_query(self, data, template: str, upper: bool) -> None:
        name = data.draw(st.sampled_from(sorted(self.queries)))
        text = template.format(name=name.upper() if upper else name)
        assert [n.lower() for n in self.mon.alter_query(text)] == [name]
        self.queries[name] = compile_query(text)

    @precondition(lambda self: self.queries)
    @rule(data=st.data(), upper=st.booleans())
    def remove_query(self, data, upper: bool) -> None:
        name = data.draw(st.sampled_from(sorted(self.queries)))
        self.mon.remove_query(name.upper() if upper else name)
        del self.queries[name]

    @rule(which=st.sampled_from(SERIES_TARGETS))
    def add_series(self, which: str) -> None:
        created = self.mon.add_series(which)
        if "*" in which or "[" in which:
            if which not in self.patterns:
                self.patterns.append(which)
            assert created == []
        elif which in self.points:
            assert created == []
        else:
            assert created == [which]
            self.points[which] = {}

    @rule(which=st.sampled_from(SERIES_TARGETS))
    def remove_series(self, which: str) -> None:
        gone = self.mon.remove_series(which)
        self.patterns = [p for p in self.patterns if p != which]
        want = [s for s in self.points if fnmatchcase(s, which)]
        assert sorted(gone) == sorted(want)
        for name in want:
            del self.points[name]

    @rule(batch=POINTS)
    def ingest(self, batch: list[tuple[str, str, int, object]]) -> None:
        names, stamps, values = [], [], []
        for series, kind, delta, value in batch:
            ts = self._timestamp(series, kind, delta)
            self._offer(series, ts, value)
            names.append(series)
            stamps.append(ts)
            values.append(value)
        report = self.mon.ingest(names, stamps, values)
        assert report.received == len(batch)
        assert report.accepted + report.rejected == len(batch)

    @rule()
    def drain_events(self) -> None:
        events = self.mon.events()
        self.drained += len(events)
        assert self.drained == self.mon.stats()["events"]
        for event in events:
            self.check_event_coverage(event.coverage)

    def check_event_coverage(self, coverage: float) -> None:
        assert 0.0 <= coverage <= 1.0, coverage

    # -- invariants ------------------------------------------------------------------------
    @invariant()
    def counts_add_up(self) -> None:
        stats = self.mon.stats()
        assert stats["received"] == stats["accepted"] + stats["rejected"]
        if self.counts["sent"] != self.dead_checked_at:  # the frame is costly; it only grows
            assert stats["rejected"] == len(self.mon.dead_letters())
            self.dead_checked_at = self.counts["sent"]
        assert stats["received"] == self.counts["sent"]
        assert stats["rejected_by_reason"] == dict(+self.rejected)
        assert stats["late_inserted"] == self.counts["late_inserted"]
        assert stats["duplicates_replaced"] == self.counts["duplicates_replaced"]

    @invariant()
    def windows_shared_and_released(self) -> None:
        stats = self.mon.stats()
        assert sorted(self.mon.series()) == sorted(self.points)
        assert {n.lower(): t for n, t in self.mon.queries().items()} == {
            k: q.text for k, q in self.queries.items()
        }
        assert stats["queries"] == len(self.queries)
        assert stats["windows"] == len(self.live_windows())

    @invariant()
    def window_stats_match(self) -> None:
        # without eviction every window holds all it should, its coverage is the share of its
        # span since the series' first point; with eviction, a window whose coverage is 1
        # still does (its points are pinned), so it must be exact either way
        for series, spec in sorted(self.live_windows(), key=str):
            if not self.points[series]:
                continue
            got = self.mon.window_stats(series, str(spec))
            ts, vals = self.arrays(series)
            assert 0.0 <= got["coverage"] <= 1.0, (series, str(spec), got["coverage"])
            if self.capacity_points is None:
                expected = observed_coverage(ts, len(ts) - 1, spec)
                assert got["coverage"] == pytest.approx(expected, rel=1e-15), (series, spec)
            if got["coverage"] == 1.0 or self.capacity_points is None:
                assert_window_exact(got, ts, vals, spec, f"{series} {spec}")

    @invariant()
    def points_match(self) -> None:
        # the register is the newest part of the accepted points: all of them without a
        # capacity, else at least `capacity` of them and every point within the lateness
        stored = 0
        for series in self.points:
            frame = self.mon.points(series)
            ts, vals = self.arrays(series)
            kept = len(frame)
            stored += kept
            if self.capacity_points is None:
                assert kept == len(ts), series
            else:
                assert kept >= min(len(ts), self.capacity_points), series
                within_lateness = int((ts >= ts[-1] - LATENESS_MS).sum()) if len(ts) else 0
                assert kept >= within_lateness, series
            assert frame["ts_ms"].tolist() == ts[len(ts) - kept :].tolist(), series
            assert frame["value"].tolist() == vals[len(vals) - kept :].tolist(), series
        assert self.mon.stats()["points_stored"] == stored


class EvictingMonitorMachine(MonitorMachine):
    """The same operations with ``capacity_points=3``: registers evict what no window pins."""

    capacity_points = 3


# no explain phase: tracing numpy-heavy steps makes reporting a failure take minutes
SETTINGS = settings(
    stateful_step_count=40,
    deadline=None,
    report_multiple_bugs=False,
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
)

TestMonitorMachine = MonitorMachine.TestCase
TestMonitorMachine.settings = settings(SETTINGS, max_examples=50)

TestEvictingMonitorMachine = EvictingMonitorMachine.TestCase
TestEvictingMonitorMachine.settings = settings(SETTINGS, max_examples=35)
