"""Registering many queries costs each add its own work (benchmarks/bench_register.py), with
the answers of the full recomputations it replaces, each the exact oracle here:

* the filters' width system after adds, removals and alters equals one built from scratch
  over a copy of the bound cache (no entries kept from the last build);
* the hub's notes of waiting queries after each step equal those of a copy that looks at every
  query again (a pickled copy keeps no last look);
* query changes logged in the coordinator's journal restore what a copy pickled before every
  step restores (engine/journal.py), also when a later step raises.

A text of many statements keeps the behaviour it had: its names and bounded aggregates are
checked before any is registered, so a bad statement anywhere registers none of the text.
"""

from __future__ import annotations

import contextlib
import pickle
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.engine.test_journal import CLOCK, HOME, observed, runtime, same_state
from tsmon import Monitor
from tsmon.engine import journal
from tsmon.engine.hub import CoordinatorNode
from tsmon.engine.settings import HostSettings
from tsmon.protocols.filters.coordinator import Coordinator
from tsmon.protocols.filters.queries import Query
from tsmon.protocols.filters.system import System, build_system
from tsmon.query import parse_query

OBJECTS = [f"o{i}" for i in range(8)]
MAKERS = [Query.avg, Query.sum, Query.min, Query.max]

op = st.tuples(
    st.sampled_from(["add", "add", "add", "remove", "alter"]),
    st.integers(0, 3),  # the aggregate
    st.lists(st.sampled_from(OBJECTS), min_size=1, max_size=4, unique=True),
    st.sampled_from([0.5, 1.0, 4.0]),
)


def same_system(a: System, b: System) -> None:
    assert (a.k != b.k).nnz == 0 and a.k.shape == b.k.shape
    for name in ("budgets", "adaptive", "cap", "queried", "multi", "uniform", "growth_rows"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert np.array_equal(a.phi, b.phi)
    for name in ("rows_of", "index_of"):
        mine, fresh = getattr(a, name), getattr(b, name)
        assert list(mine) == list(fresh)
        assert all(np.array_equal(mine[q], fresh[q]) for q in fresh), name


@settings(max_examples=60, deadline=None)
@given(st.lists(op, min_size=1, max_size=30), st.sampled_from([None, 1_000]))
def test_the_width_system_after_changes_equals_one_built_from_scratch(
    ops: list[tuple[str, int, list[str], float]], period: int | None
) -> None:
    coord = Coordinator(period, 0.05, np.random.default_rng(0))
    coord.start(0)
    for n, (what, maker, objects, delta) in enumerate(ops):
        names = list(coord.queries)
        if what == "add" or not names:
            coord.add_query(MAKERS[maker](f"q{n}", objects, delta))
        elif what == "remove":
            coord.remove_query(names[n % len(names)])
        else:
            coord.alter_query(names[n % len(names)], delta)
        cache = pickle.loads(pickle.dumps(coord.cache))  # a copy: no entries kept for it
        fresh = build_system(coord.queries, cache, period is not None, None, 0)
        same_system(coord.system, fresh)


def test_a_change_that_fails_leaves_the_system_as_before_with_the_new_objects_known() -> None:
    rates = {"a": 1.0, "b": 1.0, "c": 500.0}
    coord = Coordinator(None, 0.05, np.random.default_rng(0), latency_ms=100, max_rates=rates)
    coord.start(0)
    coord.add_query(Query.avg("ok", ["a", "b"], 1.0))
    with pytest.raises(ValueError, match="'bad': padding"):
        coord.add_query(Query.sum("bad", ["a", "c"], 1.0))  # φ of c = 100 > δ
    assert list(coord.queries) == ["ok"] and coord.cache.objects == ["a", "b", "c"]
    fresh = build_system(coord.queries, pickle.loads(pickle.dumps(coord.cache)), False, rates, 100)
    same_system(coord.system, fresh)


hub_op = st.tuples(
    st.sampled_from(["bounded", "watch", "glob", "remove", "series", "declare"]),
    st.integers(0, 5),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(hub_op, max_size=4), min_size=1, max_size=12))
def test_the_notes_of_waiting_queries_equal_those_of_a_full_look(
    batches: list[list[tuple[str, int]]],
) -> None:
    node = CoordinatorNode(HostSettings(period_ms=1_000, shrink=0.05, seed=0, growth="capped"))
    shown: set[str] = set()
    for b, changes in enumerate(batches):
        for n, (what, i) in enumerate(changes):
            name = f"q{b}_{n}"
            if what == "bounded":
                statement = f"QUERY {name} AS SUM(s{i}.x, s{i + 1}.x) WITHIN 1"
                with contextlib.suppress(ValueError):  # a series known at another source
                    node.add(parse_query(statement), lambda s: {x: f"n{x[1]}" for x in s})
            elif what == "watch":
                node.add(parse_query(f"QUERY {name} ON s{i}.* WHEN last > 1"))
            elif what == "glob":
                node.add(parse_query(f"QUERY {name} AS AVG(s{i}*.x) WITHIN 1"))
            elif what == "remove" and node.names():
                node.remove_query(node.names()[i % len(node.names())])
            elif what == "series":
                shown.add(f"s{i}.x")
            elif what == "declare":
                node.declare({f"s{i}.x": f"d{b % 2}"})  # a source declared again, maybe another
        rows = [
            {"source": f"n{s[1]}", "kind": "heartbeat", "payload": {"now_ms": b, "series": [s]}}
            for s in sorted(shown)
        ]
        oracle = pickle.loads(node.snapshot())  # a copy keeps no last look: it looks again
        assert _step(node, b, rows) == _step(oracle, b, rows)


