"""The batch-synchronous runtime: exact bounded answers as of the coordinator's time, replays.

A hypothesis state machine feeds random walks of series on several sources, cut into micro-
batches at random points (ties of one timestamp may straddle a batch), and adds, alters and
removes queries between batches. After every step it checks against the value history of every
series (the oracle) that each bounded answer holds the exact aggregate as of its ``as_of_ms`` and
is at most ``δ`` wide unless a narrower width is still on its way, that every message is counted
once, and that a replayed batch (same id, or after restoring a snapshot) gives identical control.
"""

from __future__ import annotations

import copy
import math
import pickle

import numpy as np
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, rule

from tests.protocols.filters.machines import History, QueryChanges
from tsmon.engine.batched import BatchedRuntime
from tsmon.engine.hub import CoordinatorNode
from tsmon.engine.node import SourceNode
from tsmon.engine.settings import HostSettings
from tsmon.protocols.filters import Query

SOURCE_OF = {"n0.a": "n0", "n0.b": "n0", "n1.a": "n1", "n1.b": "n1", "n2.a": "n2"}
SERIES = list(SOURCE_OF)


def state_of(node: CoordinatorNode) -> str:
    """What a coordinator node holds, comparable (pickles of equal states may differ in bytes)."""
    coord = node.part("bounded").coordinator
    cache = coord.cache
    queue = sorted((ts, seq, repr(u)) for ts, seq, _, u in coord.queue._heap)
    return repr(
        (
            coord.widths(),
            cache.centres.tolist(),
            cache.value_ts.tolist(),
            cache.value_seq.tolist(),
            sorted((i, repr(p)) for i, p in cache.pending.items()),
            coord.counts.tolist(),
            (coord.seq, coord.now_ms, coord.settled_ms, coord.next_boundary_ms),
            coord.rng.bit_generator.state,
            sorted(coord._confirms),
            queue,
            sorted(coord.queries),
            (node.source_now, node.learned, node.last_batch_id, node.last_control, node.counts),
        )
    )


