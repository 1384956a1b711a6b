"""Watch queries at source nodes equal one in-process Monitor per source, batch for batch,
including live changes (applied one batch after the coordinator logs them) and rejected
points."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tsmon.engine.batched import BatchedRuntime
from tsmon.engine.events import event_order
from tsmon.engine.hub import CoordinatorNode
from tsmon.engine.monitor import Monitor
from tsmon.engine.node import SourceNode
from tsmon.engine.settings import HostSettings, RegisterSettings
from tsmon.kinds.local.coordinator import WatchLog
from tsmon.protocols.filters import Query
from tsmon.query import parse_query

WATCH = """
QUERY high ON *.x WHEN last > mean(3 points) + 0.5 EMIT series, last, max(5s) AS peak
QUERY any ON b.* EMIT series, count(2s)
"""
ADDED = "QUERY jump ON *.y WHEN abs(last - first(4s)) > 1 EMIT series, min(4s) SINCE -5s"
ALTERED = "QUERY high ON *.x WHEN last > mean(3 points) EMIT series, last"
SOURCES = {"a.x": "A", "a.y": "A", "b.x": "B", "b.y": "B"}
SETTINGS = RegisterSettings(retention="1m", allowed_lateness="500ms")


def _events(rows) -> list[tuple]:
    return [
        (r["payload"]["query"], r["payload"]["series"], r["payload"]["ts_ms"],
         r["payload"]["value"], r["payload"]["payload"], r["payload"]["replayed"])
        for r in rows
    ]  # fmt: skip


def _monitor_events(monitor: Monitor) -> list[tuple]:
    return [(e.query, e.series, e.ts_ms, e.value, e.payload, e.replayed) for e in monitor.events()]


points = st.lists(
    st.tuples(
        st.sampled_from(sorted(SOURCES)),
        st.integers(0, 400),  # ms after the batch's start: late points within and across batches
        st.floats(-3, 3, allow_nan=False).map(lambda v: round(v, 2)),
    ),
    max_size=12,
)


@settings(max_examples=60, deadline=None)
@given(batches=st.lists(points, min_size=2, max_size=8), change_at=st.integers(0, 6))
def test_node_events_equal_a_monitor_per_source(batches, change_at):
    """Every source node's events and dead letters equal a Monitor fed that source's points in
    the same batches, with the same query changes at the same batch."""
    batches[0] = [(s, 0, 0.0) for s in sorted(SOURCES)] + batches[0]  # every node exists early
    rt = BatchedRuntime(1_000, 0.1, 0, source_of=SOURCES, registers=SETTINGS, queries=WATCH)
    rt.add_query(Query.avg("avg", sorted(SOURCES), 1.0))
    ref = {
        src: Monitor(
            ["*"], retention=SETTINGS.retention, allowed_lateness=SETTINGS.allowed_lateness
        )
        for src in set(SOURCES.values())
    }
    for m in ref.values():
        m.add_query(WATCH)
    logged: list[tuple[str, str]] = []  # changes logged after this batch's step
    sent: list[tuple[str, str]] = []  # in the control of the next step: applied a batch later
    for n, batch in enumerate(batches):
        rows = [(SOURCES[s], s, 1_000 * n + dt, v) for s, dt, v in batch]
        applied, sent, logged = sent, logged, []
        for op, text in applied:
            for m in ref.values():
                getattr(m, f"{op}_query")(text)
        want = []
        for src, m in sorted(ref.items()):
            mine = [r for r in rows if r[0] == src]
            mine.sort(key=lambda r: r[2])  # nodes take points in (ts, arrival) order
            if mine:
                m.ingest([r[1] for r in mine], [r[2] for r in mine], [r[3] for r in mine])
            want += _monitor_events(m)
        rt.run_batch(rows)
        got = _events(rt.events())
        assert got == _events(event_order([{"kind": "event", "payload": _as_row(e)}
                                           for e in want]))  # fmt: skip
        dead = [r["payload"] for r in rt.last_outputs if r["kind"] == "dead"]
        want_dead = [d for m in ref.values() for d in m.take_dead_letters().to_dict("records")]
        assert sorted((d["series"], d["ts_ms"], d["reason"]) for d in dead) == sorted(
            (d["series"], d["ts_ms"], d["reason"]) for d in want_dead
        )
        if n == change_at:
            rt.coordinator.add(parse_query(ADDED))
            logged.append(("add", ADDED))
        if n == change_at + 1:
            rt.coordinator.alter(parse_query(ALTERED))
            rt.coordinator.remove_query("ANY")  # names ignore case
            logged += [("alter", ALTERED), ("remove", "any")]


def _as_row(e: tuple) -> dict:
    query, series, ts_ms, value, payload, replayed = e
    return dict(query=query, series=series, ts_ms=ts_ms, value=value, payload=payload,
                replayed=replayed)  # fmt: skip


def test_a_node_created_after_a_change_gets_the_whole_log():
    rt = BatchedRuntime(1_000, 0.1, 0, registers=SETTINGS, queries=WATCH)
    rt.run_batch([("A", "a.x", 0, 0.0)])
    rt.coordinator.add(parse_query("QUERY every ON *.y"))
    rt.run_batch([("A", "a.x", 1_000, 0.0)])  # the change goes out with this step's control
    rt.run_batch([("B", "b.y", 2_000, 1.0)])  # B is new: starts with WATCH only
    assert [e["payload"]["query"] for e in rt.events()] == ["any"]
    assert [r["payload"]["op"] for r in rt.control["B"]] == ["add"]  # the log, for B only
    rt.run_batch([("B", "b.y", 3_000, 2.0)])
    assert [e["payload"]["query"] for e in rt.events()] == ["any", "every"]


def test_names_are_shared_with_bounded_queries_and_checked_before_logging():
    node = CoordinatorNode(HostSettings(1_000, 0.1, queries={"local": WATCH}))
    node.part("bounded").add_query(node, Query.avg("avg", ["a.x"], 1.0))
    with pytest.raises(ValueError, match="exists"):
        node.add(parse_query("QUERY AVG ON *.x"))
    with pytest.raises(ValueError, match="exists"):
        node.part("bounded").add_query(node, Query.avg("high", ["a.x"], 1.0))
    with pytest.raises(ValueError, match="no watch query"):
        node.alter(parse_query("QUERY nope ON *.x"))
    with pytest.raises(ValueError, match="not a watch query"):
        node.part("local").add(node, "QUERY s AS SUM(a.x) WITHIN 1")
    with pytest.raises(ValueError, match="line 1"):
        node.part("local").add(node, "QUERY bad ON *.x WHEN mean(")
    log = node.part("local").watch
    assert log.changes == [] and log.names() == ["high", "any"] and "avg" in node.names()


def test_watch_control_needs_registers_and_state_pickles():
    with pytest.raises(ValueError, match="registers"):
        SourceNode("A", HostSettings(1_000, 0.1, queries={"local": WATCH}))
    node = SourceNode("A", HostSettings(1_000, 0.1, registers=SETTINGS, queries={"local": WATCH}))
    node.step([], [{"series": "a.x", "ts": 0, "value": 1.0, "seq": 0}])
    copy = pickle.loads(pickle.dumps(node))
    rows = copy.step([], [{"series": "a.x", "ts": 1_000, "value": 9.0, "seq": 1}])
    assert [r["payload"]["query"] for r in rows if r["kind"] == "event"] == ["high"]
    bare = SourceNode("A", HostSettings(1_000, 0.1))
    change = {"seq": 0, "payload": {"type": "watch", "op": "add", "text": "QUERY q ON x"}}
    with pytest.raises(ValueError, match="need registers"):
        bare.step([change], [])
    log = WatchLog()
    with pytest.raises(ValueError, match="no watch query"):
        log.remove("q")


def test_a_glob_aggregate_covers_the_matching_series_as_rows_show_them():
    """``AVG(*.x)`` is registered over the .x series seen so far, again whenever a new one
    appears; its answer holds the exact average of their values as of the answer's time."""
    from tsmon.query import parse_query

    rt = BatchedRuntime(1_000, 0.1, 0, growth="capped")
    node = rt.coordinator
    node.add(parse_query("QUERY g AS AVG(*.x) WITHIN 1"))
    node.alter_precision("g", 0.5)  # before any series matches: kept for the registration
    with pytest.raises(ValueError, match="exists"):
        node.part("bounded").add_query(node, Query.avg("G", ["a.x"], 1.0))
    values: dict[str, list[tuple[int, float]]] = {}
    arrivals = {0: ["a.x", "a.y"], 3: ["b.x"], 6: ["c.x"]}
    present: list[str] = []
    for n in range(12):
        present += arrivals.get(n, [])
        batch = [(s[0], s, 100 * n + 1, float((n * 7 + i) % 5)) for i, s in enumerate(present)]
        for _, s, ts, v in batch:
            values.setdefault(s, []).append((ts, v))
        rt.run_batch(batch)
        query = node.part("bounded").coordinator.queries.get("g")
        seen_x = sorted(s for s in present if s.endswith(".x"))
        assert query is not None and query.objects == seen_x and query.delta == 0.5
        answer = rt.answers()["g"]
        if answer.lo > -float("inf"):
            exact = sum(
                max((tv for tv in values[s] if tv[0] <= answer.as_of_ms), default=(0, 0.0))[1]
                for s in seen_x
            ) / len(seen_x)
            assert answer.lo - 1e-9 <= exact <= answer.hi + 1e-9
            assert answer.hi - answer.lo <= 0.5 + 1e-9
    assert rt.answers()["g"].lo > -float("inf")  # bounded once every member reported
    node.remove_query("g")
    assert node.names() == []