def _step(node: CoordinatorNode, b: int, rows: list[dict]) -> Any:
    """The control, the progress and the order of its notes; or why the step refused."""
    try:
        control = node.step(b, rows)
    except ValueError as e:  # a series declared at another source than its rows show
        return str(e)
    progress = node.progress()
    return control, progress, list(progress["unmatchedQueries"])


change = st.one_of(st.none(), st.sampled_from(["add", "add", "alter", "remove", "taken"]))
point = st.tuples(st.sampled_from(list(HOME)), st.integers(-5, 9))


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.lists(point, max_size=4), change), min_size=1, max_size=30),
    st.sampled_from([1, 5, journal.EVERY]),
)
def test_query_changes_logged_in_the_journal_restore_what_a_copy_restores(
    batches: list[tuple[list[tuple[str, int]], str | None]], every: int
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(journal, "EVERY", every)
        mine, oracle = runtime(False), runtime(True)
        added: list[str] = []
        for b, (clean, what) in enumerate(batches):
            outcomes = [_change(rt, what, b, list(added)) for rt in (mine, oracle)]
            assert outcomes[0] == outcomes[1]
            added = outcomes[0][1]
            ts = 1_000 * (b + 1)
            points = [(HOME[s], s, ts + i, float(v)) for i, (s, v) in enumerate(clean)]
            assert repr(mine.run_batch(points, CLOCK)) == repr(oracle.run_batch(points, CLOCK))
            assert observed(mine) == observed(oracle)
        same_state(mine, oracle, len(batches))


def _change(rt: Any, what: str | None, b: int, added: list[str]) -> tuple[str, list[str]]:
    """Apply one query change to ``rt``: what happened, and the added queries left."""
    try:
        if what == "add":
            rt.add_query(Query.avg(f"q{b}", ["a.x", "b.x"], 1.0 + b % 3), source_of=HOME)
            added.append(f"q{b}")
        elif what == "alter" and added:
            rt.alter_query(added[-1], 0.5, immediately=b % 2 == 0)
        elif what == "remove" and added:
            rt.remove_query(added.pop(0))
        elif what == "taken":  # refused: the name is the job's
            rt.add_query(Query.sum("S", ["a.x", "c.x"], 1.0), source_of=HOME)
    except ValueError as e:
        return f"ValueError: {e}", added
    return "ok", added


def test_a_bad_statement_anywhere_in_a_text_registers_none_of_it() -> None:
    mon = Monitor(["s*.x"])
    mon.ingest(["s1.x", "s2.x"], [0, 0], [1.0, 2.0], clock_ms=0)
    mon.add_query("QUERY d AS SUM(s1.x, s2.x) WITHIN 1")
    before = (mon.queries(), dict(mon.answers()), mon.filter_messages())
    for text, error in [
        ("QUERY a AS SUM(s1.x, s2.x) WITHIN 1\nQUERY D ON s1.x WHEN last > 1", "'D' already"),
        ("QUERY a AS SUM(s1.x, s2.x) WITHIN 1\nQUERY b AS SUM(s9.x) WITHIN 1", "s9.x"),
        ("QUERY a ON s1.x WHEN last > 1\nQUERY b AS AVG(s1.x, s2.x) WITHIN 1\nQUERY", "line 3"),
    ]:
        with pytest.raises(ValueError, match=error):
            mon.add_query(text)
        assert (mon.queries(), dict(mon.answers()), mon.filter_messages()) == before


def test_a_query_removed_comes_back_under_another_case_as_a_new_query() -> None:
    mon = Monitor(["s*.x"])
    mon.ingest(["s1.x", "s2.x"], [0, 0], [1.0, 2.0], clock_ms=0)
    mon.add_query("QUERY d AS SUM(s1.x, s2.x) WITHIN 1\nQUERY w ON s1.x WHEN last > 5")
    mon.remove_query("D")
    mon.remove_query("W")
    assert mon.add_query("QUERY D ON s2.x WHEN last > 5\nQUERY W AS AVG(s1.x, s2.x) WITHIN 1") == [
        "D",
        "W",
    ]
    mon.ingest(["s1.x", "s2.x"], [1_000, 1_000], [3.0, 9.0], clock_ms=0)
    assert list(mon.queries()) == ["D", "W"] and list(mon.answers()) == ["W"]
    assert mon.answers()["W"].lo <= 6.0 <= mon.answers()["W"].hi
    assert [(e.query, e.series) for e in mon.events()] == [("D", "s2.x")]