class BatchedFilters(QueryChanges):
    """Points, batch boundaries and query changes in any order; replays now and then."""

    universe = SERIES

    @initialize(
        period=st.integers(1, 80),
        shrink=st.floats(0.0, 0.5),
        seed=st.integers(0, 2**32 - 1),
        growth=st.sampled_from(["paper", "capped"]),
        data=st.data(),
    )
    def start(
        self, period: int, shrink: float, seed: int, growth: str, data: st.DataObject
    ) -> None:
        self.rt = BatchedRuntime(period, shrink, seed, SOURCE_OF, growth)
        self.start_changes(self.rt)
        self.now = 0
        self.history = History(SERIES)
        self.values = dict.fromkeys(SERIES, 0.0)
        self.pending: list[tuple[str, str, int, float]] = []  # points of the next batch
        self.msg_rows = 0  # counted here, from the rows themselves
        self.beat_rows = 0
        self.control_rows = 0
        self.add(data)  # one query from the start, before the coordinator has a time

    @rule(
        walk=st.lists(
            st.tuples(st.sampled_from(SERIES), st.floats(-3, 3), st.integers(0, 25)),
            min_size=1,
            max_size=6,
        )
    )
    def points(self, walk: list[tuple[str, float, int]]) -> None:
        for series, step, gap in walk:
            self.now += gap
            self.values[series] += step
            self.history.add(series, self.now, self.values[series])
            self.pending.append((SOURCE_OF[series], series, self.now, self.values[series]))

    @rule(replay=st.booleans())
    def batch(self, replay: bool) -> None:
        rt = self.rt
        before = rt.coordinator.snapshot()
        answers = rt.run_batch(self.pending)
        self.pending = []
        self.msg_rows += sum(r["kind"] == "msg" for r in rt.last_outputs)
        self.beat_rows += sum(r["kind"] == "heartbeat" for r in rt.last_outputs)
        self.control_rows += sum(len(rows) for rows in rt.control.values())
        if not replay:
            return
        counts, after = copy.deepcopy(rt.counts), rt.coordinator.snapshot()
        # the same batch id again (foreachBatch retried): nothing applied twice
        assert rt.coordinator.step(rt.batch_id, list(reversed(rt.last_outputs))) == rt.control
        assert rt.counts == counts
        # restore the state of batch N−1, replay batch N (rows in another order): identical
        rt.coordinator.restore(before)
        assert rt.coordinator.step(rt.batch_id, list(reversed(rt.last_outputs))) == rt.control
        assert rt.counts == counts
        assert repr(rt.answers()) == repr(answers)
        assert state_of(rt.coordinator) == state_of(pickle.loads(after))

    @invariant()
    def answers_hold_the_exact_value(self) -> None:
        node = self.rt.coordinator
        coord = node.part("bounded").coordinator
        as_of = coord.now_ms
        if as_of is None:
            assert not node.answers() or all(math.isinf(a.width) for a in node.answers().values())
            return
        # as of the slowest source, minus the ms a later batch may still add points to
        times = [n.now_ms for n in self.rt.nodes.values() if n.now_ms is not None]
        assert as_of == min(times) - 1
        assert all(ts > as_of for _, _, ts, _ in self.pending)
        assert coord.queue.late == 0
        exact_values = self.history.at(as_of)
        answers = node.answers()
        assert all(a.as_of_ms == as_of for a in answers.values())
        self.check_answers(coord, answers, exact_values)

    @invariant()
    def every_row_is_counted_once(self) -> None:
        counts = self.rt.counts
        assert counts.messages.streamed == self.msg_rows
        assert counts.heartbeats == self.beat_rows
        assert counts.rows_in == self.msg_rows + self.beat_rows
        assert counts.messages.growth + counts.messages.shrink == self.control_rows
        assert counts.control_rows == self.control_rows
        assert counts.batches == self.rt.batch_id + 1

    @invariant()
    def no_bound_is_narrower_at_the_coordinator(self) -> None:
        # §4: sources run ahead (their boundaries shrink first) and take growth a batch late
        widths = self.rt.coordinator.part("bounded").coordinator.widths()
        for node in self.rt.nodes.values():
            for series, f in node.part("bounded").filters.items():
                assert widths.get(series, math.inf) >= f.width, (series, widths, f.width)

    @invariant()
    def unqueried_series_are_unbounded(self) -> None:
        queried = {o for q in self.queries.values() for o in q.objects}
        for o, w in self.rt.coordinator.part("bounded").coordinator.widths().items():
            if o not in queried:
                assert math.isinf(w)


BatchedFilters.TestCase.settings = settings(max_examples=100, stateful_step_count=60, deadline=None)
test_batched_filters = BatchedFilters.TestCase


# ----------------------------------------------------------------- source node


def row(series: str, ts: int, value: float, seq: int = 0) -> dict:
    return {"series": series, "ts": ts, "value": value, "seq": seq}


def shrink_row(series: str, width: float, ts: int, seq: int) -> dict:
    payload = {"type": "shrink", "object_id": series, "width": width, "ts_ms": ts, "seq": seq}
    return {"seq": seq, "payload": {**payload, "adaptive": True}}


def test_source_node_bad_value_raises_and_changes_nothing() -> None:
    node = SourceNode("n", HostSettings(10, 0.1))
    node.step([shrink_row("a", 2.0, 0, 1)], [row("a", 0, 1.0)])
    before = pickle.dumps(node)
    with pytest.raises(ValueError, match="must be finite"):
        node.step([shrink_row("a", 1.0, 0, 2)], [row("a", 5, 2.0), row("a", 6, math.nan, 1)])
    with pytest.raises(ValueError, match="must be a number"):
        node.step([], [row("a", 5, "2")])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="control row 0"):
        node.step([{"seq": 1, "payload": {"type": "update"}}], [])
    assert pickle.dumps(node) == before


def test_source_node_orders_points_and_sends_one_heartbeat() -> None:
    node = SourceNode("n", HostSettings(1_000, 0.0))
    node.step([shrink_row("a", 1.0, 0, 1)], [])  # no time yet: held until the first point
    assert node.part("bounded").held
    out = node.step([], [row("a", 20, 5.0, 1), row("a", 10, 1.0, 0), row("b", 15, 0.0, 2)])
    assert [r["kind"] for r in out] == ["msg", "msg", "heartbeat"]
    assert [r["payload"]["value"] for r in out[:2]] == [1.0, 5.0]  # (ts, seq) order
    assert out[-1]["payload"] == {
        "now_ms": 20,
        "received": 3,
        "accepted": 3,
        "points": 3,
        "stale": 0,
        "series": ["a", "b"],
    }
    assert "b" not in node.part("bounded").filters  # in no query: no filter (§3.4)