def test_keep_first_duplicates_change_neither_the_registers_nor_the_filters():
    """Under keep_first a repeated timestamp is a dead letter and the bounded answer keeps
    the first value, as the registers do."""
    settings = RegisterSettings(duplicates="keep_first")
    rt = BatchedRuntime(1_000, 0.1, 0, source_of={"a.x": "A"}, registers=settings)
    rt.add_query(Query.sum("s", ["a.x"], 0.5))
    for n in range(4):  # bounds installed, then the duplicate of ts 3000
        rt.run_batch([("A", "a.x", 1_000 * n, 1.0)])
    rt.run_batch([("A", "a.x", 3_000, 50.0), ("A", "a.x", 3_500, 1.0)])
    dead = [r["payload"] for r in rt.last_outputs if r["kind"] == "dead"]
    assert [(d["ts_ms"], d["reason"]) for d in dead] == [(3_000, "duplicate")]
    rt.run_batch([("A", "a.x", 4_000, 1.0)])
    answer = rt.answers()["s"]
    assert answer.lo <= 1.0 <= answer.hi  # 50.0 never counted
    assert rt.nodes["A"].stale == 1


def test_names_ignore_case_in_the_coordinator_api():
    node = CoordinatorNode(HostSettings(1_000, 0.1, queries={"local": WATCH}))
    node.part("bounded").add_query(node, Query.avg("Avg", ["a.x"], 1.0))
    node.alter_precision("AVG", 0.5)
    with pytest.raises(ValueError, match="'high' is a watch query"):
        node.alter_precision("HIGH", 0.5)
    node.remove_query("HIGH")
    node.remove_query("avg")
    assert node.names() == ["any"]
    with pytest.raises(KeyError, match="no query 'nope'"):
        node.remove_query("nope")


