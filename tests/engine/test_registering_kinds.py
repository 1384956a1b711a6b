"""Query changes of every kind logged in the coordinator's journal (engine/journal.py,
:meth:`~tsmon.engine.batched.BatchedRuntime.change`, the path of the Monitor's adds and alters):
watch queries added and redefined, aggregates over globs, top-k and standing queries, δ altered
and queries removed between batches whose steps raise at random, against the exact oracle of a
copy pickled before every step (tests/engine/test_journal.py)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.engine.test_journal import CLOCK, HOME, observed, runtime, same_state
from tsmon.engine import journal
from tsmon.engine.batched import BatchedRuntime
from tsmon.protocols.filters.queries import Query
from tsmon.query import parse_query

TEXTS = [
    "QUERY w{b} ON {s} WHEN last > 3",
    "QUERY g{b} AS AVG(*.x) WITHIN 2",
    "QUERY t{b} AS TOP 1 OF * BY x WITHIN 0",
    "QUERY v{b} AS SUM({s}, b.x) WITHIN 5% CONFIDENCE 0.9",
]
SERIES = [*HOME, "d.x"]

change = st.one_of(
    st.none(),
    st.tuples(st.just("add"), st.integers(0, len(TEXTS) - 1), st.sampled_from(SERIES)),
    st.tuples(st.just("redefine"), st.integers(0, 9), st.sampled_from(SERIES)),
    st.tuples(st.just("alter"), st.integers(0, 9), st.sampled_from([0.5, 3.0])),
    st.tuples(st.just("remove"), st.integers(0, 9), st.just("")),
)
point = st.tuples(st.sampled_from(SERIES), st.integers(-5, 9))


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.lists(point, max_size=4), change), min_size=1, max_size=25),
    st.sampled_from([1, 4, journal.EVERY]),
)
def test_changes_of_every_kind_logged_in_the_journal_restore_what_a_copy_restores(
    batches: list[tuple[list[tuple[str, int]], Any]], every: int
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(journal, "EVERY", every)
        mine, oracle = runtime(False), runtime(True)
        for b, (clean, what) in enumerate(batches):
            assert _change(mine, what, b) == _change(oracle, what, b)
            ts = 1_000 * (b + 1)
            points = [(HOME.get(s, "n1"), s, ts + i, float(v)) for i, (s, v) in enumerate(clean)]
            assert repr(mine.run_batch(points, CLOCK)) == repr(oracle.run_batch(points, CLOCK))
            assert observed(mine) == observed(oracle)
            assert mine.hub().progress() == oracle.hub().progress()
        same_state(mine, oracle, len(batches))


def _change(rt: BatchedRuntime, what: Any, b: int) -> str:
    """Apply one change as the Monitor's instant host does: what happened."""
    if what is None:
        return "none"
    kind, i, arg = what
    names = sorted(rt.hub().names())
    try:
        if kind == "add":
            statement = parse_query(TEXTS[i].format(b=b, s=arg))
            return rt.change(
                lambda hub: hub.add(statement, lambda ns: {n: HOME.get(n, "n1") for n in ns})
            )
        if not names:
            return "no query"
        name = names[i % len(names)]
        if kind == "redefine":
            statement = parse_query(f"QUERY {name} ON {arg} WHEN last > {i}")
            return rt.change(lambda hub: hub.alter(statement))
        if kind == "alter":
            rt.alter_query(name, arg, immediately=i % 2 == 0)
        else:
            rt.remove_query(name)
    except (ValueError, KeyError) as e:
        return f"{type(e).__name__}: {e}"
    return "ok"


def test_a_query_object_added_is_noted_waiting_at_the_next_step() -> None:
    rt = BatchedRuntime(1_000, 0.1, 0, source_of={"z.x": "n9"})
    rt.run_batch([("n1", "a.x", 1_000, 1.0)], CLOCK)
    rt.add_query(Query.avg("q", ["a.x", "z.x"], 1.0))  # z.x declared, its source silent
    rt.run_batch([("n1", "a.x", 2_000, 1.0)], CLOCK)
    hub = rt.hub()
    assert hub.progress()["unmatchedQueries"] == hub.waiting_now(hub.names())
    assert hub.progress()["unmatchedQueries"] == {
        "q": "for source 'n9', which has sent nothing yet"
    }