def test_source_node_late_points_are_clamped_or_counted_stale() -> None:
    node = SourceNode("n", HostSettings(1_000, 0.0))
    node.step([shrink_row("a", 1.0, 0, 1)], [row("a", 0, 0.0), row("b", 50, 0.0)])
    out = node.step([], [row("a", 10, 3.0), row("b", 40, 1.0)])  # a: late, b: stale
    assert [r["payload"]["ts_ms"] for r in out if r["kind"] == "msg"] == [50]  # at node time
    assert out[-1]["payload"]["stale"] == 1 and node.clamped == 1
    # no registers keep b's stale point: it is a dead letter, not silently dropped
    (dead,) = [r["payload"] for r in out if r["kind"] == "dead"]
    assert (dead["series"], dead["ts_ms"], dead["reason"]) == ("b", 40, "too_late")
    assert dead["detail"].startswith("point is older than the newest point of 'b' (at 50 ms)")
    assert (out[-1]["payload"]["received"], out[-1]["payload"]["accepted"]) == (2, 1)


def test_source_node_pickles_and_replays_identically() -> None:
    rng = np.random.default_rng(1)
    node = SourceNode("n", HostSettings(7, 0.2))
    node.step([shrink_row("a", 1.0, 0, 1), shrink_row("b", 0.5, 0, 2)], [])
    t, batches = 0, []
    for _ in range(20):
        rows = []
        for k in range(int(rng.integers(0, 5))):
            t += int(rng.integers(0, 4))
            rows.append(row(str(rng.choice(["a", "b"])), t, float(rng.normal()), k))
        batches.append(rows)
    twin = pickle.loads(pickle.dumps(node))
    assert [node.step([], b) for b in batches] == [twin.step([], b) for b in batches]


def test_idle_source_can_be_advanced_by_a_watermark() -> None:
    node = SourceNode("n", HostSettings(10, 0.5))
    node.step([shrink_row("a", 4.0, 0, 1)], [row("a", 0, 0.0), row("a", 1, 1.5)])
    out = node.advance(10)  # boundary 10: W = 2, 1.5 leaves [−1, 1]
    assert [r["payload"]["ts_ms"] for r in out if r["kind"] == "msg"] == [10]
    assert out[-1]["payload"]["now_ms"] == 10
    with pytest.raises(ValueError, match="must not go back"):
        node.advance(5)


# ----------------------------------------------------------------- coordinator node


def test_width_messages_wait_until_a_row_shows_where_their_series_lives() -> None:
    node = CoordinatorNode(HostSettings(10, 0.1, 0), source_of={"a": "n1"})
    node.part("bounded").add_query(
        node, Query.sum("q", ["a", "b"], 1.0)
    )  # b's source: not known yet
    assert node.part("bounded").deferred and not node.part("bounded").started  # waits for a time
    with pytest.raises(ValueError, match="exists"):
        node.part("bounded").add_query(node, Query.sum("q", ["a"], 1.0))
    beats = [{"source": s, "kind": "heartbeat", "payload": {"now_ms": 100}} for s in ("n1", "n2")]
    control = node.step(0, beats)
    assert (
        sorted(control) == ["n1"] and len(node.part("bounded").parked) == 1
    )  # b's shrink is parked
    assert control["n1"][0]["payload"]["ts_ms"] == 99
    shown = {"source": "n2", "kind": "heartbeat", "payload": {"now_ms": 120, "series": ["b"]}}
    control = node.step(1, [shown])
    assert sorted(control) == ["n2"] and not node.part("bounded").parked
    assert control["n2"][0]["payload"]["ts_ms"] == 99  # as of its decision; the source replays
    assert node.counts.messages.shrink == 2  # each message counted once


