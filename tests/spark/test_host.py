"""The node/processor glue, without Spark: NodeTester drives NodeProcessor in memory."""

from __future__ import annotations

import json

import pytest
from pyspark.sql import Row

from tsmon.spark.host import NodeTester, ctrl_row, data_row, split_rows
from tsmon.spark.toy import RunningSum


class Recorder:
    """A node that records what the host passed to ``step``."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.calls: list[tuple[list[dict], list[dict]]] = []

    def step(self, control: list[dict], data: list[dict]) -> list[dict]:
        self.calls.append((control, data))
        return [{"kind": "seen", "payload": {"n": len(self.calls)}}]


def test_control_first_then_data_in_ts_seq_order():
    t = NodeTester(Recorder)
    rows = [
        data_row("s", "b", 7, 1.0, 3),
        ctrl_row("s", 5, {"k": 2}),
        data_row("s", "a", 7, 2.0, 1),
        data_row("s", "a", 2, 3.0, 9),
        ctrl_row("s", 4, {"k": 1}),
    ]
    assert t.test("s", rows) == [Row(source="s", kind="seen", payload='{"n": 1}')]
    ((control, data),) = t.peek("s").calls
    assert control == [{"seq": 4, "payload": {"k": 1}}, {"seq": 5, "payload": {"k": 2}}]
    assert [(d["ts"], d["seq"], d["series"], d["value"]) for d in data] == [
        (2, 9, "a", 3.0),
        (7, 1, "a", 2.0),
        (7, 3, "b", 1.0),
    ]


def test_state_survives_across_batches_and_keys_are_separate():
    t = NodeTester(RunningSum)
    t.test("a", [data_row("a", "x", 1, 1.0, 0)])
    t.test("b", [data_row("b", "x", 1, 5.0, 0)])
    t.test("a", [ctrl_row("a", 0, {"add": 10.0})])
    out = t.test("a", [data_row("a", "x", 2, 1.0, 1)])
    assert [json.loads(r.payload) for r in out] == [{"total": 12.0, "count": 2, "last_ts": 2}]
    assert (t.peek("a").total, t.peek("b").total, t.peek("c")) == (12.0, 5.0, None)


def test_seed_then_continue():
    t = NodeTester(RunningSum)
    node = RunningSum("a")
    node.total, node.count, node.last_ts = 100.0, 4, 50
    t.seed("a", node)
    (row,) = t.test("a", [data_row("a", "x", 60, 1.0, 9)])
    assert json.loads(row.payload) == {"total": 101.0, "count": 5, "last_ts": 60}


def test_node_errors_name_the_source():
    class Bad:
        def __init__(self, source: str) -> None:
            pass

        def step(self, control, data):
            return [{"kind": "x", "payload": {1, 2}}]

    with pytest.raises(TypeError, match=r"source 's'.*not JSON-able"):
        NodeTester(Bad).test("s", [data_row("s", "x", 1, 1.0, 0)])
    with pytest.raises(ValueError, match=r"kind must be 'data', 'ctrl' or 'pass', got 'oops'"):
        split_rows("s", [{"kind": "oops"}])
    with pytest.raises(ValueError, match="without ts or seq"):
        split_rows("s", [data_row("s", "x", None, 1.0, 0)])  # type: ignore[arg-type]


def test_pass_rows_go_out_unchanged_without_touching_the_node():
    from pyspark.sql import Row

    from tsmon.spark.toy import RunningSum

    t = NodeTester(RunningSum)
    passed = Row(
        source="a",
        kind="pass",
        series=None,
        ts=None,
        value=None,
        seq=None,
        payload='{"reason": "nan"}',
    )
    assert t.test("a", [passed]) == [Row(source="a", kind="pass", payload='{"reason": "nan"}')]
    assert t.peek("a") is None  # no node was made for a key with pass rows only
    out = t.test("a", [passed, data_row("a", "x", 5, 2.0, 0)])
    assert [r.kind for r in out] == ["pass", "sum"] and t.peek("a").total == 2.0


def test_unpicklable_node_fails_in_the_tester_like_on_spark():
    class Local:  # defined in a function: pickle cannot find it by name
        def __init__(self, source: str) -> None:
            pass

        def step(self, control, data):
            return []

    with pytest.raises(AttributeError, match="Can't pickle local object"):
        NodeTester(Local).test("s", [data_row("s", "x", 1, 1.0, 0)])


class Fragile(RunningSum):
    """A running sum with a bug: it fails, after changing its state, on a series 'poison'."""

    def step(self, control: list[dict], data: list[dict]) -> list[dict]:
        out = super().step(control, data)
        if any(d["series"] == "poison" for d in data):
            raise RuntimeError("a bug")
        return out


def test_a_node_step_that_raises_is_quarantined_and_the_stored_node_kept():
    t = NodeTester(Fragile)
    t.test("a", [data_row("a", "x", 1, 1.0, 0)])
    out = t.test("a", [data_row("a", "x", 2, 5.0, 1), data_row("a", "poison", 3, 7.0, 2)])
    dead = [json.loads(r.payload) for r in out]
    assert [(d["series"], d["ts_ms"], d["value"], d["reason"], d["detail"]) for d in dead] == [
        ("x", 2, 5.0, "quarantined", "RuntimeError: a bug"),
        ("poison", 3, 7.0, "quarantined", "RuntimeError: a bug"),
    ]
    assert [r.kind for r in out] == ["dead", "dead"]
    assert t.peek("a").total == 1.0  # the node as stored before the failed step
    (row,) = t.test("a", [data_row("a", "x", 4, 2.0, 3)])  # the job goes on
    assert json.loads(row.payload) == {"total": 3.0, "count": 2, "last_ts": 4}
