"""No input stops a job: max_future, values beyond the sums' range, quarantine (issue 16)."""

from __future__ import annotations

from typing import Any

from tsmon.core.timestamps import MAX_INSTANT_MS, MIN_INSTANT_MS
from tsmon.engine.batched import BatchedRuntime
from tsmon.engine.guard import RowCounts, coordinator_step
from tsmon.engine.hub import CoordinatorNode
from tsmon.engine.monitor import Monitor
from tsmon.engine.node import SourceNode
from tsmon.engine.settings import DAY_MS

CLOCK = 1_700_000_000_000  # the batches' processing time
TEN_YEARS = 3_652 * DAY_MS


def dead(rt: BatchedRuntime) -> list[tuple[str, Any, str]]:
    return [
        (r["source"], r["payload"]["ts_ms"], r["payload"]["reason"])
        for r in rt.last_outputs
        if r["kind"] == "dead"
    ]


def heartbeat(rt: BatchedRuntime, source: str) -> dict[str, Any]:
    (beat,) = [r for r in rt.last_outputs if r["kind"] == "heartbeat" and r["source"] == source]
    return beat["payload"]


def test_a_point_stamped_beyond_max_future_is_a_dead_letter_and_the_limit_is_inclusive() -> None:
    rt = BatchedRuntime(1_000, 0.1, 0, queries="QUERY s AS SUM(a) WITHIN 1")
    limit = CLOCK + DAY_MS
    rt.run_batch([("n", "a", limit, 1.0), ("n", "a", limit + 1, 2.0)], clock_ms=CLOCK)
    assert dead(rt) == [("n", limit + 1, "future_timestamp")]
    assert heartbeat(rt, "n")["now_ms"] == limit  # the absurd point did not move the time
    assert heartbeat(rt, "n")["points"] == 1


def test_without_max_future_a_ten_year_jump_is_applied() -> None:
    rt = BatchedRuntime(1_000, 0.1, 0, queries="QUERY s AS SUM(a) WITHIN 1", max_future_ms=None)
    rt.run_batch([("n", "a", CLOCK, 1.0)], clock_ms=CLOCK)
    rt.run_batch([("n", "a", CLOCK + TEN_YEARS, 2.0)], clock_ms=CLOCK)
    assert dead(rt) == []
    assert heartbeat(rt, "n")["now_ms"] == CLOCK + TEN_YEARS


def test_a_value_beyond_the_sums_range_is_a_dead_letter_before_any_part_sees_it() -> None:
    rt = BatchedRuntime(1_000, 0.1, 0, queries="QUERY s AS SUM(a) WITHIN 1")
    rt.run_batch([("n", "a", 1_000, 1.0)], clock_ms=CLOCK)
    rt.run_batch([("n", "a", 2_000, 1e200), ("n", "a", 3_000, 2.0)], clock_ms=CLOCK)
    assert dead(rt) == [("n", 2_000, "value_out_of_range")]
    rt.run_batch([("n", "a", 4_000, 2.0)], clock_ms=CLOCK)
    answer = rt.answers()["s"]
    assert answer.lo <= 2.0 <= answer.hi  # the bounded answer never saw 1e200


def test_an_empty_series_name_is_a_dead_letter_as_on_spark() -> None:
    from tsmon.engine.settings import RegisterSettings

    rt = BatchedRuntime(1_000, 0.1, 0, registers=RegisterSettings(), max_future_ms=None)
    rt.run_batch([("n", "", 1_000, 1.0), ("n", "a", 1_000, 2.0)], clock_ms=CLOCK)
    assert dead(rt) == [("n", 1_000, "bad_series")]  # once: the registers never see it
    beat = heartbeat(rt, "n")
    assert (beat["received"], beat["accepted"], beat["points"]) == (2, 1, 1)


class Faulty(SourceNode):
    """A node with a bug: its step fails, after changing its state, on a series 'poison'."""

    def step_columns(self, control: Any, *columns: Any, clock_ms: int | None = None) -> list[dict]:
        out = super().step_columns(control, *columns, clock_ms=clock_ms)
        if "poison" in list(columns[0]):  # the series column
            raise RuntimeError("a bug")
        return out


