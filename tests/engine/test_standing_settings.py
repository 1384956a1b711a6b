"""Settings of standing queries: one set of keys for a Monitor's ``standing=`` option and a job
file's ``[standing]`` section, every bad value refused with its key named, good ones reaching
the engine (checked by what the queries do)."""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path

import numpy as np
import pytest

from tsmon.engine.batched import BatchedRuntime
from tsmon.engine.embedded import SOURCE
from tsmon.engine.monitor import Monitor
from tsmon.engine.standing_settings import SETTINGS_KEYS, StandingSettings, standing_settings
from tsmon.query import parse_query
from tsmon.spark.job import STANDING_DURATIONS, JobError, load_job

BAD = [
    ({"tick": "0s"}, "tick: duration must be > 0"),
    ({"tick": -5}, "tick must be a duration like '5m' or whole milliseconds > 0, got -5"),
    ({"partitions": 0}, "partitions must be an int >= 1, got 0"),
    ({"k": 2}, "k must be an int >= 3 (items), got 2"),
    ({"k": 10.5}, "k must be an int >= 3 (items), got 10.5"),
    ({"drift_test": "yes"}, "drift_test must be a z-score >= 0 or false, got 'yes'"),
    ({"drift_test": True}, "drift_test must be a z-score >= 0 or false, got True"),
    ({"jump_test": -1}, "jump_test must be a z-score >= 0 or false, got -1"),
    ({"jump_test": True}, "jump_test must be a z-score >= 0 or false, got True"),
    ({"max_dt": 0}, "max_dt must be > 0 sampling intervals (or a duration, or inf), got 0"),
    ({"max_dt": -3.0}, "max_dt must be > 0 sampling intervals (or a duration, or inf), got -3.0"),
    ({"max_dt": True}, "max_dt must be > 0 sampling intervals (or a duration, or inf), got True"),
    ({"max_dt": "soon"}, "max_dt: cannot read duration 'soon'"),
    (
        {"max_dt": math.nan},
        "max_dt must be > 0 sampling intervals (or a duration, or inf), got nan",
    ),
    ({"reestimate": 0}, "reestimate must be > 0 sampling intervals (or a duration, or inf)"),
    ({"reestimate": "0ms"}, "reestimate: duration must be > 0"),
    ({"interrupt_after": 0}, "interrupt_after must be a number > 0 (sampling intervals), got 0"),
    ({"interrupt_after": "3"}, "interrupt_after must be a number > 0 (sampling intervals)"),
    ({"interrupt_after": math.inf}, "interrupt_after must be a number > 0"),
    ({"interrupt_retry": 0}, "interrupt_retry must be a duration like '5m' or whole millis"),
    ({"budget": 0}, "budget must be > 0 cost units (or inf), got 0"),
    ({"budget": "lots"}, "budget must be > 0 cost units (or inf), got 'lots'"),
    ({"max_wait": "-1s"}, "max_wait: cannot read duration '-1s'"),
    ({"combine": "sum"}, "combine must be linear or rss, got 'sum'"),
    ({"ticks": 3}, "unknown key 'ticks' in the standing settings; expected some of tick, "),
]