def test_older_batch_id_and_conflicting_sources_are_refused() -> None:
    node = CoordinatorNode(HostSettings(10, 0.1, 0))
    node.step(3, [{"source": "n1", "kind": "heartbeat", "payload": {"now_ms": 5, "series": ["a"]}}])
    with pytest.raises(ValueError, match="older than the last applied batch 3"):
        node.step(2, [])
    node.part("bounded").add_query(
        node, Query.avg("q", ["a"], 1.0)
    )  # a bounded query reads "a": one source only
    with pytest.raises(ValueError, match="one source"):
        node.step(
            4, [{"source": "n2", "kind": "heartbeat", "payload": {"now_ms": 5, "series": ["a"]}}]
        )
    assert node.last_batch_id == 3


def test_a_series_at_several_sources_is_shared_and_no_bounded_query_takes_it() -> None:
    node = CoordinatorNode(HostSettings(10, 0.1, 0))
    for batch, source in enumerate(["n1", "n2"]):
        beat = {"now_ms": 5, "series": ["doc1.hits"]}
        node.step(batch, [{"source": source, "kind": "heartbeat", "payload": beat}])
    assert node.shared == {"doc1.hits"}
    with pytest.raises(ValueError, match="several sources"):
        node.part("bounded").add_query(node, Query.avg("q", ["doc1.hits"], 1.0))


def test_two_runtimes_fed_alike_agree() -> None:
    def run() -> list[str]:
        rt = BatchedRuntime(20, 0.1, 7, SOURCE_OF)
        rt.add_query(Query.avg("q", {"n0.a": 1.0, "n1.a": -2.0, "n2.a": 0.5}, 0.8))
        rng = np.random.default_rng(5)
        vals = dict.fromkeys(SERIES, 0.0)
        out = []
        for b in range(30):
            pts = []
            for t in range(b * 10, b * 10 + 10):
                s = SERIES[int(rng.integers(len(SERIES)))]
                vals[s] += float(rng.normal())
                pts.append((SOURCE_OF[s], s, t, vals[s]))
            out.append(repr(rt.run_batch(pts)))
        return out

    assert run() == run()


def test_bad_batch_is_refused_before_any_node_steps() -> None:
    rt = BatchedRuntime(10, 0.1, 0, SOURCE_OF)
    rt.run_batch([("n0", "n0.a", 0, 1.0)])
    before = pickle.dumps((rt.nodes, rt.control, rt.batch_id))
    with pytest.raises(ValueError, match="must be finite"):
        rt.run_batch([("n0", "n0.a", 5, 2.0), ("n1", "n1.a", 5, math.inf)])
    rt.add_query(Query.avg("q", ["n0.a"], 1.0))
    before = pickle.dumps((rt.nodes, rt.control, rt.batch_id))
    with pytest.raises(ValueError, match="one source"):
        rt.run_batch([("n0", "n0.a", 5, 2.0), ("n1", "n0.a", 5, 2.0)])
    assert pickle.dumps((rt.nodes, rt.control, rt.batch_id)) == before


def test_only_series_a_bounded_query_reads_have_filters() -> None:
    rt = BatchedRuntime(10, 0.1, 0, queries="QUERY hot AS TOP 1 OF n* BY a WITHIN 0")
    for t in range(0, 100, 10):  # a job with no bounded query: no filter anywhere
        rt.run_batch([("n0", "n0.a", t, 1.0 + t), ("n1", "n1.b", t, 2.0)])
    assert all(not node.part("bounded").filters for node in rt.nodes.values())
    rt.add_query(Query.sum("q", ["n0.a"], 1.0))  # added later: its filter starts 1 ms before
    rt.run_batch([("n1", "n1.b", 100, 2.0)])  # the node's time (90) from the series' value then,
    rt.run_batch([("n0", "n0.a", 110, 50.0)])  # the reply to its shrink (§3.4), then observes
    sent = [r["payload"] for r in rt.last_outputs if r["kind"] == "msg"]  # its value at 90
    assert [(m["value"], m["ts_ms"], m["forced"]) for m in sent] == [
        (81.0, 89, True),
        (91.0, 90, False),
        (50.0, 110, False),
    ]
    assert list(rt.nodes["n0"].part("bounded").filters) == ["n0.a"]
    assert not rt.nodes["n1"].part("bounded").filters