def test_a_node_step_that_raises_is_quarantined_and_the_job_goes_on() -> None:
    rt = BatchedRuntime(
        1_000, 0.1, 0, queries="QUERY s AS SUM(a, b) WITHIN 1", source_of={"a": "n1", "b": "n2"}
    )
    rt.new_node = lambda key: Faulty(key, rt.settings)
    rt.run_batch([("n1", "a", 1_000, 1.0), ("n2", "b", 1_000, 2.0)], clock_ms=CLOCK)
    rt.run_batch(
        [("n1", "poison", 1_500, 9.0), ("n1", "a", 2_000, 5.0), ("n2", "b", 2_000, 3.0)],
        clock_ms=CLOCK,
    )
    assert dead(rt) == [("n1", 1_500, "quarantined"), ("n1", 2_000, "quarantined")]
    assert rt.errors == ["source 'n1': RuntimeError: a bug"]
    assert rt.nodes["n1"].newest_ts == {"a": 1_000}  # as before the failed step
    assert heartbeat(rt, "n1")["points"] == 0  # its control was applied all the same
    assert heartbeat(rt, "n2")["points"] == 1
    for t in (3_000, 4_000, 5_000):  # the next batches run as usual
        rt.run_batch([("n1", "a", t, 4.0), ("n2", "b", t, 6.0)], clock_ms=CLOCK)
        assert rt.errors == [] and dead(rt) == []
    answer = rt.answers()["s"]
    assert answer.lo <= 10.0 <= answer.hi and answer.as_of_ms == 4_999


def test_timestamps_outside_the_supported_instants_are_bad_timestamps() -> None:
    rt = BatchedRuntime(1_000, 0.1, 0, queries="QUERY s AS SUM(a) WITHIN 1", max_future_ms=None)
    points = [(-(2**62)), MIN_INSTANT_MS, MAX_INSTANT_MS, 2**63 - 1, 2**70]
    rt.run_batch([("n", "a", ts, 1.0) for ts in points], clock_ms=CLOCK)
    assert dead(rt) == [
        ("n", -(2**62), "bad_timestamp"),
        ("n", 2**63 - 1, "bad_timestamp"),
        ("n", None, "bad_timestamp"),  # beyond int64: no ts_ms to show
    ]
    assert heartbeat(rt, "n")["now_ms"] == MAX_INSTANT_MS


def test_a_coordinator_step_that_raises_leaves_out_the_failing_sources_rows() -> None:
    rt = BatchedRuntime(
        1_000, 0.1, 0, queries="QUERY s AS SUM(a, b) WITHIN 1", source_of={"a": "n1", "b": "n2"}
    )
    rt.run_batch([("n1", "a", 1_000, 1.0), ("n2", "b", 1_000, 2.0)])
    rt.run_batch([("n1", "a", 2_000, 1.5), ("n2", "b", 2_000, 2.5)])
    rows = [r for r in rt.last_outputs if r["source"] == "n1"]
    bad = {"source": "n2", "kind": "no such kind", "payload": {}}
    clean = CoordinatorNode.__new__(CoordinatorNode)
    clean.restore(rt.coordinator.snapshot())
    node, control, quarantine = coordinator_step(rt.coordinator, 2, [*rows, bad])
    assert quarantine.sources == ["n2"]
    assert "kind must be one of" in str(quarantine.error)
    assert [(r["source"], r["payload"]["reason"]) for r in quarantine.rows] == [
        ("n2", "quarantined")
    ]
    assert control == clean.step(2, rows)  # as if n2 had sent nothing
    assert node.snapshot() == clean.snapshot()
    assert node.last_batch_id == 2  # applied: the next batch goes on


def test_a_monitor_rejects_points_beyond_max_future_of_its_clock() -> None:
    mon = Monitor(["*"])
    report = mon.ingest(["a", "a"], [CLOCK + DAY_MS, CLOCK + DAY_MS + 1], [1.0, 2.0], CLOCK)
    assert (report.accepted, report.rejected) == (1, 1)
    assert mon.dead_letters()["reason"].tolist() == ["future_timestamp"]
    assert Monitor(["*"], max_future=None).ingest(["a"], [CLOCK + TEN_YEARS], [1.0]).accepted == 1


