"""Regression tests for the first code review of the engine (each failed before its fix)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.oracle import tolerance, window_stats
from tsmon import Monitor

LANDMARK = "since 1970-01-01T00:00:00Z"


def test_landmark_window_stays_exact_after_eviction_and_late_points() -> None:
    """Landmark windows do not pin history; evicted points are folded into a summary, so a
    rebuild after a late point (or a view as of a past point) loses nothing."""
    mon = Monitor(["s"], capacity_points=3, retention=None, allowed_lateness="1h")
    mon.add_query(
        f"QUERY q ON s EMIT count({LANDMARK}) AS c, max({LANDMARK}) AS hi, "
        f"first({LANDMARK}) AS f, var({LANDMARK}) AS v"
    )
    rng = np.random.default_rng(3)
    ts = np.arange(10) * 1000
    values = rng.normal(100.0, 5.0, 10)
    values[0] = 1000.0  # the maximum and the first value are evicted early
    mon.ingest(["s"] * 10, ts, values)
    mon.events()
    mon.ingest(["s", "s"], [8500, 11_000], [1.0, 2.0])  # a late point, then a new one
    late, new = mon.events()
    stored_ts = np.concatenate((ts, [8500, 11_000]))
    stored = np.concatenate((values, [1.0, 2.0]))
    for event, upto in ((late, 8500), (new, 11_000)):
        keep = np.argsort(stored_ts[stored_ts <= upto], kind="stable")
        window_ts, window = stored_ts[stored_ts <= upto][keep], stored[stored_ts <= upto][keep]
        expected = window_stats(window_ts, window)
        assert event.payload["c"] == expected["count"]
        assert event.payload["hi"] == expected["max"] == 1000.0
        assert event.payload["f"] == expected["first"] == 1000.0
        rtol, atol = tolerance("var", stored, stored_ts)
        assert event.payload["v"] == pytest.approx(expected["var"], rel=rtol, abs=atol)
        assert event.coverage == 1.0
    now = mon.window_stats("s", LANDMARK)  # forks the live window: evicted history included
    assert (now["count"], now["max"], now["coverage"]) == (12.0, 1000.0, 1.0)


def test_landmark_window_created_after_eviction_reports_coverage() -> None:
    mon = Monitor(["s"], capacity_points=3, retention=None)
    mon.ingest(["s"] * 10, np.arange(10) * 1000, np.ones(10))
    mon.add_query(f"QUERY q ON s EMIT count({LANDMARK}) AS c")
    mon.ingest(["s"], [10_000], [1.0])
    (event,) = mon.events()
    assert event.payload["c"] == 4.0  # the 3 retained points and the new one
    assert event.coverage < 1.0


def test_duplicate_older_than_the_lateness_is_too_late() -> None:
    mon = Monitor(["s"])
    mon.add_query("QUERY q ON s EMIT mean(3 points) AS m")
    mon.ingest(["s"] * 3, [0, 3_600_000, 7_200_000], [1.0, 1.0, 1.0])
    mon.events()
    report = mon.ingest(["s"], [0], [100.0])
    assert (report.accepted, report.rejected, mon.events()) == (0, 1, [])
    assert mon.dead_letters()["reason"].tolist() == ["too_late"]
    assert mon.points("s")["value"].tolist() == [1.0, 1.0, 1.0]


def test_series_names_with_glob_characters_can_be_stored() -> None:
    mon = Monitor(["disk*"])
    mon.add_series("cpu[0]", literal=True)
    report = mon.ingest(["disk[0]", "cpu[0]"], [1, 2], [1.0, 2.0])
    assert (report.accepted, report.rejected) == (2, 0)
    assert sorted(mon.series()) == ["cpu[0]", "disk[0]"]


def test_alter_query_keeps_rank_and_does_not_replay_history_again() -> None:
    mon = Monitor(["s"])
    mon.ingest(["s"] * 3, [1000, 2000, 3000], [1.0, 2.0, 3.0])
    mon.add_query("QUERY a ON s SINCE -1h")
    mon.add_query("QUERY b ON s")
    assert len(mon.events()) == 3  # a's replay
    mon.alter_query("QUERY A ON s EMIT value SINCE -1h")  # names ignore case
    assert mon.events() == []
    mon.ingest(["s"], [4000], [1.0])
    assert [e.query for e in mon.events()] == ["A", "b"]


def test_unhashable_series_names_are_rejected_and_counted() -> None:
    mon = Monitor(["*"])
    report = mon.ingest([{"a": 1}, "s"], [1, 2], [1.0, 2.0])
    assert (report.received, report.accepted, report.rejected) == (2, 1, 1)
    stats = mon.stats()
    assert stats["received"] == stats["accepted"] + stats["rejected"] == 2


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"capacity_points": 2.5}, TypeError),
        ({"capacity_points": True}, TypeError),
        ({"retention": 3600.0}, TypeError),
        ({"allowed_lateness": "soon"}, ValueError),
    ],
)
def test_bad_config_fails_at_construction(kwargs, error) -> None:
    with pytest.raises(error, match=r"must be|cannot read"):
        Monitor(["s"], **kwargs)


def test_a_string_of_series_is_refused() -> None:
    with pytest.raises(TypeError, match=r"pass \['cpu'\]"):
        Monitor("cpu")


def test_a_failing_window_group_leaves_the_other_groups_sound(monkeypatch) -> None:
    """When advancing one group of series' windows raises, the groups after it are rebuilt
    from their registers: the next ingest of every series works and is exact."""
    import tsmon.engine.series as series

    mon = Monitor(["a", "b", "c"])
    for name in ("a", "b", "c"):  # three groups: each series triggers its own query
        mon.add_query(f"QUERY q_{name} ON {name} EMIT mean(3 points) AS m")
    real = series.advance_many
    calls = []

    def first_fails(windows, spans, wanted):
        calls.append(len(windows))
        if len(calls) == 1:
            raise RuntimeError("planted")
        return real(windows, spans, wanted)

    monkeypatch.setattr(series, "advance_many", first_fails)
    names = [n for n in "abc" for _ in range(3)]
    values = [1.0, 2.0, 3.0, 10.0, 20.0, 30.0, 5.0, 7.0, 9.0]
    with pytest.raises(RuntimeError, match="planted"):
        mon.ingest(names, [0, 1000, 2000] * 3, values)
    assert calls == [1]  # the first group failed; the others were rebuilt, not advanced
    monkeypatch.setattr(series, "advance_many", real)
    mon.events()
    mon.ingest(["a", "b", "c"], [3000] * 3, [4.0, 40.0, 11.0])
    means = {e.query: e.payload["m"] for e in mon.events()}
    assert means == {"q_a": 3.0, "q_b": 30.0, "q_c": 9.0}