def test_a_glob_query_that_can_never_be_evaluated_is_dropped_with_the_reason():
    from tsmon.query import parse_query

    rt = BatchedRuntime(1_000, 0.1, 0)
    rt.coordinator.add(parse_query("QUERY z AS SUM(h*.y - h1.y) WITHIN 1"))
    rt.run_batch([("h1", "h1.y", 0, 1.0)])  # the weights of h1.y sum to 0
    assert "z" not in rt.answers() and rt.coordinator.names() == []
    assert (
        "z" in rt.coordinator.part("bounded").dropped
        and "0" in rt.coordinator.part("bounded").dropped["z"]
    )


EVERY_WINDOW = """
QUERY w ON *.x WHEN last > mean(3 points) + 0.5 EMIT series, max(2s), mean(4 points before),
  min(1s before), count(since 1970-01-01T00:00:00Z)
QUERY v ON a.* EMIT series, stddev(3s)
"""


@settings(max_examples=40, deadline=None)
@given(batches=st.lists(points, min_size=1, max_size=6))
def test_a_node_pickled_each_batch_equals_one_never_pickled(batches):
    """Every window kind (count, time, landmark, before) of every series, the registers packed
    with their store's series (:func:`tsmon.engine.series.pack_nodes`): a node pickled after
    each batch gives the rows of one never pickled, and its windows read their own series'
    registers."""
    settings_ = HostSettings(1_000, 0.1, registers=SETTINGS, queries={"local": EVERY_WINDOW})
    plain, pickled = SourceNode("A", settings_), SourceNode("A", settings_)
    seq = 0
    for b, batch in enumerate(batches):
        rows = []
        for series, ms, value in batch:
            rows.append({"series": series, "ts": 1_000 * b + ms, "value": value, "seq": seq})
            seq += 1
        assert repr(pickled.step([], rows)) == repr(plain.step([], rows))  # NaN stddevs too
        pickled = pickle.loads(pickle.dumps(pickled))
        store = pickled.part("local").local.store
        for name, node in store.nodes.items():
            assert node.name == node.register.name == name and node.config is store.config
            for window in node.windows.values():
                assert window.register is node.register
                assert getattr(window, "inner", window).register is node.register