def test_a_monitors_point_with_a_bad_value_stamped_too_far_ahead_has_its_value_reason() -> None:
    """As on Spark, where the input stage dead-letters a bad value before a source node checks
    max_future (spark/points.py, guard.split_rejected): a point ahead of the limit whose
    value is bad is a dead letter for its value, not future_timestamp."""
    mon = Monitor(["*"])
    ahead = CLOCK + DAY_MS + 1
    values = [float("nan"), "abc", None, float("inf"), 1e141, 1.0]
    report = mon.ingest(["a"] * len(values), [ahead] * len(values), values, CLOCK)
    assert (report.accepted, report.rejected) == (0, len(values))
    assert mon.dead_letters()["reason"].tolist() == [
        "nan",
        "not_numeric",
        "missing",
        "infinite",
        "value_out_of_range",
        "future_timestamp",
    ]


def test_a_ten_year_jump_in_a_monitors_standing_query_is_a_few_ticks() -> None:
    mon = Monitor(["*"], standing_tick="1s", max_future=None)
    mon.add_query("QUERY st AS AVG(a, b) WITHIN 5% CONFIDENCE 0.95")
    for i in range(20):
        mon.ingest(["a", "b"], [i * 1_000] * 2, [1.0 + i, 2.0])
    mon.ingest(["a", "b"], [TEN_YEARS] * 2, [3.0, 2.0])  # 3e8 ticks of 1 s: once hours
    mon.ingest(["a", "b"], [TEN_YEARS + 1_000] * 2, [3.0, 2.0])
    answer = mon.answers("standing")["st"]
    assert answer.ts_ms == TEN_YEARS + 1_000 and answer.value == 2.5


class BadRows(SourceNode):
    """A node with a bug the coordinator trips on: a series 'poison' adds a row of no kind."""

    def step_columns(self, control: Any, *columns: Any, clock_ms: int | None = None) -> list[dict]:
        out = super().step_columns(control, *columns, clock_ms=clock_ms)
        if "poison" in list(columns[0]):  # the series column
            out.append({"kind": "no such kind", "payload": {}})
        return out


def test_the_rows_a_coordinator_step_leaves_out_are_counted_apart_and_the_counts_add_up() -> None:
    rt = BatchedRuntime(
        1_000,
        0.1,
        0,
        queries="QUERY s AS SUM(a, b) WITHIN 1",
        source_of={"a": "n1", "b": "n2"},
        max_future_ms=None,
    )
    rt.new_node = lambda key: BadRows(key, rt.settings)
    rt.run_batch([("n1", "a", 1_000, 1.0), ("n2", "b", 1_000, 2.0)])
    assert rt.rows == RowCounts(2, 2, 0, 0)
    rt.run_batch(
        [
            ("n1", "a", 2_000, 1.5),
            ("n1", "a", 500, 9.0),  # older than a's newest: a dead letter too_late
            ("n2", "b", 2_000, 2.5),
            ("n2", "poison", 2_000, 7.0),
            ("n2", "", 2_000, 7.0),  # a dead letter bad_series, at n2's node
        ]
    )
    (error,) = rt.errors
    assert error.startswith("coordinator, sources ['n2']: ValueError")
    n2 = [r for r in rt.last_outputs if r["source"] == "n2"]
    # every point received is accepted at its node or a dead letter there; n2's two accepted
    # points were stored (its node moved on), only its rows did not reach the coordinator
    assert rt.rows == RowCounts(
        input_rows=5, accepted=3, dead_letters=2, coordinator_quarantined=len(n2)
    )
    assert rt.rows.input_rows == rt.rows.accepted + rt.rows.dead_letters
    assert len(rt.quarantined) == len(n2)  # all of n2's rows, as dead letters 'quarantined'
    assert {r["kind"] for r in n2} == {"heartbeat", "dead", "msg", "no such kind"}
    assert rt.nodes["n2"].newest_ts == {"b": 2_000, "poison": 2_000}
    rt.run_batch([("n1", "a", 3_000, 1.0), ("n2", "b", 3_000, 2.0)])  # the job goes on
    assert rt.rows == RowCounts(2, 2, 0, 0) and rt.errors == []
