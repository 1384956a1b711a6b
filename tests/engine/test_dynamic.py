"""Queries, windows and series managed while running, against from-scratch recomputation."""

from __future__ import annotations

from fnmatch import fnmatchcase

import numpy as np
import pytest

import tsmon.query as A
from tests.engine.test_monitor_events import evaluate_at, match_events
from tests.oracle import tolerance, window_index, window_stats
from tsmon import Monitor
from tsmon.query import QuerySyntaxError, parse_query

T0 = 1_700_000_000_000


def stream(n: int, seed: int = 0, step: int = 1000, start: int = T0):
    rng = np.random.default_rng(seed)
    ts = start + step * np.arange(n, dtype=np.int64) + rng.integers(0, step // 2, n)
    return ts, 100.0 + rng.normal(0.0, 5.0, n)


def needed_windows(mon: Monitor) -> int:
    """Distinct (series, window) pairs the registered queries need, from the query texts."""
    pairs = set()
    for text in mon.queries().values():
        q = parse_query(text)
        wins = {
            n.window
            for x in [*(i.expr for i in q.emit), *([q.when] if q.when else [])]
            for n in x.walk()
            if isinstance(n, A.Stat)
        }
        for s in mon.series():
            if any(fnmatchcase(s, p) for p in q.triggers):
                pairs |= {(s, w) for w in wins}
    return len(pairs)


def test_windows_created_shared_and_released() -> None:
    mon = Monitor(["a", "b"], retention=None)
    ts, vals = stream(30)
    mon.ingest(["a"] * 30 + ["b"] * 30, np.concatenate([ts, ts]), np.concatenate([vals, vals]))
    assert mon.stats()["windows"] == 0
    mon.add_query("QUERY q1 ON a, b WHEN mean(5m) > 0 AND max(10 points) > 0")
    assert mon.stats()["windows"] == 4 == needed_windows(mon)
    mon.add_query("QUERY q2 ON a WHEN mean(1h) > min(10 points)")  # shares a's 10 points
    assert mon.stats()["windows"] == 5 == needed_windows(mon)
    mon.add_query("QUERY q3 ON a WHEN max(10 points) > 0 EMIT stddev(5m)")  # all shared
    assert mon.stats()["windows"] == 5 == needed_windows(mon)
    mon.remove_query("q1")
    assert mon.stats()["windows"] == 3 == needed_windows(mon)  # a: 1h, 5m, 10 points
    mon.alter_query("QUERY q2 ON a, b WHEN mean(1m) > 0")
    assert mon.stats()["windows"] == 4 == needed_windows(mon)  # a: 5m, 10p, 1m; b: 1m
    mon.remove_query("q3")
    mon.remove_query("q2")
    assert mon.stats()["windows"] == 0
    assert mon.stats()["queries"] == 0


def test_query_errors() -> None:
    mon = Monitor(["a"])
    mon.add_query("QUERY q ON a WHEN mean(5 points) > 1")
    with pytest.raises(ValueError, match="already exists"):
        mon.add_query("QUERY q ON a WHEN max(3 points) > 1")
    with pytest.raises(ValueError, match="already exists"):  # nothing of the text installed
        mon.add_query("QUERY fresh ON a WHEN max(2 points) > 1\nQUERY q ON a")
    assert sorted(mon.queries()) == ["q"]
    assert mon.stats()["windows"] == 1
    with pytest.raises(KeyError, match="no query named 'zz'"):
        mon.alter_query("QUERY zz ON a")
    with pytest.raises(KeyError, match="no query named 'zz'"):
        mon.remove_query("zz")
    with pytest.raises(QuerySyntaxError):
        mon.add_query("QUERY q2 ON a WHEN mean(5 points) >")
    with pytest.raises(QuerySyntaxError, match="duplicate query name"):
        mon.add_query("QUERY d ON a\nQUERY d ON a")
    assert sorted(mon.queries()) == ["q"]
    assert mon.stats()["windows"] == 1


def test_alter_changes_condition_for_later_points() -> None:
    mon = Monitor(["a"], retention=None)
    ts, vals = stream(40, seed=3)
    mon.add_query("QUERY q ON a WHEN last > mean(5 points) EMIT mean(5 points)")
    mon.ingest(["a"] * 20, ts[:20], vals[:20])
    first = mon.events()
    mon.alter_query("QUERY q ON a WHEN last < min(3 points) + 1 EMIT min(3 points)")
    mon.ingest(["a"] * 20, ts[20:], vals[20:])
    second = mon.events()
    q1 = parse_query("QUERY q ON a WHEN last > mean(5 points) EMIT mean(5 points)")
    q2 = parse_query("QUERY q ON a WHEN last < min(3 points) + 1 EMIT min(3 points)")
    match_events(first, [evaluate_at(q1, "a", ts, vals, j, vals, ts) for j in range(20)])
    match_events(second, [evaluate_at(q2, "a", ts, vals, j, vals, ts) for j in range(20, 40)])


@pytest.mark.parametrize("window", ["7 points", "45s", "since 2023-11-14T22:13:40Z", "10m"])
def test_window_inserted_mid_stream_matches_recomputation(window: str) -> None:
    mon = Monitor(["a"], retention=None)
    ts, vals = stream(120, seed=7)
    mon.add_query("QUERY other ON a WHEN count(3 points) > 0")
    mon.ingest(["a"] * 60, ts[:60], vals[:60])
    mon.events()
    text = (
        f"QUERY late ON a EMIT mean({window}), stddev({window}), min({window}), "
        f"max({window}), first({window}), slope({window}), count({window})"
    )
    [spec] = {n.window for n in parse_query(text).emit[0].expr.walk()}
    mon.add_query(text)
    got = mon.window_stats("a", window)
    want = window_stats(ts[window_index(ts, 59, spec)], vals[window_index(ts, 59, spec)])
    for name, v in want.items():
        rtol, atol = tolerance(name, vals, ts)
        np.testing.assert_allclose(got[name], v, rtol=rtol, atol=atol, equal_nan=True, err_msg=name)
    mon.ingest(["a"] * 60, ts[60:], vals[60:])
    q = parse_query(text)
    late = [e for e in mon.events() if e.query == "late"]
    match_events(late, [evaluate_at(q, "a", ts, vals, j, vals, ts) for j in range(60, 120)])


def test_glob_series_and_query_on_glob_attach_later() -> None:
    mon = Monitor(["host*"], retention=None)
    mon.add_query("QUERY hot ON host*.cpu WHEN last >= max(3 points) EMIT max(3 points)")
    assert mon.series() == [] and mon.stats()["windows"] == 0
    ts, vals = stream(10, seed=1)
    mon.ingest(["host1.cpu"] * 10, ts, vals)
    mon.ingest(
        ["host2.cpu"] * 10 + ["host2.mem"] * 10,
        np.concatenate([ts, ts]),
        np.concatenate([vals[::-1], vals]),
    )
    assert sorted(mon.series()) == ["host1.cpu", "host2.cpu", "host2.mem"]
    assert mon.stats()["windows"] == 2 == needed_windows(mon)
    q = parse_query("QUERY hot ON host*.cpu WHEN last >= max(3 points) EMIT max(3 points)")
    want = [evaluate_at(q, "host1.cpu", ts, vals, j, vals, ts) for j in range(10)]
    want += [evaluate_at(q, "host2.cpu", ts, vals[::-1].copy(), j, vals, ts) for j in range(10)]
    match_events(mon.events(), want)


def test_remove_series_by_glob() -> None:
    mon = Monitor(["host*", "db.x"], retention=None)
    mon.add_query("QUERY q ON host*, db.x WHEN count(2 points) > 0 EMIT sum(3 points)")
    ts, vals = stream(6, seed=2)
    names = ["host1.cpu", "host1.mem", "host2.cpu", "db.x"]
    for name in names:
        mon.ingest([name] * 6, ts, vals)
    assert mon.stats()["windows"] == 8
    assert sorted(mon.remove_series("host1.*")) == ["host1.cpu", "host1.mem"]
    assert sorted(mon.series()) == ["db.x", "host2.cpu"]
    assert mon.stats()["windows"] == 4 == needed_windows(mon)
    assert mon.stats()["points_stored"] == 12
    mon.events()
    # host* still declared: host1.cpu comes back with a fresh history
    mon.ingest(["host1.cpu"], [ts[-1] + 1000], [1.0])
    assert mon.window_stats("host1.cpu", "3 points")["count"] == 1.0
    [event] = mon.events()
    assert (event.series, event.payload["sum(3 points)"]) == ("host1.cpu", 1.0)
    assert mon.remove_series("host*") == ["host2.cpu", "host1.cpu"]
    report = mon.ingest(["host9.cpu", "db.x"], [ts[-1] + 5000] * 2, [1.0, 2.0])
    assert (report.accepted, report.rejected) == (1, 1)
    assert mon.dead_letters()["reason"].tolist() == ["unknown_series"]
    assert mon.stats()["windows"] == 2 == needed_windows(mon)


def _coverage_run(first_window: str) -> tuple[list, np.ndarray, np.ndarray]:
    mon = Monitor(["a"], capacity_points=5, retention=None)
    mon.add_query(f"QUERY keep ON a WHEN count({first_window}) < 0")
    ts, vals = stream(40, seed=5)
    mon.ingest(["a"] * 25, ts[:25], vals[:25])
    mon.add_query("QUERY big ON a EMIT mean(10 points), count(10 points)")
    mon.ingest(["a"] * 15, ts[25:], vals[25:])
    return [e for e in mon.events() if e.query == "big"], ts, vals


def test_coverage_below_one_when_history_was_evicted() -> None:
    events, _, vals = _coverage_run("3 points")
    assert len(events) == 15
    # the register held 5 points when the 10-point window arrived; it grows live from there
    held = [min(5 + k, 10) for k in range(1, 16)]
    assert [e.coverage for e in events] == [h / 10 for h in held]
    assert [e.payload["count(10 points)"] for e in events] == [float(h) for h in held]
    for e, h, j in zip(events, held, range(25, 40), strict=True):
        np.testing.assert_allclose(
            e.payload["mean(10 points)"], vals[j + 1 - h : j + 1].mean(), rtol=1e-12
        )


def test_coverage_one_when_a_larger_window_pinned_history() -> None:
    events, ts, vals = _coverage_run("20 points")
    q = parse_query("QUERY big ON a EMIT mean(10 points), count(10 points)")
    match_events(events, [evaluate_at(q, "a", ts, vals, j, vals, ts) for j in range(25, 40)])
