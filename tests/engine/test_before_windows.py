"""Windows before the point (``mean(1h before)``): the README's spike rule on real NAB data,
against a from-scratch recomputation, and why the rule needs them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.oracle import window_index
from tsmon import Monitor
from tsmon.core.window_spec import WindowSpec

NAB = (
    Path(__file__).parents[2]
    / "../shared/data/nab/realAWSCloudwatch/ec2_cpu_utilization_5f5533.csv"
)
SPIKES = "QUERY spikes ON nab.* WHEN abs(last - mean(1h before)) > 3 * stddev(1h before) SINCE -6h"


def nab_points() -> tuple[np.ndarray, np.ndarray]:
    if not NAB.is_file():
        pytest.skip(f"NAB data not found at {NAB.resolve()} (shared data checkout missing)")
    frame = pd.read_csv(NAB)
    ts = pd.to_datetime(frame["timestamp"], utc=True).astype("int64").to_numpy() // 1_000_000
    return ts, frame["value"].to_numpy(dtype=np.float64)


def spikes_oracle(ts: np.ndarray, values: np.ndarray, spec: WindowSpec) -> tuple[list, float]:
    """The points whose value is more than 3 sample standard deviations from the mean of
    ``spec``'s window, recomputed with numpy; and the smallest relative distance of any
    point's |z| from the threshold (so the comparison is not decided by rounding)."""
    fired, closest = [], np.inf
    for j in range(len(ts)):
        window = values[window_index(ts, j, spec)]
        if len(window) < 2:
            continue
        deviation, limit = abs(values[j] - window.mean()), 3 * window.std(ddof=1)
        if limit > 0:
            closest = min(closest, abs(deviation - limit) / limit)
        if deviation > limit:
            fired.append(int(ts[j]))
    return fired, closest


def test_the_readme_spike_rule_fires_on_nab_where_the_point_is_left_out() -> None:
    ts, values = nab_points()
    mon = Monitor(["nab.*"], retention="2h")
    mon.add_query(SPIKES)
    report = mon.ingest(["nab.cpu"] * len(ts), ts, values)
    assert report.accepted == len(ts)
    got = [e.ts_ms for e in mon.events()]
    expected, closest = spikes_oracle(ts, values, WindowSpec.time(3_600_000, before=True))
    assert closest > 1e-6  # no point sits on the threshold: the 1e-9 statistics decide alike
    assert got == expected
    assert len(got) == 25  # the spikes of this series (a new user's replay shows them too)


def test_a_window_holding_the_point_caps_the_z_score_below_three() -> None:
    """With the point in its own 12-point window, |x - mean| <= (n - 1) / sqrt(n) * stddev
    = 3.18 stddev, and on this series never above 3: the rule without ``before`` is silent."""
    ts, values = nab_points()
    mon = Monitor(["nab.*"], retention="2h")
    mon.add_query(SPIKES.replace(" before", ""))
    mon.ingest(["nab.cpu"] * len(ts), ts, values)
    assert mon.events() == []
    assert spikes_oracle(ts, values, WindowSpec.time(3_600_000))[0] == []


def test_a_late_point_is_compared_with_the_points_before_it() -> None:
    """A point inserted late gets its windows as of itself: ``last(1 point before)`` is the
    stored point just before it, and the point after it now sees it as its predecessor."""
    mon = Monitor(["s"], allowed_lateness="1m")
    mon.add_query(
        "QUERY step ON s EMIT last - last(1 point before) AS step, count(10s before) AS n"
    )
    mon.ingest(["s"] * 3, [1_000, 2_000, 4_000], [1.0, 2.0, 4.0])
    mon.ingest(["s"], [3_000], [10.0])  # late: between 2.0 and 4.0
    steps = [(e.ts_ms, e.payload["step"], e.payload["n"]) for e in mon.events()]
    assert steps[:3] == [
        (1_000, pytest.approx(np.nan, nan_ok=True), 0),
        (2_000, 1.0, 1),
        (4_000, 2.0, 2),
    ]
    assert steps[3] == (3_000, 8.0, 2)
    mon.ingest(["s"], [5_000], [5.0])
    assert [(e.ts_ms, e.payload["step"], e.payload["n"]) for e in mon.events()] == [(5_000, 1.0, 4)]