@pytest.mark.parametrize(("options", "message"), BAD)
def test_bad_settings_name_the_key_in_a_monitor_and_a_job(
    tmp_path: Path, options: dict, message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        standing_settings(options)
    with pytest.raises(ValueError, match=re.escape(message)):
        Monitor(["a"], standing=options)
    key, value = next(iter(options.items()))
    if isinstance(value, float) and math.isnan(value):
        return  # TOML has nan, but the job test below writes values with repr
    toml = repr(value).lower() if isinstance(value, bool) else repr(value).replace("'", '"')
    job = tmp_path / "job.toml"
    job.write_text(
        f'queries = ""\n[job]\ncheckpoint = "ck"\n[input]\nkind = "generator"\n'
        f"[standing]\n{key} = {toml}\n"
    )
    expected = f"[standing] {message}" if key != "ticks" else "unknown key 'ticks' in [standing]"
    if key in STANDING_DURATIONS and not isinstance(value, str):  # a job file wants units
        expected = f"[standing] {key} must be a duration with a unit"
    with pytest.raises(JobError, match=re.escape(expected)):
        load_job(job)


def test_the_tick_is_given_once_and_settings_must_be_a_mapping() -> None:
    with pytest.raises(ValueError, match=re.escape("give the tick once: standing_tick or")):
        Monitor(["a"], standing_tick="5m", standing={"tick": "1m"})
    with pytest.raises(TypeError, match="standing settings must be a mapping"):
        Monitor(["a"], standing="max_dt = 3")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tick: cannot read duration"):
        Monitor(["a"], standing_tick="often")


def test_good_settings_load_from_a_job_and_a_monitor(tmp_path: Path) -> None:
    job = tmp_path / "job.toml"
    job.write_text(
        'queries = ""\n[job]\ncheckpoint = "ck"\n[input]\nkind = "generator"\n[standing]\n'
        'tick = "5m"\npartitions = 3\nk = 50\ndrift_test = false\nmax_dt = inf\n'
        'reestimate = "1h"\ninterrupt_after = 2.5\ninterrupt_retry = "10m"\nbudget = 500\n'
        'max_wait = "30m"\ncombine = "rss"\njump_test = 4\n'
    )
    expected = StandingSettings(
        tick_ms=300_000, partitions=3, k=50, drift_z=None, max_dt_periods=math.inf,
        t_max_periods=math.inf, t_max_ms=3_600_000, interrupt_factor=2.5,
        t_interrupt_ms=600_000, budget=500, max_wait_ms=1_800_000, combine="rss", jump_z=4,
    )  # fmt: skip
    assert load_job(job).standing == expected
    assert set(SETTINGS_KEYS) == {
        "tick", "partitions", "k", "drift_test", "max_dt", "reestimate", "interrupt_after",
        "interrupt_retry", "budget", "max_wait", "combine", "jump_test",
    }  # fmt: skip
    assert standing_settings(expected, tick="1m") == StandingSettings(
        **{**expected.__dict__, "tick_ms": 60_000}
    )
    defaults = standing_settings()
    assert (defaults.tick_ms, defaults.max_dt_periods, defaults.t_max_periods) == (1_000, 100, 100)
    assert (defaults.max_wait_ms, defaults.t_interrupt_ms, defaults.drift_z) == (None, None, 2.0)
    options = defaults.partition_options()
    assert (options["max_wait_ms"], options["t_interrupt_ms"]) == (10_000, 1_000)
    assert (defaults.jump_z, options["jump_z"]) == (3.0, 3.0)
    assert standing_settings({"jump_test": False}).partition_options()["jump_z"] is None


@pytest.mark.parametrize(
    ("standing", "step_ms"),
    [
        ({}, 100 * 60_000),  # 100 sampling intervals of 1 minute
        ({"max_dt": 7}, 7 * 60_000),
        ({"max_dt": "20m"}, 20 * 60_000),
        # the cap is in sampling intervals, not ticks. A Monitor ticks at every ingest that
        # moves its time (here each minute) and serves a deadline before the next tick (one
        # `tick` on) at this one: due 12 minutes on, it is served at the first minute after 7
        ({"max_dt": 12, "tick": "5m"}, 8 * 60_000),
        ({"max_dt": math.inf}, math.inf),  # no cap: a flat series is never due again
    ],
)
def test_the_cap_reaches_the_queries(standing: dict, step_ms: float) -> None:
    """A flat series (σ̂ = μ̂ = 0: never due by its model) sampled every minute: the query is
    re-evaluated every ``max_dt``, or never without a cap."""
    monitor = Monitor(["flat.v"], standing=standing | {"tick": standing.get("tick", "1m")})
    monitor.add_query("QUERY f AS SUM(flat.v) WITHIN 1 CONFIDENCE 0.9")
    evaluated = set()
    for minute in range(1, 400):
        monitor.ingest(["flat.v"], [minute * 60_000], [5.0])
        evaluated.add(monitor.answers("standing")["f"].ts_ms)
    steady = sorted(t for t in evaluated if t > 150 * 60_000)  # after the warm-up
    gaps = np.diff(steady)
    if math.isinf(step_ms):
        assert steady == []
    else:
        assert len(steady) >= 2 and set(gaps.tolist()) == {step_ms}


def test_every_setting_reaches_a_monitors_batch_host() -> None:
    """A Monitor with every key set answers as the batch runtime with the same settings (and
    its one query partition) fed the same batches, one per tick interval of each ingest, with
    c.v silent for a while; a Monitor with the defaults answers otherwise."""
    options = {
        "tick": "2s", "k": 10, "drift_test": False, "jump_test": False, "max_dt": 5,
        "reestimate": 5, "interrupt_after": 2, "interrupt_retry": "3s", "budget": 1.5,
        "max_wait": "4s", "combine": "rss", "partitions": 3,
    }  # fmt: skip
    assert set(options) == set(SETTINGS_KEYS)
    names = ["a.v", "b.v", "c.v"]
    queries = [
        "QUERY m AS AVG(a.v, b.v, c.v) WITHIN 0.5 CONFIDENCE 0.9",
        "QUERY s AS SUM(a.v, -1*c.v) WITHIN 0.3 CONFIDENCE 0.95",
        "QUERY x AS MAX OVER 10s OF SUM(a.v, b.v) WITHIN 0.5 CONFIDENCE 0.9",
    ]
    rng = np.random.default_rng(3)
    steps = 300
    x = np.cumsum(rng.normal(0.02, 0.3, (steps, 3)), axis=0)
    points = [
        (name, 500 * t + 40 * j, float(x[t, j]))
        for t in range(steps)
        for j, name in enumerate(names)
        if not (name == "c.v" and 100 <= t < 160)  # silent for 30 s: interrupted
    ]
    settings = dataclasses.replace(standing_settings(options), partitions=1)
    rt = BatchedRuntime(1_000, 0.1, 0, source_of=dict.fromkeys(names, SOURCE),
                        standing_settings=settings)  # fmt: skip
    monitors = [Monitor(names, standing=options), Monitor(names, standing_tick="2s")]
    for text in queries:
        for monitor in monitors:
            monitor.add_query(text)
        rt.coordinator.add(parse_query(text), source_of=lambda s: dict.fromkeys(s, SOURCE))
    rt.open_source(SOURCE)
    settle(rt, [])
    differ = interrupted = 0
    for lo in range(0, len(points), 70):  # ingests over several ticks, ending mid-tick
        chunk = points[lo : lo + 70]
        for monitor in monitors:
            monitor.ingest(*zip(*chunk, strict=True), clock_ms=0)
        for b in sorted({-(-t // 2_000) for _, t, _ in chunk}):  # one batch per interval
            settle(rt, [(SOURCE, s, t, v) for s, t, v in chunk if -(-t // 2_000) == b])
        mine, default = (repr(m.answers("standing")) for m in monitors)
        assert mine == repr(rt.answers("standing"))
        differ += mine != default
        interrupted += any(a.interrupted for a in monitors[0].answers("standing").values())
    totals = rt.coordinator.part("standing").progress()["standing"]
    assert monitors[0].stats()["standing_evaluations"] == totals["evaluations"]
    assert totals["missed_deadlines"] > 0 and interrupted > 0  # the budget and the silence bite
    assert differ > 0


def settle(rt: BatchedRuntime, points: list) -> None:
    """One batch, then its control delivered at once until none is left."""
    rt.run_batch(points, clock_ms=0)
    while rt.control:
        rt.run_batch([], clock_ms=0)
